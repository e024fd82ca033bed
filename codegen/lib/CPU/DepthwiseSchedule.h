//===- DepthwiseSchedule.h - depthwise convolutions for the CPU -*- C++ -*-===//
//
// Part of kiln-schedule-matmul: the depthwise convolutions, which the
// im2col + matmul route serves badly, become vector FMAs over output rows.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_DEPTHWISESCHEDULE_H
#define KILN_CODEGEN_CPU_DEPTHWISESCHEDULE_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::linalg {
class GenericOp;
}

namespace kiln {

/// Rewrites `conv`, the f32 convolution generic of kiln-lower-to-linalg,
/// when it is a 2-D depthwise convolution (one input and one output channel
/// per group): loops over batch, channel and output row, and per row
/// `width`-lane vector FMAs, one per filter tap and chunk of columns; with
/// `fuseEpilogue`, the elementwise op consuming the result (bias, clip) is
/// applied to each chunk before it is stored. A 2-D max pooling (the same
/// loops with a max instead of the filter) takes the same path. A
/// depthwise convolution at stride 1 whose rows are narrower than `width`
/// and whose zero padding keeps the output plane the input's size is
/// computed as one flat row of positions per channel instead
/// (isFlatDepthwiseConv). Fails, changing nothing, for any other op.
mlir::LogicalResult vectorizeDepthwiseConv(mlir::RewriterBase &rewriter,
                                           mlir::linalg::GenericOp conv,
                                           int64_t width, bool fuseEpilogue);

/// Whether vectorizeDepthwiseConv computes `conv` as one flat row of
/// positions per channel: full `width`-lane vectors however narrow the
/// image.
bool isFlatDepthwiseConv(mlir::linalg::GenericOp conv, int64_t width);

} // namespace kiln

#endif // KILN_CODEGEN_CPU_DEPTHWISESCHEDULE_H

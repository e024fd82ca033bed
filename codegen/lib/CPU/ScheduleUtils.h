//===- ScheduleUtils.h - helpers shared by the CPU schedules ----*- C++ -*-===//
//
// Used by the matmul (MatmulSchedule.cpp), convolution (ConvToMatmul.cpp),
// depthwise (DepthwiseSchedule.cpp) and elementwise
// (VectorizeElementwise.cpp) schedules, which otherwise do not include one
// another.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_SCHEDULEUTILS_H
#define KILN_CODEGEN_CPU_SCHEDULEUTILS_H

#include <cstdint>
#include <optional>
#include <utility>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"

namespace kiln {

/// Every loaded dialect's and op's canonicalization patterns, frozen: a
/// pass builds them once, in its initialize(), not once per function it
/// runs on (kiln-outline-kernels makes a function of every kernel).
mlir::FrozenRewritePatternSet canonicalizationPatterns(mlir::MLIRContext *ctx);

/// `canonicalization` (canonicalizationPatterns) over `func`: folds what
/// tiling and peeling leave (single-iteration loops, affine.min of
/// constants, the casts that make sliced tiles static). Regions are not
/// simplified (blocks merged, dead arguments erased): structured IR has
/// nothing there for it.
mlir::LogicalResult
canonicalizeFunction(mlir::func::FuncOp func,
                     const mlir::FrozenRewritePatternSet &canonicalization);

/// (stride, dilation) when result `result` of `map` is exactly
/// d(outLoop) * stride + d(tapLoop) * dilation, both positive (how a
/// convolution or pooling window reads its input, padding being a separate
/// tensor.pad); nothing otherwise.
std::optional<std::pair<int64_t, int64_t>> linearWindow(mlir::AffineMap map,
                                                        unsigned result,
                                                        unsigned outLoop,
                                                        unsigned tapLoop);

/// Whether the payload of `op` is exactly `out + in0 * in1` on floats
/// (block arguments 2, 0 and 1): a multiply-accumulate, the body
/// kiln-lower-to-linalg gives convolutions.
bool isMultiplyAccumulate(mlir::linalg::GenericOp op);

/// `op` itself when it is a linalg.generic, else its generalization built in
/// its place (a named op's region reused); failure when it has none.
mlir::FailureOr<mlir::linalg::GenericOp> asGeneric(mlir::RewriterBase &rewriter,
                                                   mlir::linalg::LinalgOp op);

} // namespace kiln

#endif // KILN_CODEGEN_CPU_SCHEDULEUTILS_H

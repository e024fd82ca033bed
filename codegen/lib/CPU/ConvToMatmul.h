//===- ConvToMatmul.h - convolutions as matmuls for the CPU -----*- C++ -*-===//
//
// Step 0 of kiln-schedule-matmul: f32 convolutions rewritten into the
// contractions the matmul schedule tiles, or into depthwise row code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_CONVTOMATMUL_H
#define KILN_CODEGEN_CPU_CONVTOMATMUL_H

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Marks the contraction of a convolution read as shifted rows: loops (n, g,
/// mg, p, w..., cg), not a contraction by the interface (its input index is
/// a sum), which the matmul schedule tiles like one (m = loop 2, n = loop 3,
/// k = the last) and never transposes.
constexpr llvm::StringLiteral kShiftedRowsAttr = "kiln.shifted_rows";

/// The matmul schedule's options that decide a convolution's layout.
struct ConvRewriteOptions {
  int64_t tileN;             // register tile columns
  bool im2col;               // rewrite convolutions as contractions at all
  bool shiftedRows;          // allow shifted rows (no im2col copy)
  int64_t maxColumnElements; // largest im2col buffer, in elements
  bool fuseEpilogues;        // move elementwise epilogues onto the result
  bool winograd;             // 3x3 stride-1 convolutions as F(2x2, 3x3)
};

/// How many convolutions took each layout.
struct ConvRewriteCounts {
  int64_t im2col = 0, positionRows = 0, shiftedRows = 0, depthwise = 0,
          winograd = 0;
};

/// Rewrites every f32 convolution generic (and max pooling) of `func`:
/// depthwise convolutions and poolings to row FMAs (narrow depthwise rows to
/// shifted rows), the others to positions x channels for small images,
/// shifted rows at stride 1 when they waste little, or im2col + a grouped
/// matmul. What matches none of them is left as it is.
ConvRewriteCounts rewriteConvolutions(mlir::func::FuncOp func,
                                      const ConvRewriteOptions &options);

} // namespace kiln

#endif // KILN_CODEGEN_CPU_CONVTOMATMUL_H

//===- FuseEpilogues.h - elementwise epilogues onto contractions ----------===//
//
// Part of kiln-schedule-matmul: the elementwise op that consumes a matmul's
// (or a convolution's) result, bias, activation, residual add, is rewritten
// into the contraction's own index space and made to update its output in
// place, so that the schedule can compute it per output tile while the tile
// is still in cache, instead of as another pass over the whole output.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_FUSEEPILOGUES_H
#define KILN_CODEGEN_CPU_FUSEEPILOGUES_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::linalg {
class GenericOp;
class LinalgOp;
} // namespace mlir::linalg

namespace kiln {

/// When the result of the contraction `mm` (one result) reaches, through
/// reshapes used once (and at most one slice keeping the start of every
/// dim), exactly one all-parallel f32 generic with an identity output map,
/// as an input or as that output, and every other operand of that generic
/// can be indexed by the contraction's output dims (an identity operand of
/// the same elements, or one broadcast along whole output dims such as a
/// per-channel bias), replaces the generic by one over the contraction's
/// output shape whose output is the contraction's result (updated in
/// place), followed by the same reshapes (and slice) back. Fails, changing
/// nothing, otherwise.
mlir::FailureOr<mlir::linalg::GenericOp>
moveEpilogueOntoContraction(mlir::RewriterBase &rewriter,
                            mlir::linalg::LinalgOp mm);

/// Whether emitEpilogueRow can compute `epi` (a generic from
/// moveEpilogueOntoContraction) on vectors along its loop `vectorDim`:
/// every input read contiguously along that loop or independent of it,
/// every body op elementwise arith or math on f32 (or i1 conditions).
bool canEmitEpilogueRow(mlir::linalg::GenericOp epi, unsigned vectorDim);

/// Computes `epi` on `acc`, a 1-D vector of the output elements starting
/// at `ivs` (one index per loop of `epi`; the one of `vectorDim` is the
/// first lane's), reading its other inputs there, and returns the result.
/// `epi` itself is left in place for the caller to replace.
mlir::Value emitEpilogueRow(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::linalg::GenericOp epi, mlir::Value acc,
                            mlir::ValueRange ivs, unsigned vectorDim);

} // namespace kiln

#endif // KILN_CODEGEN_CPU_FUSEEPILOGUES_H

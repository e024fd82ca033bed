//===- Differentiate.h - reverse-mode gradients of kiln ops -----*- C++ -*-===//
//
// The algorithm behind kiln-generate-gradients, callable on its own: the
// ONNX importer uses it for the Gradient op of ai.onnx.preview.training,
// which asks for gradients in the middle of a graph.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_DIFFERENTIATE_H
#define KILN_PASSES_DIFFERENTIATE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Builds, at `builder`'s insertion point, the gradients of `y` with respect
/// to each of `xs`, seeding `y`'s gradient with `seed` (a value of y's type,
/// built before the insertion point). `ops` is the forward computation in
/// order; every op in it precedes the insertion point. Each op between y and
/// an x supplies its vector-Jacobian product through GradientOpInterface;
/// contributions to a value used several times are summed. `gradients` gets
/// one value per x, null where y does not depend on that x. Fails, with an
/// error on the op naming y by `yName`
/// (e.g. "the loss 'loss'"), when an op on a path has no rule.
/// `numGradientOps`, when given, counts the rules applied.
mlir::LogicalResult buildGradients(
    mlir::OpBuilder &builder, llvm::iterator_range<mlir::Block::iterator> ops,
    mlir::Value y, mlir::Value seed, llvm::ArrayRef<mlir::Value> xs,
    llvm::StringRef yName, llvm::SmallVectorImpl<mlir::Value> &gradients,
    uint64_t *numGradientOps = nullptr);

/// Whether `v` holds floats that kiln differentiates (not the storage-only
/// narrow types).
bool isDifferentiable(mlir::Value v);

} // namespace kiln

#endif // KILN_PASSES_DIFFERENTIATE_H

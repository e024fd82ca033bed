//===- ConstantEvaluator.h - evaluate kiln ops on constants -----*- C++ -*-===//
//
// Computes the value of a kiln op whose operands are all known at compile
// time: the one definition of what each op computes. The graph pass
// kiln-fold-constants and the ops' fold() methods (KilnOps.cpp) both call
// it; a folder adds only algebra (x + 0, x op x). It works on attributes
// only and never creates ops. Floats are
// computed in their element type (APFloat with the type's semantics, so f32
// rounds like f32); transcendental functions are computed in double and
// rounded once to the element type. Anything it does not model (narrow
// storage types in arithmetic, conv, pool, integer division by zero) gives
// null, and the op stays for run time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_CONSTANTEVALUATOR_H
#define KILN_IR_CONSTANTEVALUATOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace kiln {

/// The value of a constant attribute (dense or dense_resource) as a
/// DenseElementsAttr, or null when it is neither or has more than
/// `maxElements` elements. Resource blobs are copied, hence the limit.
mlir::DenseElementsAttr asDenseElements(mlir::Attribute value,
                                        int64_t maxElements);

/// The value of `op`'s single result given the values of its operands, or
/// null when the op is not evaluated (unsupported op or element type, a
/// result of more than `maxElements` elements, undefined behaviour).
mlir::DenseElementsAttr
evaluateConstantOp(mlir::Operation *op,
                   llvm::ArrayRef<mlir::DenseElementsAttr> operands,
                   int64_t maxElements);

/// The value of `op` where it moves or scales weight-sized data (reshape,
/// transpose; f32 and f64 add, sub, mul and div), computed from its
/// operands' bytes (dense or dense_resource) and made by makeConstantAttr
/// (kiln/IR/ConstantBlobs.h), a blob when large: neither the operands nor
/// the result become attributes MLIR keeps for the context's life. Null for
/// any other op or operand, and for a dense reshape (which is free).
mlir::TypedAttr
evaluateLargeConstantOp(mlir::Operation *op,
                        llvm::ArrayRef<mlir::Attribute> operands);

/// A hash of a constant's type and contents (not of the attribute's address):
/// equal for equal values whatever their storage (splat or not, dense or
/// dense_resource). Null attributes hash to a fixed value.
llvm::hash_code hashConstantContents(mlir::ElementsAttr value);

/// True when both constants have the same type and the same elements, bit for
/// bit (so -0.0 differs from 0.0 and equal NaN payloads match).
bool equalConstantContents(mlir::ElementsAttr a, mlir::ElementsAttr b);

} // namespace kiln

#endif // KILN_IR_CONSTANTEVALUATOR_H

//===- SymbolicDims.h - sizes over symbolic dimensions in types -*- C++ -*-===//
//
// Decision 0027: a tensor whose sizes depend on a symbolic dimension keeps
// the sizes at the symbols' upper bounds in its shape and states each size
// as a kiln::DimExpr in a #kiln.dims encoding. These helpers read and build
// such types, so shape rules handle both kinds through one code path: a
// static size is a constant expression.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_SYMBOLICDIMS_H
#define KILN_IR_SYMBOLICDIMS_H

#include "kiln/Passes/DimExpr.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/SmallVector.h"

namespace kiln {

/// True when `type` is a tensor with a #kiln.dims encoding.
bool hasSymbolicDims(mlir::Type type);
/// True when any of `types` has symbolic dimensions.
bool anySymbolicDims(mlir::TypeRange types);

/// The sizes of a ranked tensor type as expressions: its #kiln.dims
/// encoding, or its static sizes as constants.
llvm::SmallVector<DimExpr> dimExprs(mlir::Type type);

/// A tensor type of the bound sizes `shape`, with `sizes` as its #kiln.dims
/// encoding when any of them is not a constant (no encoding otherwise).
mlir::RankedTensorType symbolicTensorType(llvm::ArrayRef<int64_t> shape,
                                          llvm::ArrayRef<DimExpr> sizes,
                                          mlir::Type elementType);

/// `type` with its element type replaced, keeping the encoding.
mlir::RankedTensorType withElementType(mlir::RankedTensorType type,
                                       mlir::Type elementType);

/// The numpy broadcast of symbolic sizes: a size stretches only when it is
/// the constant 1, and two sizes agree only when their expressions are equal
/// (batch and seq never broadcast, whatever their run-time values); nullopt
/// when they do not broadcast.
std::optional<llvm::SmallVector<DimExpr>>
broadcastDims(llvm::ArrayRef<DimExpr> lhs, llvm::ArrayRef<DimExpr> rhs);

/// Text for diagnostics: `[batch, 784]`.
std::string dimsString(llvm::ArrayRef<DimExpr> sizes);

} // namespace kiln

#endif // KILN_IR_SYMBOLICDIMS_H

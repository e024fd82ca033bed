//===- NarrowTypes.h - storage and conversion of narrow types ---*- C++ -*-===//
//
// The 8- and 4-bit floats and the 4- and 2-bit integers (kiln::isNarrowType)
// have no arithmetic in LLVM, so lowered code keeps them as one i8 per
// element: float bit patterns (zero-extended), integer values (sign- or
// zero-extended). Casts to and from them are built here from integer and
// f32/f64 arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_NARROWTYPES_H
#define KILN_CODEGEN_NARROWTYPES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace kiln {

/// The i8 storage of a narrow constant's elements.
mlir::DenseElementsAttr narrowToStorage(mlir::DenseElementsAttr value);

/// The values of a narrow float type's 2^width bit patterns, as an f32
/// tensor constant that decoding indexes.
mlir::Value narrowFloatTable(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::FloatType type);

/// Decodes the i8 storage `bits` of a narrow float through `table`
/// (narrowFloatTable) into an f32.
mlir::Value decodeNarrowFloat(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value bits, mlir::Value table,
                              mlir::FloatType type);

/// Encodes the f64 `x` as the i8 storage of narrow float `type`, with
/// kiln.cast's rounding and saturation rules.
mlir::Value encodeNarrowFloat(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value x, mlir::FloatType type,
                              bool saturate, llvm::StringRef roundMode);

/// Wraps the i32 `x` to a `width`-bit integer held in i8 (sign-extended when
/// `isSigned`, else zero-extended).
mlir::Value wrapNarrowInt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                          unsigned width, bool isSigned);

} // namespace kiln

#endif // KILN_CODEGEN_NARROWTYPES_H

//===- KilnOps.h - ops of the kiln dialect ----------------------*- C++ -*-===//
//
// Declares the ops generated from KilnOps.td and the shape helpers they share
// with the importer and the lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNOPS_H
#define KILN_IR_KILNOPS_H

#include "kiln/IR/KilnDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace kiln {

/// The numpy broadcast of two shapes, or nullopt when they are incompatible.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// The shape of reducing `shape` over `axes` (sorted, in range).
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> axes,
                                        bool keepDims);

/// True for the storage-only element types (the 8- and 4-bit floats, the 4-
/// and 2-bit integers): constants, casts and data movement accept them,
/// arithmetic does not; memory holds one byte per element.
bool isNarrowType(mlir::Type t);

} // namespace kiln

#include "kiln/IR/KilnEnums.h.inc"

#define GET_OP_CLASSES
#include "kiln/IR/KilnOps.h.inc"

namespace kiln {

/// The sizes computed from data (decision 0031) that `op` computes, by
/// their symbols: NonZero's and NMS's counts, a TopK's run-time k, a
/// slice_to's size, the differing axes of a choose. Empty for other ops.
llvm::SmallVector<llvm::StringRef> computedSizesOf(mlir::Operation *op);

} // namespace kiln

#endif // KILN_IR_KILNOPS_H

//===- KilnDialect.h - the kiln dialect -------------------------*- C++ -*-===//
//
// Declares the dialect class generated from KilnBase.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNDIALECT_H
#define KILN_IR_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "kiln/IR/KilnDialect.h.inc"

#include "llvm/ADT/StringRef.h"

namespace kiln {

// Attributes on the arguments and results of a kiln function, shared by the
// importer, the graph passes and code generation.

/// The ONNX value an argument or result stands for.
inline constexpr llvm::StringLiteral kNameAttr = "kiln.name";
/// An argument to differentiate (an initializer imported as an input).
inline constexpr llvm::StringLiteral kParameterAttr = "kiln.parameter";
/// The role of a training step's state argument or result: "parameter",
/// "moment" or "step" (kiln-apply-optimizer).
inline constexpr llvm::StringLiteral kStateAttr = "kiln.state";
/// A parameter's starting value, for the state's initializer.
inline constexpr llvm::StringLiteral kInitialValueAttr = "kiln.initial_value";
/// On a kiln.all_reduce made by kiln-bucket-all-reduce: its bucket's index,
/// the order of the buckets' collective calls.
inline constexpr llvm::StringLiteral kBucketAttr = "kiln.bucket";

} // namespace kiln

#endif // KILN_IR_KILNDIALECT_H

//===- KilnDialect.h - the kiln dialect -------------------------*- C++ -*-===//
//
// Declares the dialect class generated from KilnBase.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNDIALECT_H
#define KILN_IR_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/TensorEncoding.h"

#include "kiln/IR/KilnDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/IR/KilnAttrs.h.inc"

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
/// On a function: its symbolic dimensions and their ranges (`kilnc --dim
/// NAME=LO..HI`), a dictionary from name to [lo, hi] (decision 0027).
inline constexpr llvm::StringLiteral kSymbolsAttr = "kiln.symbols";
/// On a function: the symbols of kiln.symbols that ops compute from data
/// (decision 0031), in the order the artifact reports them; each is the
/// `count` of the one op that defines it (kiln.non_zero).
inline constexpr llvm::StringLiteral kComputedSymbolsAttr =
    "kiln.computed_symbols";

} // namespace kiln

#endif // KILN_IR_KILNDIALECT_H

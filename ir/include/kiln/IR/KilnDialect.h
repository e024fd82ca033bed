//===- KilnDialect.h - the kiln dialect --------------------------*- C++ -*-===//
//
// Declares the dialect class generated from KilnBase.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNDIALECT_H
#define KILN_IR_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "kiln/IR/KilnDialect.h.inc"

#endif // KILN_IR_KILNDIALECT_H

//===- Rematerialize.h - kiln-rematerialize as a function -------*- C++ -*-===//
//
// The work of the kiln-rematerialize pass on one function, callable without
// a pass manager, for drivers that need its numbers: the compiler tries
// several budgets on copies of a module and keeps the one whose planned
// arena fits (compiler/lib/Compiler.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_REMATERIALIZE_H
#define KILN_PASSES_REMATERIALIZE_H

#include "kiln/Passes/Rematerializer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

struct RematerializeReport {
  uint64_t peakBefore = 0;  ///< estimated peak live bytes before
  uint64_t peakAfter = 0;   ///< estimated peak live bytes after
  size_t numRecomputed = 0; ///< values recomputed
  size_t numCopies = 0;     ///< ops added to recompute them
  bool fits = false;        ///< peakAfter <= options.budget
};

/// Recomputes values of `func`'s entry block, in its current order, until
/// the estimated peak of live bytes is at most `options.budget` (see the
/// kiln-rematerialize pass). With `remarks`, emits a remark at every op it
/// adds. Emits no other diagnostic.
RematerializeReport rematerializeFunction(mlir::func::FuncOp func,
                                          const RematOptions &options,
                                          bool remarks = false);

} // namespace kiln

#endif // KILN_PASSES_REMATERIALIZE_H

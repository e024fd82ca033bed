//===- MemoryBudget.h - --memory-budget's search ----------------*- C++ -*-===//
//
// The driver's search for a recomputation target that fits --memory-budget,
// a unit of its own: the driver calls it between the graph stage and
// fusion, and it decides the remat target and whether the compile fuses.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_MEMORYBUDGET_H
#define KILN_COMPILER_MEMORYBUDGET_H

#include "kiln/Compiler/Compiler.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace kiln {

struct CpuCodegenOptions;

/// --memory-budget: picks the target of kiln-rematerialize whose planned
/// arena fits the budget and applies it to `module` (the graph after the
/// graph pipeline, before fusion). Each target is tried fused and unfused
/// and the smaller arena decides whether the compile fuses. The pass works from
/// a graph-level estimate that misses what lowering adds (im2col and packing
/// buffers) and what the planner saves (in-place writes), so each try runs on a
/// copy of the module lowered as far as its real arena is decided: first
/// without recomputation (a budget the arena already meets changes nothing),
/// then with the budget as the target, then with the target lowered by the
/// arena's overshoot, at most four tries (kMaxBudgetTries) with recomputation.
/// The smallest arena wins, the earliest try on a tie; a try that does not beat
/// the arena without recomputation is never applied. When even the winner does
/// not fit, a warning says so: the artifact is valid, only its arena is larger
/// than asked.
///
/// `name` is the artifact's C prefix; `gpuArchs` --target=cuda's
/// architectures, lowest first (empty for the CPU). Sets `fuse` to whether
/// the compile goes on fused.
mlir::LogicalResult fitMemoryBudget(mlir::ModuleOp module,
                                    const CompileOptions &options,
                                    llvm::StringRef name,
                                    const CpuCodegenOptions &cg,
                                    llvm::ArrayRef<std::string> gpuArchs,
                                    mlir::Location fileLoc, bool &fuse);

} // namespace kiln

#endif // KILN_COMPILER_MEMORYBUDGET_H

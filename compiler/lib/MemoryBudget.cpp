//===- MemoryBudget.cpp - --memory-budget's search ------------------------===//
//
// The search over kiln-rematerialize's targets that kilnc runs for
// --memory-budget (MemoryBudget.h says what it decides). Each try lowers a
// copy of the graph only as far as its arena is decided: the CPU up to
// kiln-plan-memory (planCpuArena), the CUDA target through its printer,
// whose library steps add their workspace to the arena.
//
//===----------------------------------------------------------------------===//

#include "MemoryBudget.h"

#include "kiln/Codegen/CpuCodegen.h"
#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/Passes/Rematerialize.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <optional>

using namespace mlir;
using namespace kiln;

static constexpr unsigned kMaxBudgetTries = 4;

LogicalResult kiln::fitMemoryBudget(ModuleOp module,
                                    const CompileOptions &options,
                                    llvm::StringRef name,
                                    const CpuCodegenOptions &cg,
                                    ArrayRef<std::string> gpuArchs,
                                    Location fileLoc, bool &fuse) {
  uint64_t budget = *options.memoryBudget;
  CpuCodegenOptions quiet = cg;
  quiet.configurePassManager = nullptr; // no IR dumps or timings of tries
  // The planned arena with kiln-rematerialize{budget=target} (none without
  // a target), fused or not, and whether the pass met its target.
  auto tryOne = [&](std::optional<uint64_t> target,
                    bool fused) -> FailureOr<std::pair<uint64_t, bool>> {
    OwningOpRef<ModuleOp> copy = module.clone();
    bool met = true;
    if (target)
      if (auto main = copy->lookupSymbol<func::FuncOp>("main")) {
        RematOptions remat;
        remat.budget = *target;
        met = rematerializeFunction(main, remat).fits;
      }
    // As compileModel goes on after this: buckets, then fusion.
    PassManager fusePM(copy->getContext(), "builtin.module");
    if (options.dataParallel)
      buildBucketPipeline(fusePM, options.bucketBytes);
    if (fused)
      buildFusionPipeline(fusePM);
    if (failed(fusePM.run(*copy)))
      return failure();
    ArtifactInfo info;
    info.name = name.str();
    if (!gpuArchs.empty()) {
      // The device arena: the same plan with the CUDA target's alignment.
      CudaCodegenOptions cuda;
      cuda.gpuArch = gpuArchs.front();
      cuda.cublasLt = options.cublasLt; // the workspace counts
      cuda.cudnn = options.cudnn;
      CudaProgram program;
      if (failed(lowerToCuda(*copy, "main", info, program, cuda)))
        return failure();
    } else if (failed(planCpuArena(*copy, "main", info, quiet))) {
      // The CPU arena is fixed once planned: the try lowers no further.
      return failure();
    }
    return std::make_pair(info.arenaBytes, met);
  };
  // Fusion keeps a kernel's inner values out of memory but stores what a
  // recomputed copy would read, so a target whose fused arena misses the
  // budget is also tried unfused; the smaller arena wins, fused on a tie
  // (and always fused when that fits, so a budget already met changes
  // nothing).
  struct Try {
    uint64_t arena;
    bool met, fused;
  };
  auto tryTarget = [&](std::optional<uint64_t> target) -> FailureOr<Try> {
    std::optional<Try> best;
    for (bool fused : {true, false}) {
      if (fused && !fuse)
        continue;
      auto r = tryOne(target, fused);
      if (failed(r))
        return failure();
      if (!best || r->first < best->arena)
        best = Try{r->first, r->second, fused};
      if (best->arena <= budget)
        break;
    }
    return *best;
  };

  auto plain = tryTarget(std::nullopt);
  if (failed(plain))
    return failure();
  uint64_t plainArena = plain->arena, bestArena = plainArena;
  bool bestFused = plain->fused;
  std::optional<uint64_t> bestTarget;
  uint64_t target = budget;
  for (unsigned i = 0; i < kMaxBudgetTries && bestArena > budget; ++i) {
    auto tried = tryTarget(target);
    if (failed(tried))
      return failure();
    if (tried->arena < bestArena) {
      bestArena = tried->arena;
      bestTarget = target;
      bestFused = tried->fused;
    }
    // The pass stops where no recomputation lowers its estimate, whatever
    // the target: a lower target would give the same graph.
    if (!tried->met || tried->arena <= budget ||
        tried->arena - budget >= target)
      break;
    target -= tried->arena - budget;
  }
  fuse = bestFused;

  if (bestTarget) {
    PassManager pm(module.getContext(), "builtin.module");
    buildRematerializationPipeline(pm, *bestTarget);
    if (options.configurePassManager)
      options.configurePassManager(pm);
    // The pass warns about its estimate; the warning below about the real
    // arena replaces it.
    ScopedDiagnosticHandler dropWarnings(
        module.getContext(), [](Diagnostic &d) {
          return success(d.getSeverity() == DiagnosticSeverity::Warning);
        });
    if (failed(pm.run(module)) || failed(verify(module)))
      return failure();
  }
  if (bestArena > budget) {
    InFlightDiagnostic warning = emitWarning(fileLoc)
                                 << "the planned arena takes " << bestArena
                                 << " bytes, more than the memory budget of "
                                 << budget << " bytes";
    if (bestArena < plainArena)
      warning << " (recomputing values lowered it from " << plainArena
              << " bytes)";
    else
      warning << " (recomputing values does not lower it)";
  }
  return success();
}

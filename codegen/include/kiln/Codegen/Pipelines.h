//===- Pipelines.h - the lowering pipelines ---------------------*- C++ -*-===//
//
// The one place where the passes from the fused graph to code are put in
// order: storage planning (both targets), the CPU lowering to the LLVM
// dialect and the CUDA lowering to generalized linalg on memrefs. kilnc
// runs these builders; kiln-opt runs the same builders through the
// registered pipelines (kiln/Compiler/Pipeline.h registers them).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_PIPELINES_H
#define KILN_CODEGEN_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace kiln {

struct CpuCodegenOptions;
class MemoryPlanSink;

/// The CPU lowering's choices that depend on the target: the matmul register
/// tile (m x n accumulators, sized to the vector registers) and cache
/// blocking, and the arena's alignment.
struct CpuLoweringOptions {
  int64_t tileM = 4, tileN = 8;
  int64_t cacheM = 64, cacheN = 256, cacheK = 256;
  int64_t arenaAlignment = 64;
};

/// The tile kilnc uses for `target` (its --cpu and --features), whose
/// vector registers decide the register tile.
llvm::Expected<CpuLoweringOptions>
cpuLoweringOptionsFor(const CpuCodegenOptions &target);

/// Bufferization with destination-passing results written into the
/// caller's buffers, then kiln-plan-memory placing every remaining
/// allocation in one arena of `arenaAlignment`-aligned buffers. Both
/// targets run it, so they plan the same buffers for the same graph. With
/// `plans`, each function's plan is delivered there as data (MemoryPlan.h);
/// every builder below passes it on. With `stateInPlace` (the CPU's), a
/// training step's state tensors are updated in the caller's state buffer
/// where bufferization finds that safe (kiln-state-in-place,
/// kiln-drop-state-copies); the CUDA lowering keeps every new state in the
/// arena. With `cuda`, a padded convolution's outputs are allocated before
/// its pad copy (kiln-hoist-conv-outputs), so that cuDNN can read the
/// copy's source: the CUDA plan may then differ from the CPU's there.
mlir::LogicalResult buildStoragePipeline(mlir::OpPassManager &pm,
                                         int64_t arenaAlignment,
                                         MemoryPlanSink *plans = nullptr,
                                         bool stateInPlace = false,
                                         bool cuda = false);

/// The CPU lowering up to and including the arena plan: what a
/// --memory-budget try lowers, since nothing after the plan changes the
/// arena.
mlir::LogicalResult buildCpuPlanningPipeline(mlir::OpPassManager &pm,
                                             const CpuLoweringOptions &options,
                                             MemoryPlanSink *plans = nullptr);

/// kiln dialect (fused) to the LLVM dialect for the CPU.
mlir::LogicalResult buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                                             const CpuLoweringOptions &options,
                                             MemoryPlanSink *plans = nullptr);

/// kiln dialect (fused) to generalized linalg on memrefs, which the CUDA C
/// printer reads.
mlir::LogicalResult buildCudaLoweringPipeline(mlir::OpPassManager &pm,
                                              int64_t arenaAlignment,
                                              MemoryPlanSink *plans = nullptr);

/// The textual forms of the same pipelines (for messages and
/// --mlir-print-ir-* readers); the builders parse exactly these.
std::string storagePipelineText(int64_t arenaAlignment,
                                bool stateInPlace = false, bool cuda = false);
std::string cpuLoweringPipelineText(const CpuLoweringOptions &options);
std::string cudaLoweringPipelineText(int64_t arenaAlignment);

} // namespace kiln

#endif // KILN_CODEGEN_PIPELINES_H

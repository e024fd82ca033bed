//===- Pipelines.cpp - the lowering pipelines -----------------------------===//
//
// Storage planning, the CPU lowering and the CUDA lowering, each defined
// once. Each step says why it sits where it does. The steps are written as
// pipeline text (upstream passes with options read best that way) and
// parsed into the caller's pass manager, except kiln-plan-memory, which is
// created in code when the caller wants its plan as data (a sink); a
// pipeline that does not parse is a bug the unit and lit tests catch on
// every build.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Pipelines.h"
#include "CPU/MatmulSchedule.h"
#include "kiln/Codegen/CpuCodegen.h"
#include "kiln/Codegen/MemoryPlan.h"
#include "kiln/Codegen/Passes.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace mlir;

namespace {

/// Upstream and kiln codegen passes are registered once, so that pipeline
/// text parses by name.
void registerPassesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerAllPasses();
    kiln::registerKilnCodegenPasses();
  });
}

LogicalResult parseInto(OpPassManager &pm, const std::string &text) {
  registerPassesOnce();
  std::string message;
  llvm::raw_string_ostream os(message);
  return parsePassPipeline(text, pm, os);
}

} // namespace

llvm::Expected<kiln::CpuLoweringOptions>
kiln::cpuLoweringOptionsFor(const CpuCodegenOptions &target) {
  auto tm = createCpuTargetMachine(target);
  if (!tm)
    return tm.takeError();
  MatmulTile tile = selectMatmulTile(*(*tm)->getMCSubtargetInfo());
  CpuLoweringOptions options;
  options.tileM = tile.m;
  options.tileN = tile.n;
  options.cacheM = tile.cacheM;
  options.cacheN = tile.cacheN;
  options.cacheK = tile.cacheK;
  options.arenaAlignment = target.arenaAlignment;
  return options;
}

namespace {

/// The storage pipeline up to kiln-plan-memory; with `stateInPlace` (the
/// CPU, after kiln-state-in-place), the state tensors a training step
/// updated in the caller's buffer are found and their copies dropped.
std::string bufferizationText(bool stateInPlace, bool cuda = false) {
  return std::string() +
         // One buffer per tensor; results become out-params written in place
         // by their producers (hoist-static-allocs), so outputs are computed
         // directly into the caller's buffers, reshaped ones too
         // (kiln-results-in-place).
         "func.func(kiln-results-in-place),"
         "one-shot-bufferize{bufferize-function-boundaries "
         "function-boundary-type-conversion=identity-layout-map},"
         // Canonicalized without region simplification, as the schedules'
         // (decision 0030): every region has one block until SCF becomes
         // CF, and simplifyRegions' walks of the whole entry were ~2% of a
         // MobileNetV2 compile for no change to any object.
         "canonicalize{region-simplify=disabled},cse,"
         "buffer-results-to-out-params{hoist-static-allocs "
         "modify-public-functions}," +
         (stateInPlace ? "func.func(kiln-drop-state-copies)," : "") +
         // A data-parallel step waits for a bucket's all-reduce only
         // where its buffers are next touched; the plan then keeps them
         // alive until the wait.
         "func.func(kiln-sink-all-reduce-waits),"
         // Buffers the schedules made inside the loops over run-time sizes
         // (kiln-tile-dynamic-sizes: a convolution's im2col copy per
         // image) out of them, to the top level the arena plan places.
         "func.func(buffer-loop-hoisting)" +
         // CUDA: a padded convolution's outputs apart from its pad copy's
         // source, which cuDNN then reads instead of the copy.
         (cuda ? ",func.func(kiln-hoist-conv-outputs)" : "");
}

/// What is still allocated is an intermediate: into the arena.
std::string planMemoryText(int64_t arenaAlignment) {
  return "func.func(kiln-plan-memory{alignment=" +
         std::to_string(arenaAlignment) + "})";
}

/// After planning, the views' offsets fold into their users (no region
/// simplification, as above).
constexpr const char *kAfterPlanText = "canonicalize{region-simplify=disabled}";

/// The CPU lowering before storage: kernels marked, linalg on tensors,
/// matmul tiles and vector code chosen.
std::string cpuBeforeStorageText(const kiln::CpuLoweringOptions &options) {
  std::string scheduleOptions = "tile-m=" + std::to_string(options.tileM) +
                                " tile-n=" + std::to_string(options.tileN) +
                                " cache-m=" + std::to_string(options.cacheM) +
                                " cache-n=" + std::to_string(options.cacheN) +
                                " cache-k=" + std::to_string(options.cacheK);
  return std::string() +
         // A probe call between each two kernels, for per-kernel profiles
         // (kiln_model_run_profiled); kept in place by everything below.
         "kiln-mark-kernels,"
         // kiln ops to structured ops on tensors.
         "func.func(kiln-lower-to-linalg),"
         // A training step's updates write the old state's tensor where
         // nothing reads it later (found in place after bufferization by
         // kiln-drop-state-copies).
         "func.func(kiln-state-in-place),"
         // A concat that extends another (DenseNet's blocks) is built in
         // the other's buffer, so each input is copied once.
         "func.func(kiln-share-concat-prefixes),"
         // Ops over run-time sizes (kilnc --dim NAME=LO..HI) to loops over
         // tiles of static shapes, which the schedules below take.
         "func.func(kiln-tile-dynamic-sizes{tile-m=" +
         std::to_string(options.tileM) +
         " tile-n=" + std::to_string(options.tileN) +
         " cache-m=" + std::to_string(options.cacheM) +
         "}),"
         // The steps of the matmul schedule that read the weights' values
         // (convolutions rewritten, weights packed), on the whole function.
         "func.func(kiln-schedule-matmul{" +
         scheduleOptions +
         " prepare-only=1}),"
         // Each kernel into a function that identical kernels share, so
         // that the schedules below run once per distinct kernel.
         "kiln-outline-kernels,"
         // Matmuls to register tiles of vector.fma for this target; on
         // tensors, where the accumulators can be hoisted out of the k loop.
         "func.func(kiln-schedule-matmul{" +
         scheduleOptions +
         "}),"
         // Elementwise nests (fused or not) to vector code: the register
         // tile's width, the innermost loop peeled so all tiles are static.
         "func.func(kiln-vectorize-elementwise{width=" +
         std::to_string(options.tileN) +
         "}),"
         // Each call of a shared kernel back to a copy of its body, for
         // storage planning over the whole function.
         "kiln-inline-kernels";
}

/// The CPU lowering after storage, to the LLVM dialect.
std::string cpuAfterStorageText() {
  return std::string() +
         // Copies between strided views would call MLIR's C runtime.
         "func.func(kiln-lower-copies),"
         // Register tiles' k loops fetch the next k tile's rows of B ahead.
         "func.func(kiln-prefetch-panels),"
         // The structured ops left (padding copies, layout transposes,
         // fills, pooling) to loops before outlining, so that the same op at
         // the same shapes shares one function instead of getting its code
         // generated at every use.
         "func.func(convert-linalg-to-loops),"
         // Parallel loops into bodies over index ranges, which the entry
         // points run on the caller's threads; after arena planning, which
         // needs the whole schedule in one function.
         "kiln-outline-parallel-loops,"
         // The probes get the caller's profiler, a last argument.
         "kiln-instrument-kernels,"
         // The bucket calls get the caller's collectives, the argument
         // after the profiler.
         "kiln-connect-collectives,"
         // The LLVM dialect. Math on f16/bf16 computes in f32;
         // integer powers become outlined functions; the rest goes to LLVM
         // intrinsics, and what has none (asin, atan, ...) to libm calls.
         // Vector transfers to 1-D loads and stores (still on memrefs).
         // The passes that need no other function run nested in each
         // func.func, so MLIR runs the outlined functions on its threads
         // (kilnc -j); the ones that add or convert functions and globals
         // run on the module between them.
         "func.func(convert-vector-to-scf{full-unroll=true target-rank=1},"
         "math-extend-to-supported-types,"
         // exp, log, tanh, erf, ... as polynomials LLVM can vectorize,
         // not a libm call per element.
         "kiln-approximate-math),"
         "convert-math-to-funcs,"
         "func.func(expand-strided-metadata,lower-affine,convert-scf-to-cf,"
         "convert-math-to-llvm),"
         "convert-math-to-libm,"
         // bf16 arithmetic computes in f32, and bf16 conversions become
         // integer code: LLVM would call libgcc's __truncsfbf2, which older
         // toolchains lack.
         "func.func(arith-emulate-unsupported-floats{source-types=bf16 "
         "target-type=f32},"
         "arith-expand{include-bf16=true},"
         // Row reductions as trees, not one ordered add per lane
         // (kiln-vectorize-elementwise).
         "convert-vector-to-llvm{reassociate-fp-reductions=1},"
         "convert-arith-to-llvm,convert-ub-to-llvm),"
         "finalize-memref-to-llvm,"
         // Bare pointers: every memref is static, so the kernel takes plain
         // `T*` arguments, the same as the C entry point.
         "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
         "convert-cf-to-llvm,llvm.func(convert-index-to-llvm),"
         "reconcile-unrealized-casts";
}

/// The CUDA lowering before storage: kiln ops to structured ops on
/// tensors, as for the CPU.
constexpr const char *kCudaBeforeStorageText =
    "func.func(kiln-lower-to-linalg)";

/// The CUDA lowering after storage. Storage is the CPU path's
/// bufferization and arena plan, so both targets plan the same buffers;
/// 256-byte alignment gives every buffer the alignment cudaMalloc gives.
/// Then copies, fills, matmuls, transposes: all linalg.generic, so the
/// printer knows one structured op.
constexpr const char *kCudaAfterStorageText =
    "func.func(kiln-lower-copies),"
    "func.func(linalg-generalize-named-ops),"
    "lower-affine,canonicalize";

} // namespace

std::string kiln::storagePipelineText(int64_t arenaAlignment, bool stateInPlace,
                                      bool cuda) {
  return bufferizationText(stateInPlace, cuda) + "," +
         planMemoryText(arenaAlignment) + "," + kAfterPlanText;
}

std::string kiln::cpuLoweringPipelineText(const CpuLoweringOptions &options) {
  return cpuBeforeStorageText(options) + "," +
         storagePipelineText(options.arenaAlignment, /*stateInPlace=*/true) +
         "," + cpuAfterStorageText();
}

std::string kiln::cudaLoweringPipelineText(int64_t arenaAlignment) {
  return std::string(kCudaBeforeStorageText) + "," +
         storagePipelineText(arenaAlignment, /*stateInPlace=*/false,
                             /*cuda=*/true) +
         "," + kCudaAfterStorageText;
}

LogicalResult kiln::buildStoragePipeline(OpPassManager &pm,
                                         int64_t arenaAlignment,
                                         MemoryPlanSink *plans,
                                         bool stateInPlace, bool cuda) {
  if (!plans)
    return parseInto(pm,
                     storagePipelineText(arenaAlignment, stateInPlace, cuda));
  if (failed(parseInto(pm, bufferizationText(stateInPlace, cuda))))
    return failure();
  pm.addNestedPass<func::FuncOp>(createPlanMemoryPass(arenaAlignment, plans));
  return parseInto(pm, kAfterPlanText);
}

LogicalResult kiln::buildCpuPlanningPipeline(OpPassManager &pm,
                                             const CpuLoweringOptions &options,
                                             MemoryPlanSink *plans) {
  if (failed(parseInto(pm, cpuBeforeStorageText(options))))
    return failure();
  return buildStoragePipeline(pm, options.arenaAlignment, plans,
                              /*stateInPlace=*/true);
}

LogicalResult kiln::buildCpuLoweringPipeline(OpPassManager &pm,
                                             const CpuLoweringOptions &options,
                                             MemoryPlanSink *plans) {
  if (failed(buildCpuPlanningPipeline(pm, options, plans)))
    return failure();
  return parseInto(pm, cpuAfterStorageText());
}

LogicalResult kiln::buildCudaLoweringPipeline(OpPassManager &pm,
                                              int64_t arenaAlignment,
                                              MemoryPlanSink *plans) {
  if (failed(parseInto(pm, kCudaBeforeStorageText)) ||
      failed(buildStoragePipeline(pm, arenaAlignment, plans,
                                  /*stateInPlace=*/false, /*cuda=*/true)))
    return failure();
  return parseInto(pm, kCudaAfterStorageText);
}

//===- Pipeline.cpp - the graph pipeline ----------------------------------===//
//
// Orders the graph passes, and registers the pipelines kilnc runs so that
// kiln-opt can run them by name. Each step says why it sits where it does.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Pipeline.h"

#include "kiln/Codegen/CpuCodegen.h"
#include "kiln/Codegen/Pipelines.h"
#include "kiln/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

#include <mutex>

void kiln::buildGraphPipeline(mlir::OpPassManager &pm) {
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  // One fixed-point loop of canonicalize, fold-constants, cse and dce
  // (kiln-simplify): identities, constant arithmetic and duplicates shrink the
  // graph every later stage walks, and each of the four exposes work for the
  // others, so they repeat until the function stops changing.
  func.addPass(createSimplify());
  // Scheduling last: the order it picks is the static schedule codegen and
  // the memory planner follow, so it must see the final graph.
  func.addPass(createSchedule());
}

void kiln::buildPrecisionPipeline(mlir::OpPassManager &pm,
                                  llvm::StringRef type) {
  // Before the graph pipeline (and after gradients and the optimizer, so
  // the backward products are narrowed too): its folding turns the casts of
  // constant weights into narrow constants, and CSE merges the casts of a
  // value two products read.
  LowerPrecisionOptions options;
  options.type = type.str();
  pm.nest<mlir::func::FuncOp>().addPass(createLowerPrecision(options));
}

void kiln::buildGradientPipeline(mlir::OpPassManager &pm, llvm::StringRef loss,
                                 llvm::ArrayRef<std::string> wrt) {
  // Differentiate the graph as imported, before folding: the graph pipeline
  // that follows then simplifies forward and backward ops together (seed
  // multiplications by one, transpose pairs) and its DCE removes the operand
  // gradients no parameter needed.
  GenerateGradientsOptions options;
  options.loss = loss.str();
  options.wrt.assign(wrt.begin(), wrt.end());
  pm.nest<mlir::func::FuncOp>().addPass(createGenerateGradients(options));
}

void kiln::buildRematerializationPipeline(mlir::OpPassManager &pm,
                                          uint64_t budget) {
  // After the graph pipeline, never inside it: kiln-cse would merge the
  // copies back into the values they recompute, and kiln-schedule would be
  // free to hoist them next to the originals. Nothing after this pass
  // reorders or merges ops at the graph level, and the lowering's own CSE
  // runs on buffers, where two computations writing two buffers never merge.
  RematerializeOptions options;
  options.budget = budget;
  pm.nest<mlir::func::FuncOp>().addPass(createRematerialize(options));
}

void kiln::buildFusionPipeline(mlir::OpPassManager &pm) {
  // Fusion last, after scheduling and rematerialization: kernels are formed
  // greedily over the final order (a kernel sits where its last op was),
  // recomputed values join the kernels of their late readers, and nothing
  // after it reorders or rewrites the graph, so no pass has to see through
  // kiln.fused regions.
  pm.nest<mlir::func::FuncOp>().addPass(createFuse());
}

void kiln::buildBucketPipeline(mlir::OpPassManager &pm, uint64_t bucketBytes) {
  // On the final schedule, so "as soon as the gradient exists" is a place
  // in the order codegen follows; before fusion, which places kernels where
  // their last op was and so keeps the backward ops after each bucket.
  BucketAllReduceOptions options;
  options.bucketBytes = bucketBytes;
  pm.nest<mlir::func::FuncOp>().addPass(createBucketAllReduce(options));
}

void kiln::buildOptimizerPipeline(mlir::OpPassManager &pm,
                                  const OptimizerOptions &options) {
  // Right after the gradients, still before folding: the update reads the
  // gradients as plain values, and the graph pipeline then simplifies and
  // schedules forward, backward and update as one graph (a gradient that is
  // only read by its update need never be stored).
  ApplyOptimizerOptions pass;
  pass.optimizer = options.optimizer;
  pass.lr = options.lr;
  pass.momentum = options.momentum;
  pass.beta1 = options.beta1;
  pass.beta2 = options.beta2;
  pass.epsilon = options.epsilon;
  pass.weightDecay = options.weightDecay;
  pm.nest<mlir::func::FuncOp>().addPass(createApplyOptimizer(pass));
}

void kiln::buildGraphStage(mlir::OpPassManager &pm,
                           const GraphStageOptions &options) {
  if (options.gradients)
    buildGradientPipeline(pm, options.loss, options.wrt);
  // The average before the optimizer, which then reads it like a gradient.
  if (options.dataParallel)
    pm.nest<mlir::func::FuncOp>().addPass(createAverageGradients());
  if (options.optimizer)
    buildOptimizerPipeline(pm, *options.optimizer);
  if (options.precision != "fp32")
    buildPrecisionPipeline(pm, options.precision == "fp16" ? "f16" : "bf16");
  buildGraphPipeline(pm);
}

namespace {

using mlir::PassPipelineOptions;

struct GraphPipelineOptions : PassPipelineOptions<GraphPipelineOptions> {
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, fp16 or bf16 (kilnc --precision)"),
      llvm::cl::init("fp32")};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("group the ops into kiln.fused kernels (kilnc "
                     "--no-fuse is fuse=false)"),
      llvm::cl::init(true)};
  Option<bool> gradients{
      *this, "gradients",
      llvm::cl::desc("differentiate first (kilnc grad); the module "
                     "must be imported with the parameters as "
                     "arguments"),
      llvm::cl::init(false)};
  Option<std::string> loss{
      *this, "loss",
      llvm::cl::desc("the result to differentiate (kilnc grad "
                     "--loss; default: the only result)"),
      llvm::cl::init("")};
  ListOption<std::string> wrt{
      *this, "wrt",
      llvm::cl::desc("the arguments to differentiate with "
                     "respect to (default: the parameters)")};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("average the gradients over the ranks and bucket "
                     "their all-reduces (kilnc --data-parallel)"),
      llvm::cl::init(false)};
  Option<uint64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("bytes of gradients per all-reduce bucket (kilnc "
                     "--bucket-bytes)"),
      llvm::cl::init(26214400)};
};

struct CpuPipelineOptions : PassPipelineOptions<CpuPipelineOptions> {
  Option<std::string> cpu{
      *this, "cpu",
      llvm::cl::desc("LLVM CPU whose vector registers size the "
                     "matmul tile (kilnc --cpu)"),
      llvm::cl::init("host")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("extra target features (kilnc --features)"),
      llvm::cl::init("")};
  Option<int64_t> arenaAlignment{
      *this, "arena-alignment",
      llvm::cl::desc("alignment of every arena buffer"), llvm::cl::init(64)};
};

struct CudaPipelineOptions : PassPipelineOptions<CudaPipelineOptions> {
  Option<int64_t> arenaAlignment{
      *this, "arena-alignment",
      llvm::cl::desc("alignment of every arena buffer"), llvm::cl::init(256)};
};

/// Stands in for a pipeline whose options were valid but could not be
/// built (an unknown --cpu): running it reports why, located at the module.
struct ReportPipelineError
    : mlir::PassWrapper<ReportPipelineError, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReportPipelineError)
  explicit ReportPipelineError(std::string message)
      : message(std::move(message)) {}
  llvm::StringRef getArgument() const override {
    return "kiln-report-pipeline-error";
  }
  void runOnOperation() override {
    getOperation()->emitError(message);
    signalPassFailure();
  }
  std::string message;
};

void addOrReport(mlir::OpPassManager &pm, mlir::LogicalResult built,
                 llvm::StringRef pipeline) {
  if (mlir::failed(built))
    pm.addPass(std::make_unique<ReportPipelineError>(
        ("internal error: the " + pipeline + " does not parse").str()));
}

} // namespace

void kiln::registerKilnPipelines() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::PassPipelineRegistration<GraphPipelineOptions>(
        "kiln-graph-pipeline",
        "kilnc's graph stage: gradients (gradients=1), precision, "
        "simplification, "
        "scheduling and fusion, on an imported module (kilnc --emit=import)",
        [](mlir::OpPassManager &pm, const GraphPipelineOptions &o) {
          GraphStageOptions stage;
          stage.gradients = o.gradients;
          stage.loss = o.loss;
          stage.wrt.assign(o.wrt.begin(), o.wrt.end());
          stage.precision = o.precision;
          stage.dataParallel = o.dataParallel;
          buildGraphStage(pm, stage);
          if (o.dataParallel)
            buildBucketPipeline(pm, o.bucketBytes);
          if (o.fuse)
            buildFusionPipeline(pm);
        });
    mlir::PassPipelineRegistration<CpuPipelineOptions>(
        "kiln-cpu-pipeline",
        "kilnc's CPU lowering: the fused graph (kilnc --emit=graph) to the "
        "LLVM dialect, with the arena planned",
        [](mlir::OpPassManager &pm, const CpuPipelineOptions &o) {
          CpuCodegenOptions target;
          target.cpu = o.cpu;
          target.features = o.features;
          target.arenaAlignment = o.arenaAlignment;
          auto lowering = cpuLoweringOptionsFor(target);
          if (!lowering) {
            pm.addPass(std::make_unique<ReportPipelineError>(
                "kiln-cpu-pipeline: " + llvm::toString(lowering.takeError())));
            return;
          }
          addOrReport(pm, buildCpuLoweringPipeline(pm, *lowering),
                      "CPU lowering pipeline");
        });
    mlir::PassPipelineRegistration<CudaPipelineOptions>(
        "kiln-cuda-pipeline",
        "kilnc's CUDA lowering: the fused graph (kilnc --emit=graph "
        "--target=cuda) to generalized linalg on memrefs, with the arena "
        "planned, which the CUDA C printer reads",
        [](mlir::OpPassManager &pm, const CudaPipelineOptions &o) {
          addOrReport(pm, buildCudaLoweringPipeline(pm, o.arenaAlignment),
                      "CUDA lowering pipeline");
        });
  });
}

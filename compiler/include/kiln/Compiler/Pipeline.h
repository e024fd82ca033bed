//===- Pipeline.h - the graph pipeline --------------------------*- C++ -*-===//
//
// The one place where Kiln's graph passes are put in order, and where
// every pipeline kilnc runs is registered for kiln-opt: kiln-graph-pipeline
// (these builders), kiln-cpu-pipeline and kiln-cuda-pipeline (the lowering
// builders of kiln/Codegen/Pipelines.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PIPELINE_H
#define KILN_COMPILER_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// The optimizer of `kilnc train` and its hyper-parameters (the defaults are
/// kiln-apply-optimizer's and PyTorch's).
struct OptimizerOptions {
  std::string optimizer = "sgd"; ///< sgd, momentum or adam
  double lr = 0.01;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0.0;
};

/// Graph-level simplification and scheduling of an imported module (kiln
/// dialect on tensors), before code generation.
void buildGraphPipeline(mlir::OpPassManager &pm);

/// Appends the gradient of the result named `loss` with respect to the
/// arguments named in `wrt` (default: those marked kiln.parameter); runs on
/// the imported module, before buildGraphPipeline.
/// Mixed precision: f32 matrix products and convolutions computed in
/// `type` ("f16" or "bf16"), everything else in f32 (kiln-lower-precision).
void buildPrecisionPipeline(mlir::OpPassManager &pm, llvm::StringRef type);

void buildGradientPipeline(mlir::OpPassManager &pm, llvm::StringRef loss,
                           llvm::ArrayRef<std::string> wrt);

/// Recomputes cheap values of the scheduled graph so that its estimated
/// peak of live bytes is at most `budget`; runs after buildGraphPipeline.
void buildRematerializationPipeline(mlir::OpPassManager &pm, uint64_t budget);

/// Groups the scheduled ops into kiln.fused kernels; the last graph stage,
/// after buildGraphPipeline and any rematerialization.
void buildFusionPipeline(mlir::OpPassManager &pm);

/// Data-parallel training: each gradient's all-reduce started right after
/// the gradient is made, grouped into buckets of about `bucketBytes`
/// (kiln-bucket-all-reduce); after any rematerialization, before fusion.
void buildBucketPipeline(mlir::OpPassManager &pm, uint64_t bucketBytes);

/// Appends the optimizer update after the gradients (kiln-apply-optimizer):
/// runs after buildGradientPipeline, before buildGraphPipeline.
void buildOptimizerPipeline(mlir::OpPassManager &pm,
                            const OptimizerOptions &options);

/// What the graph stage does besides simplifying and scheduling: kilnc's
/// grad/train and --precision choices.
struct GraphStageOptions {
  /// Differentiate the result named `loss` (empty: the only result) with
  /// respect to the arguments in `wrt` (empty: those marked kiln.parameter).
  bool gradients = false;
  std::string loss;
  std::vector<std::string> wrt;
  /// The update of `kilnc train`, after the gradients.
  std::optional<OptimizerOptions> optimizer;
  /// "fp32", "fp16" or "bf16" (kilnc --precision).
  std::string precision = "fp32";
  /// `--data-parallel`: the gradients are averaged over the ranks
  /// (kiln-average-gradients, right after them).
  bool dataParallel = false;
};

/// The graph stage up to, not including, rematerialization and fusion, in
/// the order kilnc runs it: gradients, optimizer, precision, then
/// buildGraphPipeline.
void buildGraphStage(mlir::OpPassManager &pm, const GraphStageOptions &options);

/// Registers kiln-graph-pipeline (buildGraphStage, then
/// buildFusionPipeline unless fuse=false), kiln-cpu-pipeline and
/// kiln-cuda-pipeline, so that kiln-opt replays what kilnc runs: on
/// `kilnc --emit=import` output, `kiln-opt --kiln-graph-pipeline` prints
/// what `kilnc --emit=graph` prints.
void registerKilnPipelines();

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H

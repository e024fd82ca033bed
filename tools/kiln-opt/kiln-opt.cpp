//===- kiln-opt.cpp - pass-level testing tool -----------------------------===//
//
// mlir-opt with the kiln dialect and Kiln's passes added: every dialect and
// upstream pass that mlir-opt registers, so lit tests can run any pipeline,
// and kilnc's own pipelines by name.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  kiln::registerKilnPasses();
  kiln::registerKilnCodegenPasses();
  // kiln-graph-pipeline, kiln-cpu-pipeline, kiln-cuda-pipeline: what kilnc runs.
  kiln::registerKilnPipelines();

  mlir::DialectRegistry registry;
  kiln::registerSliceSubsets(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<kiln::KilnDialect>();
  kiln::registerAllReduceBufferization(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}

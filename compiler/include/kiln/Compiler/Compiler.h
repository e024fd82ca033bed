//===- Compiler.h - the compiler driver library -----------------*- C++ -*-===//
//
// compileModel runs the whole path for kilnc: import, graph pipeline, code
// generation, artifact files. Files appear only when everything succeeded:
// each is written under a temporary name and renamed at the end.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_COMPILER_H
#define KILN_COMPILER_COMPILER_H

#include "kiln/Codegen/Artifact.h"
#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Compiler/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
}

namespace kiln {

/// What kilnc produces: the artifact files, or one stage printed.
enum class EmitKind {
  Artifact,   ///< PREFIX.h + PREFIX.o (+ PREFIX.so)
  Import,     ///< the kiln dialect right after import
  Graph,      ///< the kiln dialect after the graph pipeline
  Lowered,    ///< the LLVM dialect after lowering
  LLVM,       ///< optimized LLVM IR with the entry points
  Obj,        ///< the object file alone
  Header,     ///< the generated header alone
  MemoryPlan, ///< the arena plan: JSON, or SVG/HTML by the -o extension
  Fused,      ///< the kernels of kiln-fuse and the ONNX nodes in each
  Cuda,       ///< --target=cuda: the CUDA C of the kernels
  CudaHost,   ///< --target=cuda: the kernels as host C++ (hostEmulationSource)
};

struct CompileOptions {
  std::string inputPath;
  /// Artifact: the path prefix of the files. Stages: the output file, or
  /// empty for the output stream.
  std::string output;
  /// C identifier prefix of the exported symbols; default: from the output
  /// prefix's file name, else the model file's.
  std::string name;
  std::string target = "cpu";
  std::string cpu = "host";
  std::string features;
  /// --target=cuda: the architecture of the cubin, "sm_<major><minor>".
  std::string gpuArch = "sm_90";
  /// --target=cuda: matrix products through cuBLASLt and convolutions
  /// through cuDNN (else kernels), and whether they may use TF32 for f32.
  bool cublasLt = true;
  bool cudnn = true;
  /// "fp32" (the model's types), or "fp16"/"bf16": f32 matrix products and
  /// convolutions computed in that type (mixed precision).
  std::string precision = "fp32";
  bool tf32 = false;
  /// `--dim NAME=N`: symbolic dimensions pinned to a size.
  std::map<std::string, int64_t> dims;
  /// `--dim NAME=LO..HI`: symbolic dimensions kept symbolic over a range
  /// (decision 0027): one artifact, CPU or CUDA, runs any sizes in them.
  std::map<std::string, std::pair<int64_t, int64_t>> dimRanges;
  /// --target=cuda: the library steps' workspace, in MiB (0: the default).
  uint64_t libraryWorkspaceMiB = 0;
  bool shared = false;
  EmitKind emit = EmitKind::Artifact;
  /// The C compiler driver used to link --shared artifacts, and to join
  /// the parts of an object generated on several threads.
  std::string linker = "cc";
  /// `-j`: threads for the CPU code generator; 0 means one per core. The
  /// artifact is the same bytes at any count (SplitCodegenOptions). MLIR's
  /// threads are the context's, which the caller sets (kilnc: from -j).
  unsigned jobs = 0;
  std::function<void(mlir::PassManager &)> configurePassManager;
  /// Group ops into kiln.fused kernels (kiln-fuse); off for comparisons.
  bool fuse = true;
  /// Print locations in the IR of --emit=import, graph and lowered.
  bool printLocations = false;
  /// Called as each stage of the compile starts, with its name ("import",
  /// "graph passes", "fusion", "lowering", "LLVM IR and -O2", "code
  /// generation", "writing outputs", "linking", ...); the last stage ends
  /// when compileModel returns. kilnc's progress lines and --time-stages.
  std::function<void(llvm::StringRef stage)> onStage;
  /// `kilnc grad`: differentiate the result named `gradLoss` with respect to
  /// the initializers (or inputs) named in `gradWrt` (default: every float
  /// initializer), which become inputs; the gradients become outputs named
  /// `grad.<name>`.
  bool gradients = false;
  std::string gradLoss;
  std::vector<std::string> gradWrt;
  /// `--memory-budget`: recompute cheap values (kiln-rematerialize) so that
  /// the planned arena fits this many bytes where it can, and warn where it
  /// cannot. Applies to any compile; unset, nothing is recomputed.
  std::optional<uint64_t> memoryBudget;
  /// `kilnc train` (implies `gradients`): every float initializer becomes a
  /// parameter, and the optimizer update follows the gradients; parameters,
  /// moments and the step counter live in the artifact's state buffer,
  /// initialized from the initializers.
  bool training = false;
  OptimizerOptions optimizer;
  /// `--data-parallel` (with `gradients`): the gradients are averaged over
  /// the ranks of the run, in buckets of about `bucketBytes` whose
  /// all-reduces overlap the rest of the backward pass; CPU only.
  bool dataParallel = false;
  uint64_t bucketBytes = 25ull << 20;
};

/// Every dialect, extension and translation the compiler needs.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// An object file and the facts its header and descriptor are made of.
struct CompiledObject {
  ArtifactInfo info;
  std::string object;
  /// --target=cuda: the kernels' source, steps and constants.
  std::optional<CudaProgram> cuda;
};

/// Compiles as `options` say; stage output without a file goes to `out`.
/// Failures are reported as diagnostics on `context`. With `keep`, an
/// artifact's object and facts are also handed back there (the GPU pack
/// keeps a CUDA artifact's kernels for its host emulation).
mlir::LogicalResult compileModel(mlir::MLIRContext &context,
                                 const CompileOptions &options,
                                 llvm::raw_ostream &out,
                                 CompiledObject *keep = nullptr);

/// Import, graph pipeline and code generation of `options.inputPath` to an
/// object in memory, for programs that compile many models in one process
/// (the conformance runner). `options.emit` and `options.output` only
/// decide the symbol prefix here.
mlir::FailureOr<CompiledObject> compileToObject(mlir::MLIRContext &context,
                                                const CompileOptions &options);

/// Adds one `--dim` of kilnc, `NAME=N` (a pin, N >= 0) or `NAME=LO..HI`
/// (a range, 1 <= LO <= HI; `N..N` is a pin), to `options.dims` or
/// `options.dimRanges`. Returns "" or what is wrong, without "error: ".
std::string addDimOption(llvm::StringRef spec, CompileOptions &options);

/// The user-facing form of a diagnostic:
/// "error: <file>: node '<name>' <message>" when it is located at a node,
/// "error: <file>: <message>" when only the file is known.
std::string formatDiagnostic(mlir::Diagnostic &diag);

} // namespace kiln

#endif // KILN_COMPILER_COMPILER_H

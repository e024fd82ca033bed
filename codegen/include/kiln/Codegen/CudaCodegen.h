//===- CudaCodegen.h - kiln dialect to CUDA C, NVRTC and a step list ------===//
//
// The CUDA backend: the same linalg-on-tensors form and memory plan as the
// CPU path, then one CUDA C kernel per top-level linalg op (a fused region
// later maps to one kernel the same way), a static list of launches with
// their arguments, and NVRTC compiling the kernels into a cubin for one GPU
// architecture plus PTX for newer ones. Printing CUDA C needs no toolkit;
// NVRTC does, and without it compileCudaProgram says so.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDACODEGEN_H
#define KILN_CODEGEN_CUDACODEGEN_H

#include "kiln/Codegen/Artifact.h"
#include "kiln/Codegen/CudaProgram.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace kiln {

/// The workspace a model with library steps (cuBLASLt, cuDNN) gets at the
/// end of its device arena unless kilnc --library-workspace says otherwise
/// (NVIDIA's advice for cuBLASLt on GPUs before Hopper; Hopper's is 32 MiB).
constexpr uint64_t kLibraryWorkspaceBytes = 4 << 20;

struct CudaCodegenOptions {
  /// The GPU architecture NVRTC compiles the cubin and the PTX for,
  /// "sm_<major><minor>", and further ones (a cubin each), ascending.
  std::string gpuArch = "sm_90";
  std::vector<std::string> moreGpuArchs;
  /// Byte alignment of every arena buffer (and of the arena's base).
  int64_t arenaAlignment = 256;
  /// Matrix products (f32, f16, bf16) go to cuBLASLt, with a bias and relu
  /// after them as its epilogue, instead of a kernel (kilnc --no-cublaslt).
  bool cublasLt = true;
  /// 2-d convolutions (f32, f16, bf16) go to cuDNN instead of a kernel
  /// (kilnc --no-cudnn).
  bool cudnn = true;
  /// cuBLASLt and cuDNN may compute f32 in TF32 (kilnc --tf32).
  bool tf32 = false;
  /// The workspace of the library steps, at the end of the device arena
  /// (kilnc --library-workspace, in MiB).
  uint64_t libraryWorkspaceBytes = kLibraryWorkspaceBytes;
  std::function<void(mlir::PassManager &)> configurePassManager;
};

/// Lowers the kiln function `funcName` to CUDA C kernels and a step list;
/// fills the signature and arena facts of `info`. Unsupported ops or types
/// are located errors.
mlir::LogicalResult lowerToCuda(mlir::ModuleOp module, llvm::StringRef funcName,
                                ArtifactInfo &info, CudaProgram &program,
                                const CudaCodegenOptions &options);

/// The step list as C comments, for `kilnc --emit=cuda`: each launch with
/// its arguments, each cuBLASLt call with its shape and layout.
std::string describeCudaSteps(const CudaProgram &program);

/// Whether this build can run NVRTC (the CUDA toolkit was found).
bool haveNvrtc();

/// Compiles `program.source` with NVRTC for `program.gpuArch` into
/// `program.cubin` and `program.ptx`. A compile error is reported at the
/// location of the kernel it occurs in; `module` gives the fallback location.
mlir::LogicalResult compileCudaProgram(mlir::ModuleOp module,
                                       CudaProgram &program);

/// The host object of a CUDA artifact: the descriptor (with the cubin, PTX,
/// steps and constants), `<name>_artifact()`, and a run_packed that returns
/// KILN_STATUS_UNAVAILABLE because CUDA models run through kiln_runtime_cuda.
std::unique_ptr<llvm::Module>
buildCudaArtifactModule(const ArtifactInfo &info, const CudaProgram &program,
                        llvm::TargetMachine &tm, llvm::LLVMContext &context);

/// `program`'s kernels as C++ for the host (kiln-conformance --emulate-gpu,
/// the GPU pack's emulation): CUDA's built-ins defined for a host compiler,
/// the kernels, and per kernel `extern "C" void kiln_launch_<name>(char
/// **args, unsigned grid, unsigned block)`, which runs the whole grid, and
/// `extern "C" const int kiln_arity_<name>`; with constants, `extern "C"
/// unsigned char *kiln_emulated_constants(size_t *bytes)`. A block
/// reduction runs its blocks with at most `maxSyncBlock` threads, each a
/// host thread (its result does not depend on the block size).
std::string hostEmulationSource(const CudaProgram &program,
                                unsigned maxSyncBlock = 16);

/// Checks that `arch` is "sm_<digits>" with a major version NVRTC accepts.
bool isValidGpuArch(llvm::StringRef arch);

/// Splits a --gpu-arch list ("sm_80,sm_90") into valid architectures,
/// ascending, without repeats. On failure `bad` is the first invalid item.
bool parseGpuArchs(llvm::StringRef list, std::vector<std::string> &archs,
                   std::string &bad);

} // namespace kiln

#endif // KILN_CODEGEN_CUDACODEGEN_H

//===- CudaCodegen.h - kiln dialect to CUDA C, NVRTC and a step list -*- C++ -*-===//
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

/// Where a kernel argument points: a base pointer plus a byte offset.
/// Values equal the descriptor's CudaArg.space.
/// Constants: the module's `kiln_constants` array (library calls only;
/// kernels name it themselves). State: a training step's device state
/// buffer (kilnc train), which the step reads and, with its last step,
/// overwrites with the new state the others wrote into the arena.
enum class CudaSpace : uint8_t { Input = 0, Output = 1, Arena = 2, Constants = 3, State = 4 };

struct CudaArg {
  CudaSpace space = CudaSpace::Input;
  uint32_t index = 0;  ///< input or output number; 0 for the arena
  uint64_t offset = 0; ///< bytes added to the base pointer
};

/// A matrix product cuBLASLt runs, in its column-major terms (the schema's
/// CudaGemm): per batch, D[m x n] = epilogue(op(A)[m x k] * op(B)[k x n]
/// (+ D when accumulate) (+ bias[m])), op(X) = X or, with trans, X^T.
struct CudaGemm {
  enum Epilogue : uint8_t { None = 0, Bias = 1, Relu = 2, BiasRelu = 3 };
  int64_t m = 1, n = 1, k = 1;
  int64_t lda = 1, ldb = 1, ldd = 1;
  int64_t strideA = 0, strideB = 0, strideD = 0; ///< elements between batches
  uint32_t batch = 1;
  uint8_t dtype = 1;  ///< kiln_dtype_t of A and B
  uint8_t dDtype = 1; ///< of D and the bias: dtype or f32
  bool transA = false, transB = false, accumulate = false, tf32 = false;
  Epilogue epilogue = None;
  uint64_t workspaceBytes = 0;
};

/// A 2-d convolution cuDNN runs (the schema's CudaConv): NCHW x, already
/// padded, and y with element strides; w packed [k, c / groups, r, s].
/// (After CudaGemm, whose epilogue kinds it shares.)
struct CudaConv {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t xStride[4] = {0, 0, 0, 0};
  int64_t k = 1, r = 1, s = 1, p = 1, q = 1;
  int64_t yStride[4] = {0, 0, 0, 0};
  int32_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, groups = 1;
  uint8_t dtype = 1; ///< kiln_dtype_t of x, w and y
  bool tf32 = false;
  /// None, Bias or BiasRelu: y = relu(conv + bias[k]), the bias the fifth
  /// argument (cudnnConvolutionBiasActivationForward).
  CudaGemm::Epilogue epilogue = CudaGemm::None;
  uint64_t workspaceBytes = 0;
};

/// One launch of the static schedule: kernel<<<grid, block, 0, stream>>>(args),
/// or, when `gemm` is set, cuBLASLt on gemms[*gemm] with the arguments A, B,
/// D, workspace and (for a bias epilogue) bias, or, when `conv` is set,
/// cuDNN on convs[*conv] with x, w, y and workspace.
struct CudaStep {
  uint32_t kernel = 0;
  uint32_t grid = 1, block = 1;
  std::vector<CudaArg> args;
  std::optional<uint32_t> gemm;
  std::optional<uint32_t> conv;
};

struct CudaKernel {
  std::string name;
  mlir::Location loc;        ///< the op it was made from (its ONNX node)
  unsigned firstLine = 0, lastLine = 0; ///< its lines in `source`, 1-based
  /// The threads of a block cooperate (shared memory, __syncthreads): a
  /// block reduction. Others never synchronize.
  bool synchronizes = false;
};

struct CudaProgram {
  /// The lowest architecture (its cubin and the PTX), then any further
  /// ones of --gpu-arch (a cubin each), ascending.
  std::string gpuArch;
  std::vector<std::string> moreGpuArchs;
  /// One CUDA C translation unit holding every kernel; needs no header.
  std::string source;
  std::vector<CudaKernel> kernels;
  std::vector<CudaStep> steps;
  std::vector<CudaGemm> gemms;
  std::vector<CudaConv> convs;
  /// The alignment in bytes the kernels assume of the caller's inputs and
  /// outputs (16 where vectorized kernels access them; 0: none).
  uint32_t ioAlignment = 0;
  /// The model's constants, copied once at load into the module's
  /// `kiln_constants` device array (256-byte aligned pieces).
  std::string constants;
  /// Filled by compileCudaProgram; moreCubins[i] is for moreGpuArchs[i].
  std::string cubin, ptx;
  std::vector<std::string> moreCubins;
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

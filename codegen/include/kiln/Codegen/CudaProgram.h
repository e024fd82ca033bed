//===- CudaProgram.h - what the CUDA backend produces -----------*- C++ -*-===//
//
// The data a CUDA compile produces: the kernels' source and their lines,
// the static list of launches and library calls with their arguments, the
// constants, and NVRTC's cubins and PTX. Plain data: the artifact writer
// (Artifact.cpp: the header and the descriptor) reads it without depending
// on the CUDA code generator (CudaCodegen.h), which fills it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDAPROGRAM_H
#define KILN_CODEGEN_CUDAPROGRAM_H

#include "mlir/IR/Location.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Where a kernel argument points: a base pointer plus a byte offset.
/// Values equal the descriptor's CudaArg.space.
/// Constants: the module's `kiln_constants` array (library calls only;
/// kernels name it themselves). State: a training step's device state
/// buffer (kilnc train), which the step reads and, with its last step,
/// overwrites with the new state the others wrote into the arena.
/// Dim: not a pointer but the run-time size of symbolic dimension `index`
/// (kilnc --dim NAME=LO..HI), an int64_t kernel parameter.
enum class CudaSpace : uint8_t {
  Input = 0,
  Output = 1,
  Arena = 2,
  Constants = 3,
  State = 4,
  Dim = 5
};

struct CudaArg {
  CudaSpace space = CudaSpace::Input;
  uint32_t index = 0;  ///< input, output or dimension number; 0 for the arena
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

/// A 2-d convolution cuDNN runs (the schema's CudaConv): NCHW x, read as if
/// padded by padH and padW zeros on each side (the schema's CudaConvPad),
/// and y with element strides; w packed [k, c / groups, r, s].
/// (After CudaGemm, whose epilogue kinds it shares.)
struct CudaConv {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t xStride[4] = {0, 0, 0, 0};
  int64_t k = 1, r = 1, s = 1, p = 1, q = 1;
  int64_t yStride[4] = {0, 0, 0, 0};
  int32_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, groups = 1;
  int32_t padH = 0, padW = 0;
  uint8_t dtype = 1; ///< kiln_dtype_t of x, w and y
  bool tf32 = false;
  /// None, Bias or BiasRelu: y = relu(conv + bias[k]), the bias the fifth
  /// argument (cudnnConvolutionBiasActivationForward).
  CudaGemm::Epilogue epilogue = CudaGemm::None;
  /// With BiasRelu: y = relu(conv + bias[k] + z), z the sixth argument, in
  /// y's layout (a residual connection; the schema's epilogue 7).
  bool residual = false;
  uint64_t workspaceBytes = 0;
};

/// A data-parallel step's bucket, started (NCCL all-reduces of its tensors
/// on a side stream, after the compute stream's work so far) or waited for
/// (the compute stream waits for them); its step's arguments are the
/// bucket's tensors.
struct CudaCollective {
  uint32_t bucket = 0;
  bool wait = false;
};

/// One launch of the static schedule: kernel<<<grid, block, 0, stream>>>(args),
/// or, when `gemm` is set, cuBLASLt on gemms[*gemm] with the arguments A, B,
/// D, workspace and (for a bias epilogue) bias, or, when `conv` is set,
/// cuDNN on convs[*conv] with x, w, y and workspace, or, when `collective`
/// is set, collectives[*collective] on the bucket's tensors.
struct CudaStep {
  uint32_t kernel = 0;
  uint32_t grid = 1, block = 1;
  std::vector<CudaArg> args;
  std::optional<uint32_t> gemm;
  std::optional<uint32_t> conv;
  std::optional<uint32_t> collective;
};

struct CudaKernel {
  std::string name;
  mlir::Location loc; ///< the op it was made from (its ONNX node)
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
  std::vector<CudaCollective> collectives;
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

} // namespace kiln

#endif // KILN_CODEGEN_CUDAPROGRAM_H

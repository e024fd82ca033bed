//===- EmulatedLibraries.h - cuBLASLt and cuDNN on the host ----*- C++ -*-===//
//
// The conformance runner's --emulate-gpu runs a CUDA program's kernels on
// the host; its cuBLASLt steps run here instead. This is written from
// cuBLASLt's documented contract (column-major matrices, op(X) = X or X^T,
// leading dimensions, strided batches, beta 0 or 1, the BIAS and RELU
// epilogues after the product), not from the compiler's row-major view, so
// the ONNX data checks how the compiler maps a model's product onto it.
// Convolutions likewise follow cudnnConvolutionForward's definition.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_EMULATEDLIBRARIES_H
#define KILN_TOOLS_EMULATEDLIBRARIES_H

#include "kiln/Codegen/CudaCodegen.h"

namespace kiln {

/// Runs `gemm` on host memory: args are A, B, D, the workspace (unused) and,
/// with a bias epilogue, the bias. Accumulates in float, as cuBLASLt's
/// CUBLAS_COMPUTE_32F does; with `tf32`, A and B are first rounded to
/// TF32's 10-bit mantissa.
void runGemmOnHost(const CudaGemm &gemm, char *const *args);

/// Runs `conv` on host memory as cudnnConvolutionForward does (alpha 1,
/// beta 0, cross-correlation, groups; f32 accumulation, TF32 rounding when
/// allowed), or with an epilogue cudnnConvolutionBiasActivationForward (+
/// bias, then relu): args are x, w, y, the workspace (unused) and the bias.
void runConvOnHost(const CudaConv &conv, char *const *args);

} // namespace kiln

#endif // KILN_TOOLS_EMULATEDLIBRARIES_H

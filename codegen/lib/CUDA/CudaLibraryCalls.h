//===- CudaLibraryCalls.h - products and convolutions for libraries -------===//
//
// Which linalg.generic ops of the CUDA target are matrix products cuBLASLt
// can run or 2-d convolutions cuDNN can run (docs/decisions/0019), the
// products' epilogues, and their layout in cuBLASLt's column-major terms.
// The printer resolves the buffers; these helpers only read the ops and
// the strides it found.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDA_CUDALIBRARYCALLS_H
#define KILN_CODEGEN_CUDA_CUDALIBRARYCALLS_H

#include "kiln/Codegen/CudaCodegen.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace kiln {

/// The loops of a contraction D[b.., m.., n..] += A[b.., m.., k..] *
/// B[b.., k.., n..] (any order of the indices): m loops only in A and D, n
/// loops only in B and D, k loops (the reductions) only in A and B, batch
/// loops in all three. Each group becomes one dimension of cuBLASLt's
/// problem where its loops are contiguous in every operand (layoutGemm).
struct GemmLoops {
  llvm::SmallVector<unsigned> m, n, k, batch;
};

/// The loops of `op` if it is a plain matrix product of f32, f16 or bf16
/// (payload `out + a * b`, projected permutation maps, where a 0 may index
/// a dim of size 1, static sizes of at least 1), or nothing.
std::optional<GemmLoops> matchGemm(mlir::linalg::GenericOp op);

/// The epilogue cuBLASLt can apply for `consumer`, an elementwise generic
/// reading the product through `read`: `x + bias`, `max(x + bias, 0)`,
/// `max(x, 0)`, or `truncf(x)` (None: cuBLASLt stores D in the narrower
/// type); `bias` is set to the bias operand. Nothing for any other payload.
/// Maps and types are the caller's to check.
std::optional<CudaGemm::Epilogue>
matchGemmEpilogue(mlir::linalg::GenericOp consumer, mlir::OpOperand *read,
                  mlir::OpOperand *&bias);

/// Whether `consumer`, an elementwise generic reading a convolution through
/// `read`, is `max(x + a + b, 0)` (the adds in any order) with a and b two
/// other inputs: a residual connection with a bias. Sets `first` and
/// `second` to them; which is the bias is the caller's to decide.
bool matchResidualRelu(mlir::linalg::GenericOp consumer, mlir::OpOperand *read,
                       mlir::OpOperand *&first, mlir::OpOperand *&second);

/// Element strides of one operand per loop of the contraction (0 for a loop
/// its map does not use).
using LoopStrides = llvm::SmallVector<int64_t>;

/// Fills the shape and layout fields of `gemm` (m, n, k, leading dimensions,
/// transposes, batch and its strides) for loops of sizes `ranges` and the
/// strides of A, B and D. cuBLASLt's A is the model's A, or, when `swapped`
/// comes back true, its B (D is then stored transposed in column-major
/// terms: cuBLASLt's rows are the model's n). False when some matrix has
/// no unit stride or overlapping rows.
bool layoutGemm(const GemmLoops &loops, llvm::ArrayRef<int64_t> ranges,
                const LoopStrides &a, const LoopStrides &b,
                const LoopStrides &d, CudaGemm &gemm, bool &swapped);

/// The loops of a 2-d grouped convolution y[n, g, f, oh, ow] +=
/// x[n, g, c, oh * strideH + kh * dilationH, ow * strideW + kw * dilationW]
/// * w[g, f, c, kh, kw] (the form kiln-lower-to-linalg gives Conv, on a
/// padded x), as positions of the generic's loops.
struct ConvLoops {
  unsigned n, g, f, oh, ow, c, kh, kw;
  int64_t strideH, strideW, dilationH, dilationW;
};

/// The loops of `op` if it is that convolution on f32, f16 or bf16 with
/// payload `out + x * w`, static sizes and maps of exactly that shape.
std::optional<ConvLoops> matchConv(mlir::linalg::GenericOp op);

} // namespace kiln

#endif // KILN_CODEGEN_CUDA_CUDALIBRARYCALLS_H

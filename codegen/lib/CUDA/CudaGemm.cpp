//===- CudaGemm.cpp - contractions that cuBLASLt runs ---------------------===//
//
// cuBLASLt works on column-major matrices: D[m x n] = op(A) op(B), each
// matrix with a leading dimension (the distance between its columns). A
// row-major product C[M x N] = A[M x K] B[K x N] is the same bytes as the
// column-major C^T[N x M] = B^T A^T, so a layout whose unit stride is along
// the model's n runs with the operands swapped (docs/decisions/0019).
//
//===----------------------------------------------------------------------===//

#include "CudaGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln;

std::optional<GemmLoops> kiln::matchGemm(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics())
    return std::nullopt;
  // A and B of one type, D of it or f32 (f16 and bf16 products that
  // accumulate in f32, extending each operand).
  auto t = dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  Type type = t ? t.getElementType() : Type();
  Type dType = cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
  if (!type || (!type.isF32() && !type.isF16() && !type.isBF16()) ||
      (dType != type && !dType.isF32()))
    return std::nullopt;
  for (Value in : op.getDpsInputs()) {
    auto t = dyn_cast<MemRefType>(in.getType());
    if (!t || t.getElementType() != type)
      return std::nullopt;
  }
  // out + a * b, in either order of each operation's operands.
  Block &body = op.getRegion().front();
  bool extended = dType != type;
  if (body.getOperations().size() != (extended ? 5u : 3u))
    return std::nullopt;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  // An operand: the block argument, or its extension to D's type.
  auto operand = [&](Value v) -> Value {
    if (!extended)
      return v;
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return ext ? ext.getIn() : Value();
  };
  if (!mul)
    return std::nullopt;
  Value lhs = operand(mul.getLhs()), rhs = operand(mul.getRhs());
  if (!((lhs == body.getArgument(0) && rhs == body.getArgument(1)) ||
        (lhs == body.getArgument(1) && rhs == body.getArgument(0))))
    return std::nullopt;

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap m) {
        return m.isProjectedPermutation(/*allowZeroInResults=*/true);
      }))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, [](int64_t r) { return r < 1; }))
    return std::nullopt; // dynamic or empty
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  GemmLoops loops;
  for (unsigned d = 0; d < ranges.size(); ++d) {
    AffineExpr dim = getAffineDimExpr(d, op.getContext());
    bool inA = maps[0].getResultPosition(dim).has_value();
    bool inB = maps[1].getResultPosition(dim).has_value();
    bool inD = maps[2].getResultPosition(dim).has_value();
    bool reduction = iterators[d] == utils::IteratorType::reduction;
    SmallVector<unsigned> *group = reduction ? (!inD && inA && inB ? &loops.k : nullptr)
                                   : !inD    ? nullptr
                                   : inA && inB ? &loops.batch
                                   : inA        ? &loops.m
                                   : inB        ? &loops.n
                                                : nullptr;
    if (!group)
      return std::nullopt;
    group->push_back(d);
  }
  if (loops.m.empty() || loops.n.empty() || loops.k.empty())
    return std::nullopt;
  return loops;
}

/// Whether `v` is the constant +0.0.
static bool isPositiveZero(Value v) { return matchPattern(v, m_PosZeroFloat()); }

std::optional<CudaGemm::Epilogue>
kiln::matchGemmEpilogue(linalg::GenericOp consumer, OpOperand *read,
                        OpOperand *&bias) {
  bias = nullptr;
  if (consumer.getNumDpsInits() != 1 || consumer.getNumDpsInputs() > 2)
    return std::nullopt;
  Block &body = consumer.getRegion().front();
  Value x = consumer.getMatchingBlockArgument(read);
  Value y = body.getTerminator()->getOperand(0);
  // max(v, 0) or max(0, v): v, else null.
  auto reluOf = [](Value v) -> Value {
    Operation *def = v.getDefiningOp();
    if (!isa_and_nonnull<arith::MaximumFOp, arith::MaxNumFOp>(def))
      return Value();
    if (isPositiveZero(def->getOperand(1)))
      return def->getOperand(0);
    if (isPositiveZero(def->getOperand(0)))
      return def->getOperand(1);
    return Value();
  };
  // x + bias or bias + x, with bias the other input's block argument.
  auto biasOf = [&](Value v) -> OpOperand * {
    auto add = v.getDefiningOp<arith::AddFOp>();
    if (!add || add->getBlock() != &body)
      return nullptr;
    Value other = add.getLhs() == x ? add.getRhs()
                  : add.getRhs() == x ? add.getLhs()
                                      : Value();
    auto arg = dyn_cast_or_null<BlockArgument>(other);
    if (!arg || arg.getOwner() != &body ||
        arg.getArgNumber() >= consumer.getNumDpsInputs() ||
        consumer.getDpsInputOperand(arg.getArgNumber()) == read)
      return nullptr;
    return consumer.getDpsInputOperand(arg.getArgNumber());
  };
  size_t ops = body.getOperations().size() - 1;
  if (auto trunc = y.getDefiningOp<arith::TruncFOp>())
    return trunc.getIn() == x && ops == 1 ? std::optional(CudaGemm::None) : std::nullopt;
  if (Value v = reluOf(y)) {
    if (v == x && ops == 1)
      return CudaGemm::Relu;
    if ((bias = biasOf(v)) && ops == 2)
      return CudaGemm::BiasRelu;
    bias = nullptr;
    return std::nullopt;
  }
  if ((bias = biasOf(y)) && ops == 1)
    return CudaGemm::Bias;
  bias = nullptr;
  return std::nullopt;
}

namespace {
/// One operand as cuBLASLt reads it: rows x cols of op(X), element (i, j) at
/// i * rowStride + j * colStride.
struct Operand {
  int64_t rows, cols, rowStride, colStride;
};
} // namespace

/// Whether a stride of a dim of `size` is 1 for every index it is used at.
static bool unit(int64_t stride, int64_t size) { return stride == 1 || size == 1; }

/// The transpose flag and leading dimension that store `x` column-major
/// (trans false: element (i, j) at i + j * ld) or as its transpose (true:
/// at j + i * ld), or nothing when neither layout holds it.
static std::optional<std::pair<bool, int64_t>> store(const Operand &x) {
  if (unit(x.rowStride, x.rows)) {
    int64_t ld = x.cols == 1 ? x.rows : x.colStride;
    if (ld >= x.rows)
      return std::make_pair(false, ld);
  }
  if (unit(x.colStride, x.cols)) {
    int64_t ld = x.rows == 1 ? x.cols : x.rowStride;
    if (ld >= x.cols)
      return std::make_pair(true, ld);
  }
  return std::nullopt;
}

namespace {
/// A group of loops as one dimension: its size, and the element stride of
/// each operand (A, B, D) along it.
struct Dim {
  int64_t size = 1;
  int64_t stride[3] = {0, 0, 0};
};
} // namespace

/// The loops of `group` as one dimension, or nothing when they are not
/// contiguous, outer to inner, in every operand that uses them (a loop of
/// size 1 is left out: its stride never matters).
static std::optional<Dim> merge(ArrayRef<unsigned> group, ArrayRef<int64_t> ranges,
                                const LoopStrides *operands[3]) {
  SmallVector<unsigned> loops;
  for (unsigned l : group)
    if (ranges[l] > 1)
      loops.push_back(l);
  Dim dim;
  if (loops.empty())
    return dim;
  // Outer first: by the largest stride any operand has along the loop.
  auto key = [&](unsigned l) {
    return std::max({(*operands[0])[l], (*operands[1])[l], (*operands[2])[l]});
  };
  llvm::stable_sort(loops, [&](unsigned x, unsigned y) { return key(x) > key(y); });
  for (size_t i = 0; i + 1 < loops.size(); ++i)
    for (int o = 0; o < 3; ++o)
      if ((*operands[o])[loops[i]] != (*operands[o])[loops[i + 1]] * ranges[loops[i + 1]])
        return std::nullopt;
  for (unsigned l : loops)
    dim.size *= ranges[l];
  for (int o = 0; o < 3; ++o)
    dim.stride[o] = (*operands[o])[loops.back()];
  return dim;
}

bool kiln::layoutGemm(const GemmLoops &loops, ArrayRef<int64_t> ranges,
                      const LoopStrides &a, const LoopStrides &b,
                      const LoopStrides &d, CudaGemm &gemm, bool &swapped) {
  const LoopStrides *operands[3] = {&a, &b, &d};
  auto m = merge(loops.m, ranges, operands), n = merge(loops.n, ranges, operands),
       k = merge(loops.k, ranges, operands), batch = merge(loops.batch, ranges, operands);
  if (!m || !n || !k || !batch)
    return false;
  enum { A, B, D };
  // cuBLASLt's rows are whichever of m and n D stores with unit stride,
  // n first (row-major outputs, the common case).
  swapped = unit(n->stride[D], n->size);
  if (!swapped && !unit(m->stride[D], m->size))
    return false;
  const Dim &rows = swapped ? *n : *m, &cols = swapped ? *m : *n;
  int first = swapped ? B : A, second = swapped ? A : B;
  int64_t R = rows.size, C = cols.size, K = k->size;
  auto opA = store({R, K, rows.stride[first], k->stride[first]});
  auto opB = store({K, C, k->stride[second], cols.stride[second]});
  auto opD = store({R, C, rows.stride[D], cols.stride[D]});
  if (!opA || !opB || !opD || opD->first)
    return false;
  gemm.m = R;
  gemm.n = C;
  gemm.k = K;
  std::tie(gemm.transA, gemm.lda) = *opA;
  std::tie(gemm.transB, gemm.ldb) = *opB;
  gemm.ldd = opD->second;
  gemm.batch = 1;
  gemm.strideA = gemm.strideB = gemm.strideD = 0;
  if (batch->size > 1) {
    // Batches of D may not overlap: cuBLASLt writes them concurrently.
    if (batch->size > UINT32_MAX || batch->stride[first] < 0 ||
        batch->stride[second] < 0 || batch->stride[D] < (C - 1) * gemm.ldd + R)
      return false;
    gemm.batch = uint32_t(batch->size);
    gemm.strideA = batch->stride[first];
    gemm.strideB = batch->stride[second];
    gemm.strideD = batch->stride[D];
  }
  return true;
}

//===- CudaLibraryCalls.cpp - products and convolutions for libraries -----===//
//
// cuBLASLt works on column-major matrices: D[m x n] = op(A) op(B), each
// matrix with a leading dimension (the distance between its columns). A
// row-major product C[M x N] = A[M x K] B[K x N] is the same bytes as the
// column-major C^T[N x M] = B^T A^T, so a layout whose unit stride is along
// the model's n runs with the operands swapped (docs/decisions/0019).
// Convolutions are matched in the form kiln-lower-to-linalg gives Conv.
//
//===----------------------------------------------------------------------===//

#include "CudaLibraryCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <array>

using namespace mlir;
using namespace kiln;

/// Whether `op` is `out + a * b` on two inputs and one output of one float
/// type (f32, f16, bf16), or with `extended` allowed, on inputs of such a
/// type extended to an f32 output.
static bool isMulAdd(linalg::GenericOp op, bool allowExtended) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics())
    return false;
  auto t = dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  Type type = t ? t.getElementType() : Type();
  Type dType = cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
  if (!type || (!type.isF32() && !type.isF16() && !type.isBF16()) ||
      (dType != type && !(allowExtended && dType.isF32())))
    return false;
  for (Value in : op.getDpsInputs()) {
    auto t = dyn_cast<MemRefType>(in.getType());
    if (!t || t.getElementType() != type)
      return false;
  }
  Block &body = op.getRegion().front();
  bool extended = dType != type;
  if (body.getOperations().size() != (extended ? 5u : 3u))
    return false;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
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
    return false;
  Value lhs = operand(mul.getLhs()), rhs = operand(mul.getRhs());
  return (lhs == body.getArgument(0) && rhs == body.getArgument(1)) ||
         (lhs == body.getArgument(1) && rhs == body.getArgument(0));
}

std::optional<GemmLoops> kiln::matchGemm(linalg::GenericOp op) {
  if (!isMulAdd(op, /*allowExtended=*/true))
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
    SmallVector<unsigned> *group =
        reduction    ? (!inD && inA && inB ? &loops.k : nullptr)
        : !inD       ? nullptr
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
static bool isPositiveZero(Value v) {
  return matchPattern(v, m_PosZeroFloat());
}

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
    Value other = add.getLhs() == x   ? add.getRhs()
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
    return trunc.getIn() == x && ops == 1 ? std::optional(CudaGemm::None)
                                          : std::nullopt;
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

bool kiln::matchResidualRelu(linalg::GenericOp consumer, OpOperand *read,
                             OpOperand *&first, OpOperand *&second) {
  first = second = nullptr;
  if (consumer.getNumDpsInits() != 1 || consumer.getNumDpsInputs() != 3)
    return false;
  Block &body = consumer.getRegion().front();
  if (body.getOperations().size() != 4)
    return false; // two adds, the max and the yield
  Operation *max = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!isa_and_nonnull<arith::MaximumFOp, arith::MaxNumFOp>(max) ||
      !isPositiveZero(max->getOperand(1)))
    return false;
  auto outer = max->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!outer)
    return false;
  // The leaves of the two adds, whichever way they nest.
  SmallVector<Value, 3> leaves;
  for (Value v : {outer.getLhs(), outer.getRhs()})
    if (auto inner = v.getDefiningOp<arith::AddFOp>())
      leaves.append({inner.getLhs(), inner.getRhs()});
    else
      leaves.push_back(v);
  if (leaves.size() != 3)
    return false;
  Value x = consumer.getMatchingBlockArgument(read);
  SmallVector<OpOperand *, 2> others;
  bool sawX = false;
  for (Value leaf : leaves) {
    auto arg = dyn_cast<BlockArgument>(leaf);
    if (!arg || arg.getOwner() != &body ||
        arg.getArgNumber() >= consumer.getNumDpsInputs())
      return false;
    if (leaf == x && !sawX)
      sawX = true;
    else if (leaf != x)
      others.push_back(consumer.getDpsInputOperand(arg.getArgNumber()));
    else
      return false;
  }
  if (!sawX || others.size() != 2 || others[0] == others[1])
    return false;
  first = others[0];
  second = others[1];
  return true;
}

namespace {
/// One operand as cuBLASLt reads it: rows x cols of op(X), element (i, j) at
/// i * rowStride + j * colStride.
struct Operand {
  int64_t rows, cols, rowStride, colStride;
};
} // namespace

/// Whether a stride of a dim of `size` is 1 for every index it is used at.
static bool unit(int64_t stride, int64_t size) {
  return stride == 1 || size == 1;
}

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
static std::optional<Dim> merge(ArrayRef<unsigned> group,
                                ArrayRef<int64_t> ranges,
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
  llvm::stable_sort(loops,
                    [&](unsigned x, unsigned y) { return key(x) > key(y); });
  for (size_t i = 0; i + 1 < loops.size(); ++i)
    for (int o = 0; o < 3; ++o)
      if ((*operands[o])[loops[i]] !=
          (*operands[o])[loops[i + 1]] * ranges[loops[i + 1]])
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
  auto m = merge(loops.m, ranges, operands),
       n = merge(loops.n, ranges, operands),
       k = merge(loops.k, ranges, operands),
       batch = merge(loops.batch, ranges, operands);
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

/// `e` as `a * ca + b * cb` over two distinct dims: {a, ca, b, cb}.
static std::optional<std::array<int64_t, 4>> twoTerms(AffineExpr e) {
  auto add = dyn_cast<AffineBinaryOpExpr>(e);
  if (!add || add.getKind() != AffineExprKind::Add)
    return std::nullopt;
  auto term = [](AffineExpr t) -> std::optional<std::pair<int64_t, int64_t>> {
    if (auto d = dyn_cast<AffineDimExpr>(t))
      return std::make_pair(int64_t(d.getPosition()), int64_t(1));
    auto mul = dyn_cast<AffineBinaryOpExpr>(t);
    if (!mul || mul.getKind() != AffineExprKind::Mul)
      return std::nullopt;
    auto d = dyn_cast<AffineDimExpr>(mul.getLHS());
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    if (!d || !c || c.getValue() < 1)
      return std::nullopt;
    return std::make_pair(int64_t(d.getPosition()), c.getValue());
  };
  auto a = term(add.getLHS()), b = term(add.getRHS());
  if (!a || !b || a->first == b->first)
    return std::nullopt;
  return std::array<int64_t, 4>{a->first, a->second, b->first, b->second};
}

std::optional<ConvLoops> kiln::matchConv(linalg::GenericOp op) {
  if (!isMulAdd(op, /*allowExtended=*/false) || op.getNumLoops() != 8 ||
      llvm::any_of(op.getStaticLoopRanges(), [](int64_t r) { return r < 1; }))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap x = maps[0], w = maps[1], y = maps[2];
  if (x.getNumResults() != 5 || w.getNumResults() != 5 ||
      !y.isProjectedPermutation() || y.getNumResults() != 5 ||
      !w.isProjectedPermutation())
    return std::nullopt;
  auto dim = [](AffineMap m, unsigned i) {
    return cast<AffineDimExpr>(m.getResult(i)).getPosition();
  };
  ConvLoops l;
  l.n = dim(y, 0), l.g = dim(y, 1), l.f = dim(y, 2), l.oh = dim(y, 3),
  l.ow = dim(y, 4);
  if (dim(w, 0) != l.g || dim(w, 1) != l.f)
    return std::nullopt;
  l.c = dim(w, 2), l.kh = dim(w, 3), l.kw = dim(w, 4);
  for (unsigned i = 0; i < 3; ++i)
    if (!isa<AffineDimExpr>(x.getResult(i)))
      return std::nullopt;
  if (dim(x, 0) != l.n || dim(x, 1) != l.g || dim(x, 2) != l.c)
    return std::nullopt;
  // Each spatial index: the output's dim times the stride plus the
  // kernel's dim times the dilation (a plain dim has coefficient 1).
  auto spatial = [&](AffineExpr e, unsigned out, unsigned kernel,
                     int64_t &stride, int64_t &dilation) {
    auto t = twoTerms(e);
    if (!t)
      return false;
    if ((*t)[0] == kernel)
      std::swap((*t)[0], (*t)[2]), std::swap((*t)[1], (*t)[3]);
    stride = (*t)[1];
    dilation = (*t)[3];
    return (*t)[0] == int64_t(out) && (*t)[2] == int64_t(kernel);
  };
  if (!spatial(x.getResult(3), l.oh, l.kh, l.strideH, l.dilationH) ||
      !spatial(x.getResult(4), l.ow, l.kw, l.strideW, l.dilationW))
    return std::nullopt;
  SmallVector<utils::IteratorType> it = op.getIteratorTypesArray();
  for (unsigned d : {l.n, l.g, l.f, l.oh, l.ow})
    if (it[d] != utils::IteratorType::parallel)
      return std::nullopt;
  for (unsigned d : {l.c, l.kh, l.kw})
    if (it[d] != utils::IteratorType::reduction)
      return std::nullopt;
  return l;
}

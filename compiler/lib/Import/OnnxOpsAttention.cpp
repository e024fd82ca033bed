//===- OnnxOpsAttention.cpp - the ONNX Attention op -----------------------===//
//
// Attention (opset 23) decomposed into core ops: heads split from 3-D
// inputs, past keys/values concatenated, grouped-query heads repeated by a
// broadcast, the scaled QK^T matmul, an additive bias built from the mask
// (bool masks select 0 or -inf), the causal triangle (a compile-time
// constant shifted by the past length) and the non-padded key lengths,
// softcap, a max-shifted softmax and the final matmul with V.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// [B, S, heads*H] -> [B, heads, S, H].
Value splitHeads(NodeImporter &n, Value x, int64_t heads) {
  auto t = typeOf(x);
  int64_t b = t.getDimSize(0), s = t.getDimSize(1), h = t.getDimSize(2) / heads;
  return n.transpose(n.reshape(x, {b, s, heads, h}), {0, 2, 1, 3});
}

/// np.repeat(x, reps, axis=1) for x [B, heads, S, H].
Value repeatHeads(NodeImporter &n, Value x, int64_t reps) {
  if (reps == 1)
    return x;
  auto t = typeOf(x);
  int64_t b = t.getDimSize(0), h = t.getDimSize(1), s = t.getDimSize(2),
          d = t.getDimSize(3);
  Value v = n.reshape(x, {b, h, 1, s, d});
  v = BroadcastOp::create(
      n.b, n.loc, RankedTensorType::get({b, h, reps, s, d}, t.getElementType()),
      v);
  return n.reshape(v, {b, h * reps, s, d});
}

/// A constant of `shape` filled by `f(i, j)` over the last two dims.
Value pattern(NodeImporter &n, ArrayRef<int64_t> shape, Type elt,
              function_ref<double(int64_t, int64_t)> f) {
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  SmallVector<APFloat> values;
  auto ft = cast<FloatType>(elt);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      APFloat v(f(i, j));
      bool lost;
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v);
    }
  auto type = RankedTensorType::get(shape, elt);
  return ConstantOp::create(
      n.b, n.loc, type,
      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

LogicalResult importAttention(NodeImporter &n) {
  if (failed(n.expectInputs(3, 7)))
    return failure();
  KILN_TRY(isCausal, n.getInt("is_causal"));
  KILN_TRY(kvHeadsAttr, n.getInt("kv_num_heads"));
  KILN_TRY(qHeadsAttr, n.getInt("q_num_heads"));
  KILN_TRY(mode, n.getInt("qk_matmul_output_mode"));
  KILN_TRY(scaleAttr, n.getFloat("scale"));
  KILN_TRY(softcap, n.getFloat("softcap"));
  KILN_TRY(precision, n.getInt("softmax_precision"));
  Value q = n.input(0), k = n.input(1), v = n.input(2);
  Type elt = typeOf(q).getElementType();
  if (!isa<FloatType>(elt) || typeOf(k).getElementType() != elt ||
      typeOf(v).getElementType() != elt) {
    n.error() << "expects Q, K and V of one float type";
    return failure();
  }
  int64_t rank = typeOf(q).getRank();
  if ((rank != 3 && rank != 4) || typeOf(k).getRank() != rank ||
      typeOf(v).getRank() != rank) {
    n.error() << "expects Q, K and V all of rank 3 or all of rank 4";
    return failure();
  }
  if (rank == 3) {
    if (!qHeadsAttr || !kvHeadsAttr || *qHeadsAttr < 1 || *kvHeadsAttr < 1 ||
        typeOf(q).getDimSize(2) % *qHeadsAttr ||
        typeOf(k).getDimSize(2) % *kvHeadsAttr ||
        typeOf(v).getDimSize(2) % *kvHeadsAttr) {
      n.error() << "3-D inputs need q_num_heads and kv_num_heads that divide "
                   "the hidden sizes";
      return failure();
    }
    q = splitHeads(n, q, *qHeadsAttr);
    k = splitHeads(n, k, *kvHeadsAttr);
    v = splitHeads(n, v, *kvHeadsAttr);
  }
  int64_t qHeads = typeOf(q).getDimSize(1), kvHeads = typeOf(k).getDimSize(1);
  int64_t headSize = typeOf(q).getDimSize(3);
  if (typeOf(k).getDimSize(3) != headSize ||
      typeOf(v).getDimSize(1) != kvHeads || kvHeads == 0 || qHeads % kvHeads) {
    n.error() << "expects K with Q's head size and a number of K/V heads that "
                 "divides Q's";
    return failure();
  }
  int64_t past = 0;
  if (n.hasInput(4) != n.hasInput(5)) {
    n.error() << "expects both past_key and past_value, or neither";
    return failure();
  }
  if (n.hasInput(4)) {
    // The past goes in front of the new keys/values along the sequence axis,
    // so every other dimension must agree.
    for (auto [index, name, now] :
         {std::tuple<size_t, const char *, Value>{4, "past_key", k},
          {5, "past_value", v}}) {
      RankedTensorType pastType = n.inputType(index), nowType = typeOf(now);
      bool fits = pastType.getRank() == 4 &&
                  pastType.getElementType() == nowType.getElementType();
      for (int64_t d = 0; fits && d < 4; ++d)
        fits = d == 2 || pastType.getDimSize(d) == nowType.getDimSize(d);
      if (!fits) {
        n.error() << "expects " << name << " of shape ["
                  << nowType.getDimSize(0) << ", " << nowType.getDimSize(1)
                  << ", past, " << nowType.getDimSize(3) << "] and type "
                  << nowType.getElementType() << ", found " << pastType;
        return failure();
      }
    }
    past = n.inputType(4).getDimSize(2);
    if (n.inputType(5).getDimSize(2) != past) {
      n.error() << "expects past_key and past_value of one length, found "
                << past << " and " << n.inputType(5).getDimSize(2);
      return failure();
    }
    k = ConcatOp::create(n.b, n.loc, ValueRange{n.input(4), k}, 2);
    v = ConcatOp::create(n.b, n.loc, ValueRange{n.input(5), v}, 2);
  }
  Value presentKey = k, presentValue = v;
  int64_t qLen = typeOf(q).getDimSize(2), kvLen = typeOf(k).getDimSize(2);
  const double inf = std::numeric_limits<double>::infinity();

  // The additive bias: mask, causal triangle, non-padded lengths.
  Value bias;
  auto addBias = [&](Value b) -> LogicalResult {
    if (!bias) {
      bias = b;
      return success();
    }
    auto sum = n.binary<AddOp>(bias, b);
    if (failed(sum))
      return failure();
    bias = *sum;
    return success();
  };
  if (n.hasInput(3)) {
    Value mask = n.input(3);
    auto mt = typeOf(mask);
    bool isBool = mt.getElementType().isInteger(1);
    if (!isBool && mt.getElementType() != elt) {
      n.error() << "expects a bool mask or one of Q's type, found " << mt;
      return failure();
    }
    if (mt.getRank() < 1 || mt.getDimSize(mt.getRank() - 1) > kvLen) {
      n.error() << "the mask's last dimension exceeds the " << kvLen << " keys";
      return failure();
    }
    int64_t missing = kvLen - mt.getDimSize(mt.getRank() - 1);
    if (isBool) {
      Value zero = n.scalar(elt, 0.0);
      Value minusInf = n.scalar(elt, -inf);
      mask = SelectOp::create(n.b, n.loc, mask, zero, minusInf);
    }
    if (missing > 0) {
      // Keys the mask does not cover are masked out.
      SmallVector<int64_t> padShape(typeOf(mask).getShape());
      padShape.back() = missing;
      Value pad =
          BroadcastOp::create(n.b, n.loc, RankedTensorType::get(padShape, elt),
                              n.scalar(elt, -inf));
      mask = ConcatOp::create(n.b, n.loc, ValueRange{mask, pad},
                              typeOf(mask).getRank() - 1);
    }
    if (failed(addBias(mask)))
      return failure();
  }
  // Per-batch key lengths (opset 24) mask the padding and, without a past,
  // place the causal frontier at each batch's last real key.
  Value lengths;
  int64_t batch = typeOf(q).getDimSize(0);
  if (n.hasInput(6)) {
    lengths = n.input(6);
    auto lt = typeOf(lengths);
    if (lt.getRank() != 1 || lt.getDimSize(0) != batch ||
        !isa<IntegerType>(lt.getElementType()) ||
        lt.getElementType().isInteger(1)) {
      n.error() << "expects nonpad_kv_seqlen of shape [" << batch << "], found "
                << lt;
      return failure();
    }
  }
  auto ramp = [&](Type intType, ArrayRef<int64_t> shape, int64_t count) {
    auto t = RankedTensorType::get(shape, intType);
    SmallVector<APInt> values;
    for (int64_t j = 0; j < count; ++j)
      values.push_back(APInt(intType.getIntOrFloatBitWidth(), j));
    return Value(ConstantOp::create(
        n.b, n.loc, t, cast<ElementsAttr>(DenseElementsAttr::get(t, values))));
  };
  if (isCausal.value_or(0)) {
    if (lengths && !n.hasInput(4)) {
      // Query i of batch b sees keys j <= i + lengths[b] - qLen.
      Type it = typeOf(lengths).getElementType();
      KILN_TRY(offset,
               n.binary<SubOp>(n.reshape(lengths, {batch, 1, 1, 1}),
                               n.scalar(it, static_cast<double>(qLen))));
      KILN_TRY(frontier,
               n.binary<AddOp>(ramp(it, {1, 1, qLen, 1}, qLen), offset));
      Value allowed =
          CmpOp::create(n.b, n.loc, CmpPredicate::le,
                        ramp(it, {1, 1, 1, kvLen}, kvLen), frontier);
      Value zero = n.scalar(elt, 0.0);
      Value minusInf = n.scalar(elt, -inf);
      Value causal = SelectOp::create(n.b, n.loc, allowed, zero, minusInf);
      if (failed(addBias(causal)))
        return failure();
    } else {
      // Query i sees keys up to past + i.
      Value causal = pattern(n, {qLen, kvLen}, elt, [&](int64_t i, int64_t j) {
        return j - past > i ? -inf : 0.0;
      });
      if (failed(addBias(causal)))
        return failure();
    }
  }
  if (lengths) {
    Type it = typeOf(lengths).getElementType();
    Value keep =
        CmpOp::create(n.b, n.loc, CmpPredicate::lt, ramp(it, {1, kvLen}, kvLen),
                      n.reshape(lengths, {batch, 1}));
    Value zero = n.scalar(elt, 0.0);
    Value minusInf = n.scalar(elt, -inf);
    Value padBias = SelectOp::create(n.b, n.loc, keep, zero, minusInf);
    if (failed(addBias(n.reshape(padBias, {batch, 1, 1, kvLen}))))
      return failure();
  }

  int64_t reps = qHeads / kvHeads;
  Value kr = repeatHeads(n, k, reps), vr = repeatHeads(n, v, reps);
  KILN_TRY(scores, n.matmul(q, n.transpose(kr, {0, 1, 3, 2})));
  double scale = scaleAttr ? static_cast<double>(*scaleAttr)
                           : 1.0 / std::sqrt(static_cast<double>(headSize));
  KILN_TRY(scaled, n.binary<MulOp>(scores, n.scalar(elt, scale)));
  // Softcap applies to the scores before the bias (opset 23 as of ONNX
  // 1.23), so a -inf mask is never passed through tanh.
  Value x = scaled;
  if (softcap && *softcap > 0) {
    KILN_TRY(div, n.binary<DivOp>(x, n.scalar(elt, *softcap)));
    KILN_TRY(mul, n.binary<MulOp>(TanhOp::create(n.b, n.loc, div),
                                  n.scalar(elt, *softcap)));
    x = mul;
  }
  Value qkOut = x;
  if (bias) {
    KILN_TRY(withBias, n.binary<AddOp>(x, bias));
    x = withBias;
  }
  // qk_matmul_output_mode: 0 and 1 the (soft-capped) scores, 2 with the
  // bias added, 3 the softmax.
  if (mode.value_or(0) == 2)
    qkOut = x;
  // softmax_precision: compute the softmax in f32 for 16-bit inputs.
  Type softmaxType = elt;
  if (precision && *precision == 1 /*FLOAT*/ && !elt.isF32() && !elt.isF64())
    softmaxType = n.b.getF32Type();
  auto asType = [&](Value value, Type t) -> Value {
    auto vt = typeOf(value);
    if (vt.getElementType() == t)
      return value;
    return CastOp::create(n.b, n.loc, RankedTensorType::get(vt.getShape(), t),
                          value);
  };
  x = asType(x, softmaxType);
  auto last = n.b.getDenseI64ArrayAttr({3});
  Value max = ReduceMaxOp::create(n.b, n.loc, x, last, n.b.getUnitAttr());
  Value e = ExpOp::create(n.b, n.loc, SubOp::create(n.b, n.loc, x, max));
  Value sum = ReduceSumOp::create(n.b, n.loc, e, last, n.b.getUnitAttr());
  Value probs = DivOp::create(n.b, n.loc, e, sum);
  if (bias) {
    // A row whose every key is masked attends to nothing: zeros, not NaN.
    Value biasMax = ReduceMaxOp::create(
        n.b, n.loc, bias,
        n.b.getDenseI64ArrayAttr({typeOf(bias).getRank() - 1}),
        n.b.getUnitAttr());
    Value allMasked = CmpOp::create(n.b, n.loc, CmpPredicate::eq, biasMax,
                                    n.scalar(elt, -inf));
    probs = SelectOp::create(n.b, n.loc, allMasked, n.scalar(softmaxType, 0.0),
                             probs);
  }
  probs = asType(probs, elt);
  if (mode.value_or(0) == 3)
    qkOut = probs;
  if (mode.value_or(0) < 0 || mode.value_or(0) > 3) {
    n.error() << "qk_matmul_output_mode must be 0 to 3, found " << *mode;
    return failure();
  }
  KILN_TRY(y, n.matmul(probs, vr));
  if (rank == 3) {
    auto yt = typeOf(y);
    y = n.reshape(n.transpose(y, {0, 2, 1, 3}),
                  {yt.getDimSize(0), yt.getDimSize(2),
                   yt.getDimSize(1) * yt.getDimSize(3)});
  }
  n.setResult(0, y);
  n.setResult(1, presentKey);
  n.setResult(2, presentValue);
  n.setResult(3, qkOut);
  return success();
}

} // namespace

void kiln::import::registerAttentionHandlers(HandlerMap &handlers) {
  handlers["Attention"] = importAttention;
}

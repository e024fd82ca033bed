//===- OnnxOpsElementwise.cpp - elementwise math, logic, casts ------------===//
//
// Handlers for the ONNX ops that work element by element (unary math,
// comparisons, logic, Cast, Clip, the activation functions), for the Reduce*
// ops that wrap one reduction in elementwise steps (ReduceL2 is the sqrt of a
// sum of squares) and for Hardmax. Each decomposes into core ops: an
// activation becomes a few compares, selects and arithmetic ops, never a new
// core op. Every handler checks element types and shapes before it builds,
// so a core op's type inference never fails on a model's mistake.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "kiln/Compiler/TensorData.h"

#include <cmath>
#include <utility>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

/// The element types an op accepts. Graph values only ever hold kiln's
/// types, so "numeric" is "neither i1 nor a storage-only narrow type".
enum class Elt { Float, Numeric, Int, Bool, Any };

bool accepts(Elt allowed, Type t) {
  switch (allowed) {
  case Elt::Float:
    return isa<FloatType>(t) && !isNarrowType(t);
  case Elt::Numeric:
    return !t.isInteger(1) && !isNarrowType(t);
  case Elt::Int:
    return isa<IntegerType>(t) && !t.isInteger(1) && !isNarrowType(t);
  case Elt::Bool:
    return t.isInteger(1);
  case Elt::Any:
    return true;
  }
  return false;
}

const char *describe(Elt allowed) {
  switch (allowed) {
  case Elt::Float:
    return "a float element type (f16, bf16, f32, f64)";
  case Elt::Numeric:
    return "a numeric element type (f16, bf16, f32, f64, i8, i32, i64)";
  case Elt::Int:
    return "an integer element type (i8, i32, i64)";
  case Elt::Bool:
    return "the bool element type (i1)";
  case Elt::Any:
    return "any element type";
  }
  return "";
}

Type elementType(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

LogicalResult checkElementType(NodeImporter &n, Type elt, Elt allowed) {
  if (accepts(allowed, elt))
    return success();
  n.error() << "expects " << describe(allowed) << ", found " << elt;
  return failure();
}

/// Checks that the shapes of `operands` broadcast together.
LogicalResult checkBroadcast(NodeImporter &n, ArrayRef<Value> operands) {
  SmallVector<int64_t> shape(shapeOf(operands[0]));
  SmallVector<DimExpr> sizes = dimExprs(operands[0].getType());
  for (Value v : operands.drop_front()) {
    auto joined = broadcastShapes(shape, shapeOf(v));
    std::optional<SmallVector<DimExpr>> joinedSizes =
        broadcastDims(sizes, dimExprs(v.getType()));
    if (!joined || !joinedSizes) {
      auto diag = n.error() << "operand shapes ";
      for (auto [i, o] : llvm::enumerate(operands))
        diag << (i == 0                     ? ""
                 : i + 1 == operands.size() ? " and "
                                            : ", ")
             << o.getType();
      diag << " do not broadcast";
      return failure();
    }
    shape = *joined;
    sizes = *joinedSizes;
  }
  return success();
}

/// Checks that `operands` share one element type that `allowed` admits and
/// that their shapes broadcast; returns the element type.
FailureOr<Type> checkOperands(NodeImporter &n, ArrayRef<Value> operands,
                              Elt allowed) {
  Type elt = elementType(operands[0]);
  for (Value v : operands.drop_front())
    if (elementType(v) != elt) {
      n.error() << "operands have different element types, " << elt << " and "
                << elementType(v);
      return failure();
    }
  if (failed(checkElementType(n, elt, allowed)) ||
      failed(checkBroadcast(n, operands)))
    return failure();
  return elt;
}

/// Checks the single input of a unary op; returns it.
FailureOr<Value> unaryInput(NodeImporter &n, Elt allowed) {
  if (failed(n.expectInputs(1, 1)) ||
      failed(checkElementType(n, n.inputType(0).getElementType(), allowed)))
    return failure();
  return n.input(0);
}

/// Reads a float attribute with a default.
FailureOr<double> floatAttr(NodeImporter &n, StringRef name, double dflt) {
  auto v = n.getFloat(name);
  if (failed(v))
    return failure();
  return v->has_value() ? static_cast<double>(**v) : dflt;
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

/// Builds core ops at the node's location. Callers have checked the
/// operands, so nothing here fails. A `double` operand is a rank-0 constant
/// of the other operand's element type.
///
/// Handlers pass at most one op-building argument per call (the rest are
/// values or numbers), so the order of the emitted ops does not depend on
/// the compiler's order of evaluating arguments.
class Build {
public:
  explicit Build(NodeImporter &n) : n(n) {}

  template <typename OpTy> Value op(Value x) {
    return OpTy::create(n.b, n.loc, x);
  }
  template <typename OpTy> Value op(Value lhs, Value rhs) {
    return OpTy::create(n.b, n.loc, lhs, rhs);
  }
  Value add(Value a, Value b) { return op<AddOp>(a, b); }
  Value sub(Value a, Value b) { return op<SubOp>(a, b); }
  Value mul(Value a, Value b) { return op<MulOp>(a, b); }
  Value div(Value a, Value b) { return op<DivOp>(a, b); }
  Value max(Value a, Value b) { return op<MaxOp>(a, b); }
  Value min(Value a, Value b) { return op<MinOp>(a, b); }
  Value add(Value a, double c) { return add(a, scalar(a, c)); }
  Value sub(Value a, double c) { return sub(a, scalar(a, c)); }
  Value mul(Value a, double c) { return mul(a, scalar(a, c)); }
  Value div(Value a, double c) { return div(a, scalar(a, c)); }
  Value max(Value a, double c) { return max(a, scalar(a, c)); }
  Value min(Value a, double c) { return min(a, scalar(a, c)); }
  Value cmp(CmpPredicate p, Value a, Value b) {
    return CmpOp::create(n.b, n.loc, p, a, b);
  }
  Value cmp(CmpPredicate p, Value a, double c) {
    return cmp(p, a, scalar(a, c));
  }
  Value select(Value cond, Value a, Value b) {
    return SelectOp::create(n.b, n.loc, cond, a, b);
  }
  Value select(Value cond, Value a, double c) {
    return select(cond, a, scalar(a, c));
  }
  /// A rank-0 constant of `like`'s element type.
  Value scalar(Value like, double v) { return n.scalar(elementType(like), v); }
  /// `x` converted to element type `elt` (no op when it already has it).
  Value cast(Value x, Type elt) {
    if (elementType(x) == elt)
      return x;
    return CastOp::create(
        n.b, n.loc,
        withElementType(mlir::cast<RankedTensorType>(x.getType()), elt), x);
  }
  Value reduceSum(Value x, const Reduction &r) {
    return reduce<ReduceSumOp>(x, r);
  }
  template <typename OpTy>
  Value reduce(Value x, const Reduction &r, bool keepDims) {
    return OpTy::create(n.b, n.loc, x, n.b.getDenseI64ArrayAttr(r.axes),
                        keepDims ? n.b.getUnitAttr() : UnitAttr());
  }
  /// Reduces over `r`'s axes; with `noop` (empty axes) nothing is reduced.
  template <typename OpTy> Value reduce(Value x, const Reduction &r) {
    return r.noop ? x : reduce<OpTy>(x, r, r.keepDims);
  }

private:
  NodeImporter &n;
};

//===----------------------------------------------------------------------===//
// Unary math and logic
//===----------------------------------------------------------------------===//

template <typename OpTy, Elt Allowed>
LogicalResult importUnaryOp(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Allowed));
  n.setResult(0, Build(n).op<OpTy>(x));
  return success();
}

LogicalResult importIsNaN(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  // NaN is the only value unequal to itself.
  n.setResult(0, Build(n).cmp(CmpPredicate::ne, x, x));
  return success();
}

LogicalResult importIsInf(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(positive, n.getInt("detect_positive"));
  KILN_TRY(negative, n.getInt("detect_negative"));
  Build b(n);
  Value result;
  const std::pair<bool, double> sides[] = {
      {positive.value_or(1) != 0, INFINITY},
      {negative.value_or(1) != 0, -INFINITY}};
  for (auto [detect, inf] : sides) {
    if (!detect)
      continue;
    Value hit = b.cmp(CmpPredicate::eq, x, inf);
    result = result ? b.op<OrOp>(result, hit) : hit;
  }
  // Detecting neither gives all false: x < -inf holds for no x.
  if (!result)
    result = b.cmp(CmpPredicate::lt, x, -INFINITY);
  n.setResult(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Binary and variadic ops
//===----------------------------------------------------------------------===//

/// The two operands of a binary op, rhs reshaped for the legacy
/// `broadcast`/`axis` attributes before opset 7.
FailureOr<std::pair<Value, Value>> binaryOperands(NodeImporter &n,
                                                  Elt allowed) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(rhs, n.legacyBroadcastRhs(n.input(0), n.input(1)));
  if (failed(checkOperands(n, {n.input(0), rhs}, allowed)))
    return failure();
  return std::pair(n.input(0), rhs);
}

template <typename OpTy, Elt Allowed>
LogicalResult importBinaryOp(NodeImporter &n) {
  KILN_TRY(operands, binaryOperands(n, Allowed));
  n.setResult(0, Build(n).op<OpTy>(operands.first, operands.second));
  return success();
}

template <CmpPredicate Predicate, Elt Allowed>
LogicalResult importCompare(NodeImporter &n) {
  KILN_TRY(operands, binaryOperands(n, Allowed));
  n.setResult(0, Build(n).cmp(Predicate, operands.first, operands.second));
  return success();
}

/// Max, Min, Sum and Mean: one or more inputs, folded left to right with
/// numpy broadcasting; Mean divides the sum by the input count.
template <typename OpTy, Elt Allowed, bool Mean = false>
LogicalResult importVariadic(NodeImporter &n) {
  if (n.numInputs() == 0) {
    n.error() << "expects at least 1 input, found 0";
    return failure();
  }
  if (failed(n.expectInputs(n.numInputs(), n.numInputs())))
    return failure();
  SmallVector<Value> inputs;
  for (size_t i = 0; i < n.numInputs(); ++i)
    inputs.push_back(n.input(i));
  if (failed(checkOperands(n, inputs, Allowed)))
    return failure();
  Build b(n);
  Value acc = inputs[0];
  for (Value v : ArrayRef<Value>(inputs).drop_front())
    acc = b.op<OpTy>(acc, v);
  if (Mean && inputs.size() > 1)
    acc = b.div(acc, static_cast<double>(inputs.size()));
  n.setResult(0, acc);
  return success();
}

LogicalResult importPow(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(y, n.legacyBroadcastRhs(n.input(0), n.input(1)));
  Value x = n.input(0);
  Type xt = elementType(x), yt = elementType(y);
  if (failed(checkElementType(n, xt, Elt::Numeric)) ||
      failed(checkElementType(n, yt, Elt::Numeric)) ||
      failed(checkBroadcast(n, {x, y})))
    return failure();
  Build b(n);
  // The result has the base's type. An integer base with a float exponent
  // is raised in the exponent's type and converted back (numpy's
  // power(x, y).astype(x.dtype)); any other exponent takes the base's type.
  if (isa<IntegerType>(xt) && isa<FloatType>(yt)) {
    n.setResult(0, b.cast(b.op<PowOp>(b.cast(x, yt), y), xt));
    return success();
  }
  n.setResult(0, b.op<PowOp>(x, b.cast(y, xt)));
  return success();
}

LogicalResult importMod(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(fmodAttr, n.getInt("fmod"));
  int64_t fmod = fmodAttr.value_or(0);
  if (fmod != 0 && fmod != 1) {
    n.error() << "attribute 'fmod' must be 0 or 1, found " << fmod;
    return failure();
  }
  Value a = n.input(0), d = n.input(1);
  KILN_TRY(elt, checkOperands(n, {a, d}, Elt::Numeric));
  if (!fmod && isa<FloatType>(elt)) {
    n.error() << "fmod = 0 (the result takes the divisor's sign) is defined "
                 "for integers only; expected fmod = 1 for element type "
              << elt;
    return failure();
  }
  Build b(n);
  // The core's remainder has the dividend's sign (C's %, fmod).
  Value r = b.op<RemOp>(a, d);
  if (!fmod) {
    // Python's mod has the divisor's sign: where a nonzero remainder's sign
    // differs from the divisor's, add the divisor once.
    Value zero = b.scalar(r, 0);
    Value nonzero = b.cmp(CmpPredicate::ne, r, zero);
    Value remainderNegative = b.cmp(CmpPredicate::lt, r, zero);
    Value divisorNegative = b.cmp(CmpPredicate::lt, d, zero);
    Value fix =
        b.op<AndOp>(nonzero, b.op<XorOp>(remainderNegative, divisorNegative));
    r = b.select(fix, b.add(r, d), r);
  }
  n.setResult(0, r);
  return success();
}

LogicalResult importWhere(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  Value cond = n.input(0), x = n.input(1), y = n.input(2);
  if (!elementType(cond).isInteger(1)) {
    n.error() << "the condition must have the bool element type (i1), found "
              << elementType(cond);
    return failure();
  }
  if (failed(checkOperands(n, {x, y}, Elt::Any)) ||
      failed(checkBroadcast(n, {cond, x, y})))
    return failure();
  n.setResult(0, Build(n).select(cond, x, y));
  return success();
}

//===----------------------------------------------------------------------===//
// Casts and Clip
//===----------------------------------------------------------------------===//

/// A cast of `x` to `elt` with the attributes that matter for narrow float
/// targets: `saturate` (opset 19) and `round_mode` (opset 25, float8e8m0).
LogicalResult buildCast(NodeImporter &n, Value x, Type elt) {
  bool saturate = true;
  std::string roundMode = "up";
  if (n.opset >= 19) {
    KILN_TRY(sat, n.getInt("saturate"));
    if (sat)
      saturate = *sat != 0;
  }
  if (n.opset >= 25) {
    KILN_TRY(mode, n.getString("round_mode", "up"));
    if (mode != "up" && mode != "down" && mode != "nearest") {
      n.error() << "attribute 'round_mode' must be 'up', 'down' or "
                   "'nearest', found '"
                << mode << "'";
      return failure();
    }
    roundMode = mode;
  }
  if (elementType(x) == elt) {
    n.setResult(0, x);
    return success();
  }
  n.setResult(
      0, CastOp::create(
             n.b, n.loc,
             withElementType(mlir::cast<RankedTensorType>(x.getType()), elt), x,
             saturate, roundMode));
  return success();
}

LogicalResult importCast(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(to, n.getInt("to"));
  if (!to) {
    n.error() << "attribute 'to' is required";
    return failure();
  }
  Type elt = elementTypeOf(n.b.getContext(), static_cast<int>(*to));
  if (!elt) {
    n.error() << "casting to " << onnxTypeName(static_cast<int>(*to))
              << " is not supported; expected a numeric type, bool, a "
                 "float8, float4, int4, uint4, int2 or uint2";
    return failure();
  }
  return buildCast(n, n.input(0), elt);
}

LogicalResult importCastLike(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  return buildCast(n, n.input(0), elementType(n.input(1)));
}

//===----------------------------------------------------------------------===//
// QuantizeLinear, DequantizeLinear
//===----------------------------------------------------------------------===//

/// A scale or zero point made to broadcast against `x`: a scalar (or a
/// one-element tensor) applies everywhere, a vector lies along `axis`, and
/// with `blockSize` each element covers blockSize consecutive positions
/// along `axis` (a gather with constant indices repeats them).
FailureOr<Value> quantParam(NodeImporter &n, Value v, StringRef what,
                            RankedTensorType x, int64_t axis,
                            int64_t blockSize) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() == 0)
    return v;
  if (t.getNumElements() == 1)
    return n.reshape(v, {});
  KILN_TRY(ax, n.normalizeAxis(axis, x.getRank()));
  int64_t extent = x.getDimSize(ax);
  if (blockSize == 0) {
    if (t.getRank() != 1 || t.getDimSize(0) != extent) {
      n.error() << "expects " << what << " to be a scalar or a vector of "
                << extent << " elements (dimension " << ax << " of " << x
                << "), found " << t;
      return failure();
    }
    SmallVector<int64_t> dims(x.getRank(), 1);
    dims[ax] = extent;
    return n.reshape(v, dims);
  }
  if (blockSize < 0) {
    n.error() << "expects a positive block_size, found " << blockSize;
    return failure();
  }
  bool fits = t.getRank() == x.getRank();
  for (int64_t d = 0; fits && d < x.getRank(); ++d)
    fits = t.getDimSize(d) ==
           (d == ax ? (extent + blockSize - 1) / blockSize : x.getDimSize(d));
  if (!fits) {
    n.error() << "expects " << what << " to have " << x
              << "'s shape with dimension " << ax << " divided into blocks of "
              << blockSize << ", found " << t;
    return failure();
  }
  SmallVector<int64_t> blockOf(extent);
  for (int64_t i = 0; i < extent; ++i)
    blockOf[i] = i / blockSize;
  return Value(
      GatherOp::create(n.b, n.loc, v, i64Constant(n, blockOf, {extent}), ax));
}

/// The attributes QuantizeLinear and DequantizeLinear share.
struct QuantAttrs {
  int64_t axis = 1;
  int64_t blockSize = 0;
  int64_t outputDtype = 0; ///< onnx data type, 0 when absent
};

FailureOr<QuantAttrs> readQuantAttrs(NodeImporter &n) {
  QuantAttrs q;
  if (n.opset >= 13) {
    KILN_TRY(axis, n.getInt("axis"));
    q.axis = axis.value_or(1);
  }
  if (n.opset >= 21) {
    KILN_TRY(block, n.getInt("block_size"));
    q.blockSize = block.value_or(0);
  }
  // DequantizeLinear has output_dtype from opset 23, QuantizeLinear from 21.
  if (n.opset >= 21) {
    KILN_TRY(dtype, n.getInt("output_dtype"));
    q.outputDtype = dtype.value_or(0);
  }
  return q;
}

/// (x - zero_point) * scale, computed in f32 (f64 for an f64 scale) as
/// ONNX's reference does; float8 and float4 inputs have no zero point.
LogicalResult importDequantizeLinear(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)))
    return failure();
  KILN_TRY(attrs, readQuantAttrs(n));
  Value x = n.input(0), scale = n.input(1);
  RankedTensorType xType = n.inputType(0);
  Type scaleElt = elementType(scale);
  if (failed(checkElementType(n, scaleElt, Elt::Float)))
    return failure();
  Type outElt = scaleElt;
  if (attrs.outputDtype) {
    outElt =
        elementTypeOf(n.b.getContext(), static_cast<int>(attrs.outputDtype));
    if (!outElt || !accepts(Elt::Float, outElt)) {
      n.error() << "output_dtype "
                << onnxTypeName(static_cast<int>(attrs.outputDtype))
                << " is not a float type";
      return failure();
    }
  }
  Type xElt = xType.getElementType();
  if (xElt.isInteger(1) || (isa<FloatType>(xElt) && !isNarrowType(xElt))) {
    n.error() << "expects a quantized input (8-, 16- or 32-bit integer, or a "
                 "narrow type), found "
              << xElt;
    return failure();
  }
  Build build(n);
  Type compute = scaleElt.isF64() ? scaleElt : n.b.getF32Type();
  Value dx = build.cast(x, compute);
  if (n.hasInput(2) && !isa<FloatType>(xElt)) {
    if (elementType(n.input(2)) != xElt) {
      n.error() << "expects the zero point's element type to be " << xElt
                << ", found " << elementType(n.input(2));
      return failure();
    }
    KILN_TRY(zp, quantParam(n, n.input(2), "the zero point", xType, attrs.axis,
                            attrs.blockSize));
    dx = build.sub(dx, build.cast(zp, compute));
  }
  KILN_TRY(
      s, quantParam(n, scale, "the scale", xType, attrs.axis, attrs.blockSize));
  n.setResult(0, build.cast(build.mul(dx, build.cast(s, compute)), outElt));
  return success();
}

/// Integers: clamp(roundeven(x / scale) + zero_point) to the type's range.
/// Float8: a cast of x / scale (saturating unless saturate=0). Float4:
/// x / scale + zero_point, cast.
LogicalResult importQuantizeLinear(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)))
    return failure();
  KILN_TRY(attrs, readQuantAttrs(n));
  bool saturate = true;
  if (n.opset >= 19) {
    KILN_TRY(sat, n.getInt("saturate"));
    saturate = sat.value_or(1) != 0;
  }
  int64_t precision = 0;
  if (n.opset >= 23) {
    KILN_TRY(p, n.getInt("precision"));
    precision = p.value_or(0);
  }
  Value x = n.input(0), scale = n.input(1);
  RankedTensorType xType = n.inputType(0);
  if (failed(checkElementType(n, xType.getElementType(), Elt::Float)) ||
      failed(checkElementType(n, elementType(scale), Elt::Float)))
    return failure();
  MLIRContext *ctx = n.b.getContext();
  Type outElt = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  if (attrs.outputDtype)
    outElt = elementTypeOf(ctx, static_cast<int>(attrs.outputDtype));
  if (n.hasInput(2)) {
    Type zpElt = elementType(n.input(2));
    if (attrs.outputDtype && zpElt != outElt) {
      n.error() << "output_dtype " << outElt
                << " differs from the zero point's element type " << zpElt;
      return failure();
    }
    outElt = zpElt;
  }
  bool isInt = outElt && isa<IntegerType>(outElt) && !outElt.isInteger(1) &&
               outElt.getIntOrFloatBitWidth() <= 16;
  if (!outElt ||
      (!isInt && !(isa<FloatType>(outElt) && isNarrowType(outElt))) ||
      isa<Float8E8M0FNUType>(outElt)) {
    n.error() << "expects a quantized output type (8- or 16-bit integer, int4, "
                 "uint4, int2, uint2, a float8 or float4), found "
              << (outElt ? outElt : Type(NoneType::get(ctx)));
    return failure();
  }

  Build build(n);
  Type compute = xType.getElementType();
  if (precision) {
    compute = elementTypeOf(ctx, static_cast<int>(precision));
    if (!compute || !accepts(Elt::Float, compute)) {
      n.error() << "precision " << onnxTypeName(static_cast<int>(precision))
                << " is not a float type";
      return failure();
    }
  } else if (elementType(scale) != compute) {
    // numpy's promotion of the division.
    compute = compute.isF64() || elementType(scale).isF64()
                  ? Type(n.b.getF64Type())
                  : Type(n.b.getF32Type());
  }
  KILN_TRY(
      s, quantParam(n, scale, "the scale", xType, attrs.axis, attrs.blockSize));
  Value xc = build.cast(x, compute);
  Value q = build.div(xc, build.cast(s, compute));
  Value zp;
  if (n.hasInput(2)) {
    KILN_TRY(z, quantParam(n, n.input(2), "the zero point", xType, attrs.axis,
                           attrs.blockSize));
    zp = z;
  }
  if (!isInt) {
    if (zp && isa<Float4E2M1FNType>(outElt))
      q = build.add(q, build.cast(zp, compute));
    n.setResult(0,
                CastOp::create(n.b, n.loc,
                               RankedTensorType::get(xType.getShape(), outElt),
                               q, saturate, "up"));
    return success();
  }
  unsigned width = outElt.getIntOrFloatBitWidth();
  bool isUnsigned = outElt.isUnsignedInteger();
  double lo = isUnsigned ? 0 : -std::ldexp(1.0, width - 1);
  double hi =
      isUnsigned ? std::ldexp(1.0, width) - 1 : std::ldexp(1.0, width - 1) - 1;
  // Bounded before the conversion to i32 so it never overflows; the bounds
  // lie far outside every quantized range, so the clamp below decides.
  Value r = build.op<RoundOp>(q);
  r = build.min(build.max(r, -16777216.0), 16777216.0);
  Value qi = build.cast(r, n.b.getI32Type());
  if (zp)
    qi = build.add(qi, build.cast(zp, n.b.getI32Type()));
  qi = build.min(build.max(qi, lo), hi);
  n.setResult(0, build.cast(qi, outElt));
  return success();
}

/// `v` (8-bit integers) minus its zero point input `zpIndex`, in i32. A
/// vector zero point lies along dimension `axisFromEnd` counted from the
/// end (the rows of a matmul lhs) or `channelAxis` (a conv filter's output
/// channels); a scalar or one-element one applies everywhere.
FailureOr<Value> shiftedI32(NodeImporter &n, Value v, size_t zpIndex,
                            StringRef what, int64_t vectorAxis) {
  Build build(n);
  Type i32 = n.b.getI32Type();
  auto t = cast<RankedTensorType>(v.getType());
  if (!isa<IntegerType>(t.getElementType()) ||
      t.getElementType().getIntOrFloatBitWidth() != 8) {
    n.error() << "expects " << what << " of 8-bit integers, found "
              << t.getElementType();
    return failure();
  }
  Value x = build.cast(v, i32);
  if (!n.hasInput(zpIndex))
    return x;
  Value zp = n.input(zpIndex);
  auto zt = n.inputType(zpIndex);
  if (zt.getElementType() != t.getElementType()) {
    n.error() << "expects the zero point of " << what << " to be "
              << t.getElementType() << ", found " << zt.getElementType();
    return failure();
  }
  if (zt.getNumElements() == 1) {
    zp = n.reshape(zp, {});
  } else {
    KILN_TRY(ax, n.normalizeAxis(vectorAxis, t.getRank()));
    if (zt.getRank() != 1 || zt.getDimSize(0) != t.getDimSize(ax)) {
      n.error() << "expects the zero point of " << what
                << " to be a scalar or a vector of " << t.getDimSize(ax)
                << " elements, found " << zt;
      return failure();
    }
    SmallVector<int64_t> dims(t.getRank(), 1);
    dims[ax] = zt.getDimSize(0);
    zp = n.reshape(zp, dims);
  }
  return build.sub(x, build.cast(zp, i32));
}

/// MatMulInteger: (a - a_zero_point) x (b - b_zero_point) in i32; a's zero
/// point may be per row, b's per column.
LogicalResult importMatMulInteger(NodeImporter &n) {
  if (failed(n.expectInputs(2, 4)))
    return failure();
  KILN_TRY(a, shiftedI32(n, n.input(0), 2, "A", -2));
  KILN_TRY(b, shiftedI32(n, n.input(1), 3, "B", -1));
  KILN_TRY(c, buildMatMul(n, a, b));
  n.setResult(0, c);
  return success();
}

/// ConvInteger: conv of (x - x_zero_point) and (w - w_zero_point) in i32,
/// zero padded; w's zero point may be per output channel.
LogicalResult importConvInteger(NodeImporter &n) {
  if (failed(n.expectInputs(2, 4)))
    return failure();
  KILN_TRY(x, shiftedI32(n, n.input(0), 2, "X", 1));
  KILN_TRY(w, shiftedI32(n, n.input(1), 3, "W", 0));
  KILN_TRY(y, buildConv(n, x, w));
  n.setResult(0, y);
  return success();
}

/// The requantization shared by QLinearMatMul and QLinearConv: the i32
/// accumulator `acc` times scaleA * scaleB / scaleY (in the scales' type,
/// then f64 as ONNX's reference computes it), rounded half to even, plus the
/// output zero point, clamped to the output type's range.
FailureOr<Value> requantize(NodeImporter &n, Value acc, Value scaleA,
                            Value scaleB, Value scaleY, Value zpY) {
  Build build(n);
  for (Value s : {scaleA, scaleB, scaleY})
    if (failed(checkElementType(n, elementType(s), Elt::Float)))
      return failure();
  if (elementType(scaleA) != elementType(scaleB) ||
      elementType(scaleA) != elementType(scaleY)) {
    n.error() << "expects the three scales to share one element type";
    return failure();
  }
  Type f64 = n.b.getF64Type();
  Value m = build.div(build.mul(scaleA, scaleB), scaleY);
  Value accF = build.cast(acc, f64);
  Value r = build.mul(accF, build.cast(m, f64));
  Type outElt = elementType(zpY);
  r = build.add(r, build.cast(zpY, f64));
  bool isUnsigned = outElt.isUnsignedInteger();
  r = build.min(build.max(r, isUnsigned ? 0.0 : -128.0),
                isUnsigned ? 255.0 : 127.0);
  return build.cast(build.op<RoundOp>(r), outElt);
}

/// Input `index` as a rank-0 value; it must hold exactly one element.
FailureOr<Value> scalarInput(NodeImporter &n, size_t index) {
  auto t = n.inputType(index);
  if (t.getNumElements() != 1) {
    n.error() << "expects input " << index << " to hold one element, found "
              << t;
    return failure();
  }
  return n.reshape(n.input(index), {});
}

/// A per-row (lhs, `rows` set) or per-column (rhs) matmul scale of `length`
/// entries, or a scalar.
FailureOr<Value> matmulScale(NodeImporter &n, size_t index, int64_t rows,
                             int64_t length) {
  Value s = n.input(index);
  auto t = n.inputType(index);
  if (t.getNumElements() == 1)
    return n.reshape(s, {});
  if (t.getRank() != 1 || t.getDimSize(0) != length) {
    n.error() << "expects input " << index << " to be a scalar or a vector of "
              << length << " elements, found " << t;
    return failure();
  }
  return rows ? n.reshape(s, {t.getDimSize(0), 1}) : s;
}

LogicalResult importQLinearMatMul(NodeImporter &n) {
  if (failed(n.expectInputs(8, 8)))
    return failure();
  KILN_TRY(a, shiftedI32(n, n.input(0), 2, "a", -2));
  KILN_TRY(b, shiftedI32(n, n.input(3), 5, "b", -1));
  KILN_TRY(c, buildMatMul(n, a, b));
  auto ct = cast<RankedTensorType>(c.getType());
  KILN_TRY(sa, matmulScale(n, 1, 1, ct.getDimSize(ct.getRank() - 2)));
  KILN_TRY(sb, matmulScale(n, 4, 0, ct.getDimSize(ct.getRank() - 1)));
  KILN_TRY(sy, scalarInput(n, 6));
  KILN_TRY(zy, scalarInput(n, 7));
  KILN_TRY(y, requantize(n, c, sa, sb, sy, zy));
  n.setResult(0, y);
  return success();
}

LogicalResult importQLinearConv(NodeImporter &n) {
  if (failed(n.expectInputs(8, 9)))
    return failure();
  KILN_TRY(x, shiftedI32(n, n.input(0), 2, "x", 1));
  KILN_TRY(w, shiftedI32(n, n.input(3), 5, "w", 0));
  KILN_TRY(acc, buildConv(n, x, w));
  if (n.hasInput(8)) {
    auto bt = n.inputType(8);
    if (bt.getRank() != 1 || !bt.getElementType().isSignlessInteger(32) ||
        bt.getDimSize(0) != n.inputType(3).getDimSize(0)) {
      n.error() << "expects the bias to be an i32 vector of "
                << n.inputType(3).getDimSize(0) << " elements, found " << bt;
      return failure();
    }
    SmallVector<int64_t> dims(n.inputType(0).getRank() - 1, 1);
    dims[0] = bt.getDimSize(0);
    acc = Build(n).add(acc, n.reshape(n.input(8), dims));
  }
  // A per-output-channel filter scale lies along dimension 1 of the result.
  Value sw = n.input(4);
  int64_t channels = n.inputType(3).getDimSize(0);
  if (n.inputType(4).getNumElements() == 1) {
    sw = n.reshape(sw, {});
  } else if (n.inputType(4).getRank() == 1 &&
             n.inputType(4).getDimSize(0) == channels) {
    SmallVector<int64_t> dims(n.inputType(0).getRank() - 1, 1);
    dims[0] = channels;
    sw = n.reshape(sw, dims);
  } else {
    n.error() << "expects w_scale to be a scalar or a vector of " << channels
              << " elements, found " << n.inputType(4);
    return failure();
  }
  KILN_TRY(sx, scalarInput(n, 1));
  KILN_TRY(sy, scalarInput(n, 6));
  KILN_TRY(zy, scalarInput(n, 7));
  KILN_TRY(y, requantize(n, acc, sx, sw, sy, zy));
  n.setResult(0, y);
  return success();
}

/// DynamicQuantizeLinear: uint8 quantization with the scale and zero point
/// computed from x's range (extended to include 0), as ONNX defines them.
LogicalResult importDynamicQuantizeLinear(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  Value x = n.input(0);
  if (!n.inputType(0).getElementType().isF32()) {
    n.error() << "expects an f32 input, found "
              << n.inputType(0).getElementType();
    return failure();
  }
  Build build(n);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, n.inputType(0).getRank()));
  auto everything = [&](auto op) -> Value {
    if (all.empty())
      return x;
    return decltype(op)::create(n.b, n.loc, x, n.b.getDenseI64ArrayAttr(all),
                                UnitAttr());
  };
  Value hi = build.max(everything(ReduceMaxOp()), 0.0);
  Value lo = build.min(everything(ReduceMinOp()), 0.0);
  Value range = build.sub(hi, lo);
  Value same = build.cmp(CmpPredicate::eq, hi, lo);
  Value scale =
      build.div(build.select(same, build.scalar(range, 1.0), range), 255.0);
  Value zero = build.scalar(lo, 0.0);
  Value zp = build.op<RoundOp>(
      build.min(build.max(build.sub(zero, build.div(lo, scale)), 0.0), 255.0));
  Value y = build.min(
      build.max(build.add(build.op<RoundOp>(build.div(x, scale)), zp), 0.0),
      255.0);
  Type u8 = IntegerType::get(n.b.getContext(), 8, IntegerType::Unsigned);
  n.setResult(0, build.cast(y, u8));
  n.setResult(1, scale);
  n.setResult(2, build.cast(zp, u8));
  return success();
}

/// Clip: bounds are attributes before opset 11 and optional (possibly run
/// time) inputs from then on. max(x, lo) then min(., hi), so lo > hi gives
/// hi everywhere, like numpy.clip.
LogicalResult importClip(NodeImporter &n) {
  bool boundsAreInputs = n.opset >= 11;
  if (failed(n.expectInputs(1, boundsAreInputs ? 3 : 1)))
    return failure();
  Value x = n.input(0);
  Type elt = elementType(x);
  if (failed(checkElementType(n, elt, Elt::Numeric)))
    return failure();
  Value bounds[2];
  const char *names[2] = {"min", "max"};
  for (int i = 0; i < 2; ++i) {
    if (!boundsAreInputs) {
      KILN_TRY(v, n.getFloat(names[i]));
      if (v)
        bounds[i] = n.scalar(elt, *v);
      continue;
    }
    if (!n.hasInput(1 + i))
      continue;
    Value v = n.input(1 + i);
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != elt) {
      n.error() << "the " << names[i] << " input has element type "
                << t.getElementType() << ", expected " << elt
                << " (the input's)";
      return failure();
    }
    if (t.getNumElements() != 1) {
      n.error() << "the " << names[i] << " input must be a scalar, found " << t;
      return failure();
    }
    // A one-element bound of any rank is the scalar; as rank 0 it cannot
    // change the result's shape.
    bounds[i] = n.reshape(v, {});
  }
  Build b(n);
  if (bounds[0])
    x = b.max(x, bounds[0]);
  if (bounds[1])
    x = b.min(x, bounds[1]);
  n.setResult(0, x);
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult importLeakyRelu(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 0.01));
  Build b(n);
  Value negative = b.cmp(CmpPredicate::lt, x, 0.0);
  n.setResult(0, b.select(negative, b.mul(x, alpha), x));
  return success();
}

LogicalResult importPRelu(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  Value x = n.input(0), slope = n.input(1);
  auto xType = n.inputType(0);
  auto slopeType = n.inputType(1);
  // Before opset 7 a 1-D slope holds one value per channel (dim 1), as
  // PyTorch exports it; aligned there, it broadcasts like numpy.
  if (n.opset < 7 && slopeType.getRank() == 1 && xType.getRank() >= 2 &&
      slopeType.getDimSize(0) != 1 &&
      slopeType.getDimSize(0) == xType.getDimSize(1)) {
    SmallVector<int64_t> shape(xType.getRank() - 1, 1);
    shape[0] = slopeType.getDimSize(0);
    slope = n.reshape(slope, shape);
  }
  KILN_TRY(elt, checkOperands(n, {x, slope}, Elt::Numeric));
  (void)elt;
  // The slope broadcasts to x, never the other way.
  auto joined = broadcastShapes(shapeOf(x), shapeOf(slope));
  if (ArrayRef<int64_t>(*joined) != shapeOf(x)) {
    n.error() << "the slope " << slope.getType()
              << " does not broadcast to the input's shape " << x.getType();
    return failure();
  }
  Build b(n);
  Value negative = b.cmp(CmpPredicate::lt, x, 0.0);
  n.setResult(0, b.select(negative, b.mul(x, slope), x));
  return success();
}

LogicalResult importElu(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 1.0));
  Build b(n);
  Value negative = b.cmp(CmpPredicate::lt, x, 0.0);
  Value expm1 = b.sub(b.op<ExpOp>(x), 1.0);
  n.setResult(0, b.select(negative, b.mul(expm1, alpha), x));
  return success();
}

LogicalResult importSelu(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 1.67326319217681884765625));
  KILN_TRY(gamma, floatAttr(n, "gamma", 1.05070102214813232421875));
  Build b(n);
  Value positive = b.cmp(CmpPredicate::gt, x, 0.0);
  Value a = b.scalar(x, alpha);
  Value negativePart = b.sub(b.mul(b.op<ExpOp>(x), a), a);
  n.setResult(0, b.mul(b.select(positive, x, negativePart), gamma));
  return success();
}

LogicalResult importCelu(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 1.0));
  if (alpha == 0) {
    n.error() << "attribute 'alpha' must be nonzero";
    return failure();
  }
  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  Build b(n);
  Value a = b.scalar(x, alpha);
  Value expm1 = b.sub(b.op<ExpOp>(b.div(x, a)), 1.0);
  Value negativePart = b.min(b.mul(expm1, a), 0.0);
  n.setResult(0, b.add(b.max(x, 0.0), negativePart));
  return success();
}

LogicalResult importGelu(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  std::string approximate = "none";
  if (const onnx::AttributeProto *a = n.getAttribute("approximate")) {
    if (a->type() != onnx::AttributeProto::STRING) {
      n.error() << "attribute 'approximate' must be a string";
      return failure();
    }
    approximate = a->s();
  }
  Build b(n);
  Value inner;
  if (approximate == "none") {
    // erf(x / sqrt(2))
    inner = b.op<ErfOp>(b.mul(x, M_SQRT1_2));
  } else if (approximate == "tanh") {
    // tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
    Value cube = b.mul(b.mul(x, x), x);
    Value poly = b.add(x, b.mul(cube, 0.044715));
    inner = b.op<TanhOp>(b.mul(poly, std::sqrt(2.0 / M_PI)));
  } else {
    n.error()
        << "attribute 'approximate' must be \"none\" or \"tanh\", found \""
        << approximate << "\"";
    return failure();
  }
  // 0.5 x (1 + inner)
  Value half = b.mul(x, 0.5);
  n.setResult(0, b.mul(half, b.add(inner, 1.0)));
  return success();
}

/// max(0, min(1, alpha x + beta)), shared by HardSigmoid and HardSwish.
Value hardSigmoid(Build &b, Value x, double alpha, double beta) {
  Value linear = b.add(b.mul(x, alpha), beta);
  return b.max(b.min(linear, 1.0), 0.0);
}

LogicalResult importHardSigmoid(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 0.2));
  KILN_TRY(beta, floatAttr(n, "beta", 0.5));
  Build b(n);
  n.setResult(0, hardSigmoid(b, x, alpha, beta));
  return success();
}

LogicalResult importHardSwish(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  Build b(n);
  n.setResult(0, b.mul(x, hardSigmoid(b, x, 1.0 / 6.0, 0.5)));
  return success();
}

/// log(1 + e^x) as max(x, 0) + log(1 + e^-|x|): exp never overflows, so a
/// large x gives x, not inf.
Value softplus(Build &b, Value x) {
  Value e = b.op<ExpOp>(b.op<NegOp>(b.op<AbsOp>(x)));
  Value log = b.op<LogOp>(b.add(e, 1.0));
  return b.add(b.op<ReluOp>(x), log);
}

LogicalResult importSoftplus(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  Build b(n);
  n.setResult(0, softplus(b, x));
  return success();
}

LogicalResult importSoftsign(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  Build b(n);
  n.setResult(0, b.div(x, b.add(b.op<AbsOp>(x), 1.0)));
  return success();
}

LogicalResult importMish(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  Build b(n);
  n.setResult(0, b.mul(x, b.op<TanhOp>(softplus(b, x))));
  return success();
}

LogicalResult importThresholdedRelu(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 1.0));
  Build b(n);
  Value above = b.cmp(CmpPredicate::gt, x, alpha);
  n.setResult(0, b.select(above, x, 0.0));
  return success();
}

LogicalResult importShrink(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Numeric));
  KILN_TRY(lambd, floatAttr(n, "lambd", 0.5));
  KILN_TRY(bias, floatAttr(n, "bias", 0.0));
  Type elt = elementType(x);
  // On integers the bounds compare exactly after truncation (x > 1.5 is
  // x > 1 for an integer x), but a fractional bias has no integer result.
  if (!isa<FloatType>(elt) && bias != std::trunc(bias)) {
    n.error() << "attribute 'bias' must be a whole number for element type "
              << elt << ", found " << bias;
    return failure();
  }
  Build b(n);
  Value below = b.cmp(CmpPredicate::lt, x, -lambd);
  Value above = b.cmp(CmpPredicate::gt, x, lambd);
  Value biasValue = b.scalar(x, bias);
  Value upper = b.select(above, b.sub(x, biasValue), 0.0);
  n.setResult(0, b.select(below, b.add(x, biasValue), upper));
  return success();
}

LogicalResult importSwish(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(alpha, floatAttr(n, "alpha", 1.0));
  Build b(n);
  Value scaled = alpha == 1.0 ? x : b.mul(x, alpha);
  n.setResult(0, b.mul(x, b.op<SigmoidOp>(scaled)));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions wrapped in elementwise steps, and Hardmax
//===----------------------------------------------------------------------===//

enum class ReduceKind { L1, L2, LogSum, LogSumExp, SumSquare };

/// ReduceL1 = sum |x|, ReduceL2 = sqrt(sum x^2), ReduceLogSum = log(sum x),
/// ReduceLogSumExp = log(sum e^x), ReduceSumSquare = sum x^2. With empty axes
/// and noop_with_empty_axes only the elementwise steps remain (as in ONNX's
/// reference, e.g. ReduceL1 gives |x|).
template <ReduceKind Kind>
LogicalResult importReduceComposite(NodeImporter &n) {
  KILN_TRY(r, parseReduction(n, 18));
  Value x = n.input(0);
  bool floatOnly = Kind == ReduceKind::L2 || Kind == ReduceKind::LogSum ||
                   Kind == ReduceKind::LogSumExp;
  if (failed(checkElementType(n, elementType(x),
                              floatOnly ? Elt::Float : Elt::Numeric)))
    return failure();
  Build b(n);
  Value result;
  switch (Kind) {
  case ReduceKind::L1:
    result = b.reduceSum(b.op<AbsOp>(x), r);
    break;
  case ReduceKind::L2:
    result = b.op<SqrtOp>(b.reduceSum(b.mul(x, x), r));
    break;
  case ReduceKind::LogSum:
    result = b.op<LogOp>(b.reduceSum(x, r));
    break;
  case ReduceKind::SumSquare:
    result = b.reduceSum(b.mul(x, x), r);
    break;
  case ReduceKind::LogSumExp: {
    if (r.noop) {
      result = x; // log(e^x)
      break;
    }
    // Shifting by the max keeps exp in range: log(sum e^(x - m)) + m. Where
    // the max is infinite or NaN (all -inf, say), x - m would be NaN; shift
    // by 0 there instead.
    Value m = b.reduce<ReduceMaxOp>(x, r, /*keepDims=*/true);
    Value finite = b.cmp(CmpPredicate::eq, b.sub(m, m), 0.0);
    Value shift = b.select(finite, m, 0.0);
    Value sum = b.reduceSum(b.op<ExpOp>(b.sub(x, shift)), r);
    Value log = b.op<LogOp>(sum);
    if (!r.keepDims)
      shift = n.reshape(shift, reducedShape(shapeOf(x), r.axes, false));
    result = b.add(log, shift);
    break;
  }
  }
  n.setResult(0, result);
  return success();
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. Before
/// opset 13 the input is seen as a matrix [d0..d(axis-1), d(axis)..]
/// (default axis 1); from 13 on `axis` (default -1) alone.
LogicalResult importHardmax(NodeImporter &n) {
  KILN_TRY(x, unaryInput(n, Elt::Float));
  KILN_TRY(axisAttr, n.getInt("axis"));
  auto type = n.inputType(0);
  int64_t rank = type.getRank();
  bool legacy = n.opset < 13;
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(legacy ? 1 : -1), rank));
  Value v = x;
  if (legacy) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < axis ? outer : inner) *= type.getDimSize(d);
    v = n.reshape(v, {outer, inner});
    axis = 1;
  }
  ArrayRef<int64_t> shape = shapeOf(v);
  Value index = ArgMaxOp::create(n.b, n.loc, v, axis, /*keepdims=*/true,
                                 /*select_last_index=*/false);
  // 0, 1, ... along the axis, size 1 elsewhere; equal to the index only at
  // the maximum.
  SmallVector<int64_t> iotaShape(shape.size(), 1);
  iotaShape[axis] = shape[axis];
  auto iotaType = RankedTensorType::get(iotaShape, n.b.getIntegerType(64));
  SmallVector<int64_t> iota(shape[axis]);
  for (int64_t i = 0; i < shape[axis]; ++i)
    iota[i] = i;
  Value positions = ConstantOp::create(
      n.b, n.loc, iotaType,
      DenseElementsAttr::get(iotaType, ArrayRef<int64_t>(iota)));
  Build b(n);
  Value hot = b.cmp(CmpPredicate::eq, index, positions);
  n.setResult(0,
              n.reshape(b.cast(hot, type.getElementType()), type.getShape()));
  return success();
}

} // namespace

void kiln::import::registerElementwiseHandlers(HandlerMap &handlers) {
  HandlerMap elementwise = {
      // Unary math and logic.
      {"Abs", importUnaryOp<AbsOp, Elt::Numeric>},
      {"Sign", importUnaryOp<SignOp, Elt::Numeric>},
      {"Floor", importUnaryOp<FloorOp, Elt::Float>},
      {"Ceil", importUnaryOp<CeilOp, Elt::Float>},
      {"Round", importUnaryOp<RoundOp, Elt::Float>},
      {"Sin", importUnaryOp<SinOp, Elt::Float>},
      {"Cos", importUnaryOp<CosOp, Elt::Float>},
      {"Tan", importUnaryOp<TanOp, Elt::Float>},
      {"Asin", importUnaryOp<AsinOp, Elt::Float>},
      {"Acos", importUnaryOp<AcosOp, Elt::Float>},
      {"Atan", importUnaryOp<AtanOp, Elt::Float>},
      {"Sinh", importUnaryOp<SinhOp, Elt::Float>},
      {"Cosh", importUnaryOp<CoshOp, Elt::Float>},
      {"Asinh", importUnaryOp<AsinhOp, Elt::Float>},
      {"Acosh", importUnaryOp<AcoshOp, Elt::Float>},
      {"Atanh", importUnaryOp<AtanhOp, Elt::Float>},
      {"Erf", importUnaryOp<ErfOp, Elt::Float>},
      {"Reciprocal", importUnaryOp<ReciprocalOp, Elt::Float>},
      {"Not", importUnaryOp<NotOp, Elt::Bool>},
      {"BitwiseNot", importUnaryOp<NotOp, Elt::Int>},
      {"IsNaN", importIsNaN},
      {"IsInf", importIsInf},
      // Binary and variadic.
      {"Pow", importPow},
      {"Mod", importMod},
      {"Max", importVariadic<MaxOp, Elt::Numeric>},
      {"Min", importVariadic<MinOp, Elt::Numeric>},
      {"Sum", importVariadic<AddOp, Elt::Numeric>},
      {"Mean", importVariadic<AddOp, Elt::Float, /*Mean=*/true>},
      {"And", importBinaryOp<AndOp, Elt::Bool>},
      {"Or", importBinaryOp<OrOp, Elt::Bool>},
      {"Xor", importBinaryOp<XorOp, Elt::Bool>},
      {"BitwiseAnd", importBinaryOp<AndOp, Elt::Int>},
      {"BitwiseOr", importBinaryOp<OrOp, Elt::Int>},
      {"BitwiseXor", importBinaryOp<XorOp, Elt::Int>},
      {"Equal", importCompare<CmpPredicate::eq, Elt::Any>},
      {"Less", importCompare<CmpPredicate::lt, Elt::Numeric>},
      {"LessOrEqual", importCompare<CmpPredicate::le, Elt::Numeric>},
      {"Greater", importCompare<CmpPredicate::gt, Elt::Numeric>},
      {"GreaterOrEqual", importCompare<CmpPredicate::ge, Elt::Numeric>},
      {"Where", importWhere},
      // Conversions.
      {"Cast", importCast},
      {"CastLike", importCastLike},
      {"DequantizeLinear", importDequantizeLinear},
      {"QuantizeLinear", importQuantizeLinear},
      {"MatMulInteger", importMatMulInteger},
      {"ConvInteger", importConvInteger},
      {"QLinearMatMul", importQLinearMatMul},
      {"QLinearConv", importQLinearConv},
      {"DynamicQuantizeLinear", importDynamicQuantizeLinear},
      {"Clip", importClip},
      // Activations.
      {"LeakyRelu", importLeakyRelu},
      {"PRelu", importPRelu},
      {"Elu", importElu},
      {"Selu", importSelu},
      {"Celu", importCelu},
      {"Gelu", importGelu},
      {"HardSigmoid", importHardSigmoid},
      {"HardSwish", importHardSwish},
      {"Softplus", importSoftplus},
      {"Softsign", importSoftsign},
      {"Mish", importMish},
      {"ThresholdedRelu", importThresholdedRelu},
      {"Shrink", importShrink},
      {"Swish", importSwish},
      // Reductions and Hardmax.
      {"ReduceL1", importReduceComposite<ReduceKind::L1>},
      {"ReduceL2", importReduceComposite<ReduceKind::L2>},
      {"ReduceLogSum", importReduceComposite<ReduceKind::LogSum>},
      {"ReduceLogSumExp", importReduceComposite<ReduceKind::LogSumExp>},
      {"ReduceSumSquare", importReduceComposite<ReduceKind::SumSquare>},
      {"Hardmax", importHardmax},
  };
  for (auto &entry : elementwise)
    handlers[entry.getKey()] = entry.getValue();
}

//===- OnnxOpsResize.cpp - Resize and Upsample ----------------------------===//
//
// With constant scales or sizes, every ONNX interpolation mode is separable
// and linear along each axis: output row j of an axis is a fixed weighted
// sum of input rows (plus a constant where tf_crop_and_resize extrapolates).
// The weights are computed here, at compile time, following ONNX's
// definition (coordinate transformation, neighbour choice with edge
// replication, the mode's coefficients, exclude_outside, antialiasing), and
// the axes are applied last to first as ONNX's reference nests them. A
// one-hot map (nearest, or exact alignment) becomes a gather, which is exact
// for every element type; any other map a matmul with the weight matrix.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "kiln/IR/KilnOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// How one axis is resampled.
struct ResizeAttrs {
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string nearestMode = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0.0;
  bool antialias = false;
};

/// The affine map of one axis: out[j] = sum_i weights[j * in + i] * x[i] +
/// bias[j].
struct AxisMap {
  int64_t in = 0, out = 0;
  std::vector<double> weights, bias;

  bool hasBias() const {
    return llvm::any_of(bias, [](double b) { return b != 0; });
  }
  /// The input row each output row copies, when every row is one-hot.
  std::optional<SmallVector<int64_t>> oneHot() const {
    if (hasBias())
      return std::nullopt;
    SmallVector<int64_t> index;
    for (int64_t j = 0; j < out; ++j) {
      int64_t found = -1;
      for (int64_t i = 0; i < in; ++i) {
        double w = weights[j * in + i];
        if (w == 0)
          continue;
        if (w != 1 || found >= 0)
          return std::nullopt;
        found = i;
      }
      if (found < 0)
        return std::nullopt;
      index.push_back(found);
    }
    return index;
  }
  bool isIdentity() const {
    auto index = oneHot();
    if (!index || in != out)
      return false;
    for (int64_t j = 0; j < out; ++j)
      if ((*index)[j] != j)
        return false;
    return true;
  }
};

std::vector<double> nearestCoeffs(double ratio, StringRef mode) {
  if (ratio == 1) // an exact input position
    return {0, 1};
  if (mode == "round_prefer_floor")
    return {double(ratio <= 0.5), double(ratio > 0.5)};
  if (mode == "round_prefer_ceil")
    return {double(ratio < 0.5), double(ratio >= 0.5)};
  if (mode == "floor")
    return {1, 0};
  return {0, 1}; // ceil
}

std::vector<double> cubicCoeffs(double r, double a) {
  double s = 1 - r;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

/// Antialiased filters stretch by 1/scale when downsampling and are
/// normalized to sum to 1.
std::vector<double> antialiasCoeffs(double ratio, double scale, bool cubic,
                                    double a) {
  scale = std::min(scale, 1.0);
  int64_t start =
      static_cast<int64_t>(std::floor((cubic ? -2 : -1) / scale)) + 1;
  int64_t count = 2 - 2 * start;
  std::vector<double> c;
  for (int64_t i = start; i < start + count; ++i) {
    double x = std::fabs(scale * (i - ratio));
    if (!cubic)
      c.push_back(std::clamp(1 - x, 0.0, 1.0));
    else if (x <= 1)
      c.push_back((a + 2) * x * x * x - (a + 3) * x * x + 1);
    else if (x < 2)
      c.push_back(a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a);
    else
      c.push_back(0);
  }
  double sum = std::accumulate(c.begin(), c.end(), 0.0);
  for (double &v : c)
    v /= sum;
  return c;
}

/// The `count` integers of [0, limit) nearest to x, ties to the smaller,
/// in ascending order.
std::vector<int64_t> nearestIndices(double x, int64_t count, int64_t limit) {
  std::vector<int64_t> candidates;
  auto lo = static_cast<int64_t>(std::floor(x)) - count;
  for (int64_t i = std::max<int64_t>(0, lo);
       i < std::min(limit, lo + 2 * count + 2); ++i)
    candidates.push_back(i);
  if (static_cast<int64_t>(candidates.size()) < count) {
    candidates.resize(limit);
    std::iota(candidates.begin(), candidates.end(), 0);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int64_t a, int64_t b) {
                     double da = std::fabs(x - a), db = std::fabs(x - b);
                     return da < db || (da == db && a < b);
                   });
  candidates.resize(std::min<int64_t>(count, candidates.size()));
  std::sort(candidates.begin(), candidates.end());
  return candidates;
}

/// The map of one axis from `in` to `out` elements at `scale`, with the
/// region of interest [roiStart, roiEnd] (tf_crop_and_resize only).
AxisMap axisMap(const ResizeAttrs &attrs, int64_t in, int64_t out, double scale,
                double roiStart, double roiEnd) {
  AxisMap m;
  m.in = in;
  m.out = out;
  m.weights.assign(in * out, 0.0);
  m.bias.assign(out, 0.0);
  double outWidth = scale * in;
  for (int64_t j = 0; j < out; ++j) {
    double x = j, xo;
    const std::string &t = attrs.transform;
    if (t == "align_corners") {
      xo = outWidth == 1 ? 0 : x * (in - 1) / (outWidth - 1);
    } else if (t == "asymmetric") {
      xo = x / scale;
    } else if (t == "tf_crop_and_resize") {
      xo = outWidth == 1 ? (roiEnd - roiStart) * (in - 1) / 2
                         : x * (roiEnd - roiStart) * (in - 1) / (outWidth - 1);
      xo += roiStart * (in - 1);
      if (xo < 0 || xo > in - 1) {
        m.bias[j] = attrs.extrapolation;
        continue;
      }
    } else if (t == "pytorch_half_pixel") {
      xo = outWidth == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    } else if (t == "half_pixel_symmetric") {
      double adjustment = out / outWidth;
      xo = (in / 2.0) * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    } else { // half_pixel
      xo = (x + 0.5) / scale - 0.5;
    }
    double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
    std::vector<double> coeffs;
    if (attrs.mode == "nearest")
      coeffs = nearestCoeffs(ratio, attrs.nearestMode);
    else if (attrs.antialias)
      coeffs =
          antialiasCoeffs(ratio, scale, attrs.mode == "cubic", attrs.cubicA);
    else if (attrs.mode == "cubic")
      coeffs = cubicCoeffs(ratio, attrs.cubicA);
    else
      coeffs = {1 - ratio, ratio};
    // Neighbours in the input padded by edge replication.
    auto count = static_cast<int64_t>(coeffs.size());
    int64_t pad = (count + 1) / 2;
    std::vector<int64_t> idx = nearestIndices(xo + pad, count, in + 2 * pad);
    if (attrs.excludeOutside) {
      double sum = 0;
      for (size_t k = 0; k < idx.size(); ++k) {
        int64_t i = idx[k] - pad;
        if (i < 0 || i >= in)
          coeffs[k] = 0;
        sum += coeffs[k];
      }
      for (double &c : coeffs)
        c /= sum;
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t i = std::clamp<int64_t>(idx[k] - pad, 0, in - 1);
      m.weights[j * in + i] += coeffs[k];
    }
  }
  return m;
}

/// Applies `m` along `axis` of `x`.
FailureOr<Value> applyAxisMap(NodeImporter &n, Value x, int64_t axis,
                              const AxisMap &m, StringRef mode) {
  auto t = cast<RankedTensorType>(x.getType());
  if (auto index = m.oneHot())
    return Value(
        GatherOp::create(n.b, n.loc, x, i64Constant(n, *index, {m.out}), axis));
  Type elt = t.getElementType();
  if (!isa<FloatType>(elt)) {
    n.error() << "mode '" << mode << "' interpolates, which needs a float "
              << "element type, found " << elt;
    return failure();
  }
  // Half-precision inputs accumulate in f32.
  Type compute = elt.isF64() ? elt : Type(n.b.getF32Type());
  auto castTo = [&](Value v, Type to) -> Value {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getElementType() == to)
      return v;
    return CastOp::create(n.b, n.loc, RankedTensorType::get(vt.getShape(), to),
                          v);
  };
  int64_t rank = t.getRank();
  SmallVector<int64_t> perm, inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  for (int64_t d = 0; d < rank; ++d)
    inverse[perm[d]] = d;
  Value moved = rank > 1 && axis != rank - 1 ? n.transpose(x, perm) : x;
  moved = castTo(moved, compute);
  // out = moved . W^T with W^T of shape [in, out].
  auto wType = RankedTensorType::get({m.in, m.out}, compute);
  SmallVector<Attribute> wt;
  for (int64_t i = 0; i < m.in; ++i)
    for (int64_t j = 0; j < m.out; ++j)
      wt.push_back(FloatAttr::get(compute, m.weights[j * m.in + i]));
  Value weights = ConstantOp::create(
      n.b, n.loc, wType, cast<ElementsAttr>(DenseElementsAttr::get(wType, wt)));
  KILN_TRY(y, buildMatMul(n, moved, weights));
  if (m.hasBias()) {
    auto bType = RankedTensorType::get({m.out}, compute);
    SmallVector<Attribute> b;
    for (double v : m.bias)
      b.push_back(FloatAttr::get(compute, v));
    Value bias = ConstantOp::create(
        n.b, n.loc, bType,
        cast<ElementsAttr>(DenseElementsAttr::get(bType, b)));
    y = AddOp::create(n.b, n.loc, y, bias);
  }
  y = castTo(y, elt);
  return rank > 1 && axis != rank - 1 ? n.transpose(y, inverse) : y;
}

/// The float values of a constant input (scales, roi).
FailureOr<SmallVector<double>> constantFloats(NodeImporter &n, size_t i,
                                              StringRef what) {
  KILN_TRY(dense, n.constantInput(i, what));
  if (!isa<FloatType>(dense.getElementType())) {
    n.error() << "the " << what << " input must hold floats, found "
              << dense.getElementType();
    return failure();
  }
  SmallVector<double> values;
  for (const APFloat &v : dense.getValues<APFloat>()) {
    bool lost;
    APFloat d = v;
    d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    values.push_back(d.convertToDouble());
  }
  return values;
}

bool isEmptyInput(NodeImporter &n, size_t i) {
  return !n.hasInput(i) || n.inputType(i).getNumElements() == 0;
}

/// Resize (opset 10 onwards) and Upsample (before): X, [roi], scales or
/// sizes, all but X constant.
LogicalResult importResize(NodeImporter &n, bool isUpsample) {
  bool legacy = isUpsample || n.opset < 11; // asymmetric, nearest = floor
  if (failed(n.expectInputs(1, legacy ? 2 : 4)))
    return failure();
  ResizeAttrs attrs;
  KILN_TRY(mode, n.getString("mode", "nearest"));
  attrs.mode = mode;
  if (attrs.mode != "nearest" && attrs.mode != "linear" &&
      attrs.mode != "cubic" && !(legacy && attrs.mode == "bilinear")) {
    n.error() << "mode '" << attrs.mode
              << "' is not one of nearest, linear, cubic";
    return failure();
  }
  if (attrs.mode == "bilinear")
    attrs.mode = "linear";
  if (legacy) {
    attrs.transform = "asymmetric";
    attrs.nearestMode = "floor";
  } else {
    KILN_TRY(t, n.getString("coordinate_transformation_mode", "half_pixel"));
    KILN_TRY(nm, n.getString("nearest_mode", "round_prefer_floor"));
    KILN_TRY(a, n.getFloat("cubic_coeff_a"));
    KILN_TRY(ex, n.getInt("exclude_outside"));
    KILN_TRY(ev, n.getFloat("extrapolation_value"));
    static const char *transforms[] = {
        "half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
        "align_corners", "asymmetric",           "tf_crop_and_resize"};
    if (!llvm::is_contained(transforms, t)) {
      n.error() << "coordinate_transformation_mode '" << t
                << "' is not supported";
      return failure();
    }
    static const char *nearestModes[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
    if (!llvm::is_contained(nearestModes, nm)) {
      n.error() << "nearest_mode '" << nm << "' is not supported";
      return failure();
    }
    attrs.transform = t;
    attrs.nearestMode = nm;
    attrs.cubicA = a.value_or(-0.75f);
    attrs.excludeOutside = ex.value_or(0) != 0;
    attrs.extrapolation = ev.value_or(0.0f);
  }
  RankedTensorType xType = n.inputType(0);
  int64_t rank = xType.getRank();
  SmallVector<int64_t> axes;
  std::string policy = "stretch";
  if (!legacy && n.opset >= 18) {
    KILN_TRY(aa, n.getInt("antialias"));
    attrs.antialias = aa.value_or(0) != 0;
    KILN_TRY(ax, n.getInts("axes"));
    if (ax)
      for (int64_t a : *ax) {
        KILN_TRY(norm, n.normalizeAxis(a, rank));
        axes.push_back(norm);
      }
    KILN_TRY(p, n.getString("keep_aspect_ratio_policy", "stretch"));
    if (p != "stretch" && p != "not_larger" && p != "not_smaller") {
      n.error() << "keep_aspect_ratio_policy '" << p << "' is not supported";
      return failure();
    }
    policy = p;
  }
  if (axes.empty())
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (attrs.antialias && attrs.mode == "nearest") {
    n.error() << "antialias is not defined for mode 'nearest'";
    return failure();
  }

  // Scales and output sizes per dimension.
  SmallVector<double> scale(rank, 1.0);
  SmallVector<int64_t> outShape(xType.getShape());
  size_t scalesIndex = legacy ? 1 : 2, sizesIndex = 3;
  if (isUpsample && n.opset < 9) {
    KILN_TRY(s, n.getFloats("scales"));
    if (!s) {
      n.error() << "attribute 'scales' is required";
      return failure();
    }
    scale.assign(s->begin(), s->end());
  } else if (!isEmptyInput(n, scalesIndex)) {
    KILN_TRY(s, constantFloats(n, scalesIndex, "scales"));
    if (s.size() != axes.size()) {
      n.error() << "expects " << axes.size() << " scales, found " << s.size();
      return failure();
    }
    for (auto [k, a] : llvm::enumerate(axes))
      scale[a] = s[k];
  } else if (!legacy && !isEmptyInput(n, sizesIndex)) {
    KILN_TRY(sizes, n.constantInts(sizesIndex, "sizes"));
    if (sizes.size() != axes.size()) {
      n.error() << "expects " << axes.size() << " sizes, found "
                << sizes.size();
      return failure();
    }
    for (auto [k, a] : llvm::enumerate(axes)) {
      outShape[a] = sizes[k];
      scale[a] = double(sizes[k]) / xType.getDimSize(a);
    }
    if (policy != "stretch") {
      double s = scale[axes[0]];
      for (int64_t a : axes)
        s = policy == "not_larger" ? std::min(s, scale[a])
                                   : std::max(s, scale[a]);
      for (int64_t a : axes) {
        scale[a] = s;
        outShape[a] = static_cast<int64_t>(s * xType.getDimSize(a) + 0.5);
      }
    }
  } else {
    n.error() << "expects scales or sizes";
    return failure();
  }
  if (static_cast<int64_t>(scale.size()) != rank) {
    n.error() << "expects " << rank << " scales, found " << scale.size();
    return failure();
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!(scale[d] > 0) || !std::isfinite(scale[d])) {
      n.error() << "scale " << scale[d] << " of dimension " << d
                << " is not positive";
      return failure();
    }
    if (legacy || isEmptyInput(n, sizesIndex))
      outShape[d] = static_cast<int64_t>(scale[d] * xType.getDimSize(d));
    if (outShape[d] < 0 || outShape[d] > (int64_t(1) << 31)) {
      n.error() << "output dimension " << d << " has size " << outShape[d];
      return failure();
    }
  }

  // The region of interest, [starts..., ends...] over the resized axes.
  SmallVector<double> roiStart(rank, 0.0), roiEnd(rank, 1.0);
  if (attrs.transform == "tf_crop_and_resize") {
    if (isEmptyInput(n, 1)) {
      n.error() << "tf_crop_and_resize needs the roi input";
      return failure();
    }
    KILN_TRY(roi, constantFloats(n, 1, "roi"));
    if (roi.size() != 2 * axes.size()) {
      n.error() << "expects " << 2 * axes.size() << " roi values, found "
                << roi.size();
      return failure();
    }
    for (auto [k, a] : llvm::enumerate(axes)) {
      roiStart[a] = roi[k];
      roiEnd[a] = roi[axes.size() + k];
    }
  }

  // Last axis first, as ONNX's reference nests the 1-D interpolations.
  Value y = n.input(0);
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (xType.getDimSize(d) == 0 || outShape[d] == 0) {
      if (xType.getDimSize(d) != outShape[d]) {
        n.error() << "cannot resize dimension " << d << " from "
                  << xType.getDimSize(d) << " to " << outShape[d]
                  << " elements";
        return failure();
      }
      continue;
    }
    // Each resized axis becomes an [in, out] weight matrix built at compile
    // time; a hostile scale must not make it billions of elements.
    constexpr int64_t kMaxWeights = int64_t(1) << 24;
    if (outShape[d] > kMaxWeights / xType.getDimSize(d)) {
      n.error() << "resizing dimension " << d << " from " << xType.getDimSize(d)
                << " to " << outShape[d]
                << " needs a weight matrix of more than " << kMaxWeights
                << " elements";
      return failure();
    }
    AxisMap m = axisMap(attrs, xType.getDimSize(d), outShape[d], scale[d],
                        roiStart[d], roiEnd[d]);
    if (m.isIdentity())
      continue;
    KILN_TRY(next, applyAxisMap(n, y, d, m, attrs.mode));
    y = next;
  }
  n.setResult(0, y);
  return success();
}

} // namespace

void kiln::import::registerResizeHandlers(HandlerMap &handlers) {
  handlers["Resize"] = [](NodeImporter &n) { return importResize(n, false); };
  handlers["Upsample"] = [](NodeImporter &n) { return importResize(n, true); };
}

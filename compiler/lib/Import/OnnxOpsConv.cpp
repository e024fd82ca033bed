//===- OnnxOpsConv.cpp - convolution and pooling --------------------------===//
//
// Conv and the pools map onto kiln.conv / kiln.pool after the window
// attributes (auto_pad, pads, strides, dilations, ceil_mode) are resolved to
// explicit pads. Everything else is a decomposition: average pooling divides
// a sum by window counts computed here at compile time, ConvTranspose is a
// stride-1 convolution of the zero-upsampled input with the flipped kernel,
// the global pools are reductions.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// Window attributes resolved to explicit values.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, pads; // pads: k low, k high
  SmallVector<int64_t> userPads; // the pads before ceil_mode extended them
};

/// A list attribute of `k` entries, or `fallback` repeated when absent.
FailureOr<SmallVector<int64_t>> listAttr(NodeImporter &n, StringRef name,
                                         size_t k, int64_t fallback) {
  KILN_TRY(attr, n.getInts(name));
  if (!attr)
    return SmallVector<int64_t>(k, fallback);
  if (attr->size() != k) {
    n.error() << "attribute '" << name << "' has " << attr->size()
              << " entries, expected " << k;
    return failure();
  }
  return *attr;
}

/// Reads strides, dilations, pads/auto_pad (and ceil_mode for pools) for a
/// window of `kernel` over `spatial` input sizes.
FailureOr<Window> windowAttrs(NodeImporter &n, ArrayRef<int64_t> spatial,
                              ArrayRef<int64_t> kernel, bool hasDilations,
                              bool hasCeilMode) {
  size_t k = spatial.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  KILN_TRY(strides, listAttr(n, "strides", k, 1));
  w.strides = strides;
  if (hasDilations) {
    KILN_TRY(dilations, listAttr(n, "dilations", k, 1));
    w.dilations = dilations;
  } else {
    w.dilations.assign(k, 1);
  }
  KILN_TRY(pads, listAttr(n, "pads", 2 * k, 0));
  KILN_TRY(autoPad, n.getString("auto_pad", "NOTSET"));
  int64_t ceilMode = 0;
  if (hasCeilMode) {
    KILN_TRY(c, n.getInt("ceil_mode"));
    ceilMode = c.value_or(0);
  }
  for (size_t i = 0; i < k; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1) {
      n.error() << "kernel sizes, strides and dilations must be positive";
      return failure();
    }
  w.pads = pads;
  if (autoPad == "VALID") {
    w.pads.assign(2 * k, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
      int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + span - spatial[i]);
      int64_t small = total / 2;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[k + i] = total - w.pads[i];
    }
  } else if (autoPad != "NOTSET") {
    n.error() << "auto_pad '" << autoPad << "' is not one of NOTSET, VALID, "
              << "SAME_UPPER, SAME_LOWER";
    return failure();
  }
  for (int64_t p : w.pads)
    if (p < 0) {
      n.error() << "pads must not be negative";
      return failure();
    }
  w.userPads = w.pads;
  for (size_t i = 0; i < k; ++i) {
    int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
    int64_t padded = spatial[i] + w.pads[i] + w.pads[k + i];
    if (padded < span) {
      n.error() << "the window (" << span << " elements) does not fit the "
                << "padded input (" << padded << ") in spatial dimension " << i;
      return failure();
    }
    if (ceilMode) {
      // Round the output size up, but a window must start inside the input
      // or its low padding; extra high padding makes floor() agree.
      int64_t out = (padded - span + w.strides[i] - 1) / w.strides[i] + 1;
      if ((out - 1) * w.strides[i] >= spatial[i] + w.pads[i])
        --out;
      int64_t needed = (out - 1) * w.strides[i] + span - padded;
      if (needed > 0)
        w.pads[k + i] += needed;
    }
  }
  return w;
}

/// The kernel shape: from the attribute if present (checked against the
/// filter), else from the filter's spatial dims.
FailureOr<SmallVector<int64_t>>
kernelShape(NodeImporter &n, ArrayRef<int64_t> fromFilter, bool required) {
  KILN_TRY(attr, n.getInts("kernel_shape"));
  if (!attr) {
    if (required) {
      n.error() << "expects a 'kernel_shape' attribute";
      return failure();
    }
    return SmallVector<int64_t>(fromFilter);
  }
  if (!fromFilter.empty() && ArrayRef<int64_t>(*attr) != fromFilter) {
    n.error() << "kernel_shape does not match the filter's spatial dimensions";
    return failure();
  }
  return *attr;
}

LogicalResult checkSpatialInput(NodeImporter &n, size_t index) {
  auto t = n.inputType(index);
  if (t.getRank() < 3) {
    n.error() << "expects an input of rank 3 or more ([N, C, spatial...]), "
              << "found " << t;
    return failure();
  }
  if (t.getElementType().isInteger(1)) {
    n.error() << "element type i1 (bool) is not supported";
    return failure();
  }
  return success();
}

/// Adds a per-channel bias [M] to an [N, M, ...] tensor.
FailureOr<Value> addBias(NodeImporter &n, Value y, Value bias) {
  auto yt = cast<RankedTensorType>(y.getType());
  auto bt = cast<RankedTensorType>(bias.getType());
  if (bt.getRank() != 1 || bt.getDimSize(0) != yt.getDimSize(1)) {
    n.error() << "the bias has shape " << bt << ", expected ["
              << yt.getDimSize(1) << "]";
    return failure();
  }
  SmallVector<int64_t> shape(yt.getRank() - 1, 1);
  shape[0] = yt.getDimSize(1);
  return n.binary<AddOp>(y, n.reshape(bias, shape));
}

} // namespace

/// Conv of `x` and `w` with the node's attributes (kernel_shape, group,
/// strides, dilations, pads, auto_pad), without a bias.
FailureOr<Value> kiln::import::buildConv(NodeImporter &n, Value x, Value w) {
  if (failed(checkSpatialInput(n, 0)))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  auto wt = cast<RankedTensorType>(w.getType());
  if (wt.getRank() != xt.getRank()) {
    n.error() << "the filter " << wt << " must have the input's rank "
              << xt.getRank();
    return failure();
  }
  KILN_TRY(kernel, kernelShape(n, wt.getShape().drop_front(2), false));
  KILN_TRY(group, n.getInt("group"));
  KILN_TRY(win,
           windowAttrs(n, xt.getShape().drop_front(2), kernel, true, false));
  int64_t g = group.value_or(1);
  int64_t c = xt.getDimSize(1), m = wt.getDimSize(0);
  if (xt.getElementType() != wt.getElementType()) {
    n.error() << "input and filter have different element types";
    return failure();
  }
  if (g < 1 || c % g || m % g || wt.getDimSize(1) * g != c) {
    n.error() << "group " << g << " does not fit " << c << " input channels, "
              << m << " filters of " << wt.getDimSize(1) << " channels";
    return failure();
  }
  return Value(ConvOp::create(n.b, n.loc, x, w,
                              n.b.getDenseI64ArrayAttr(win.strides),
                              n.b.getDenseI64ArrayAttr(win.dilations),
                              n.b.getDenseI64ArrayAttr(win.pads), g));
}

namespace {

LogicalResult importConv(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)))
    return failure();
  KILN_TRY(y, buildConv(n, n.input(0), n.input(1)));
  if (n.hasInput(2)) {
    KILN_TRY(biased, addBias(n, y, n.input(2)));
    y = biased;
  }
  n.setResult(0, y);
  return success();
}

/// x with `s - 1` zeros inserted between neighbours along `dim`.
Value upsample(NodeImporter &n, Value x, int64_t dim, int64_t s) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t size = t.getDimSize(dim);
  SmallVector<int64_t> withUnit(t.getShape());
  withUnit.insert(withUnit.begin() + dim + 1, 1);
  Value v = n.reshape(x, withUnit);
  SmallVector<int64_t> zerosShape = withUnit;
  zerosShape[dim + 1] = s - 1;
  auto zerosTy = RankedTensorType::get(zerosShape, t.getElementType());
  Value zeros =
      ConstantOp::create(n.b, n.loc, zerosTy,
                         cast<ElementsAttr>(DenseElementsAttr::get(
                             zerosTy, n.b.getZeroAttr(t.getElementType()))));
  Value joined = ConcatOp::create(n.b, n.loc, ValueRange{v, zeros}, dim + 1);
  SmallVector<int64_t> flat(t.getShape());
  flat[dim] = size * s;
  Value f = n.reshape(joined, flat);
  SmallVector<int64_t> out(t.getShape());
  out[dim] = (size - 1) * s + 1;
  SmallVector<int64_t> starts(t.getRank(), 0), strides(t.getRank(), 1);
  return SliceOp::create(
      n.b, n.loc, RankedTensorType::get(out, t.getElementType()), f,
      n.b.getDenseI64ArrayAttr(starts), n.b.getDenseI64ArrayAttr(strides));
}

LogicalResult importConvTranspose(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)) || failed(checkSpatialInput(n, 0)))
    return failure();
  auto xt = n.inputType(0), wt = n.inputType(1);
  size_t k = xt.getRank() - 2;
  if (wt.getRank() != xt.getRank() ||
      xt.getElementType() != wt.getElementType()) {
    n.error() << "the filter " << wt << " must have the input's rank and "
              << "element type";
    return failure();
  }
  KILN_TRY(kernel, kernelShape(n, wt.getShape().drop_front(2), false));
  KILN_TRY(group, n.getInt("group"));
  KILN_TRY(strides, listAttr(n, "strides", k, 1));
  KILN_TRY(dilations, listAttr(n, "dilations", k, 1));
  KILN_TRY(pads, listAttr(n, "pads", 2 * k, 0));
  KILN_TRY(outputPadding, listAttr(n, "output_padding", k, 0));
  KILN_TRY(outputShape, n.getInts("output_shape"));
  KILN_TRY(autoPad, n.getString("auto_pad", "NOTSET"));
  int64_t g = group.value_or(1), c = xt.getDimSize(1);
  if (g < 1 || c % g || wt.getDimSize(0) != c) {
    n.error() << "group " << g << " does not fit " << c
              << " input channels and "
              << "a filter of " << wt.getDimSize(0) << " input channels";
    return failure();
  }
  // Resolve pads the way the ONNX definition does.
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    SmallVector<int64_t> target;
    if (outputShape) {
      target = *outputShape;
      if (target.size() == k + 2)
        target.erase(target.begin(), target.begin() + 2);
      if (target.size() != k) {
        n.error() << "output_shape has " << outputShape->size()
                  << " entries, expected " << k;
        return failure();
      }
    } else {
      for (size_t i = 0; i < k; ++i)
        target.push_back(xt.getDimSize(2 + i) * strides[i]);
    }
    for (size_t i = 0; i < k; ++i) {
      int64_t total = strides[i] * (xt.getDimSize(2 + i) - 1) +
                      outputPadding[i] + (kernel[i] - 1) * dilations[i] + 1 -
                      target[i];
      // Floor division: a negative total (output_shape larger than the
      // natural size) extends the output with zeros on the high side.
      int64_t half = llvm::divideFloorSigned(total, 2);
      if (autoPad == "SAME_UPPER") {
        pads[i] = half;
        pads[k + i] = total - half;
      } else {
        pads[i] = total - half;
        pads[k + i] = half;
      }
    }
  } else if (autoPad == "VALID") {
    pads.assign(2 * k, 0);
  } else if (autoPad != "NOTSET") {
    n.error() << "auto_pad '" << autoPad << "' is not one of NOTSET, VALID, "
              << "SAME_UPPER, SAME_LOWER";
    return failure();
  }

  // Zero-upsample the input by the strides.
  Value x = n.input(0);
  for (size_t i = 0; i < k; ++i)
    if (strides[i] > 1)
      x = upsample(n, x, 2 + i, strides[i]);
  // Filter [C, M/g, K...] -> [M, C/g, K...], spatially flipped.
  int64_t cg = c / g, mg = wt.getDimSize(1);
  Type elt = wt.getElementType();
  SmallVector<int64_t> split = {g, cg, mg};
  llvm::append_range(split, wt.getShape().drop_front(2));
  Value f = n.reshape(n.input(1), split);
  SmallVector<int64_t> perm = {0, 2, 1};
  for (size_t i = 0; i < k; ++i)
    perm.push_back(3 + i);
  f = n.transpose(f, perm);
  SmallVector<int64_t> merged = {g * mg, cg};
  llvm::append_range(merged, wt.getShape().drop_front(2));
  f = n.reshape(f, merged);
  SmallVector<int64_t> starts(k + 2, 0), flipStrides(k + 2, 1);
  for (size_t i = 0; i < k; ++i) {
    starts[2 + i] = kernel[i] - 1;
    flipStrides[2 + i] = -1;
  }
  f = SliceOp::create(n.b, n.loc, RankedTensorType::get(merged, elt), f,
                      n.b.getDenseI64ArrayAttr(starts),
                      n.b.getDenseI64ArrayAttr(flipStrides));
  // A full convolution pads span-1 on each side; ONNX pads remove from that
  // and output_padding adds to the high side. Negative amounts crop.
  SmallVector<int64_t> convPads(2 * k), crop(2 * k, 0);
  for (size_t i = 0; i < k; ++i) {
    int64_t full = dilations[i] * (kernel[i] - 1);
    int64_t low = full - pads[i], high = full - pads[k + i] + outputPadding[i];
    convPads[i] = std::max<int64_t>(low, 0);
    convPads[k + i] = std::max<int64_t>(high, 0);
    crop[i] = std::max<int64_t>(-low, 0);
    crop[k + i] = std::max<int64_t>(-high, 0);
  }
  SmallVector<int64_t> ones(k, 1);
  auto ux = cast<RankedTensorType>(x.getType());
  for (size_t i = 0; i < k; ++i)
    if (ux.getDimSize(2 + i) + convPads[i] + convPads[k + i] <
        dilations[i] * (kernel[i] - 1) + 1) {
      n.error() << "the padding leaves no output in spatial dimension " << i;
      return failure();
    }
  Value y = ConvOp::create(n.b, n.loc, x, f, n.b.getDenseI64ArrayAttr(ones),
                           n.b.getDenseI64ArrayAttr(dilations),
                           n.b.getDenseI64ArrayAttr(convPads), g);
  if (llvm::any_of(crop, [](int64_t v) { return v > 0; })) {
    auto yt = cast<RankedTensorType>(y.getType());
    SmallVector<int64_t> shape(yt.getShape()), st(k + 2, 0), one(k + 2, 1);
    for (size_t i = 0; i < k; ++i) {
      shape[2 + i] -= crop[i] + crop[k + i];
      st[2 + i] = crop[i];
      if (shape[2 + i] <= 0) {
        n.error() << "the padding leaves no output in spatial dimension " << i;
        return failure();
      }
    }
    y = SliceOp::create(n.b, n.loc, RankedTensorType::get(shape, elt), y,
                        n.b.getDenseI64ArrayAttr(st),
                        n.b.getDenseI64ArrayAttr(one));
  }
  if (n.hasInput(2)) {
    KILN_TRY(biased, addBias(n, y, n.input(2)));
    y = biased;
  }
  n.setResult(0, y);
  return success();
}

/// Per-output-position element counts of each window, as an [1, 1, O...]
/// constant: positions inside the input, or inside the input and its
/// user-given padding when `includePad`.
Value windowCounts(NodeImporter &n, const Window &w, ArrayRef<int64_t> spatial,
                   ArrayRef<int64_t> outSpatial, bool includePad, Type elt) {
  size_t k = spatial.size();
  std::vector<std::vector<double>> perDim(k);
  for (size_t i = 0; i < k; ++i) {
    int64_t lo = includePad ? -w.userPads[i] : 0;
    int64_t hi = spatial[i] + (includePad ? w.userPads[k + i] : 0);
    for (int64_t o = 0; o < outSpatial[i]; ++o) {
      int64_t count = 0;
      for (int64_t j = 0; j < w.kernel[i]; ++j) {
        int64_t p = o * w.strides[i] + j * w.dilations[i] - w.pads[i];
        count += p >= lo && p < hi;
      }
      perDim[i].push_back(static_cast<double>(std::max<int64_t>(count, 1)));
    }
  }
  SmallVector<int64_t> shape = {1, 1};
  llvm::append_range(shape, outSpatial);
  int64_t total = 1;
  for (int64_t o : outSpatial)
    total *= o;
  SmallVector<APFloat> values;
  auto ft = cast<FloatType>(elt);
  for (int64_t flat = 0; flat < total; ++flat) {
    double count = 1;
    int64_t rest = flat;
    for (size_t i = k; i-- > 0;) {
      count *= perDim[i][rest % outSpatial[i]];
      rest /= outSpatial[i];
    }
    APFloat v(count);
    bool lost;
    v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    values.push_back(v);
  }
  auto type = RankedTensorType::get(shape, elt);
  return ConstantOp::create(
      n.b, n.loc, type,
      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

enum class PoolFlavor { Max, Average, Lp };

/// One [N, C, spatial...] input; averages and norms need floats.
LogicalResult checkPoolInput(NodeImporter &n, bool floatOnly) {
  if (failed(n.expectInputs(1, 1)) || failed(checkSpatialInput(n, 0)))
    return failure();
  Type elt = n.inputType(0).getElementType();
  if (floatOnly && !isa<FloatType>(elt)) {
    n.error() << "element type " << elt << " is not supported";
    return failure();
  }
  return success();
}

template <PoolFlavor Flavor> LogicalResult importPool(NodeImporter &n) {
  if (failed(checkPoolInput(n, Flavor != PoolFlavor::Max)))
    return failure();
  auto xt = n.inputType(0);
  Type elt = xt.getElementType();
  ArrayRef<int64_t> spatial = xt.getShape().drop_front(2);
  KILN_TRY(kernel, kernelShape(n, {}, true));
  if (kernel.size() != spatial.size()) {
    n.error() << "kernel_shape has " << kernel.size() << " entries for "
              << spatial.size() << " spatial dimensions";
    return failure();
  }
  bool dilations = Flavor == PoolFlavor::Max || n.opset >= 19 ||
                   (Flavor == PoolFlavor::Lp && n.opset >= 18);
  bool ceilMode = Flavor != PoolFlavor::Lp || n.opset >= 18;
  if (Flavor == PoolFlavor::Max && n.opset < 10)
    ceilMode = false;
  if (Flavor == PoolFlavor::Average && n.opset < 10)
    ceilMode = false;
  KILN_TRY(w, windowAttrs(n, spatial, kernel, dilations, ceilMode));
  if (Flavor == PoolFlavor::Max) {
    KILN_TRY(order, n.getInt("storage_order"));
    (void)order; // only affects the Indices output
    if (n.outputUsed(1)) {
      n.error() << "the Indices output is not supported";
      return failure();
    }
  }
  std::optional<int64_t> countIncludePad;
  if (Flavor == PoolFlavor::Average) {
    KILN_TRY(c, n.getInt("count_include_pad"));
    countIncludePad = c;
  }
  int64_t p = 2;
  if (Flavor == PoolFlavor::Lp) {
    KILN_TRY(pAttr, n.getInt("p"));
    p = pAttr.value_or(2);
    if (p < 1) {
      n.error() << "p must be positive, found " << p;
      return failure();
    }
  }
  Value x = n.input(0);
  if (Flavor == PoolFlavor::Lp) {
    // |x|^p summed, then the p-th root.
    x = AbsOp::create(n.b, n.loc, x);
    if (p != 1) {
      KILN_TRY(pw, n.binary<PowOp>(x, n.scalar(elt, static_cast<double>(p))));
      x = pw;
    }
  }
  auto kind = Flavor == PoolFlavor::Max ? PoolKind::max : PoolKind::sum;
  Value y = PoolOp::create(
      n.b, n.loc, kind, x, n.b.getDenseI64ArrayAttr(w.kernel),
      n.b.getDenseI64ArrayAttr(w.strides),
      n.b.getDenseI64ArrayAttr(w.dilations), n.b.getDenseI64ArrayAttr(w.pads));
  auto yt = cast<RankedTensorType>(y.getType());
  if (Flavor == PoolFlavor::Average) {
    Value counts = windowCounts(n, w, spatial, yt.getShape().drop_front(2),
                                countIncludePad.value_or(0) != 0, elt);
    KILN_TRY(avg, n.binary<DivOp>(y, counts));
    y = avg;
  }
  if (Flavor == PoolFlavor::Lp && p != 1) {
    KILN_TRY(root,
             n.binary<PowOp>(y, n.scalar(elt, 1.0 / static_cast<double>(p))));
    y = root;
  }
  n.setResult(0, y);
  return success();
}

template <PoolFlavor Flavor> LogicalResult importGlobalPool(NodeImporter &n) {
  if (failed(checkPoolInput(n, Flavor != PoolFlavor::Max)))
    return failure();
  auto xt = n.inputType(0);
  Type elt = xt.getElementType();
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < xt.getRank(); ++d)
    axes.push_back(d);
  auto axesAttr = n.b.getDenseI64ArrayAttr(axes);
  Value x = n.input(0);
  Value y;
  if (Flavor == PoolFlavor::Max) {
    y = ReduceMaxOp::create(n.b, n.loc, x, axesAttr, n.b.getUnitAttr());
  } else if (Flavor == PoolFlavor::Average) {
    y = ReduceMeanOp::create(n.b, n.loc, x, axesAttr, n.b.getUnitAttr());
  } else {
    KILN_TRY(pAttr, n.getInt("p"));
    double p = static_cast<double>(pAttr.value_or(2));
    KILN_TRY(pw,
             n.binary<PowOp>(AbsOp::create(n.b, n.loc, x), n.scalar(elt, p)));
    Value sum =
        ReduceSumOp::create(n.b, n.loc, pw, axesAttr, n.b.getUnitAttr());
    KILN_TRY(root, n.binary<PowOp>(sum, n.scalar(elt, 1.0 / p)));
    y = root;
  }
  n.setResult(0, y);
  return success();
}

} // namespace

void kiln::import::registerConvHandlers(HandlerMap &handlers) {
  handlers["Conv"] = importConv;
  handlers["ConvTranspose"] = importConvTranspose;
  handlers["MaxPool"] = importPool<PoolFlavor::Max>;
  handlers["AveragePool"] = importPool<PoolFlavor::Average>;
  handlers["LpPool"] = importPool<PoolFlavor::Lp>;
  handlers["GlobalMaxPool"] = importGlobalPool<PoolFlavor::Max>;
  handlers["GlobalAveragePool"] = importGlobalPool<PoolFlavor::Average>;
  handlers["GlobalLpPool"] = importGlobalPool<PoolFlavor::Lp>;
}

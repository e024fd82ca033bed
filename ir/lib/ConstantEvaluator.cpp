//===- ConstantEvaluator.cpp - evaluate kiln ops on constants -------------===//
//
// Element-by-element evaluation of kiln ops on DenseElementsAttr operands.
// Data movement (reshape, transpose, broadcast, concat, slice, gather) maps
// every result element to a source element and copies its bits, so it works
// for every element type, narrow storage types included. Arithmetic goes
// through APFloat/APInt in the element type and gives up on the types and
// cases it does not model, so an op it cannot evaluate simply stays.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantEvaluator.h"
#include "kiln/IR/ConstantBlobs.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <cstring>
#include <type_traits>

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Reading constants
//===----------------------------------------------------------------------===//

/// Bytes per element in a dense raw buffer (i1 is bit-packed and handled
/// apart; the 4- and 2-bit types take a byte each).
static int64_t storageBytes(Type elt) {
  return llvm::divideCeil(elt.getIntOrFloatBitWidth(), 8);
}

/// The blob behind a dense_resource constant, when it is loaded.
static std::optional<ArrayRef<char>> resourceData(DenseResourceElementsAttr r) {
  AsmResourceBlob *blob = r.getRawHandle().getBlob();
  if (!blob)
    return std::nullopt;
  return blob->getData();
}

DenseElementsAttr kiln::asDenseElements(Attribute value, int64_t maxElements) {
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(value))
    return dense.getNumElements() <= maxElements || dense.isSplat()
               ? dense
               : DenseElementsAttr();
  auto resource = dyn_cast_if_present<DenseResourceElementsAttr>(value);
  if (!resource)
    return {};
  auto type = cast<ShapedType>(resource.getType());
  Type elt = type.getElementType();
  if (type.getNumElements() > maxElements || !elt.isIntOrFloat() ||
      elt.isInteger(1))
    return {};
  auto data = resourceData(resource);
  if (!data || static_cast<int64_t>(data->size()) !=
                   type.getNumElements() * storageBytes(elt))
    return {};
  return DenseElementsAttr::getFromRawBuffer(type, *data);
}

namespace {
/// A constant's bytes without an attribute made of them: a dense
/// attribute's storage (one element when splat) or a loaded blob's.
struct RawConstant {
  ShapedType type;
  ArrayRef<char> data;
  bool splat = false;
};
} // namespace

static RawConstant rawOf(DenseElementsAttr dense) {
  return {dense.getType(), dense.getRawData(), dense.isSplat()};
}

/// The bytes of a dense or loaded dense_resource constant of whole-byte
/// int or float elements; nothing for any other.
static std::optional<RawConstant> rawOf(Attribute value) {
  auto typed = dyn_cast_if_present<ElementsAttr>(value);
  if (!typed)
    return std::nullopt;
  auto type = cast<ShapedType>(typed.getType());
  Type elt = type.getElementType();
  if (!type.hasStaticShape() || !elt.isIntOrFloat() || elt.isInteger(1) ||
      isNarrowType(elt))
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return rawOf(dense);
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  std::optional<ArrayRef<char>> data =
      resource ? resourceData(resource) : std::nullopt;
  if (!data || static_cast<int64_t>(data->size()) !=
                   type.getNumElements() * storageBytes(elt))
    return std::nullopt;
  return RawConstant{type, *data, false};
}

/// A result computed as raw bytes, as a DenseElementsAttr.
static DenseElementsAttr denseOf(RankedTensorType type,
                                 const std::vector<char> &bytes) {
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

//===----------------------------------------------------------------------===//
// Hashing and comparing contents
//===----------------------------------------------------------------------===//

namespace {
/// A constant's elements as bytes, with a flag for "every element equal" so
/// that splat and non-splat encodings of one value compare equal.
struct Contents {
  ArrayRef<char> data;
  std::vector<char> storage; // i1 elements unpacked to one byte each
  int64_t eltBytes = 1;
  bool uniform = false;
};
} // namespace

static std::optional<Contents> readContents(ElementsAttr value) {
  auto type = cast<ShapedType>(value.getType());
  Type elt = type.getElementType();
  if (!elt.isIntOrFloat())
    return std::nullopt;
  Contents c;
  c.eltBytes = elt.isInteger(1) ? 1 : storageBytes(elt);
  int64_t n = type.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (elt.isInteger(1)) {
      for (bool b : dense.getValues<bool>())
        c.storage.push_back(b);
      c.data = c.storage;
    } else {
      c.data = dense.getRawData();
    }
    if (dense.isSplat()) {
      c.data = c.data.take_front(c.eltBytes);
      c.uniform = true;
      return c;
    }
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    auto data = resourceData(resource);
    if (!data || static_cast<int64_t>(data->size()) != n * c.eltBytes)
      return std::nullopt;
    c.data = *data;
  } else {
    return std::nullopt;
  }
  if (static_cast<int64_t>(c.data.size()) != n * c.eltBytes)
    return std::nullopt;
  c.uniform = n <= 1 || isUniformBytes(c.data, c.eltBytes);
  if (c.uniform && n > 0)
    c.data = c.data.take_front(c.eltBytes);
  return c;
}

llvm::hash_code kiln::hashConstantContents(ElementsAttr value) {
  if (!value)
    return llvm::hash_value(0);
  auto contents = readContents(value);
  if (!contents) // not readable: equal only to itself
    return llvm::hash_combine(value.getType(), value.getAsOpaquePointer());
  // Tables rehash as they grow and hash again on every lookup, so a weight's
  // hash is computed many times: beyond 64 KiB, 16 blocks of 4 KiB spread
  // over the data stand for it (equal contents still hash equal; equality
  // compares everything).
  auto bytes = [](ArrayRef<char> data) {
    return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  };
  ArrayRef<char> data = contents->data;
  constexpr size_t kBlock = 4096, kBlocks = 16;
  llvm::hash_code sampled = llvm::hash_value(data.size());
  if (data.size() <= kBlock * kBlocks)
    sampled = llvm::hash_combine(sampled, bytes(data));
  else
    for (size_t i = 0; i < kBlocks; ++i)
      sampled = llvm::hash_combine(
          sampled, bytes(data.slice((data.size() - kBlock) * i / (kBlocks - 1),
                                    kBlock)));
  return llvm::hash_combine(value.getType(), contents->uniform, sampled);
}

bool kiln::equalConstantContents(ElementsAttr a, ElementsAttr b) {
  if (a == b)
    return true;
  if (!a || !b || a.getType() != b.getType())
    return false;
  auto ca = readContents(a), cb = readContents(b);
  if (!ca || !cb)
    return false;
  return ca->uniform == cb->uniform && ca->data == cb->data;
}

//===----------------------------------------------------------------------===//
// Index helpers
//===----------------------------------------------------------------------===//

static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

static void unflatten(int64_t flat, ArrayRef<int64_t> shape,
                      SmallVectorImpl<int64_t> &coords) {
  coords.resize(shape.size());
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    coords[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
}

/// Flat index into `operandShape` of the result element at `coords` under
/// numpy broadcasting (trailing dims aligned, size-1 dims stretched).
static int64_t broadcastIndex(ArrayRef<int64_t> coords,
                              ArrayRef<int64_t> operandShape) {
  int64_t index = 0, stride = 1;
  size_t offset = coords.size() - operandShape.size();
  for (int64_t i = static_cast<int64_t>(operandShape.size()) - 1; i >= 0; --i) {
    int64_t c = operandShape[i] == 1 ? 0 : coords[i + offset];
    index += c * stride;
    stride *= operandShape[i];
  }
  return index;
}

//===----------------------------------------------------------------------===//
// Data movement: copy element bits through an index map
//===----------------------------------------------------------------------===//

/// Builds the result by taking, for each result element, element
/// `map(flat).second` of source `map(flat).first`.
static DenseElementsAttr
remap(ArrayRef<DenseElementsAttr> sources, RankedTensorType resultTy,
      function_ref<std::pair<unsigned, int64_t>(int64_t)> map) {
  int64_t n = resultTy.getNumElements();
  Type elt = resultTy.getElementType();
  if (elt.isInteger(1)) {
    SmallVector<SmallVector<bool>> values;
    for (DenseElementsAttr s : sources)
      values.emplace_back(s.getValues<bool>());
    SmallVector<bool> out;
    out.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      auto [k, index] = map(i);
      out.push_back(values[k][sources[k].isSplat() ? 0 : index]);
    }
    return DenseElementsAttr::get(resultTy, out);
  }
  int64_t bytes = storageBytes(elt);
  std::vector<char> out(n * bytes);
  for (int64_t i = 0; i < n; ++i) {
    auto [k, index] = map(i);
    ArrayRef<char> raw = sources[k].getRawData();
    int64_t at = sources[k].isSplat() ? 0 : index * bytes;
    std::memcpy(out.data() + i * bytes, raw.data() + at, bytes);
  }
  return DenseElementsAttr::getFromRawBuffer(resultTy, out);
}

/// Copies an element of `Bytes` bytes (a fixed size the compiler inlines).
template <int Bytes> static void copyElement(char *dst, const char *src) {
  std::memcpy(dst, src, Bytes);
}

/// Transpose of raw, non-splat storage: the result's elements in order, the
/// source position advanced like an odometer over the permuted strides (no
/// division per element). A Gemm's transposed 100M-element weight (VGG)
/// took 12 s through remap; this takes well under one.
/// A copy of one element of `bytes` bytes; null for other sizes.
static void (*elementCopy(int64_t bytes))(char *, const char *) {
  return bytes == 1   ? copyElement<1>
         : bytes == 2 ? copyElement<2>
         : bytes == 4 ? copyElement<4>
         : bytes == 8 ? copyElement<8>
                      : nullptr;
}

/// The elements of `in` at byte offset `src` plus, along each result axis
/// d, i_d * step[d] bytes, in the result's row-major order (`copy` moves one
/// element when it is not null).
static std::vector<char> gatherRaw(ArrayRef<int64_t> shape, int64_t n,
                                   int64_t src, ArrayRef<int64_t> step,
                                   ArrayRef<char> raw, int64_t bytes,
                                   void (*copy)(char *, const char *)) {
  int64_t rank = shape.size();
  SmallVector<int64_t> coords(rank, 0);
  std::vector<char> out(n * bytes);
  for (int64_t i = 0; i < n; ++i) {
    if (copy)
      copy(out.data() + i * bytes, raw.data() + src);
    else
      std::memcpy(out.data() + i * bytes, raw.data() + src, bytes);
    for (int64_t d = rank - 1; d >= 0; --d) {
      src += step[d];
      if (++coords[d] < shape[d])
        break;
      src -= step[d] * shape[d];
      coords[d] = 0;
    }
  }
  return out;
}

/// The bytes of `in[starts[d] + i_d * strides[d] ...]` for a result of
/// `resultTy`'s shape (kiln.slice).
static std::vector<char> sliceRaw(RankedTensorType resultTy,
                                  ArrayRef<int64_t> starts,
                                  ArrayRef<int64_t> strides,
                                  const RawConstant &in, int64_t bytes) {
  int64_t rank = resultTy.getRank();
  SmallVector<int64_t> inStrides = stridesOf(in.type.getShape());
  SmallVector<int64_t> step(rank);
  int64_t src = 0;
  for (int64_t i = 0; i < rank; ++i) {
    step[i] = inStrides[i] * strides[i] * bytes;
    src += starts[i] * inStrides[i] * bytes;
  }
  return gatherRaw(resultTy.getShape(), resultTy.getNumElements(), src, step,
                   in.data, bytes, elementCopy(bytes));
}

static std::vector<char> transposeRaw(RankedTensorType resultTy,
                                      ArrayRef<int64_t> perm,
                                      const RawConstant &in, int64_t bytes) {
  ArrayRef<int64_t> shape = resultTy.getShape();
  int64_t rank = shape.size(), n = resultTy.getNumElements();
  SmallVector<int64_t> inStrides = stridesOf(in.type.getShape());
  SmallVector<int64_t> step(rank);
  for (int64_t i = 0; i < rank; ++i)
    step[i] = inStrides[perm[i]] * bytes;
  ArrayRef<char> raw = in.data;
  void (*copy)(char *, const char *) = elementCopy(bytes);
  if (rank == 2 && perm[0] == 1 && perm[1] == 0 && copy) {
    std::vector<char> out(n * bytes);
    // A matrix transpose (a Gemm's transB weight) in 32x32 tiles, so both
    // the reads and the writes stay within a few cache lines per tile.
    int64_t rows = shape[1], cols = shape[0]; // the input is rows x cols
    constexpr int64_t tile = 32;
    for (int64_t ib = 0; ib < rows; ib += tile)
      for (int64_t jb = 0; jb < cols; jb += tile)
        for (int64_t i = ib; i < std::min(ib + tile, rows); ++i)
          for (int64_t j = jb; j < std::min(jb + tile, cols); ++j)
            copy(out.data() + (j * rows + i) * bytes,
                 raw.data() + (i * cols + j) * bytes);
    return out;
  }
  return gatherRaw(shape, n, 0, step, raw, bytes, copy);
}

static DenseElementsAttr evalTranspose(TransposeOp op, DenseElementsAttr in) {
  auto resultTy = op.getType();
  ArrayRef<int64_t> perm = op.getPerm();
  Type elt = resultTy.getElementType();
  if (!in.isSplat() && !elt.isInteger(1) && resultTy.getNumElements() > 0)
    return denseOf(resultTy,
                   transposeRaw(resultTy, perm, rawOf(in), storageBytes(elt)));
  SmallVector<int64_t> inStrides = stridesOf(in.getType().getShape());
  SmallVector<int64_t> coords;
  return remap(in, resultTy, [&](int64_t flat) {
    unflatten(flat, resultTy.getShape(), coords);
    int64_t index = 0;
    for (auto [i, p] : llvm::enumerate(perm))
      index += coords[i] * inStrides[p];
    return std::make_pair(0u, index);
  });
}

static DenseElementsAttr evalBroadcast(RankedTensorType resultTy,
                                       DenseElementsAttr in) {
  SmallVector<int64_t> coords;
  return remap(in, resultTy, [&](int64_t flat) {
    unflatten(flat, resultTy.getShape(), coords);
    return std::make_pair(0u, broadcastIndex(coords, in.getType().getShape()));
  });
}

static DenseElementsAttr evalConcat(ConcatOp op,
                                    ArrayRef<DenseElementsAttr> inputs) {
  auto resultTy = op.getType();
  int64_t axis = op.getAxis();
  SmallVector<int64_t> coords;
  return remap(inputs, resultTy, [&](int64_t flat) {
    unflatten(flat, resultTy.getShape(), coords);
    unsigned k = 0;
    int64_t c = coords[axis];
    while (c >= inputs[k].getType().getDimSize(axis)) {
      c -= inputs[k].getType().getDimSize(axis);
      ++k;
    }
    coords[axis] = c;
    SmallVector<int64_t> strides = stridesOf(inputs[k].getType().getShape());
    int64_t index = 0;
    for (auto [ci, s] : llvm::zip(coords, strides))
      index += ci * s;
    return std::make_pair(k, index);
  });
}

static DenseElementsAttr evalSlice(SliceOp op, DenseElementsAttr in) {
  auto resultTy = op.getType();
  SmallVector<int64_t> strides = stridesOf(in.getType().getShape());
  SmallVector<int64_t> coords;
  return remap(in, resultTy, [&](int64_t flat) {
    unflatten(flat, resultTy.getShape(), coords);
    int64_t index = 0;
    for (size_t d = 0; d < coords.size(); ++d)
      index +=
          (op.getStarts()[d] + coords[d] * op.getStrides()[d]) * strides[d];
    return std::make_pair(0u, index);
  });
}

static DenseElementsAttr evalGather(GatherOp op, DenseElementsAttr data,
                                    DenseElementsAttr indices) {
  auto resultTy = op.getType();
  int64_t axis = op.getAxis();
  ArrayRef<int64_t> dataShape = data.getType().getShape();
  int64_t indexRank = indices.getType().getRank();
  SmallVector<int64_t> idx;
  for (APInt v : indices.getValues<APInt>()) {
    // Negative indices count from the end; the rest is clamped (see the op).
    int64_t i = v.getSExtValue();
    if (i < 0)
      i += dataShape[axis];
    idx.push_back(std::clamp<int64_t>(i, 0, dataShape[axis] - 1));
  }
  SmallVector<int64_t> dataStrides = stridesOf(dataShape);
  SmallVector<int64_t> indexStrides = stridesOf(indices.getType().getShape());
  SmallVector<int64_t> coords;
  return remap(data, resultTy, [&](int64_t flat) {
    unflatten(flat, resultTy.getShape(), coords);
    int64_t j = 0;
    for (int64_t d = 0; d < indexRank; ++d)
      j += coords[axis + d] * indexStrides[d];
    int64_t index = 0;
    for (int64_t d = 0; d < axis; ++d)
      index += coords[d] * dataStrides[d];
    index += idx[indices.isSplat() ? 0 : j] * dataStrides[axis];
    for (int64_t d = axis + 1; d < static_cast<int64_t>(dataShape.size()); ++d)
      index += coords[d - 1 + indexRank] * dataStrides[d];
    return std::make_pair(0u, index);
  });
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

namespace {
/// One element: a float or an integer, in the operand's element type.
struct Scalar {
  std::optional<APFloat> f;
  APInt i;
};
using ScalarFn = function_ref<std::optional<Scalar>(ArrayRef<Scalar>)>;
} // namespace

static Scalar fromFloat(APFloat f) { return Scalar{f, APInt()}; }
static Scalar fromInt(APInt i) { return Scalar{std::nullopt, i}; }

/// Element values of a constant (splat expanded lazily by index).
namespace {
struct Elements {
  DenseElementsAttr attr;
  SmallVector<APFloat> floats;
  SmallVector<APInt> ints;
  bool isFloat;
  explicit Elements(DenseElementsAttr a) : attr(a) {
    isFloat = isa<FloatType>(a.getElementType());
    if (a.isSplat()) {
      if (isFloat)
        floats.push_back(a.getSplatValue<APFloat>());
      else
        ints.push_back(a.getSplatValue<APInt>());
    } else if (isFloat) {
      floats.assign(a.value_begin<APFloat>(), a.value_end<APFloat>());
    } else {
      ints.assign(a.value_begin<APInt>(), a.value_end<APInt>());
    }
  }
  Scalar at(int64_t i) const {
    if (attr.isSplat())
      i = 0;
    return isFloat ? fromFloat(floats[i]) : fromInt(ints[i]);
  }
};
} // namespace

/// Evaluates `fn` over the broadcast operands; the result has `resultTy`.
static DenseElementsAttr evalElementwise(RankedTensorType resultTy,
                                         ArrayRef<DenseElementsAttr> operands,
                                         ScalarFn fn) {
  SmallVector<Elements> elements;
  for (DenseElementsAttr a : operands) {
    if (isNarrowType(a.getElementType()) || !a.getElementType().isIntOrFloat())
      return {};
    elements.emplace_back(a);
  }
  Type elt = resultTy.getElementType();
  bool floatResult = isa<FloatType>(elt);
  int64_t n = resultTy.getNumElements();
  if (n > 0 && llvm::all_of(operands, [](auto a) { return a.isSplat(); })) {
    // Splats give a splat: one evaluation, whatever the size.
    SmallVector<Scalar> args;
    for (const Elements &e : elements)
      args.push_back(e.at(0));
    std::optional<Scalar> r = fn(args);
    if (!r || r->f.has_value() != floatResult)
      return {};
    return floatResult
               ? DenseElementsAttr::get(resultTy, ArrayRef<APFloat>(*r->f))
               : DenseElementsAttr::get(resultTy, ArrayRef<APInt>(r->i));
  }
  // Operands of the result's shape (or splats) are read at the result's
  // index: no coordinates per element, which weight-sized folds would pay.
  bool direct = llvm::all_of(operands, [&](DenseElementsAttr a) {
    return a.isSplat() || a.getType().getShape() == resultTy.getShape();
  });
  SmallVector<APFloat> floats;
  SmallVector<APInt> ints;
  SmallVector<int64_t> coords;
  SmallVector<Scalar> args;
  for (int64_t flat = 0; flat < n; ++flat) {
    if (!direct)
      unflatten(flat, resultTy.getShape(), coords);
    args.clear();
    for (const Elements &e : elements)
      args.push_back(e.at(
          direct ? flat : broadcastIndex(coords, e.attr.getType().getShape())));
    std::optional<Scalar> r = fn(args);
    if (!r || r->f.has_value() != floatResult)
      return {};
    if (floatResult)
      floats.push_back(*r->f);
    else
      ints.push_back(r->i);
  }
  return floatResult ? DenseElementsAttr::get(resultTy, floats)
                     : DenseElementsAttr::get(resultTy, ints);
}

/// `fn` computed in double, rounded once to `x`'s type.
static APFloat viaDouble(const APFloat &x, double (*fn)(double)) {
  bool lost;
  APFloat r(fn(x.convertToDouble()));
  r.convert(x.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return r;
}

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
static double reciprocal(double x) { return 1.0 / x; }

/// The double function of a float-only unary op, or null.
static double (*unaryMath(Operation *op))(double) {
  return llvm::TypeSwitch<Operation *, double (*)(double)>(op)
      .Case<ExpOp>(
          [](auto) { return static_cast<double (*)(double)>(std::exp); })
      .Case<LogOp>(
          [](auto) { return static_cast<double (*)(double)>(std::log); })
      .Case<TanhOp>(
          [](auto) { return static_cast<double (*)(double)>(std::tanh); })
      .Case<SqrtOp>(
          [](auto) { return static_cast<double (*)(double)>(std::sqrt); })
      .Case<SinOp>(
          [](auto) { return static_cast<double (*)(double)>(std::sin); })
      .Case<CosOp>(
          [](auto) { return static_cast<double (*)(double)>(std::cos); })
      .Case<TanOp>(
          [](auto) { return static_cast<double (*)(double)>(std::tan); })
      .Case<AsinOp>(
          [](auto) { return static_cast<double (*)(double)>(std::asin); })
      .Case<AcosOp>(
          [](auto) { return static_cast<double (*)(double)>(std::acos); })
      .Case<AtanOp>(
          [](auto) { return static_cast<double (*)(double)>(std::atan); })
      .Case<SinhOp>(
          [](auto) { return static_cast<double (*)(double)>(std::sinh); })
      .Case<CoshOp>(
          [](auto) { return static_cast<double (*)(double)>(std::cosh); })
      .Case<AsinhOp>(
          [](auto) { return static_cast<double (*)(double)>(std::asinh); })
      .Case<AcoshOp>(
          [](auto) { return static_cast<double (*)(double)>(std::acosh); })
      .Case<AtanhOp>(
          [](auto) { return static_cast<double (*)(double)>(std::atanh); })
      .Case<ErfOp>(
          [](auto) { return static_cast<double (*)(double)>(std::erf); })
      .Case<SigmoidOp>([](auto) { return &sigmoid; })
      .Case<ReciprocalOp>([](auto) { return &reciprocal; })
      .Default([](Operation *) { return nullptr; });
}

static std::optional<Scalar> evalUnaryScalar(Operation *op, const Scalar &x,
                                             bool isUnsigned) {
  if (x.f) {
    APFloat f = *x.f;
    if (auto fn = unaryMath(op))
      return fromFloat(viaDouble(f, fn));
    if (isa<NegOp>(op))
      return fromFloat(-f);
    if (isa<AbsOp>(op))
      return fromFloat(abs(f));
    if (isa<FloorOp>(op)) {
      f.roundToIntegral(APFloat::rmTowardNegative);
      return fromFloat(f);
    }
    if (isa<CeilOp>(op)) {
      f.roundToIntegral(APFloat::rmTowardPositive);
      return fromFloat(f);
    }
    if (isa<RoundOp>(op)) {
      f.roundToIntegral(APFloat::rmNearestTiesToEven);
      return fromFloat(f);
    }
    if (isa<ReluOp>(op)) // NaN propagates, like the lowering's maximumf
      return fromFloat(f.isNaN() || !f.isNegative() || f.isZero()
                           ? f
                           : APFloat::getZero(f.getSemantics()));
    if (isa<SignOp>(op)) {
      if (f.isNaN() || f.isZero())
        return fromFloat(f);
      APFloat one(f.getSemantics(), 1);
      return fromFloat(f.isNegative() ? -one : one);
    }
    return std::nullopt;
  }
  const APInt &i = x.i;
  unsigned w = i.getBitWidth();
  if (isa<NegOp>(op))
    return fromInt(-i);
  if (isa<NotOp>(op))
    return fromInt(~i);
  if (isa<AbsOp>(op))
    return fromInt(isUnsigned ? i : i.abs());
  if (isa<ReluOp>(op))
    return fromInt(isUnsigned || !i.isNegative() ? i : APInt::getZero(w));
  if (isa<SignOp>(op)) {
    if (i.isZero())
      return fromInt(i);
    if (!isUnsigned && i.isNegative())
      return fromInt(APInt::getAllOnes(w));
    return fromInt(APInt(w, 1));
  }
  return std::nullopt;
}

static std::optional<Scalar> evalBinaryScalar(Operation *op, const Scalar &x,
                                              const Scalar &y,
                                              bool isUnsigned) {
  if (x.f && y.f) {
    APFloat a = *x.f, b = *y.f;
    return llvm::TypeSwitch<Operation *, std::optional<Scalar>>(op)
        .Case<AddOp>([&](auto) { return fromFloat(a + b); })
        .Case<SubOp>([&](auto) { return fromFloat(a - b); })
        .Case<MulOp>([&](auto) { return fromFloat(a * b); })
        .Case<DivOp>([&](auto) { return fromFloat(a / b); })
        .Case<MaxOp>([&](auto) { return fromFloat(llvm::maximum(a, b)); })
        .Case<MinOp>([&](auto) { return fromFloat(llvm::minimum(a, b)); })
        .Case<RemOp>([&](auto) {
          APFloat r = a;
          r.mod(b);
          return fromFloat(r);
        })
        .Case<PowOp>([&](auto) {
          bool lost;
          APFloat r(std::pow(a.convertToDouble(), b.convertToDouble()));
          r.convert(a.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
          return fromFloat(r);
        })
        .Default([](Operation *) { return std::nullopt; });
  }
  if (x.f || y.f)
    return std::nullopt;
  const APInt &a = x.i, &b = y.i;
  auto divUB = [&] {
    return b.isZero() || (!isUnsigned && a.isMinSignedValue() && b.isAllOnes());
  };
  return llvm::TypeSwitch<Operation *, std::optional<Scalar>>(op)
      .Case<AddOp>([&](auto) { return fromInt(a + b); })
      .Case<SubOp>([&](auto) { return fromInt(a - b); })
      .Case<MulOp>([&](auto) { return fromInt(a * b); })
      .Case<DivOp>([&](auto) -> std::optional<Scalar> {
        if (divUB())
          return std::nullopt; // left to run time
        return fromInt(isUnsigned ? a.udiv(b) : a.sdiv(b));
      })
      .Case<RemOp>([&](auto) -> std::optional<Scalar> {
        if (divUB())
          return std::nullopt;
        return fromInt(isUnsigned ? a.urem(b) : a.srem(b));
      })
      .Case<MaxOp>([&](auto) {
        return fromInt(isUnsigned ? llvm::APIntOps::umax(a, b)
                                  : llvm::APIntOps::smax(a, b));
      })
      .Case<MinOp>([&](auto) {
        return fromInt(isUnsigned ? llvm::APIntOps::umin(a, b)
                                  : llvm::APIntOps::smin(a, b));
      })
      .Case<AndOp>([&](auto) { return fromInt(a & b); })
      .Case<OrOp>([&](auto) { return fromInt(a | b); })
      .Case<XorOp>([&](auto) { return fromInt(a ^ b); })
      .Default([](Operation *) { return std::nullopt; });
}

/// f32 and f64 add, sub, mul and div in the machine's arithmetic, over
/// broadcast operands: IEEE 754 rounds these as APFloat does, at a small
/// fraction of the cost per element (a BatchNorm scale folded into VGG-11's
/// filters, 9M elements, took seconds through APFloat). A NaN result is
/// recomputed through APFloat, whose choice of payload the hardware's need
/// not match.
template <typename T>
static std::optional<std::vector<char>>
evalBinaryNative(Operation *op, RankedTensorType resultTy, const RawConstant &a,
                 const RawConstant &b) {
  ArrayRef<int64_t> shape = resultTy.getShape();
  int64_t rank = shape.size(), n = resultTy.getNumElements();
  // Each operand's step per result dimension: 0 where it is broadcast.
  auto steps = [&](const RawConstant &x) {
    SmallVector<int64_t> step(rank, 0);
    if (x.splat)
      return step;
    ArrayRef<int64_t> own = x.type.getShape();
    SmallVector<int64_t> strides = stridesOf(own);
    int64_t offset = rank - static_cast<int64_t>(own.size());
    for (auto [i, dim] : llvm::enumerate(own))
      if (dim != 1)
        step[i + offset] = strides[i];
    return step;
  };
  SmallVector<int64_t> stepA = steps(a), stepB = steps(b);
  const char *rawA = a.data.data(), *rawB = b.data.data();
  enum {
    Add,
    Sub,
    Mul,
    Div
  } kind = isa<AddOp>(op)   ? Add
           : isa<SubOp>(op) ? Sub
           : isa<MulOp>(op) ? Mul
                            : Div;
  std::vector<char> out(n * sizeof(T));
  SmallVector<int64_t> coords(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, rawA + ia * sizeof(T), sizeof(T));
    std::memcpy(&y, rawB + ib * sizeof(T), sizeof(T));
    T r = kind == Add   ? x + y
          : kind == Sub ? x - y
          : kind == Mul ? x * y
                        : x / y;
    if (r != r) {
      std::optional<Scalar> exact = evalBinaryScalar(
          op, fromFloat(APFloat(x)), fromFloat(APFloat(y)), false);
      if (!exact || !exact->f)
        return std::nullopt;
      if constexpr (std::is_same_v<T, float>)
        r = exact->f->convertToFloat();
      else
        r = exact->f->convertToDouble();
    }
    std::memcpy(out.data() + i * sizeof(T), &r, sizeof(T));
    for (int64_t d = rank - 1; d >= 0; --d) {
      ia += stepA[d];
      ib += stepB[d];
      if (++coords[d] < shape[d])
        break;
      ia -= stepA[d] * shape[d];
      ib -= stepB[d] * shape[d];
      coords[d] = 0;
    }
  }
  return out;
}

/// evalBinaryNative for f32 and f64 add, sub, mul and div of a non-empty
/// result; nothing for other ops and types, and for two splats (whose
/// one-element evaluation evalElementwise does).
static std::optional<std::vector<char>>
evalArithmeticRaw(Operation *op, RankedTensorType resultTy,
                  const RawConstant &a, const RawConstant &b) {
  if (!isa<AddOp, SubOp, MulOp, DivOp>(op) || resultTy.getNumElements() == 0 ||
      (a.splat && b.splat))
    return std::nullopt;
  auto all = [&](auto isType) {
    return isType(resultTy.getElementType()) &&
           isType(a.type.getElementType()) && isType(b.type.getElementType());
  };
  if (all([](Type t) { return t.isF32(); }))
    return evalBinaryNative<float>(op, resultTy, a, b);
  if (all([](Type t) { return t.isF64(); }))
    return evalBinaryNative<double>(op, resultTy, a, b);
  return std::nullopt;
}

/// One element converted from `from` to `to` (neither narrow): to i1 is
/// "not zero"; floats round to nearest even; floats to integers truncate
/// toward zero, and an out-of-range or NaN value gives up (undefined, left
/// to run time); integers extend by their own signedness (i1 and unsigned
/// types zero-extend).
static std::optional<Scalar> evalCastScalar(const Scalar &x, Type from,
                                            Type to) {
  if (to.isInteger(1))
    return fromInt(APInt(1, x.f ? !x.f->isZero() : !x.i.isZero()));
  bool fromUnsigned = from.isUnsignedInteger() || from.isInteger(1);
  if (auto toFloat = dyn_cast<FloatType>(to)) {
    APFloat r(toFloat.getFloatSemantics());
    bool lost;
    if (x.f) {
      r = *x.f;
      r.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
    } else {
      r.convertFromAPInt(x.i, !fromUnsigned, APFloat::rmNearestTiesToEven);
    }
    return fromFloat(r);
  }
  unsigned width = to.getIntOrFloatBitWidth();
  if (x.f) {
    APSInt r(width, to.isUnsignedInteger());
    bool exact;
    APFloat::opStatus status =
        x.f->convertToInteger(r, APFloat::rmTowardZero, &exact);
    if (status != APFloat::opOK && status != APFloat::opInexact)
      return std::nullopt;
    return fromInt(r);
  }
  return fromInt(fromUnsigned ? x.i.zextOrTrunc(width)
                              : x.i.sextOrTrunc(width));
}

static bool compare(CmpPredicate pred, const Scalar &x, const Scalar &y,
                    bool isUnsigned) {
  if (x.f) {
    APFloat::cmpResult c = x.f->compare(*y.f);
    bool eq = c == APFloat::cmpEqual, lt = c == APFloat::cmpLessThan,
         gt = c == APFloat::cmpGreaterThan;
    switch (pred) {
    case CmpPredicate::eq:
      return eq;
    case CmpPredicate::ne:
      return !eq; // true for NaN (unordered)
    case CmpPredicate::lt:
      return lt;
    case CmpPredicate::le:
      return lt || eq;
    case CmpPredicate::gt:
      return gt;
    case CmpPredicate::ge:
      return gt || eq;
    }
  }
  const APInt &a = x.i, &b = y.i;
  switch (pred) {
  case CmpPredicate::eq:
    return a == b;
  case CmpPredicate::ne:
    return a != b;
  case CmpPredicate::lt:
    return isUnsigned ? a.ult(b) : a.slt(b);
  case CmpPredicate::le:
    return isUnsigned ? a.ule(b) : a.sle(b);
  case CmpPredicate::gt:
    return isUnsigned ? a.ugt(b) : a.sgt(b);
  case CmpPredicate::ge:
    return isUnsigned ? a.uge(b) : a.sge(b);
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Reductions and argmax/argmin
//===----------------------------------------------------------------------===//

/// Folds every input element into its output element with `combine`,
/// starting from the first element of each group.
static DenseElementsAttr
evalReduce(RankedTensorType resultTy, DenseElementsAttr in,
           ArrayRef<int64_t> axes,
           function_ref<Scalar(const Scalar &, const Scalar &)> combine,
           function_ref<Scalar(const Scalar &, int64_t)> finish) {
  if (isNarrowType(in.getElementType()))
    return {};
  ArrayRef<int64_t> shape = in.getType().getShape();
  int64_t n = in.getType().getNumElements();
  int64_t outN = resultTy.getNumElements();
  if (n == 0 || outN == 0)
    return {}; // empty reductions need an identity: left to run time
  SmallVector<int64_t> keptShape;
  for (auto [d, size] : llvm::enumerate(shape))
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      keptShape.push_back(size);
  SmallVector<int64_t> keptStrides = stridesOf(keptShape);
  SmallVector<std::optional<Scalar>> acc(outN);
  Elements elements(in);
  SmallVector<int64_t> coords;
  for (int64_t flat = 0; flat < n; ++flat) {
    unflatten(flat, shape, coords);
    int64_t out = 0, k = 0;
    for (auto [d, c] : llvm::enumerate(coords))
      if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
        out += c * keptStrides[k++];
    Scalar x = elements.at(flat);
    acc[out] = acc[out] ? combine(*acc[out], x) : x;
  }
  int64_t count = n / outN;
  bool isFloat = isa<FloatType>(resultTy.getElementType());
  SmallVector<APFloat> floats;
  SmallVector<APInt> ints;
  for (auto &a : acc) {
    Scalar r = finish(*a, count);
    if (isFloat)
      floats.push_back(*r.f);
    else
      ints.push_back(r.i);
  }
  return isFloat ? DenseElementsAttr::get(resultTy, floats)
                 : DenseElementsAttr::get(resultTy, ints);
}

template <typename ArgOp>
static DenseElementsAttr evalArg(ArgOp op, DenseElementsAttr in, bool isMax) {
  auto resultTy = op.getType();
  ArrayRef<int64_t> shape = in.getType().getShape();
  int64_t axis = op.getAxis(), size = shape[axis];
  if (size == 0 || isNarrowType(in.getElementType()))
    return {};
  bool isUnsigned = in.getElementType().isUnsignedInteger();
  bool last = op.getSelectLastIndex();
  SmallVector<int64_t> strides = stridesOf(shape);
  Elements elements(in);
  SmallVector<APInt> out;
  SmallVector<int64_t> outShape(shape);
  outShape[axis] = 1;
  SmallVector<int64_t> coords;
  for (int64_t o = 0, e = resultTy.getNumElements(); o < e; ++o) {
    unflatten(o, outShape, coords);
    int64_t base = 0;
    for (auto [c, s] : llvm::zip(coords, strides))
      base += c * s;
    int64_t best = 0;
    Scalar bestValue = elements.at(base);
    for (int64_t j = 1; j < size; ++j) {
      Scalar x = elements.at(base + j * strides[axis]);
      // NaN wins (as the first NaN) like numpy.
      if (bestValue.f && bestValue.f->isNaN())
        break;
      bool better;
      if (x.f && x.f->isNaN())
        better = true;
      else
        better = compare(isMax ? CmpPredicate::gt : CmpPredicate::lt, x,
                         bestValue, isUnsigned) ||
                 (last && compare(CmpPredicate::eq, x, bestValue, isUnsigned));
      if (better) {
        best = j;
        bestValue = x;
      }
    }
    out.push_back(APInt(64, best));
  }
  return DenseElementsAttr::get(resultTy, out);
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

DenseElementsAttr kiln::evaluateConstantOp(Operation *op,
                                           ArrayRef<DenseElementsAttr> operands,
                                           int64_t maxElements) {
  if (op->getNumResults() != 1 ||
      llvm::any_of(operands, [](auto a) { return !a; }))
    return {};
  auto resultTy = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultTy || !resultTy.hasStaticShape() ||
      resultTy.getNumElements() > maxElements)
    return {};
  Type inElt = operands.empty() ? Type() : operands[0].getElementType();
  bool isUnsigned = inElt && inElt.isUnsignedInteger();

  if (isa<ReshapeOp>(op))
    return DenseElementsAttr(operands[0]).reshape(resultTy);
  if (auto t = dyn_cast<TransposeOp>(op))
    return evalTranspose(t, operands[0]);
  if (isa<BroadcastOp>(op))
    return evalBroadcast(resultTy, operands[0]);
  if (auto c = dyn_cast<ConcatOp>(op))
    return evalConcat(c, operands);
  if (auto s = dyn_cast<SliceOp>(op))
    return evalSlice(s, operands[0]);
  if (auto g = dyn_cast<GatherOp>(op))
    return evalGather(g, operands[0], operands[1]);
  if (auto s = dyn_cast<SelectOp>(op)) {
    // Data movement per element: broadcast all three, pick lhs or rhs.
    SmallVector<int64_t> coords;
    auto cond = operands[0].getValues<bool>();
    SmallVector<bool> condValues(cond.begin(), cond.end());
    return remap({operands[1], operands[2]}, resultTy, [&](int64_t flat) {
      unflatten(flat, resultTy.getShape(), coords);
      int64_t c = broadcastIndex(coords, operands[0].getType().getShape());
      bool pick = condValues[operands[0].isSplat() ? 0 : c];
      unsigned k = pick ? 0 : 1;
      return std::make_pair(
          k, broadcastIndex(coords, operands[k + 1].getType().getShape()));
    });
  }

  // The rest computes: narrow storage types are not modelled.
  if (isNarrowType(resultTy.getElementType()) || (inElt && isNarrowType(inElt)))
    return {};

  if (isa<CastOp>(op)) {
    Type to = resultTy.getElementType();
    return evalElementwise(resultTy, operands, [&](ArrayRef<Scalar> a) {
      return evalCastScalar(a[0], inElt, to);
    });
  }
  if (auto cmp = dyn_cast<CmpOp>(op)) {
    CmpPredicate pred = cmp.getPredicate();
    return evalElementwise(
        resultTy, operands, [&](ArrayRef<Scalar> a) -> std::optional<Scalar> {
          if (a[0].f.has_value() != a[1].f.has_value())
            return std::nullopt;
          return fromInt(APInt(1, compare(pred, a[0], a[1], isUnsigned)));
        });
  }
  if (operands.size() == 1 &&
      op->hasTrait<OpTrait::SameOperandsAndResultType>())
    return evalElementwise(resultTy, operands, [&](ArrayRef<Scalar> a) {
      return evalUnaryScalar(op, a[0], isUnsigned);
    });
  if (operands.size() == 2)
    if (std::optional<std::vector<char>> bytes = evalArithmeticRaw(
            op, resultTy, rawOf(operands[0]), rawOf(operands[1])))
      return denseOf(resultTy, *bytes);
  if (isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, RemOp, PowOp, AndOp, OrOp,
          XorOp>(op))
    return evalElementwise(resultTy, operands, [&](ArrayRef<Scalar> a) {
      return evalBinaryScalar(op, a[0], a[1], isUnsigned);
    });

  auto add = [&](const Scalar &a, const Scalar &b) {
    return a.f ? fromFloat(*a.f + *b.f) : fromInt(a.i + b.i);
  };
  auto mul = [&](const Scalar &a, const Scalar &b) {
    return a.f ? fromFloat(*a.f * *b.f) : fromInt(a.i * b.i);
  };
  auto pick = [&](CmpPredicate pred) {
    return [=](const Scalar &a, const Scalar &b) {
      if (a.f && (a.f->isNaN() || b.f->isNaN())) // NaN propagates
        return a.f->isNaN() ? a : b;
      return compare(pred, b, a, isUnsigned) ? b : a;
    };
  };
  auto same = [](const Scalar &a, int64_t) { return a; };
  auto mean = [](const Scalar &a, int64_t count) {
    APFloat n(a.f->getSemantics(), count);
    return fromFloat(*a.f / n);
  };
  if (auto r = dyn_cast<ReduceSumOp>(op))
    return evalReduce(resultTy, operands[0], r.getAxes(), add, same);
  if (auto r = dyn_cast<ReduceProdOp>(op))
    return evalReduce(resultTy, operands[0], r.getAxes(), mul, same);
  if (auto r = dyn_cast<ReduceMeanOp>(op))
    return evalReduce(resultTy, operands[0], r.getAxes(), add, mean);
  if (auto r = dyn_cast<ReduceMaxOp>(op))
    return evalReduce(resultTy, operands[0], r.getAxes(),
                      pick(CmpPredicate::gt), same);
  if (auto r = dyn_cast<ReduceMinOp>(op))
    return evalReduce(resultTy, operands[0], r.getAxes(),
                      pick(CmpPredicate::lt), same);
  if (auto a = dyn_cast<ArgMaxOp>(op))
    return evalArg(a, operands[0], /*isMax=*/true);
  if (auto a = dyn_cast<ArgMinOp>(op))
    return evalArg(a, operands[0], /*isMax=*/false);
  return {};
}

TypedAttr kiln::evaluateLargeConstantOp(Operation *op,
                                        ArrayRef<Attribute> operands) {
  if (op->getNumResults() != 1)
    return {};
  auto resultTy = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultTy || !resultTy.hasStaticShape() || resultTy.getNumElements() == 0)
    return {};
  SmallVector<RawConstant> raw;
  for (Attribute value : operands) {
    std::optional<RawConstant> r = rawOf(value);
    if (!r)
      return {};
    raw.push_back(*r);
  }
  // A blob reshaped is the same blob under another type: no copy at all.
  if (isa<ReshapeOp>(op) && raw.size() == 1) {
    auto resource = dyn_cast<DenseResourceElementsAttr>(operands[0]);
    if (!resource ||
        resultTy.getElementType() != raw[0].type.getElementType() ||
        resultTy.getNumElements() != raw[0].type.getNumElements())
      return {};
    return DenseResourceElementsAttr::get(resultTy, resource.getRawHandle());
  }
  std::optional<std::vector<char>> bytes;
  if (auto t = dyn_cast<TransposeOp>(op)) {
    if (raw.size() != 1 || raw[0].splat ||
        resultTy.getElementType() != raw[0].type.getElementType())
      return {};
    bytes = transposeRaw(resultTy, t.getPerm(), raw[0],
                         storageBytes(resultTy.getElementType()));
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    if (raw.size() != 1 || raw[0].splat ||
        resultTy.getElementType() != raw[0].type.getElementType())
      return {};
    bytes = sliceRaw(resultTy, slice.getStarts(), slice.getStrides(), raw[0],
                     storageBytes(resultTy.getElementType()));
  } else if (raw.size() == 2) {
    bytes = evalArithmeticRaw(op, resultTy, raw[0], raw[1]);
  }
  if (!bytes)
    return {};
  return makeConstantAttr(resultTy, *bytes);
}

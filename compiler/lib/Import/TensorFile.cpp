//===- TensorFile.cpp - tensors in files, with no LLVM and no protobuf ----===//
//
// The protobuf wire format, as far as a TensorProto and the path from a
// ModelProto to its initializers need it: a field is a varint key (number
// << 3 | wire type) and a value (a varint, 8 or 4 fixed bytes, or a varint
// length and that many bytes). Repeated numeric fields come packed (one
// length-delimited run) or one element per key; both are accepted.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/TensorFile.h"

#include "checked_math.h" // runtime/src: the overflow rules for file numbers

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace kiln;

namespace {
// onnx.proto's TensorProto.DataType.
enum OnnxType : int {
  FLOAT = 1,
  UINT8 = 2,
  INT8 = 3,
  UINT16 = 4,
  INT16 = 5,
  INT32 = 6,
  INT64 = 7,
  STRING = 8,
  BOOL = 9,
  FLOAT16 = 10,
  DOUBLE = 11,
  UINT32 = 12,
  UINT64 = 13,
  BFLOAT16 = 16,
  FLOAT8E4M3FN = 17,
  FLOAT8E4M3FNUZ = 18,
  FLOAT8E5M2 = 19,
  FLOAT8E5M2FNUZ = 20,
  UINT4 = 21,
  INT4 = 22,
  FLOAT4E2M1 = 23,
  FLOAT8E8M0 = 24,
  UINT2 = 25,
  INT2 = 26,
};
} // namespace

unsigned kiln::onnxElementBytes(int dataType) {
  switch (dataType) {
  case FLOAT:
    return 4;
  case DOUBLE:
    return 8;
  case FLOAT16:
    return 2;
  case BFLOAT16:
    return 2;
  case INT8:
    return 1;
  case INT32:
    return 4;
  case INT64:
    return 8;
  case BOOL:
    return 1;
  case INT16:
    return 2;
  case UINT8:
    return 1;
  case UINT16:
    return 2;
  case UINT32:
    return 4;
  case UINT64:
    return 8;
  default:
    // The narrow types unpack to one byte per element.
    return onnxElementsPerByte(dataType) ? 1 : 0;
  }
}

unsigned kiln::onnxElementsPerByte(int dataType) {
  switch (dataType) {
  case FLOAT8E4M3FN:
  case FLOAT8E4M3FNUZ:
  case FLOAT8E5M2:
  case FLOAT8E5M2FNUZ:
  case FLOAT8E8M0:
    return 1;
  case UINT4:
  case INT4:
  case FLOAT4E2M1:
    return 2;
  case UINT2:
  case INT2:
    return 4;
  default:
    return 0;
  }
}

const char *kiln::onnxTypeName(int t) {
  static const char *names[] = {
      "undefined",      "float",      "uint8",
      "int8",           "uint16",     "int16",
      "int32",          "int64",      "string",
      "bool",           "float16",    "double",
      "uint32",         "uint64",     "complex64",
      "complex128",     "bfloat16",   "float8e4m3fn",
      "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
      "uint4",          "int4",       "float4e2m1",
      "float8e8m0",     "uint2",      "int2"};
  if (t >= 0 && t < static_cast<int>(std::size(names)))
    return names[t];
  return "an unknown type";
}

int kiln::kilnDTypeOfOnnx(int t) {
  switch (t) {
  case FLOAT:
    return 1;
  case FLOAT16:
    return 2;
  case BFLOAT16:
    return 3;
  case DOUBLE:
    return 4;
  case INT8:
    return 5;
  case INT32:
    return 6;
  case INT64:
    return 7;
  case BOOL:
    return 8;
  case UINT8:
    return 9;
  case UINT16:
    return 10;
  case UINT32:
    return 11;
  case UINT64:
    return 12;
  case INT16:
    return 13;
  default:
    // FLOAT8E4M3FN (17) to INT2 (26) are kiln dtypes 14 to 23.
    return onnxElementsPerByte(t) ? t - 3 : 0;
  }
}

int kiln::onnxTypeOfKilnDType(int kilnDType) {
  for (int t = 1; t <= INT2; ++t)
    if (kilnDTypeOfOnnx(t) == kilnDType && kilnDType != 0)
      return t;
  return 0;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else { // subnormal: normalize
    exp = 113;
    while (!(man & 0x400)) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {
/// How a small float format spends its top codes.
enum class Special {
  Ieee, ///< all-ones exponent: infinity (mantissa 0) or NaN
  Fn,   ///< no infinity; only all ones (exponent and mantissa) is NaN
  Fnuz, ///< no infinity, no -0: the sign bit alone (0x80) is NaN
  None, ///< every code is a number
};

/// A sign bit, `expBits` of exponent with bias `bias` and `manBits` of
/// mantissa, with subnormals, as ONNX defines the 8- and 4-bit floats.
double smallFloat(unsigned bits, unsigned expBits, unsigned manBits, int bias,
                  Special special) {
  unsigned total = 1 + expBits + manBits;
  unsigned sign = (bits >> (total - 1)) & 1;
  unsigned exp = (bits >> manBits) & ((1u << expBits) - 1);
  unsigned man = bits & ((1u << manBits) - 1);
  unsigned expMax = (1u << expBits) - 1, manMax = (1u << manBits) - 1;
  switch (special) {
  case Special::Ieee:
    if (exp == expMax)
      return man ? NAN : (sign ? -INFINITY : INFINITY);
    break;
  case Special::Fn:
    if (exp == expMax && man == manMax)
      return NAN;
    break;
  case Special::Fnuz:
    if (sign && exp == 0 && man == 0)
      return NAN;
    break;
  case Special::None:
    break;
  }
  double value = exp == 0 ? std::ldexp(double(man), 1 - bias - int(manBits))
                          : std::ldexp(double(man | (1u << manBits)),
                                       int(exp) - bias - int(manBits));
  return sign ? -value : value;
}
} // namespace

double kiln::elementAsDouble(int kilnDType, const char *p, size_t i) {
  auto load = [&](auto v, size_t width) {
    std::memcpy(&v, p + width * i, width);
    return v;
  };
  switch (kilnDType) {
  case 1:
    return load(float(), 4);
  case 2:
    return halfToFloat(load(uint16_t(), 2));
  case 3: {
    uint32_t bits = uint32_t(load(uint16_t(), 2)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case 4:
    return load(double(), 8);
  case 5:
    return load(int8_t(), 1);
  case 6:
    return load(int32_t(), 4);
  case 7:
    return static_cast<double>(load(int64_t(), 8));
  case 8:
    return load(uint8_t(), 1) != 0;
  case 9:
    return load(uint8_t(), 1);
  case 10:
    return load(uint16_t(), 2);
  case 11:
    return load(uint32_t(), 4);
  case 12:
    return static_cast<double>(load(uint64_t(), 8));
  case 13:
    return load(int16_t(), 2);
  case 14:
    return smallFloat(load(uint8_t(), 1), 4, 3, 7, Special::Fn);
  case 15:
    return smallFloat(load(uint8_t(), 1), 4, 3, 8, Special::Fnuz);
  case 16:
    return smallFloat(load(uint8_t(), 1), 5, 2, 15, Special::Ieee);
  case 17:
    return smallFloat(load(uint8_t(), 1), 5, 2, 16, Special::Fnuz);
  case 18:
  case 22:
    return load(uint8_t(), 1); // u4, u2
  case 19:
  case 23:
    return load(int8_t(), 1); // i4, i2
  case 20:
    return smallFloat(load(uint8_t(), 1) & 0xf, 2, 1, 1, Special::None);
  case 21: { // float8e8m0: 2^(e - 127), 0xff NaN
    uint8_t e = load(uint8_t(), 1);
    return e == 0xff ? NAN : std::ldexp(1.0, int(e) - 127);
  }
  default:
    return 0;
  }
}

bool kiln::decodeTensorFields(const TensorFields &t, TensorBytes &out,
                              std::string &error) {
  out.name = std::string(t.name);
  out.dataType = t.dataType;
  unsigned bytes = onnxElementBytes(t.dataType);
  if (!bytes) {
    error = std::string("element type ") + onnxTypeName(t.dataType) +
            " is not supported";
    return false;
  }
  if (t.external) {
    // The importer resolves external data against the model's folder; a
    // lone tensor (a .pb file) has no folder to resolve it in.
    error = "data stored in an external file is only read from a model";
    return false;
  }
  // At most 2^40 elements: far more than memory, far from int64 overflow.
  constexpr uint64_t kMaxElements = uint64_t(1) << 40;
  uint64_t elements;
  if (!kiln_checked_dims_product(t.dims, t.numDims, kMaxElements, &elements)) {
    // Name the first negative dim, else the one the product passes 2^40 at.
    int64_t culprit = 0;
    uint64_t partial = 1;
    for (size_t i = 0; i < t.numDims && !culprit; ++i)
      if (t.dims[i] < 0 || !kiln_checked_mul(partial, uint64_t(t.dims[i]),
                                             kMaxElements, &partial))
        culprit = t.dims[i];
    error =
        "dimension " + std::to_string(culprit) + " is negative or too large";
    return false;
  }
  int64_t count = static_cast<int64_t>(elements);
  out.dims.assign(t.dims, t.dims + t.numDims);
  out.numElements = count;

  // 4- and 2-bit elements are packed, low bits first; they unpack to a byte
  // each: integers sign- or zero-extended, float4 as its bit pattern.
  if (unsigned perByte = onnxElementsPerByte(t.dataType); perByte > 1) {
    int64_t packed = (count + perByte - 1) / perByte;
    std::string bytesIn;
    if (t.hasRawData) {
      bytesIn = std::string(t.rawData);
    } else {
      for (size_t i = 0; i < t.numInt32; ++i)
        bytesIn.push_back(static_cast<char>(t.int32Data[i]));
    }
    if (static_cast<int64_t>(bytesIn.size()) != packed) {
      error = "its dims need " + std::to_string(packed) +
              " packed bytes, but the data holds " +
              std::to_string(bytesIn.size());
      return false;
    }
    unsigned bits = 8 / perByte, mask = (1u << bits) - 1;
    bool isSigned = t.dataType == INT4 || t.dataType == INT2;
    out.data.assign(static_cast<size_t>(count), '\0');
    for (int64_t i = 0; i < count; ++i) {
      unsigned v = (static_cast<uint8_t>(bytesIn[i / perByte]) >>
                    (bits * (i % perByte))) &
                   mask;
      if (isSigned && (v >> (bits - 1)))
        v |= ~mask; // sign-extend
      out.data[i] = static_cast<char>(v);
    }
    return true;
  }

  if (t.hasRawData) {
    if (t.rawData.size() != static_cast<uint64_t>(count) * bytes) {
      error = "its dims need " + std::to_string(count * bytes) +
              " bytes of raw_data, but it holds " +
              std::to_string(t.rawData.size());
      return false;
    }
    if (t.rawDataToTake)
      out.data = std::move(*t.rawDataToTake);
    else
      out.data = std::string(t.rawData);
    if (t.dataType == BOOL)
      for (char &c : out.data)
        c = c != 0;
    return true;
  }

  auto fill = [&](const auto *field, size_t size, auto convert) {
    if (static_cast<int64_t>(size) != count) {
      error = "its dims need " + std::to_string(count) +
              " elements, but the data holds " + std::to_string(size);
      return false;
    }
    out.data.assign(static_cast<size_t>(count) * bytes, '\0');
    for (int64_t i = 0; i < count; ++i) {
      auto v = convert(field[i]);
      std::memcpy(out.data.data() + i * bytes, &v, bytes);
    }
    return true;
  };
  switch (t.dataType) {
  case FLOAT:
    return fill(t.floatData, t.numFloat, [](float v) { return v; });
  case DOUBLE:
    return fill(t.doubleData, t.numDouble, [](double v) { return v; });
  case INT64:
    return fill(t.int64Data, t.numInt64, [](int64_t v) { return v; });
  case INT32:
    return fill(t.int32Data, t.numInt32, [](int32_t v) { return v; });
  case INT8:
    return fill(t.int32Data, t.numInt32,
                [](int32_t v) { return static_cast<int8_t>(v); });
  case BOOL:
    return fill(t.int32Data, t.numInt32,
                [](int32_t v) { return static_cast<int8_t>(v != 0); });
  case FLOAT16:
  case BFLOAT16:
    // 16-bit floats travel as their bit patterns in int32_data.
    return fill(t.int32Data, t.numInt32,
                [](int32_t v) { return static_cast<uint16_t>(v); });
  case UINT8:
  case FLOAT8E4M3FN:
  case FLOAT8E4M3FNUZ:
  case FLOAT8E5M2:
  case FLOAT8E5M2FNUZ:
  case FLOAT8E8M0:
    // 8-bit floats travel as their bit patterns in int32_data.
    return fill(t.int32Data, t.numInt32,
                [](int32_t v) { return static_cast<uint8_t>(v); });
  case INT16:
  case UINT16:
    return fill(t.int32Data, t.numInt32,
                [](int32_t v) { return static_cast<uint16_t>(v); });
  case UINT32:
    return fill(t.uint64Data, t.numUint64,
                [](uint64_t v) { return static_cast<uint32_t>(v); });
  case UINT64:
    return fill(t.uint64Data, t.numUint64, [](uint64_t v) { return v; });
  default:
    error = std::string("element type ") + onnxTypeName(t.dataType) +
            " is not supported";
    return false;
  }
}

//===----------------------------------------------------------------------===//
// The protobuf wire format
//===----------------------------------------------------------------------===//

namespace {
enum WireType : unsigned { Varint = 0, Fixed64 = 1, Bytes = 2, Fixed32 = 5 };

/// A field of a message: its number, wire type, value and the bytes of the
/// whole field (key included), for copying it unchanged.
struct Field {
  uint32_t number = 0;
  unsigned wire = 0;
  uint64_t value = 0;     ///< Varint, Fixed64, Fixed32
  std::string_view bytes; ///< Bytes: the payload
  std::string_view whole;
};

/// Reads the fields of one message, in order; false at the first malformed
/// one (a varint past the end or over 10 bytes, a length past the end, a
/// group or unknown wire type, field number 0).
class WireReader {
public:
  explicit WireReader(std::string_view data) : data(data) {}

  bool atEnd() const { return pos == data.size(); }

  bool varint(uint64_t &v) {
    v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      if (pos == data.size())
        return false;
      uint8_t byte = static_cast<uint8_t>(data[pos++]);
      if (shift == 63 && byte > 1)
        return false; // more than 64 bits
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }

  bool next(Field &f) {
    size_t start = pos;
    uint64_t key;
    if (!varint(key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
      return false;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<unsigned>(key & 7);
    switch (f.wire) {
    case Varint:
      if (!varint(f.value))
        return false;
      break;
    case Fixed64:
    case Fixed32: {
      size_t width = f.wire == Fixed64 ? 8 : 4;
      if (data.size() - pos < width)
        return false;
      f.value = 0;
      std::memcpy(&f.value, data.data() + pos, width); // little-endian
      pos += width;
      break;
    }
    case Bytes: {
      uint64_t length;
      if (!varint(length) || length > data.size() - pos)
        return false;
      f.bytes = data.substr(pos, length);
      pos += length;
      break;
    }
    default:
      return false; // groups (3, 4) and undefined wire types
    }
    f.whole = data.substr(start, pos - start);
    return true;
  }

private:
  std::string_view data;
  size_t pos = 0;
};

/// Appends a repeated numeric field's elements: one value (unpacked) or a
/// packed run of varints or fixed-width values. T is the field's type.
template <typename T>
bool appendRepeated(const Field &f, unsigned elementWire, std::vector<T> &to) {
  auto convert = [](uint64_t raw) {
    if constexpr (std::is_same_v<T, float>) {
      uint32_t bits = static_cast<uint32_t>(raw);
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    } else if constexpr (std::is_same_v<T, double>) {
      double v;
      std::memcpy(&v, &raw, 8);
      return v;
    } else {
      return static_cast<T>(raw); // int32 varints are sign-extended to 64 bits
    }
  };
  if (f.wire == elementWire) {
    to.push_back(convert(f.value));
    return true;
  }
  if (f.wire != Bytes)
    return false;
  if (elementWire == Varint) {
    WireReader run(f.bytes);
    while (!run.atEnd()) {
      uint64_t v;
      if (!run.varint(v))
        return false;
      to.push_back(convert(v));
    }
    return true;
  }
  size_t width = elementWire == Fixed64 ? 8 : 4;
  if (f.bytes.size() % width)
    return false;
  to.reserve(to.size() + f.bytes.size() / width);
  for (size_t at = 0; at < f.bytes.size(); at += width) {
    uint64_t raw = 0;
    std::memcpy(&raw, f.bytes.data() + at, width);
    to.push_back(convert(raw));
  }
  return true;
}

/// A TensorProto read from the wire: the repeated fields' storage and the
/// views decodeTensorFields reads.
struct WireTensor {
  std::vector<int64_t> dims;
  std::vector<float> floats;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
  TensorFields fields;

  bool parse(std::string_view bytes) {
    WireReader reader(bytes);
    Field f;
    while (!reader.atEnd()) {
      if (!reader.next(f))
        return false;
      bool ok = true;
      switch (f.number) {
      case 1:
        ok = appendRepeated(f, Varint, dims);
        break;
      case 2:
        ok = f.wire == Varint;
        fields.dataType = static_cast<int32_t>(f.value);
        break;
      case 4:
        ok = appendRepeated(f, Fixed32, floats);
        break;
      case 5:
        ok = appendRepeated(f, Varint, int32s);
        break;
      case 7:
        ok = appendRepeated(f, Varint, int64s);
        break;
      case 8:
        ok = f.wire == Bytes;
        fields.name = f.bytes;
        break;
      case 9:
        ok = f.wire == Bytes;
        fields.hasRawData = true;
        fields.rawData = f.bytes;
        break;
      case 10:
        ok = appendRepeated(f, Fixed64, doubles);
        break;
      case 11:
        ok = appendRepeated(f, Varint, uint64s);
        break;
      case 13:
        fields.external = true;
        break; // external_data
      case 14: // data_location: 1 EXTERNAL
        ok = f.wire == Varint;
        if (f.value == 1)
          fields.external = true;
        break;
      default:
        break; // segment, string_data, doc_string, metadata: unused
      }
      if (!ok)
        return false;
    }
    fields.dims = dims.data();
    fields.numDims = dims.size();
    fields.floatData = floats.data();
    fields.numFloat = floats.size();
    fields.int32Data = int32s.data();
    fields.numInt32 = int32s.size();
    fields.int64Data = int64s.data();
    fields.numInt64 = int64s.size();
    fields.doubleData = doubles.data();
    fields.numDouble = doubles.size();
    fields.uint64Data = uint64s.data();
    fields.numUint64 = uint64s.size();
    return true;
  }
};

void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void putBytesField(std::string &out, uint32_t number, std::string_view bytes) {
  putVarint(out, uint64_t(number) << 3 | Bytes);
  putVarint(out, bytes.size());
  out.append(bytes);
}
} // namespace

bool kiln::parseTensorFile(std::string_view bytes, TensorBytes &out,
                           std::string &error) {
  WireTensor t;
  if (!t.parse(bytes)) {
    error = "not a serialized ONNX TensorProto";
    return false;
  }
  return decodeTensorFields(t.fields, out, error);
}

bool kiln::replaceInitializers(std::string_view modelBytes,
                               const std::vector<TensorBytes> &values,
                               std::string &out, std::string &error) {
  const std::string notAModel =
      "not an ONNX model (the protobuf does not parse)";
  // ModelProto.graph is field 7, GraphProto.initializer field 5.
  constexpr uint32_t kGraph = 7, kInitializer = 5;
  std::vector<bool> replaced(values.size(), false);

  // The initializer `bytes` with the value written in, or itself.
  auto rewriteInitializer = [&](std::string_view bytes, std::string &to) {
    WireTensor t;
    if (!t.parse(bytes)) {
      error = notAModel;
      return false;
    }
    const TensorBytes *value = nullptr;
    size_t index = 0;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i].name == t.fields.name)
        value = &values[i], index = i;
    if (!value) {
      putBytesField(to, kInitializer, bytes);
      return true;
    }
    bool sameDims = t.dims == value->dims;
    if (t.fields.dataType != value->dataType || !sameDims) {
      auto describe = [](int type, const std::vector<int64_t> &dims) {
        std::string s = std::string(onnxTypeName(type)) + " [";
        for (size_t i = 0; i < dims.size(); ++i)
          s += (i ? "," : "") + std::to_string(dims[i]);
        return s + "]";
      };
      error = "initializer '" + value->name + "' is " +
              describe(t.fields.dataType, t.dims) +
              ", the value written back is " +
              describe(value->dataType, value->dims);
      return false;
    }
    replaced[index] = true;
    // Every field but the data (typed, raw, external) is kept as it was;
    // raw_data follows them.
    std::string tensor;
    WireReader reader(bytes);
    Field f;
    while (reader.next(f))
      switch (f.number) {
      case 4:
      case 5:
      case 6:
      case 7:
      case 9:
      case 10:
      case 11:
      case 13:
      case 14:
        break;
      default:
        tensor.append(f.whole);
      }
    putBytesField(tensor, 9, value->data);
    putBytesField(to, kInitializer, tensor);
    return true;
  };

  auto rewriteGraph = [&](std::string_view bytes, std::string &to) {
    std::string graph;
    WireReader reader(bytes);
    Field f;
    while (!reader.atEnd()) {
      if (!reader.next(f)) {
        error = notAModel;
        return false;
      }
      if (f.number == kInitializer && f.wire == Bytes) {
        if (!rewriteInitializer(f.bytes, graph))
          return false;
      } else {
        graph.append(f.whole);
      }
    }
    putBytesField(to, kGraph, graph);
    return true;
  };

  std::string model;
  WireReader reader(modelBytes);
  Field f;
  bool sawGraph = false;
  while (!reader.atEnd()) {
    if (!reader.next(f)) {
      error = notAModel;
      return false;
    }
    if (f.number == kGraph && f.wire == Bytes) {
      sawGraph = true;
      if (!rewriteGraph(f.bytes, model))
        return false;
    } else {
      model.append(f.whole);
    }
  }
  if (!sawGraph) {
    error = "not an ONNX model (it has no graph)";
    return false;
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (!replaced[i]) {
      error = "the model has no initializer named '" + values[i].name + "'";
      return false;
    }
  out = std::move(model);
  return true;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

const char *kiln::npyDescr(int t) {
  switch (t) {
  case 1:
    return "<f4";
  case 4:
    return "<f8";
  case 2:
    return "<f2";
  case 3:
    return "<u2"; // bf16, as its bits
  case 5:
    return "|i1";
  case 6:
    return "<i4";
  case 7:
    return "<i8";
  case 8:
    return "|b1";
  case 9:
    return "|u1";
  case 10:
    return "<u2";
  case 11:
    return "<u4";
  case 12:
    return "<u8";
  case 13:
    return "<i2";
  default:
    return "";
  }
}

static int fromNpyDescr(std::string_view d) {
  if (d == "<f4")
    return 1;
  if (d == "<f8")
    return 4;
  if (d == "<f2")
    return 2;
  if (d == "|i1" || d == "<i1")
    return 5;
  if (d == "<i4")
    return 6;
  if (d == "<i8")
    return 7;
  if (d == "|b1")
    return 8;
  if (d == "|u1" || d == "<u1")
    return 9;
  if (d == "<u2")
    return 10;
  if (d == "<u4")
    return 11;
  if (d == "<u8")
    return 12;
  if (d == "<i2")
    return 13;
  return 0;
}

bool kiln::readNpy(std::string_view bytes, NpyTensor &t, std::string &error) {
  auto bad = [&](const std::string &why) {
    error = why;
    return false;
  };
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY")
    return bad("no .npy magic");
  unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen =
        static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = (headerLen << 8) | static_cast<uint8_t>(bytes[8 + i]);
    start = 12;
  } else {
    return bad("unknown version " + std::to_string(major));
  }
  if (headerLen > bytes.size() - start)
    return bad("truncated header");
  std::string_view header = bytes.substr(start, headerLen);
  // The text after "'key':", spaces skipped; empty when the key is absent.
  auto field = [&](std::string_view key, std::string_view &rest) {
    std::string quoted = "'" + std::string(key) + "'";
    size_t at = header.find(quoted);
    if (at == std::string_view::npos)
      return false;
    rest = header.substr(at + quoted.size());
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == ':'))
      rest.remove_prefix(1);
    return true;
  };
  auto until = [](std::string_view s, char end) {
    size_t at = s.find(end);
    return at == std::string_view::npos ? s : s.substr(0, at);
  };
  std::string_view descr, order, shape;
  if (!field("descr", descr))
    return bad("no 'descr' in the header");
  if (!field("fortran_order", order))
    return bad("no 'fortran_order' in the header");
  if (!field("shape", shape))
    return bad("no 'shape' in the header");
  if (descr.empty() || descr.front() != '\'')
    return bad("bad 'descr'");
  descr = until(descr.substr(1), '\'');
  t.dtype = fromNpyDescr(descr);
  if (!t.dtype)
    return bad("dtype '" + std::string(descr) + "' is not supported");
  if (order.substr(0, 4) == "True")
    return bad("Fortran order is not supported");
  if (shape.empty() || shape.front() != '(')
    return bad("bad 'shape'");
  shape = until(shape.substr(1), ')');
  t.shape.clear();
  while (!shape.empty()) {
    std::string_view d = until(shape, ',');
    shape.remove_prefix(std::min(shape.size(), d.size() + 1));
    while (!d.empty() && d.front() == ' ')
      d.remove_prefix(1);
    while (!d.empty() && d.back() == ' ')
      d.remove_suffix(1);
    if (d.empty())
      continue;
    uint64_t v = 0;
    for (char c : d) {
      if (c < '0' || c > '9' || !kiln_checked_mul(v, 10, INT64_MAX, &v) ||
          !kiln_checked_add(v, uint64_t(c - '0'), INT64_MAX, &v))
        return bad("bad dimension '" + std::string(d) + "'");
    }
    t.shape.push_back(static_cast<int64_t>(v));
  }
  // The product of the dimensions, and the bytes, without wrapping.
  uint64_t count, size;
  if (!kiln_checked_dims_product(t.shape.data(), t.shape.size(), UINT64_MAX,
                                 &count))
    return bad("the dimensions' product overflows 64 bits");
  static const unsigned widths[] = {0, 4, 2, 2, 8, 1, 4, 8, 1, 1, 2, 4, 8, 2};
  size_t dataStart = start + headerLen;
  if (!kiln_checked_mul(count, widths[t.dtype], UINT64_MAX, &size))
    return bad("the data size overflows 64 bits");
  if (bytes.size() - dataStart != size)
    return bad("expected " + std::to_string(size) + " data bytes, found " +
               std::to_string(bytes.size() - dataStart));
  t.data = std::string(bytes.substr(dataStart));
  return true;
}

std::string kiln::npyFile(int dtype, const std::vector<int64_t> &shape,
                          std::string_view data) {
  std::string header = "{'descr': '" + std::string(npyDescr(dtype)) +
                       "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    header += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    header += ","; // numpy's one-element tuple
  header += "), }";
  // Pad so that the data starts at a multiple of 64 bytes; end with '\n'.
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += char(1);
  file += char(0);
  file += char(header.size() & 0xff);
  file += char(header.size() >> 8);
  file += header;
  file.append(data);
  return file;
}

//===- TensorData.cpp - ONNX tensor data as plain bytes -------------------===//
//
// Every size is checked before it is used: dims must be non-negative, their
// product must not overflow, and the data must hold exactly that many
// elements, so a hostile file cannot make the decoder read or allocate past
// what it holds.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/TensorData.h"

#include "onnx_subset.pb.h"

#include "llvm/ADT/APFloat.h"

#include <algorithm>
#include <cstring>

using namespace kiln;

unsigned kiln::onnxElementBytes(int dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT: return 4;
  case onnx::TensorProto::DOUBLE: return 8;
  case onnx::TensorProto::FLOAT16: return 2;
  case onnx::TensorProto::BFLOAT16: return 2;
  case onnx::TensorProto::INT8: return 1;
  case onnx::TensorProto::INT32: return 4;
  case onnx::TensorProto::INT64: return 8;
  case onnx::TensorProto::BOOL: return 1;
  case onnx::TensorProto::INT16: return 2;
  case onnx::TensorProto::UINT8: return 1;
  case onnx::TensorProto::UINT16: return 2;
  case onnx::TensorProto::UINT32: return 4;
  case onnx::TensorProto::UINT64: return 8;
  default:
    // The narrow types unpack to one byte per element.
    return onnxElementsPerByte(dataType) ? 1 : 0;
  }
}

unsigned kiln::onnxElementsPerByte(int dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT8E4M3FN:
  case onnx::TensorProto::FLOAT8E4M3FNUZ:
  case onnx::TensorProto::FLOAT8E5M2:
  case onnx::TensorProto::FLOAT8E5M2FNUZ:
  case onnx::TensorProto::FLOAT8E8M0:
    return 1;
  case onnx::TensorProto::UINT4:
  case onnx::TensorProto::INT4:
  case onnx::TensorProto::FLOAT4E2M1:
    return 2;
  case onnx::TensorProto::UINT2:
  case onnx::TensorProto::INT2:
    return 4;
  default:
    return 0;
  }
}

const char *kiln::onnxTypeName(int t) {
  static const char *names[] = {
      "undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
      "int32",     "int64",  "string",    "bool",       "float16", "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16",
      "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
      "uint4",     "int4",   "float4e2m1", "float8e8m0", "uint2",   "int2"};
  if (t >= 0 && t < static_cast<int>(std::size(names)))
    return names[t];
  return "an unknown type";
}

int kiln::kilnDTypeOfOnnx(int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT: return 1;
  case onnx::TensorProto::FLOAT16: return 2;
  case onnx::TensorProto::BFLOAT16: return 3;
  case onnx::TensorProto::DOUBLE: return 4;
  case onnx::TensorProto::INT8: return 5;
  case onnx::TensorProto::INT32: return 6;
  case onnx::TensorProto::INT64: return 7;
  case onnx::TensorProto::BOOL: return 8;
  case onnx::TensorProto::UINT8: return 9;
  case onnx::TensorProto::UINT16: return 10;
  case onnx::TensorProto::UINT32: return 11;
  case onnx::TensorProto::UINT64: return 12;
  case onnx::TensorProto::INT16: return 13;
  default:
    // FLOAT8E4M3FN (17) to INT2 (26) are kiln dtypes 14 to 23.
    return onnxElementsPerByte(t) ? t - 3 : 0;
  }
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

const llvm::fltSemantics *kiln::narrowFloatSemantics(int kilnDType) {
  switch (kilnDType) {
  case 14: return &llvm::APFloat::Float8E4M3FN();
  case 15: return &llvm::APFloat::Float8E4M3FNUZ();
  case 16: return &llvm::APFloat::Float8E5M2();
  case 17: return &llvm::APFloat::Float8E5M2FNUZ();
  case 20: return &llvm::APFloat::Float4E2M1FN();
  case 21: return &llvm::APFloat::Float8E8M0FNU();
  default: return nullptr;
  }
}

double kiln::elementAsDouble(int kilnDType, const char *p, size_t i) {
  auto load = [&](auto v, size_t width) {
    std::memcpy(&v, p + width * i, width);
    return v;
  };
  switch (kilnDType) {
  case 1: return load(float(), 4);
  case 2: return halfToFloat(load(uint16_t(), 2));
  case 3: {
    uint32_t bits = uint32_t(load(uint16_t(), 2)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case 4: return load(double(), 8);
  case 5: return load(int8_t(), 1);
  case 6: return load(int32_t(), 4);
  case 7: return static_cast<double>(load(int64_t(), 8));
  case 8: return load(uint8_t(), 1) != 0;
  case 9: return load(uint8_t(), 1);
  case 10: return load(uint16_t(), 2);
  case 11: return load(uint32_t(), 4);
  case 12: return static_cast<double>(load(uint64_t(), 8));
  case 13: return load(int16_t(), 2);
  case 18: case 22: return load(uint8_t(), 1); // u4, u2
  case 19: case 23: return load(int8_t(), 1);  // i4, i2
  default: {
    const llvm::fltSemantics *sem = narrowFloatSemantics(kilnDType);
    if (!sem)
      return 0;
    unsigned width = llvm::APFloat::getSizeInBits(*sem);
    llvm::APInt bits(width, load(uint8_t(), 1) & ((1u << width) - 1));
    return llvm::APFloat(*sem, bits).convertToDouble();
  }
  }
}

bool kiln::decodeTensor(const onnx::TensorProto &t, TensorBytes &out,
                        std::string &error) {
  out.name = t.name();
  out.dataType = t.data_type();
  unsigned bytes = onnxElementBytes(t.data_type());
  if (!bytes) {
    error = std::string("element type ") + onnxTypeName(t.data_type()) +
            " is not supported";
    return false;
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL ||
      t.external_data_size() > 0) {
    // The importer resolves external data against the model's folder; a
    // lone tensor (a .pb file) has no folder to resolve it in.
    error = "data stored in an external file is only read from a model";
    return false;
  }
  // At most 2^40 elements: far more than memory, far from int64 overflow.
  constexpr int64_t kMaxElements = int64_t(1) << 40;
  int64_t count = 1;
  out.dims.clear();
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && count > kMaxElements / d)) {
      error = "dimension " + std::to_string(d) + " is negative or too large";
      return false;
    }
    out.dims.push_back(d);
    count *= d;
  }
  out.numElements = count;
  auto mismatch = [&](int64_t found) {
    error = "its dims need " + std::to_string(count) +
            " elements, but the data holds " + std::to_string(found);
    return false;
  };

  // 4- and 2-bit elements are packed, low bits first; they unpack to a byte
  // each: integers sign- or zero-extended, float4 as its bit pattern.
  if (unsigned perByte = onnxElementsPerByte(t.data_type()); perByte > 1) {
    int64_t packed = (count + perByte - 1) / perByte;
    std::string bytesIn;
    if (t.has_raw_data()) {
      bytesIn = t.raw_data();
    } else {
      for (int32_t v : t.int32_data())
        bytesIn.push_back(static_cast<char>(v));
    }
    if (static_cast<int64_t>(bytesIn.size()) != packed) {
      error = "its dims need " + std::to_string(packed) +
              " packed bytes, but the data holds " +
              std::to_string(bytesIn.size());
      return false;
    }
    unsigned bits = 8 / perByte, mask = (1u << bits) - 1;
    bool isSigned = t.data_type() == onnx::TensorProto::INT4 ||
                    t.data_type() == onnx::TensorProto::INT2;
    out.data.assign(static_cast<size_t>(count), '\0');
    for (int64_t i = 0; i < count; ++i) {
      unsigned v = (static_cast<uint8_t>(bytesIn[i / perByte]) >>
                    (bits * (i % perByte))) & mask;
      if (isSigned && (v >> (bits - 1)))
        v |= ~mask; // sign-extend
      out.data[i] = static_cast<char>(v);
    }
    return true;
  }

  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<uint64_t>(count) * bytes) {
      error = "its dims need " + std::to_string(count * bytes) +
              " bytes of raw_data, but it holds " +
              std::to_string(t.raw_data().size());
      return false;
    }
    out.data = t.raw_data();
    if (t.data_type() == onnx::TensorProto::BOOL)
      for (char &c : out.data)
        c = c != 0;
    return true;
  }

  auto fill = [&](const auto &field, auto convert) {
    if (field.size() != count)
      return mismatch(field.size());
    out.data.assign(static_cast<size_t>(count) * bytes, '\0');
    for (int64_t i = 0; i < count; ++i) {
      auto v = convert(field.Get(i));
      std::memcpy(out.data.data() + i * bytes, &v, bytes);
    }
    return true;
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    return fill(t.float_data(), [](float v) { return v; });
  case onnx::TensorProto::DOUBLE:
    return fill(t.double_data(), [](double v) { return v; });
  case onnx::TensorProto::INT64:
    return fill(t.int64_data(), [](int64_t v) { return v; });
  case onnx::TensorProto::INT32:
    return fill(t.int32_data(), [](int32_t v) { return v; });
  case onnx::TensorProto::INT8:
    return fill(t.int32_data(), [](int32_t v) { return static_cast<int8_t>(v); });
  case onnx::TensorProto::BOOL:
    return fill(t.int32_data(), [](int32_t v) { return static_cast<int8_t>(v != 0); });
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    // 16-bit floats travel as their bit patterns in int32_data.
    return fill(t.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); });
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::FLOAT8E4M3FN:
  case onnx::TensorProto::FLOAT8E4M3FNUZ:
  case onnx::TensorProto::FLOAT8E5M2:
  case onnx::TensorProto::FLOAT8E5M2FNUZ:
  case onnx::TensorProto::FLOAT8E8M0:
    // 8-bit floats travel as their bit patterns in int32_data.
    return fill(t.int32_data(), [](int32_t v) { return static_cast<uint8_t>(v); });
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return fill(t.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); });
  case onnx::TensorProto::UINT32:
    return fill(t.uint64_data(), [](uint64_t v) { return static_cast<uint32_t>(v); });
  case onnx::TensorProto::UINT64:
    return fill(t.uint64_data(), [](uint64_t v) { return v; });
  default:
    return false;
  }
}

bool kiln::parseTensorFile(llvm::StringRef bytes, TensorBytes &out,
                           std::string &error) {
  onnx::TensorProto tensor;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    error = "not a serialized ONNX TensorProto";
    return false;
  }
  return decodeTensor(tensor, out, error);
}

bool kiln::replaceInitializers(llvm::StringRef modelBytes,
                               const std::vector<TensorBytes> &values,
                               std::string &out, std::string &error) {
  onnx::ModelProto model;
  if (modelBytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(modelBytes.data(), static_cast<int>(modelBytes.size()))) {
    error = "not an ONNX model (the protobuf does not parse)";
    return false;
  }
  onnx::GraphProto *graph = model.mutable_graph();
  for (const TensorBytes &value : values) {
    onnx::TensorProto *found = nullptr;
    for (onnx::TensorProto &t : *graph->mutable_initializer())
      if (t.name() == value.name)
        found = &t;
    if (!found) {
      error = "the model has no initializer named '" + value.name + "'";
      return false;
    }
    bool sameDims = found->dims_size() == static_cast<int>(value.dims.size()) &&
                    std::equal(value.dims.begin(), value.dims.end(),
                               found->dims().begin());
    if (found->data_type() != value.dataType || !sameDims) {
      auto describe = [](int type, auto begin, auto end) {
        std::string s = std::string(onnxTypeName(type)) + " [";
        for (auto it = begin; it != end; ++it)
          s += (it == begin ? "" : ",") + std::to_string(*it);
        return s + "]";
      };
      error = "initializer '" + value.name + "' is " +
              describe(found->data_type(), found->dims().begin(),
                       found->dims().end()) +
              ", the value written back is " +
              describe(value.dataType, value.dims.begin(), value.dims.end());
      return false;
    }
    // Only raw_data remains: the typed fields and external data are cleared,
    // so the value is inline whatever the original stored.
    found->clear_float_data();
    found->clear_int32_data();
    found->clear_string_data();
    found->clear_int64_data();
    found->clear_double_data();
    found->clear_uint64_data();
    found->clear_external_data();
    found->clear_data_location();
    found->set_raw_data(value.data);
  }
  // Unknown fields (everything onnx_subset.proto leaves out) are kept by
  // protobuf and written back unchanged.
  if (!model.SerializeToString(&out)) {
    error = "cannot serialize the model";
    return false;
  }
  return true;
}

//===- TensorFile.h - tensors in files, with no LLVM and no protobuf ------===//
//
// What a tool that only runs artifacts (kiln-run) needs to read and write
// tensors: the ONNX element types, a serialized TensorProto (.pb, decoded
// from the protobuf wire format directly), numpy's .npy, and writing trained
// parameters back into an ONNX model. Depends on the C++ standard library
// alone, so that kiln-run links only the runtime, libc and libstdc++.
//
// Every size read from a file is checked before it is used: a hostile file
// cannot make the readers read or allocate past what it holds (fuzzed by
// test/fuzz/tensor_file_fuzzer.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TENSORFILE_H
#define KILN_COMPILER_TENSORFILE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct TensorBytes {
  std::string name;
  int dataType = 0; ///< onnx TensorProto.DataType
  std::vector<int64_t> dims;
  int64_t numElements = 0;
  /// Little-endian; bool is one byte (0 or 1) per element, and the narrow
  /// types one byte per element, unpacked (see kiln/runtime.h).
  std::string data;
};

/// Bytes per element, once decoded, of the ONNX data types Kiln handles (the
/// numeric types, bool, and the 8-, 4- and 2-bit types at one byte each); 0
/// for any other.
unsigned onnxElementBytes(int dataType);

/// How many elements ONNX packs into a byte of a narrow type (1 for the
/// 8-bit floats, 2 for int4/uint4/float4e2m1, 4 for int2/uint2); 0 for the
/// other types.
unsigned onnxElementsPerByte(int dataType);

/// "float", "int64", ... for messages.
const char *onnxTypeName(int dataType);

/// The kiln_dtype_t code (kiln/runtime.h) of an ONNX data type, or 0.
int kilnDTypeOfOnnx(int dataType);

/// The ONNX data type of a kiln_dtype_t code, or 0.
int onnxTypeOfKilnDType(int kilnDType);

/// Element `index` of dense little-endian data of kiln dtype `kilnDType`, as
/// a double (for comparing outputs; 64-bit integers may round). The 8- and
/// 4-bit floats decode by their ONNX definitions.
double elementAsDouble(int kilnDType, const char *data, size_t index);

/// The fields of a TensorProto that decoding reads, as views: filled from a
/// parsed onnx::TensorProto (TensorData.h) or from the wire format
/// (parseTensorFile), so that both decode the same way.
struct TensorFields {
  std::string_view name;
  int dataType = 0;
  const int64_t *dims = nullptr;
  size_t numDims = 0;
  bool hasRawData = false;
  std::string_view rawData;
  /// The string `rawData` views, when the caller gives it up: decoding then
  /// moves it into TensorBytes::data instead of copying it (a weight-sized
  /// copy fewer on import).
  std::string *rawDataToTake = nullptr;
  bool external = false; ///< data_location EXTERNAL or external_data present
  const float *floatData = nullptr;
  size_t numFloat = 0;
  const int32_t *int32Data = nullptr;
  size_t numInt32 = 0;
  const int64_t *int64Data = nullptr;
  size_t numInt64 = 0;
  const double *doubleData = nullptr;
  size_t numDouble = 0;
  const uint64_t *uint64Data = nullptr;
  size_t numUint64 = 0;
};

/// Decodes `fields`; on failure returns false and sets `error` (which does
/// not name the tensor; callers add that).
bool decodeTensorFields(const TensorFields &fields, TensorBytes &out,
                        std::string &error);

/// Parses a serialized TensorProto (a .pb file of the ONNX test data) and
/// decodes it.
bool parseTensorFile(std::string_view bytes, TensorBytes &out,
                     std::string &error);

/// A copy of the ONNX model in `modelBytes` (serialized into `out`) whose
/// top-level initializers named like `values` hold those values instead, as
/// raw_data (any typed or external storage is dropped). Each value must match
/// its initializer's data type (`dataType`) and dims; on failure returns
/// false and sets `error`. Every other field of the model is copied as it
/// was, byte for byte.
bool replaceInitializers(std::string_view modelBytes,
                         const std::vector<TensorBytes> &values,
                         std::string &out, std::string &error);

/// A tensor of an .npy file, with a kiln dtype.
struct NpyTensor {
  int dtype = 0; ///< kiln_dtype_t
  std::vector<int64_t> shape;
  std::string data;
};

/// numpy's descr of a kiln dtype ("<f4", ...); bf16 has none in numpy and is
/// stored as its bit pattern ("<u2", which reads back as u16). "" for the
/// dtypes numpy cannot hold.
const char *npyDescr(int kilnDType);

/// Reads an .npy file (format 1.0-3.0, C order, little-endian); on failure
/// returns false and sets `error` ("no .npy magic", ...).
bool readNpy(std::string_view bytes, NpyTensor &out, std::string &error);

/// The bytes of an .npy file (format 1.0) holding `data`, of kiln dtype
/// `dtype` and shape `shape`.
std::string npyFile(int dtype, const std::vector<int64_t> &shape,
                    std::string_view data);

} // namespace kiln

#endif // KILN_COMPILER_TENSORFILE_H

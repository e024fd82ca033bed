//===- TensorData.h - ONNX tensor data as plain bytes -------------*- C++ -*-===//
//
// Decodes the data of an ONNX TensorProto (raw_data or the typed repeated
// fields) into little-endian bytes of the element's width. Shared by the
// importer (initializers, Constant nodes) and kiln-run (.pb input files), and
// free of MLIR so tools can use it alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TENSORDATA_H
#define KILN_COMPILER_TENSORDATA_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace llvm {
struct fltSemantics;
} // namespace llvm
#include <string>
#include <vector>

namespace kiln {
namespace onnx {
class TensorProto;
} // namespace onnx

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

/// The APFloat semantics of a narrow float kiln dtype (14-17, 20, 21), or
/// null.
const llvm::fltSemantics *narrowFloatSemantics(int kilnDType);

/// "float", "int64", ... for messages.
const char *onnxTypeName(int dataType);

/// The kiln_dtype_t code (kiln/runtime.h) of an ONNX data type, or 0.
int kilnDTypeOfOnnx(int dataType);

/// Element `index` of dense little-endian data of kiln dtype `kilnDType`, as
/// a double (for comparing outputs; 64-bit integers may round).
double elementAsDouble(int kilnDType, const char *data, size_t index);

/// Decodes `tensor`; on failure returns false and sets `error` (which does
/// not name the tensor; callers add that).
bool decodeTensor(const onnx::TensorProto &tensor, TensorBytes &out,
                  std::string &error);

/// Parses a serialized TensorProto (a .pb file of the ONNX test data) and
/// decodes it.
bool parseTensorFile(llvm::StringRef bytes, TensorBytes &out,
                     std::string &error);

/// A copy of the ONNX model in `modelBytes` (serialized into `out`) whose
/// top-level initializers named like `values` hold those values instead, as
/// raw_data (any typed or external storage is dropped). Each value must match
/// its initializer's data type (`dataType`) and dims; on failure returns
/// false and sets `error`. Every other field of the model is kept as it was.
bool replaceInitializers(llvm::StringRef modelBytes,
                         const std::vector<TensorBytes> &values,
                         std::string &out, std::string &error);

} // namespace kiln

#endif // KILN_COMPILER_TENSORDATA_H

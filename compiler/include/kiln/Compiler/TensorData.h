//===- TensorData.h - ONNX tensor data as plain bytes -----------*- C++ -*-===//
//
// The importer's side of ONNX tensor data: a TensorProto parsed with the
// model decodes through TensorFile.h's decodeTensorFields, the one decoder
// that kiln-run's .pb reader uses too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TENSORDATA_H
#define KILN_COMPILER_TENSORDATA_H

#include "kiln/Compiler/TensorFile.h"

namespace llvm {
struct fltSemantics;
} // namespace llvm

namespace kiln {
namespace onnx {
class TensorProto;
} // namespace onnx

/// The APFloat semantics of a narrow float kiln dtype (14-17, 20, 21), or
/// null.
const llvm::fltSemantics *narrowFloatSemantics(int kilnDType);

/// Decodes a parsed `tensor` (decodeTensorFields over its fields); on
/// failure returns false and sets `error` (which does not name the tensor;
/// callers add that).
bool decodeTensor(const onnx::TensorProto &tensor, TensorBytes &out,
                  std::string &error);

/// decodeTensor, moving `tensor`'s raw_data into `out` instead of copying
/// it: `tensor` is left without its data.
bool decodeTensorTakingData(onnx::TensorProto &tensor, TensorBytes &out,
                            std::string &error);

} // namespace kiln

#endif // KILN_COMPILER_TENSORDATA_H

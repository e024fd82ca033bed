//===- TensorData.cpp - ONNX tensor data as plain bytes -------------------===//
//
// A parsed TensorProto's fields, viewed in place (protobuf keeps repeated
// numeric fields contiguous), go through the same decoder as a .pb file read
// from the wire (TensorFile.cpp).
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/TensorData.h"

#include "onnx_subset.pb.h"

#include "llvm/ADT/APFloat.h"

using namespace kiln;

const llvm::fltSemantics *kiln::narrowFloatSemantics(int kilnDType) {
  switch (kilnDType) {
  case 14:
    return &llvm::APFloat::Float8E4M3FN();
  case 15:
    return &llvm::APFloat::Float8E4M3FNUZ();
  case 16:
    return &llvm::APFloat::Float8E5M2();
  case 17:
    return &llvm::APFloat::Float8E5M2FNUZ();
  case 20:
    return &llvm::APFloat::Float4E2M1FN();
  case 21:
    return &llvm::APFloat::Float8E8M0FNU();
  default:
    return nullptr;
  }
}

static TensorFields fieldsOf(const onnx::TensorProto &t) {
  TensorFields f;
  f.name = t.name();
  f.dataType = t.data_type();
  f.dims = t.dims().data();
  f.numDims = static_cast<size_t>(t.dims_size());
  f.hasRawData = t.has_raw_data();
  f.rawData = t.raw_data();
  f.external = t.data_location() == onnx::TensorProto::EXTERNAL ||
               t.external_data_size() > 0;
  f.floatData = t.float_data().data();
  f.numFloat = static_cast<size_t>(t.float_data_size());
  f.int32Data = t.int32_data().data();
  f.numInt32 = static_cast<size_t>(t.int32_data_size());
  f.int64Data = t.int64_data().data();
  f.numInt64 = static_cast<size_t>(t.int64_data_size());
  f.doubleData = t.double_data().data();
  f.numDouble = static_cast<size_t>(t.double_data_size());
  f.uint64Data = t.uint64_data().data();
  f.numUint64 = static_cast<size_t>(t.uint64_data_size());
  return f;
}

bool kiln::decodeTensor(const onnx::TensorProto &t, TensorBytes &out,
                        std::string &error) {
  return decodeTensorFields(fieldsOf(t), out, error);
}

bool kiln::decodeTensorTakingData(onnx::TensorProto &t, TensorBytes &out,
                                  std::string &error) {
  TensorFields f = fieldsOf(t);
  if (f.hasRawData)
    f.rawDataToTake = t.mutable_raw_data();
  if (!decodeTensorFields(f, out, error))
    return false;
  if (f.hasRawData)
    t.clear_raw_data();
  return true;
}

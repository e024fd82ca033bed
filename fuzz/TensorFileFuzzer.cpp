//===- TensorFileFuzzer.cpp - kiln-run's file readers under libFuzzer -----===//
//
// Every input goes through the three readers kiln-run trusts with user
// files: the TensorProto wire reader (.pb), the .npy reader, and the
// initializer rewriter of --export-onnx (with one value named like the
// input's first initializer would be, so a match is possible). None may
// read out of bounds, leak, or allocate more than the input can justify.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/TensorFile.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  std::string error;

  kiln::TensorBytes tensor;
  if (kiln::parseTensorFile(bytes, tensor, error)) {
    // Decoded data is exactly the elements the dims promise.
    if (tensor.data.size() != static_cast<size_t>(tensor.numElements) * kiln::onnxElementBytes(tensor.dataType))
      __builtin_trap();
    int dtype = kiln::kilnDTypeOfOnnx(tensor.dataType);
    for (int64_t i = 0; i < tensor.numElements && i < 64; ++i)
      (void)kiln::elementAsDouble(dtype, tensor.data.data(), static_cast<size_t>(i));
  }

  kiln::NpyTensor npy;
  if (kiln::readNpy(bytes, npy, error))
    (void)kiln::npyFile(npy.dtype, npy.shape, npy.data);

  kiln::TensorBytes value;
  value.name = "w";
  value.dataType = 1;
  value.dims = {2};
  value.numElements = 2;
  value.data.assign(8, '\0');
  std::string model;
  (void)kiln::replaceInitializers(bytes, {value}, model, error);
  return 0;
}

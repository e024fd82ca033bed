//===- ConstantContentsTest.cpp - constants compared by their contents ----===//
//
// kiln-cse merges constants by contents: hashConstantContents must agree for
// equal values whatever their storage, and equalConstantContents must tell
// apart values that differ in a single element, also where the hash (which
// reads a sample of a large constant) cannot.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantEvaluator.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

mlir::DenseElementsAttr floats(mlir::MLIRContext &context, llvm::ArrayRef<float> values) {
  auto type = mlir::RankedTensorType::get({static_cast<int64_t>(values.size())}, mlir::Float32Type::get(&context));
  return mlir::DenseElementsAttr::get(type, values);
}

// 1M floats, 4 MiB: far beyond what the hash reads in whole.
std::vector<float> large() {
  std::vector<float> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(i % 977) * 0.5f;
  return v;
}

TEST(ConstantContents, EqualValuesHashEqualWhateverTheStorage) {
  mlir::MLIRContext context;
  std::vector<float> v = large();
  mlir::DenseElementsAttr dense = floats(context, v);
  auto blob = mlir::HeapAsmResourceBlob::allocateAndCopyInferAlign<float>(v);
  auto resource = mlir::DenseResourceElementsAttr::get(dense.getType(), "weights", std::move(blob));
  EXPECT_EQ(kiln::hashConstantContents(dense), kiln::hashConstantContents(resource));
  EXPECT_TRUE(kiln::equalConstantContents(dense, resource));

  // A splat and the same value written out element by element.
  std::vector<float> same(4096, 1.5f);
  mlir::DenseElementsAttr splat =
      mlir::DenseElementsAttr::get(mlir::RankedTensorType::get({4096}, mlir::Float32Type::get(&context)), 1.5f);
  auto blob2 = mlir::HeapAsmResourceBlob::allocateAndCopyInferAlign<float>(same);
  auto written = mlir::DenseResourceElementsAttr::get(splat.getType(), "ones", std::move(blob2));
  EXPECT_EQ(kiln::hashConstantContents(splat), kiln::hashConstantContents(written));
  EXPECT_TRUE(kiln::equalConstantContents(splat, written));
}

TEST(ConstantContents, OneElementApartIsNotEqual) {
  mlir::MLIRContext context;
  std::vector<float> v = large();
  mlir::DenseElementsAttr a = floats(context, v);
  // One element changed, at spread positions: some in the blocks the hash
  // reads, some between them.
  for (size_t at : {size_t(0), size_t(1000), size_t(3000), size_t(70001), v.size() / 2 + 5, v.size() - 1}) {
    std::vector<float> w = v;
    w[at] += 1.0f;
    mlir::DenseElementsAttr b = floats(context, w);
    EXPECT_FALSE(kiln::equalConstantContents(a, b)) << "element " << at;
  }
  // A uniform value and one whose last element differs.
  std::vector<float> ones(4096, 1.0f), almost = ones;
  almost.back() = 2.0f;
  EXPECT_FALSE(kiln::equalConstantContents(floats(context, ones), floats(context, almost)));
  EXPECT_NE(kiln::hashConstantContents(floats(context, ones)), kiln::hashConstantContents(floats(context, almost)));
}

TEST(ConstantContents, SmallValuesHashWhole) {
  mlir::MLIRContext context;
  std::vector<float> v(16384, 0.25f); // 64 KiB: hashed whole
  v[5000] = 3.0f;
  std::vector<float> w(16384, 0.25f);
  w[9000] = 3.0f;
  EXPECT_NE(kiln::hashConstantContents(floats(context, v)), kiln::hashConstantContents(floats(context, w)));
}

} // namespace

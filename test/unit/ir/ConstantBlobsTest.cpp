//===- ConstantBlobsTest.cpp - weight-sized constants the compile frees ---===//
//
// makeConstantAttr keeps small and uniform constants dense and puts the
// rest in blobs; releaseUnusedBlobs frees exactly the blobs that neither the
// IR under its root nor the caller's `keep` set refers to.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantBlobs.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

llvm::ArrayRef<char> bytes(const std::vector<float> &v) {
  return {reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float)};
}

std::vector<float> ramp(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = start + static_cast<float>(i);
  return v;
}

mlir::RankedTensorType vectorOf(mlir::MLIRContext &context, size_t n) {
  return mlir::RankedTensorType::get({static_cast<int64_t>(n)},
                                     mlir::Float32Type::get(&context));
}

/// The bytes behind a constant: a blob's data, or a dense attribute's.
llvm::ArrayRef<char> dataOf(mlir::Attribute attr) {
  if (auto r = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(attr)) {
    mlir::AsmResourceBlob *blob = r.getRawHandle().getBlob();
    return blob ? blob->getData() : llvm::ArrayRef<char>();
  }
  return llvm::cast<mlir::DenseElementsAttr>(attr).getRawData();
}

TEST(ConstantBlobs, SmallAndUniformConstantsStayDense) {
  mlir::MLIRContext context;
  std::vector<float> small = ramp(kiln::kBlobThresholdElements, 1);
  auto a = kiln::makeConstantAttr(vectorOf(context, small.size()), bytes(small));
  ASSERT_TRUE(llvm::isa<mlir::DenseElementsAttr>(a));
  EXPECT_EQ(dataOf(a), bytes(small));

  std::vector<float> same(1 << 16, 2.5f);
  auto u = kiln::makeConstantAttr(vectorOf(context, same.size()), bytes(same));
  auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(u);
  ASSERT_TRUE(dense);
  EXPECT_TRUE(dense.isSplat());
  EXPECT_EQ(dense.getSplatValue<float>(), 2.5f);
}

TEST(ConstantBlobs, LargeConstantsAreBlobsWithTheSameBytes) {
  mlir::MLIRContext context;
  std::vector<float> big = ramp(kiln::kBlobThresholdElements + 1, -3);
  auto a = kiln::makeConstantAttr(vectorOf(context, big.size()), bytes(big));
  ASSERT_TRUE(llvm::isa<mlir::DenseResourceElementsAttr>(a));
  EXPECT_EQ(dataOf(a), bytes(big));
  // The blob is a copy: the caller's buffer may go.
  EXPECT_NE(dataOf(a).data(), bytes(big).data());
}

TEST(ConstantBlobs, ReleaseFreesOnlyBlobsNothingReads) {
  mlir::MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  // A blob made before: the caller's, never freed.
  std::vector<float> callers = ramp(4096, 7);
  auto before =
      kiln::makeConstantAttr(vectorOf(context, callers.size()), bytes(callers));
  llvm::StringSet<> keep = kiln::resourceBlobNames(&context);
  EXPECT_EQ(keep.size(), 1u);

  std::vector<float> used = ramp(2048, 1), dropped = ramp(3000, 2);
  auto usedAttr =
      kiln::makeConstantAttr(vectorOf(context, used.size()), bytes(used));
  auto droppedAttr =
      kiln::makeConstantAttr(vectorOf(context, dropped.size()), bytes(dropped));
  mlir::OpBuilder b(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  kiln::ConstantOp::create(b, b.getUnknownLoc(), usedAttr.getType(),
                           llvm::cast<mlir::ElementsAttr>(usedAttr));

  EXPECT_EQ(kiln::releaseUnusedBlobs(&context, *module, keep),
            dropped.size() * sizeof(float));
  EXPECT_TRUE(dataOf(droppedAttr).empty());
  EXPECT_EQ(dataOf(usedAttr), bytes(used));
  EXPECT_EQ(dataOf(before), bytes(callers));
  // Nothing more to free while the op stays.
  EXPECT_EQ(kiln::releaseUnusedBlobs(&context, *module, keep), 0u);

  // Without a root every blob but the caller's goes.
  EXPECT_EQ(kiln::releaseUnusedBlobs(&context, nullptr, keep),
            used.size() * sizeof(float));
  EXPECT_TRUE(dataOf(usedAttr).empty());
  EXPECT_EQ(dataOf(before), bytes(callers));
}

} // namespace

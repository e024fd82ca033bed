//===- ConstantBlobsTest.cpp - weight-sized constants the compile frees ---===//
//
// makeConstantAttr keeps small and uniform constants dense and puts the
// rest in blobs; releaseUnusedBlobs frees exactly the blobs that neither the
// IR under its root nor the caller's `keep` set refers to.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantBlobs.h"
#include "kiln/IR/ConstantEvaluator.h"
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
  return mlir::RankedTensorType::get({static_cast<int64_t>(n)}, mlir::Float32Type::get(&context));
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

TEST(ConstantBlobs, FilledInPlaceLikeCopied) {
  mlir::MLIRContext context;
  for (size_t n : {size_t(16), size_t(kiln::kBlobThresholdElements) + 5}) {
    std::vector<float> expected = ramp(n, 0.25f);
    auto filled = kiln::makeConstantAttr(vectorOf(context, n), n * sizeof(float), [&](llvm::MutableArrayRef<char> out) {
      ASSERT_EQ(out.size(), n * sizeof(float));
      std::memcpy(out.data(), expected.data(), out.size());
    });
    auto copied = kiln::makeConstantAttr(vectorOf(context, n), bytes(expected));
    EXPECT_EQ(llvm::isa<mlir::DenseResourceElementsAttr>(filled), n > size_t(kiln::kBlobThresholdElements));
    EXPECT_EQ(filled.getTypeID(), copied.getTypeID());
    EXPECT_EQ(dataOf(filled), bytes(expected));
  }
  // Uniform contents written into a blob still give a splat.
  size_t n = 4096;
  auto uniform = kiln::makeConstantAttr(vectorOf(context, n), n * sizeof(float), [&](llvm::MutableArrayRef<char> out) {
    std::vector<float> ones(n, 1.0f);
    std::memcpy(out.data(), ones.data(), out.size());
  });
  auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(uniform);
  ASSERT_TRUE(dense);
  EXPECT_TRUE(dense.isSplat());
}

// kiln-fold-constants' path for weight-sized folds: results computed from
// the operands' bytes (here blobs) into blobs, checked against plain loops.
TEST(ConstantBlobs, LargeFoldsReadAndMakeBlobs) {
  mlir::MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  const int64_t rows = 48, cols = 40; // 1920 elements: above the threshold
  std::vector<float> w(rows * cols), scale(rows);
  for (int64_t i = 0; i < rows * cols; ++i)
    w[i] = 0.5f * static_cast<float>(i % 97) - 3.0f;
  for (int64_t r = 0; r < rows; ++r)
    scale[r] = 1.0f / static_cast<float>(r + 3);
  auto f32 = mlir::Float32Type::get(&context);
  auto wType = mlir::RankedTensorType::get({rows, cols}, f32);
  auto sType = mlir::RankedTensorType::get({rows, 1}, f32);
  auto wAttr =
      mlir::DenseResourceElementsAttr::get(wType, "w", mlir::HeapAsmResourceBlob::allocateAndCopyInferAlign<float>(w));
  mlir::Attribute sAttr = mlir::DenseElementsAttr::get(sType, llvm::ArrayRef(scale));
  mlir::OpBuilder b(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  mlir::Location loc = b.getUnknownLoc();
  auto wOp = kiln::ConstantOp::create(b, loc, wType, llvm::cast<mlir::ElementsAttr>(wAttr));
  auto sOp = kiln::ConstantOp::create(b, loc, sType, llvm::cast<mlir::ElementsAttr>(sAttr));

  // The scale broadcast over each row: w[r][c] * scale[r].
  auto mul = kiln::MulOp::create(b, loc, sOp, wOp);
  mlir::TypedAttr scaled = kiln::evaluateLargeConstantOp(mul, {sAttr, mlir::Attribute(wAttr)});
  ASSERT_TRUE(llvm::isa_and_nonnull<mlir::DenseResourceElementsAttr>(scaled));
  llvm::ArrayRef<char> got = dataOf(scaled);
  ASSERT_EQ(got.size(), w.size() * sizeof(float));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v;
      std::memcpy(&v, got.data() + (r * cols + c) * sizeof(float), 4);
      ASSERT_EQ(v, scale[r] * w[r * cols + c]) << r << ", " << c;
    }

  // The transpose: t[c][r] = w[r][c].
  auto transpose = kiln::TransposeOp::create(b, loc, wOp, llvm::ArrayRef<int64_t>{1, 0});
  mlir::TypedAttr t = kiln::evaluateLargeConstantOp(transpose, {mlir::Attribute(wAttr)});
  ASSERT_TRUE(llvm::isa_and_nonnull<mlir::DenseResourceElementsAttr>(t));
  got = dataOf(t);
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) {
      float v;
      std::memcpy(&v, got.data() + (c * rows + r) * sizeof(float), 4);
      ASSERT_EQ(v, w[r * cols + c]) << c << ", " << r;
    }

  // A reshape of a blob is the same blob.
  auto flatType = mlir::RankedTensorType::get({rows * cols}, f32);
  auto reshape = kiln::ReshapeOp::create(b, loc, flatType, wOp);
  mlir::TypedAttr flat = kiln::evaluateLargeConstantOp(reshape, {mlir::Attribute(wAttr)});
  auto flatBlob = llvm::dyn_cast_or_null<mlir::DenseResourceElementsAttr>(flat);
  ASSERT_TRUE(flatBlob);
  EXPECT_EQ(flatBlob.getType(), flatType);
  EXPECT_EQ(dataOf(flat).data(), dataOf(wAttr).data());

  // A strided window (a filter's tap, kiln-canonicalize's tap split):
  // s[i][j] = w[3 + 2i][cols - 1 - j], 22 x 40 elements (dense or a blob,
  // by the size threshold).
  const int64_t sliceRows = 22;
  auto sliceType = mlir::RankedTensorType::get({sliceRows, cols}, f32);
  auto slice = kiln::SliceOp::create(b, loc, sliceType, wOp, llvm::ArrayRef<int64_t>{3, cols - 1},
                                     llvm::ArrayRef<int64_t>{2, -1});
  mlir::TypedAttr window = kiln::evaluateLargeConstantOp(slice, {mlir::Attribute(wAttr)});
  ASSERT_TRUE(window);
  got = dataOf(window);
  ASSERT_EQ(got.size(), static_cast<size_t>(sliceRows * cols) * sizeof(float));
  for (int64_t i = 0; i < sliceRows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float v;
      std::memcpy(&v, got.data() + (i * cols + j) * sizeof(float), 4);
      ASSERT_EQ(v, w[(3 + 2 * i) * cols + (cols - 1 - j)]) << i << ", " << j;
    }

  // Ops it does not model are left to the usual path.
  auto max = kiln::MaxOp::create(b, loc, sOp, wOp);
  EXPECT_FALSE(kiln::evaluateLargeConstantOp(max, {sAttr, mlir::Attribute(wAttr)}));
}

TEST(ConstantBlobs, ReleaseFreesOnlyBlobsNothingReads) {
  mlir::MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  // A blob made before: the caller's, never freed.
  std::vector<float> callers = ramp(4096, 7);
  auto before = kiln::makeConstantAttr(vectorOf(context, callers.size()), bytes(callers));
  llvm::StringSet<> keep = kiln::resourceBlobNames(&context);
  EXPECT_EQ(keep.size(), 1u);

  std::vector<float> used = ramp(2048, 1), dropped = ramp(3000, 2);
  auto usedAttr = kiln::makeConstantAttr(vectorOf(context, used.size()), bytes(used));
  auto droppedAttr = kiln::makeConstantAttr(vectorOf(context, dropped.size()), bytes(dropped));
  mlir::OpBuilder b(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  kiln::ConstantOp::create(b, b.getUnknownLoc(), usedAttr.getType(), llvm::cast<mlir::ElementsAttr>(usedAttr));

  EXPECT_EQ(kiln::releaseUnusedBlobs(&context, *module, keep), dropped.size() * sizeof(float));
  EXPECT_TRUE(dataOf(droppedAttr).empty());
  EXPECT_EQ(dataOf(usedAttr), bytes(used));
  EXPECT_EQ(dataOf(before), bytes(callers));
  // Nothing more to free while the op stays.
  EXPECT_EQ(kiln::releaseUnusedBlobs(&context, *module, keep), 0u);

  // Without a root every blob but the caller's goes.
  EXPECT_EQ(kiln::releaseUnusedBlobs(&context, nullptr, keep), used.size() * sizeof(float));
  EXPECT_TRUE(dataOf(usedAttr).empty());
  EXPECT_EQ(dataOf(before), bytes(callers));
}

} // namespace

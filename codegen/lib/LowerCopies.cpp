//===- LowerCopies.cpp - kiln-lower-copies --------------------------------===//
//
// Rewrites memref.copy as linalg.copy so no copy ever reaches the MLIR
// runtime's memrefCopy; linalg.copy then lowers to loops with the rest.
// Also rewrites the expansions into several dynamic sizes per group that
// expand-strided-metadata cannot lower (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERCOPIES
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Whether `type` is laid out densely, row-major, at offset 0: an identity
/// layout, or a 1-D view of unit stride at offset 0 (a leading slice).
bool isDenseAtZero(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.getRank() == 1 &&
         succeeded(type.getStridesAndOffset(strides, offset)) && offset == 0 &&
         strides[0] == 1;
}

/// An expand_shape of a dense buffer at offset 0 into several dynamic sizes
/// in one group, as a reinterpret_cast with row-major strides.
void expandAsReinterpretCast(memref::ExpandShapeOp expand) {
  auto resultTy = expand.getResultType();
  if (!isDenseAtZero(expand.getSrcType()) || !resultTy.getLayout().isIdentity())
    return;
  bool severalDynamic = false;
  for (const ReassociationIndices &group : expand.getReassociationIndices())
    severalDynamic |= llvm::count_if(group, [&](int64_t d) {
                        return resultTy.isDynamicDim(d);
                      }) > 1;
  if (!severalDynamic)
    return;
  OpBuilder b(expand);
  Location loc = expand.getLoc();
  SmallVector<OpFoldResult> sizes = expand.getMixedOutputShape();
  SmallVector<OpFoldResult> strides(sizes.size());
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t i = resultTy.getRank() - 1; i >= 0; --i) {
    strides[i] = stride;
    std::optional<int64_t> s = getConstantIntValue(stride);
    std::optional<int64_t> n = getConstantIntValue(sizes[i]);
    if (s && n)
      stride = b.getIndexAttr(*s * *n);
    else {
      Value lhs = getValueOrCreateConstantIndexOp(b, loc, stride);
      Value rhs = getValueOrCreateConstantIndexOp(b, loc, sizes[i]);
      stride = arith::MulIOp::create(b, loc, lhs, rhs).getResult();
    }
  }
  Value cast = memref::ReinterpretCastOp::create(
      b, loc, resultTy, expand.getSrc(), b.getIndexAttr(0), sizes, strides);
  expand.replaceAllUsesWith(cast);
  expand.erase();
}

struct LowerCopies : kiln::impl::LowerCopiesBase<LowerCopies> {
  void runOnOperation() override {
    getOperation().walk([](memref::CopyOp copy) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    });
    getOperation().walk(
        [](memref::ExpandShapeOp expand) { expandAsReinterpretCast(expand); });
  }
};
} // namespace

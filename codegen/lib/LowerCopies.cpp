//===- LowerCopies.cpp - kiln-lower-copies --------------------------------===//
//
// Rewrites memref.copy as linalg.copy so no copy ever reaches the MLIR
// runtime's memrefCopy; linalg.copy then lowers to loops with the rest.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERCOPIES
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct LowerCopies : kiln::impl::LowerCopiesBase<LowerCopies> {
  void runOnOperation() override {
    getOperation().walk([](memref::CopyOp copy) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    });
  }
};
} // namespace

//===- LowerPrecision.cpp - matmuls and convolutions in f16 or bf16 -------===//
//
// kiln-lower-precision: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERPRECISION
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// `t` with element type `element`.
RankedTensorType withElement(Type t, Type element) {
  auto ranked = cast<RankedTensorType>(t);
  return RankedTensorType::get(ranked.getShape(), element,
                               ranked.getEncoding());
}

bool isF32Tensor(Type t) {
  auto ranked = dyn_cast<RankedTensorType>(t);
  return ranked && ranked.getElementType().isF32();
}

struct LowerPrecision : kiln::impl::LowerPrecisionBase<LowerPrecision> {
  using LowerPrecisionBase::LowerPrecisionBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    Type narrow = type == "f16"    ? Type(Float16Type::get(ctx))
                  : type == "bf16" ? Type(BFloat16Type::get(ctx))
                                   : Type();
    if (!narrow) {
      func.emitError("kiln-lower-precision: expected type f16 or bf16, found '")
          << type << "'";
      return signalPassFailure();
    }
    SmallVector<Operation *> products;
    func.walk([&](Operation *op) {
      if (isa<kiln::MatMulOp, kiln::ConvOp>(op) && op->getNumResults() == 1 &&
          isF32Tensor(op->getResult(0).getType()) &&
          llvm::all_of(op->getOperandTypes(), isF32Tensor))
        products.push_back(op);
    });
    for (Operation *op : products) {
      OpBuilder b(op);
      for (OpOperand &operand : op->getOpOperands())
        operand.set(kiln::CastOp::create(
            b, op->getLoc(), withElement(operand.get().getType(), narrow),
            operand.get()));
      Value result = op->getResult(0);
      Type wide = result.getType();
      result.setType(withElement(wide, narrow));
      b.setInsertionPointAfter(op);
      auto back = kiln::CastOp::create(b, op->getLoc(), wide, result);
      result.replaceAllUsesExcept(back, back);
      ++numLowered;
    }
  }
};

} // namespace

//===- KilnFusion.cpp - fusion classes of the core ops --------------------===//
//
// Each core op's answer to FusionOpInterface, attached as an external model
// so that KilnOps.td stays free of fusion policy. The lists below say which
// loop-nest shape an op lowers to (its class); whether an op is cheap enough
// to compute again in every consumer is the cost model's answer
// (KilnCost.cpp, isCheapToRecompute). Ops left out (constants, scatter,
// top-k, pooling, argmax/argmin, kiln.fused itself) have no model and count
// as opaque.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnFusionInterface.h"

using namespace mlir;
using namespace kiln;

#include "kiln/IR/KilnFusionInterface.cpp.inc"

namespace {

template <typename OpT, FusionClass Class>
struct FusionModel
    : FusionOpInterface::ExternalModel<FusionModel<OpT, Class>, OpT> {
  FusionClass getFusionClass(Operation *) const { return Class; }
};

template <FusionClass Class, typename... OpTs> void attach(MLIRContext &ctx) {
  (OpTs::template attachInterface<FusionModel<OpTs, Class>>(ctx), ...);
}

} // namespace

void kiln::attachFusionModels(MLIRContext &ctx) {
  attach<FusionClass::elementwise, AddOp, SubOp, MulOp, MaxOp, MinOp, AndOp,
         OrOp, XorOp, NotOp, CmpOp, SelectOp, NegOp, ReluOp, AbsOp, SignOp,
         FloorOp, CeilOp, RoundOp, CastOp, BroadcastOp, DivOp, ReciprocalOp,
         SqrtOp, PowOp, RemOp, ExpOp, LogOp, TanhOp, SigmoidOp, ErfOp, SinOp,
         CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp,
         AtanhOp>(ctx);
  attach<FusionClass::reduction, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
         ReduceMinOp, ReduceProdOp>(ctx);
  attach<FusionClass::contraction, MatMulOp, ConvOp>(ctx);
  attach<FusionClass::movement, ReshapeOp, TransposeOp, ConcatOp, SliceOp,
         GatherOp>(ctx);
}

FusionClass kiln::getFusionClass(Operation *op) {
  if (auto fusion = dyn_cast<FusionOpInterface>(op))
    return fusion.getFusionClass();
  return FusionClass::opaque;
}

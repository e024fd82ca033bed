//===- KilnFusion.cpp - fusion classes of the core ops --------------------===//
//
// Each core op's answer to FusionOpInterface, attached as an external model
// so that KilnOps.td stays free of fusion policy. The lists below are the
// whole policy: which loop-nest shape an op lowers to (its class) and
// whether it is a few instructions per element (cheap to recompute in every
// consumer) or not. Ops left out (constants, scatter, top-k, pooling,
// argmax/argmin, kiln.fused itself) have no model and count as opaque.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnFusionInterface.h"

using namespace mlir;
using namespace kiln;

#include "kiln/IR/KilnFusionInterface.cpp.inc"

namespace {

template <typename OpT, FusionClass Class, bool Cheap>
struct FusionModel
    : FusionOpInterface::ExternalModel<FusionModel<OpT, Class, Cheap>, OpT> {
  FusionClass getFusionClass(Operation *) const { return Class; }
  bool isCheapToRecompute(Operation *) const { return Cheap; }
};

template <FusionClass Class, bool Cheap, typename... OpTs>
void attach(MLIRContext &ctx) {
  (OpTs::template attachInterface<FusionModel<OpTs, Class, Cheap>>(ctx), ...);
}

} // namespace

void kiln::attachFusionModels(MLIRContext &ctx) {
  // A few ALU instructions per element: recomputing beats a round trip
  // through memory.
  attach<FusionClass::elementwise, /*Cheap=*/true, AddOp, SubOp, MulOp, MaxOp,
         MinOp, AndOp, OrOp, XorOp, NotOp, CmpOp, SelectOp, NegOp, ReluOp,
         AbsOp, SignOp, FloorOp, CeilOp, RoundOp, CastOp, BroadcastOp>(ctx);
  // Divider-bound or a polynomial/libm call per element.
  attach<FusionClass::elementwise, /*Cheap=*/false, DivOp, ReciprocalOp, SqrtOp,
         PowOp, RemOp, ExpOp, LogOp, TanhOp, SigmoidOp, ErfOp, SinOp, CosOp,
         TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp,
         AtanhOp>(ctx);
  attach<FusionClass::reduction, false, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
         ReduceMinOp, ReduceProdOp>(ctx);
  attach<FusionClass::contraction, false, MatMulOp, ConvOp>(ctx);
  attach<FusionClass::movement, false, ReshapeOp, TransposeOp, ConcatOp,
         SliceOp, GatherOp>(ctx);
}

FusionClass kiln::getFusionClass(Operation *op) {
  if (auto fusion = dyn_cast<FusionOpInterface>(op))
    return fusion.getFusionClass();
  return FusionClass::opaque;
}

//===- KilnRecompute.cpp - which core ops are cheap to compute again ------===//
//
// The RecomputeOpInterface models of the core ops, attached as external
// models when the dialect loads. The list is the policy of kiln-rematerialize:
// an op is here only if computing it again reads each operand element a
// bounded number of times and costs a few operations per result element, so
// recomputing it can never cost more than the op that consumes it. Matmul,
// conv, pool and the reductions are left out (their work grows with a
// contracted or reduced dimension, and recomputing them would need their
// larger inputs kept live); so are gather, scatter, topk and the argmax/min
// family (data-dependent access, several results), and constants (which take
// no arena memory to begin with).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnRecomputeInterface.h"

#include "kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

#include "kiln/IR/KilnRecomputeInterface.cpp.inc"

namespace {

/// Cost = result elements x `Weight` (ops with one static result).
template <typename OpT, uint64_t Weight>
struct RecomputeModel
    : RecomputeOpInterface::ExternalModel<RecomputeModel<OpT, Weight>, OpT> {
  uint64_t getRecomputeCost(Operation *op) const {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return 0;
    return Weight * static_cast<uint64_t>(type.getNumElements());
  }
};

template <uint64_t Weight, typename... OpTs> void attach(MLIRContext &ctx) {
  (OpTs::template attachInterface<RecomputeModel<OpTs, Weight>>(ctx), ...);
}

} // namespace

void kiln::attachRecomputeModels(MLIRContext &ctx) {
  // A view: bufferizes to an alias of its operand, no work at all.
  attach<0, ReshapeOp>(ctx);
  // One operation or one copy per element.
  attach<1, AddOp, SubOp, MulOp, MaxOp, MinOp, AndOp, OrOp, XorOp, NotOp, CmpOp,
         SelectOp, NegOp, ReluOp, AbsOp, SignOp, FloorOp, CeilOp, RoundOp,
         CastOp, BroadcastOp, TransposeOp, SliceOp, ConcatOp>(ctx);
  // Division-like: several times an addition on every target.
  attach<2, DivOp, RemOp, ReciprocalOp, SqrtOp>(ctx);
  // Transcendental functions: a polynomial or a libm call per element.
  attach<4, ExpOp, LogOp, TanhOp, SigmoidOp, ErfOp, PowOp, SinOp, CosOp, TanOp,
         AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp>(
      ctx);
}

//===- KilnCost.cpp - the core ops' work per element ----------------------===//
//
// The CostOpInterface models of the core ops, attached as external models
// when the dialect loads. The list is the whole cost policy of the graph
// passes: an op is here only if it reads each operand element a bounded
// number of times and costs a few operations per result element, so
// recomputing it can never cost more than the op that consumes it. Matmul,
// conv, pool and the reductions are left out (their work grows with a
// contracted or reduced dimension, and recomputing them would need their
// larger inputs kept live); so are gather, scatter, topk and the argmax/min
// family (data-dependent access, several results), and constants (which
// take no arena memory to begin with).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnCostInterface.h"

#include "kiln/IR/KilnFusionInterface.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kiln;

#include "kiln/IR/KilnCostInterface.cpp.inc"

namespace {

template <typename OpT, uint64_t Work>
struct CostModel : CostOpInterface::ExternalModel<CostModel<OpT, Work>, OpT> {
  uint64_t getWorkPerElement(Operation *) const { return Work; }
};

template <uint64_t Work, typename... OpTs> void attach(MLIRContext &ctx) {
  (OpTs::template attachInterface<CostModel<OpTs, Work>>(ctx), ...);
}

} // namespace

void kiln::attachCostModels(MLIRContext &ctx) {
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

bool kiln::isCheapToRecompute(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost && getFusionClass(op) == FusionClass::elementwise &&
         cost.getWorkPerElement() <= 1;
}

std::optional<uint64_t> kiln::recomputeCost(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || !isMemoryEffectFree(op) || op->getNumRegions() != 0 ||
      op->getNumResults() != 1)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return cost.getWorkPerElement() *
         static_cast<uint64_t>(type.getNumElements());
}

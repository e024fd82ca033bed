//===- Rematerialize.cpp - kiln-rematerialize -----------------------------===//
//
// Recomputes cheap values before their late readers so that the scheduled
// function's peak of live bytes fits a budget. The work is gather -> plan ->
// apply: the entry block's ops in their current order become the nodes of
// the scheduler's graph (values sized like kiln-schedule sizes them), the
// IR-free rematerializer (Rematerializer.h) picks the copies, and the ops
// chosen are cloned, the late readers pointed at the clones and every op put
// in the new order. The pass is a thin wrapper over rematerializeFunction,
// which the compiler driver also calls on its own (Rematerialize.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Rematerialize.h"

#include "kiln/IR/KilnCostInterface.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_REMATERIALIZE
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

kiln::RematerializeReport
kiln::rematerializeFunction(func::FuncOp func, const RematOptions &options,
                            bool remarks) {
  RematerializeReport report;
  if (func.isExternal())
    return report;
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  if (!terminator)
    return report;

  // Gather: nodes in the current order. A node's operands are the op's own
  // operands, slot by slot (so that a copy can take them over), then the
  // values of this block read inside its regions.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::MapVector<Value, unsigned> valueIds;
  ScheduleGraph graph;
  auto idOf = [&](Value v) {
    auto [it, inserted] = valueIds.insert({v, valueIds.size()});
    if (inserted) {
      // Arguments, constants and values handed to the caller take no
      // planned memory.
      bool free = isa<BlockArgument>(v) || matchPattern(v, m_Constant()) ||
                  llvm::is_contained(terminator->getOperands(), v);
      graph.valueBytes.push_back(free ? 0 : kiln::tensorBytes(v.getType()));
      graph.viewOf.push_back(-1);
    }
    return it->second;
  };
  std::vector<uint64_t> cost;
  std::optional<unsigned> lastEffect;
  for (auto [i, op] : llvm::enumerate(ops)) {
    ScheduleNode node;
    for (Value v : op->getOperands())
      node.operands.push_back(idOf(v));
    for (Region &region : op->getRegions())
      region.walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (v.getParentBlock() == &body)
            node.operands.push_back(idOf(v));
      });
    for (Value r : op->getResults())
      node.results.push_back(idOf(r));
    // A reshape bufferizes to a view of its input: an alias.
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      graph.viewOf[idOf(reshape->getResult(0))] =
          static_cast<int>(idOf(reshape->getOperand(0)));
    cost.push_back(recomputeCost(op).value_or(kNotRecomputable));
    if (!isMemoryEffectFree(op)) {
      if (lastEffect)
        node.after.push_back(*lastEffect);
      lastEffect = i;
    }
    graph.nodes.push_back(std::move(node));
  }

  // Plan.
  RematResult plan = rematerialize(graph, cost, options);
  report.peakBefore = plan.peakBefore;
  report.peakAfter = plan.peakAfter;
  report.numRecomputed = plan.recomputed.size();
  report.numCopies = plan.graph.nodes.size() - ops.size();
  report.fits = plan.fits;
  if (plan.recomputed.empty())
    return report;

  // Apply: every op, original or copy, is put before the terminator in the
  // new order; readers are pointed at the copies as the plan says.
  std::vector<Value> valueOf(plan.graph.valueBytes.size());
  for (auto [value, id] : valueIds)
    valueOf[id] = value;
  OpBuilder builder(terminator);
  for (unsigned node : plan.order) {
    const ScheduleNode &planned = plan.graph.nodes[node];
    if (node < ops.size()) {
      Operation *op = ops[node];
      for (auto [was, now] :
           llvm::zip(graph.nodes[node].operands, planned.operands)) {
        if (was == now)
          continue;
        // The plan redirects one value in every slot of this op, nested
        // uses included.
        valueOf[was].replaceUsesWithIf(valueOf[now], [&](OpOperand &use) {
          return op->isAncestor(use.getOwner());
        });
      }
      op->moveBefore(terminator);
      continue;
    }
    Operation *copy = builder.clone(*ops[plan.origin[node]]);
    for (auto [slot, id] : llvm::enumerate(planned.operands))
      copy->setOperand(slot, valueOf[id]);
    valueOf[planned.results.front()] = copy->getResult(0);
    if (remarks)
      copy->emitRemark() << "recomputed here instead of kept live";
  }
  return report;
}

namespace {

struct Rematerialize : kiln::impl::RematerializeBase<Rematerialize> {
  using RematerializeBase::RematerializeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    kiln::RematOptions options;
    options.budget = budget;
    options.maxDepth = maxDepth;
    kiln::RematerializeReport report =
        kiln::rematerializeFunction(func, options, remarks);
    peakBytesBefore = report.peakBefore;
    peakBytesAfter = report.peakAfter;
    numRecomputed = report.numRecomputed;
    numCopies = report.numCopies;
    if (budget != 0 && !report.fits)
      func.emitWarning() << "cannot bring the estimated peak of "
                         << report.peakBefore
                         << " live bytes under the budget of " << options.budget
                         << " bytes by recomputation; reached "
                         << report.peakAfter << " bytes";
    if (remarks)
      func.emitRemark() << "values recomputed: " << report.numRecomputed
                        << ", ops added: " << report.numCopies
                        << "; estimated peak " << report.peakBefore << " -> "
                        << report.peakAfter << " bytes";
  }
};

} // namespace

//===- Schedule.cpp - kiln-schedule ---------------------------------------===//
//
// Reorders the ops of the function's entry block into the topological order
// the IR-free scheduler (Scheduler.h) picks to lower peak live memory. The
// pass is gather -> schedule -> apply: every top-level op but the terminator
// is a node, its operands (including those read inside its regions) are the
// edges, ops with side effects keep their relative order, an op whose type
// or sizes name a size computed from data (decision 0031) comes after the
// op that computes it, and the ops are then moved, as whole ops with their
// regions, before the terminator.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"
#include "kiln/Passes/Passes.h"
#include "kiln/Passes/Scheduler.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

#include <map>
#include <set>

namespace kiln {
#define GEN_PASS_DEF_SCHEDULE
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The symbols `op` reads without an operand that carries them: those in
/// its results' types (a ConstantOfShape of a computed size) and in a
/// kiln.sizes op's expressions (a Shape of one). Such an op has no edge to
/// the op that computes the size, so the schedule needs one.
std::set<std::string> symbolsNamed(Operation *op) {
  std::set<std::string> names;
  auto add = [&](const kiln::DimExpr &e) {
    for (const std::string &s : e.symbols())
      names.insert(s);
  };
  op->walk([&](Operation *inner) {
    for (Type t : inner->getResultTypes())
      if (kiln::hasSymbolicDims(t))
        for (const kiln::DimExpr &e : kiln::dimExprs(t))
          add(e);
    if (auto sizes = dyn_cast<kiln::SizesOp>(inner))
      for (Attribute a : sizes.getSizes())
        if (std::optional<kiln::DimExpr> e =
                kiln::DimExpr::parse(cast<StringAttr>(a).getValue().str()))
          add(*e);
  });
  return names;
}

struct Schedule : kiln::impl::ScheduleBase<Schedule> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    Operation *terminator = body.getTerminator();
    if (!terminator)
      return;

    // Gather: nodes in the current order, values numbered as they appear.
    SmallVector<Operation *> ops;
    DenseMap<Operation *, unsigned> nodeOf;
    for (Operation &op : body.without_terminator()) {
      nodeOf[&op] = ops.size();
      ops.push_back(&op);
    }
    if (ops.size() < 2)
      return;
    llvm::MapVector<Value, unsigned> valueIds;
    kiln::ScheduleGraph graph;
    auto idOf = [&](Value v) {
      auto [it, inserted] = valueIds.insert({v, valueIds.size()});
      if (inserted) {
        // Constants and values handed to the caller take no planned memory.
        bool free = matchPattern(v, m_Constant()) ||
                    llvm::is_contained(terminator->getOperands(), v);
        graph.valueBytes.push_back(free ? 0 : kiln::tensorBytes(v.getType()));
      }
      return it->second;
    };
    std::optional<unsigned> lastEffect;
    // Which node computes each size computed from data.
    std::map<std::string, unsigned> definer;
    if (func->hasAttr(kiln::kComputedSymbolsAttr))
      for (auto [i, op] : llvm::enumerate(ops))
        for (StringRef name : kiln::computedSizesOf(op))
          definer.emplace(name.str(), i);
    for (auto [i, op] : llvm::enumerate(ops)) {
      kiln::ScheduleNode node;
      if (!definer.empty())
        for (const std::string &name : symbolsNamed(op)) {
          auto it = definer.find(name);
          if (it != definer.end() && it->second != i)
            node.after.push_back(it->second);
        }
      for (Value r : op->getResults())
        node.results.push_back(idOf(r));
      // A reshape bufferizes to a view of its input (collapse/expand
      // shape), not a new buffer: model it as an alias.
      if (auto reshape = dyn_cast<kiln::ReshapeOp>(op)) {
        unsigned result = idOf(reshape->getResult(0));
        unsigned source = idOf(reshape->getOperand(0));
        graph.viewOf.resize(graph.valueBytes.size(), -1);
        graph.viewOf[result] = static_cast<int>(source);
      }
      // Operands of the op and of anything nested in it that come from
      // this block; values defined inside the op's regions stay with it.
      // (A plain pointer: C++17 lambdas cannot capture structured bindings.)
      Operation *self = op;
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def && def->getBlock() == &body && def != self)
            node.operands.push_back(idOf(v));
        }
      });
      if (!isMemoryEffectFree(op)) {
        if (lastEffect)
          node.after.push_back(*lastEffect);
        lastEffect = i;
      }
      graph.nodes.push_back(std::move(node));
    }

    // Schedule, then apply by moving each op before the terminator.
    kiln::ScheduleResult result = kiln::scheduleForMemory(graph);
    peakBytesBefore = result.originalPeakBytes;
    peakBytesAfter = result.peakBytes;
    for (auto [position, node] : llvm::enumerate(result.order)) {
      if (node != position)
        ++numMoved;
      ops[node]->moveBefore(terminator);
    }
  }
};

} // namespace

//===- Differentiate.cpp - reverse-mode gradients of kiln ops -------------===//
//
// Marks the values on a path between the xs and y (active), then walks the
// ops backwards, asking each active op for its vector-Jacobian product
// through GradientOpInterface and summing the contributions that reach a
// value from several users. The rules themselves live on the ops
// (ir/lib/KilnGradients.cpp); this file only orders and accumulates them.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Differentiate.h"

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnGradientInterface.h"
#include "kiln/IR/KilnOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

bool kiln::isDifferentiable(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType()) &&
         !isNarrowType(type.getElementType());
}

LogicalResult kiln::buildGradients(OpBuilder &builder,
                                   llvm::iterator_range<Block::iterator> ops,
                                   Value y, Value seed, ArrayRef<Value> xs,
                                   StringRef yName,
                                   SmallVectorImpl<Value> &gradients,
                                   uint64_t *numGradientOps) {
  // Active values: float values that depend on an x (forward) and that y
  // depends on (backward). Only active ops get a rule applied.
  // The forward ops, taken before any gradient op is inserted, so the walk
  // below never visits what it builds.
  SmallVector<Operation *> forward;
  for (Operation &op : ops)
    forward.push_back(&op);
  llvm::DenseSet<Value> varied(xs.begin(), xs.end());
  for (Operation &op : llvm::make_pointee_range(forward)) {
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value r : op.getResults())
        if (isDifferentiable(r))
          varied.insert(r);
  }
  llvm::DenseSet<Value> useful{y};
  for (Operation &op : llvm::reverse(llvm::make_pointee_range(forward)))
    if (llvm::any_of(op.getResults(),
                     [&](Value r) { return useful.contains(r); }))
      for (Value v : op.getOperands())
        useful.insert(v);
  auto active = [&](Value v) {
    return varied.contains(v) && useful.contains(v);
  };

  // Gradients by value, in the order they were first reached.
  llvm::MapVector<Value, Value> grads;
  auto accumulate = [&](Value v, Value g, Location loc) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(builder, loc, it->second, g);
  };
  grads[y] = seed;

  for (Operation &op : llvm::reverse(llvm::make_pointee_range(forward))) {
    // Ops reached by a gradient and depending on an x need a rule.
    if (llvm::none_of(op.getResults(),
                      [&](Value r) { return active(r) && grads.count(r); }))
      continue;
    if (llvm::none_of(op.getOperands(), [&](Value v) { return active(v); }))
      continue;
    // An op with several results (kiln.topk: values and their indices)
    // takes its gradient through the first; the others must be inactive.
    auto rule = dyn_cast<GradientOpInterface>(&op);
    bool onlyFirst =
        llvm::none_of(llvm::drop_begin(op.getResults()),
                      [&](Value r) { return grads.count(r) != 0; });
    if (!rule || !onlyFirst || !grads.count(op.getResult(0)))
      return op.emitOpError("has no gradient rule, but lies between ")
             << yName << " and the parameters";
    auto found = grads.find(op.getResult(0));
    SmallVector<Value> operandGrads;
    if (numGradientOps)
      ++*numGradientOps;
    if (failed(
            rule.buildOperandGradients(builder, found->second, operandGrads)))
      return failure();
    if (operandGrads.size() != op.getNumOperands())
      return op.emitOpError("gradient rule returned ")
             << operandGrads.size() << " gradients for " << op.getNumOperands()
             << " operands";
    for (auto [index, operand] : llvm::enumerate(op.getOperands())) {
      Value g = operandGrads[index];
      if (!g || !active(operand) || !rule.isDifferentiableOperand(index))
        continue;
      if (g.getType() != operand.getType())
        return op.emitOpError("gradient rule built a ")
               << g.getType() << " for operand #" << index << " of type "
               << operand.getType();
      accumulate(operand, g, op.getLoc());
    }
  }

  gradients.clear();
  for (Value x : xs)
    gradients.push_back(grads.lookup(x));
  return success();
}

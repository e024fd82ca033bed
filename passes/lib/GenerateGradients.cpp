//===- GenerateGradients.cpp - kiln-generate-gradients --------------------===//
//
// Reverse-mode differentiation of one function: find the loss result and the
// arguments to differentiate with respect to, mark the values on a path
// between them (active), then walk the ops backwards, asking each active op
// for its vector-Jacobian product through GradientOpInterface and summing the
// contributions that reach a value from several users. The gradients of the
// arguments become extra results. The rules themselves live on the ops
// (ir/lib/KilnGradients.cpp); this file only orders and accumulates them.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnGradientInterface.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/Differentiate.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_GENERATEGRADIENTS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

std::string quotedList(ArrayRef<std::string> names) {
  if (names.empty())
    return "none";
  std::string s;
  for (auto [i, n] : llvm::enumerate(names))
    s += (i ? ", '" : "'") + n + "'";
  return s;
}

struct GenerateGradients
    : kiln::impl::GenerateGradientsBase<GenerateGradients> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(func::FuncOp func);
};

LogicalResult GenerateGradients::run(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("expects a body of one block to differentiate");
  Block &body = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return func.emitError("expects the body to end in func.return");

  // The loss: a result by name, or the only result.
  SmallVector<std::string> resultNames;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
    resultNames.push_back(name ? name.str() : "");
  }
  std::optional<unsigned> lossIndex;
  if (loss.empty()) {
    if (func.getNumResults() != 1)
      return func.emitError("expects the name of the loss (option 'loss', "
                            "kilnc --loss) for a function with ")
             << func.getNumResults() << " results";
    lossIndex = 0;
  } else {
    for (auto [i, name] : llvm::enumerate(resultNames))
      if (name == loss) {
        lossIndex = i;
        break;
      }
    if (!lossIndex)
      return func.emitError("expects a result named '")
             << loss << "' to differentiate, found results "
             << quotedList(resultNames);
  }
  Value lossValue = ret.getOperand(*lossIndex);
  auto lossTy = dyn_cast<RankedTensorType>(lossValue.getType());
  if (!lossTy || !isDifferentiable(lossValue) || lossTy.getNumElements() != 1)
    return func.emitError("expects the loss '")
           << resultNames[*lossIndex]
           << "' to be one float element (a scalar loss), found "
           << lossValue.getType();

  // The arguments to differentiate, in `wrt` order.
  SmallVector<std::string> argNames;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
    argNames.push_back(name ? name.str() : "input" + std::to_string(i));
  }
  SmallVector<unsigned> targets;
  if (wrt.empty()) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (func.getArgAttr(i, kParameterAttr))
        targets.push_back(i);
    if (targets.empty())
      return func.emitError("expects arguments to differentiate with respect "
                            "to (option 'wrt', or arguments marked ")
             << kParameterAttr << "), found none among "
             << quotedList(argNames);
  } else {
    for (const std::string &name : wrt) {
      auto *it = llvm::find(argNames, name);
      if (it == argNames.end())
        return func.emitError("expects an argument named '")
               << name << "' to differentiate with respect to, found "
               << quotedList(argNames);
      unsigned index = it - argNames.begin();
      if (llvm::is_contained(targets, index))
        return func.emitError("expects each name once in 'wrt', found '")
               << name << "' twice";
      targets.push_back(index);
    }
  }
  for (unsigned i : targets)
    if (!isDifferentiable(func.getArgument(i)))
      return func.emitError("expects argument '")
             << argNames[i] << "' to hold floats to differentiate it, found "
             << func.getArgument(i).getType();

  // The rules, applied backwards from a seed of one.
  OpBuilder builder(ret);
  Value seed;
  {
    Attribute one = builder.getFloatAttr(lossTy.getElementType(), 1.0);
    seed = ConstantOp::create(builder, ret.getLoc(), lossTy,
                              DenseElementsAttr::get(lossTy, one));
  }
  SmallVector<Value> xs;
  for (unsigned i : targets)
    xs.push_back(func.getArgument(i));
  SmallVector<Value> gradients;
  uint64_t applied = 0;
  if (failed(buildGradients(builder, body.without_terminator(), lossValue, seed,
                            xs, "the loss '" + resultNames[*lossIndex] + "'",
                            gradients, &applied)))
    return failure();
  numGradientOps += applied;

  // Append the gradients as results, zeros where the loss does not depend on
  // the argument.
  SmallVector<Value> results(ret.getOperands());
  for (auto [k, i] : llvm::enumerate(targets)) {
    Value arg = func.getArgument(i);
    Value g = gradients[k];
    if (!g) {
      auto type = cast<RankedTensorType>(arg.getType());
      Attribute zero = builder.getFloatAttr(type.getElementType(), 0.0);
      g = ConstantOp::create(builder, ret.getLoc(), type,
                             DenseElementsAttr::get(type, zero));
    }
    NamedAttribute name(builder.getStringAttr(kNameAttr),
                        builder.getStringAttr("grad." + argNames[i]));
    (void)func.insertResult(func.getNumResults(), g.getType(),
                            builder.getDictionaryAttr(name));
    results.push_back(g);
  }
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  return success();
}

} // namespace

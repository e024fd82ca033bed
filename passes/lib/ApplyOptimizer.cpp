//===- ApplyOptimizer.cpp - kiln-apply-optimizer --------------------------===//
//
// Turns a gradient function (what kiln-generate-gradients leaves: parameters
// as arguments marked kiln.parameter, gradients as results named
// grad.<parameter>) into one training step: the optimizer's moments and a
// step counter become extra arguments, the update is appended as core
// elementwise ops, and the gradient results are replaced by the new values of
// every state tensor. Arguments and results that are state carry
// `kiln.state` (their role); the code generator places them in the caller's
// state buffer (docs/decisions/0008-training-step.md). The update rules are
// written on plain values, so they read like the formulas in Passes.td;
// the terms they share with the importer's ONNX optimizers (moments,
// velocity, L2, bias correction) come from OptimizerFormulas.h.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/OptimizerFormulas.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/BitVector.h"

#include <cstdio>
#include <string>

namespace kiln {
#define GEN_PASS_DEF_APPLYOPTIMIZER
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Builds the update ops of one function; every value it makes is one op.
struct UpdateBuilder : OptimizerTerms {
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value sqrt(Value x) { return SqrtOp::create(b, loc, x); }
  /// `x` converted to element type `elt` (a no-op when it has it already).
  Value castTo(Value x, Type elt) {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getElementType() == elt)
      return x;
    return CastOp::create(b, loc, type.clone(elt), x);
  }
  static Type elementType(Value x) {
    return cast<RankedTensorType>(x.getType()).getElementType();
  }
};

/// A hyper-parameter as the user wrote it (%g), for diagnostics.
std::string number(double value) {
  char text[32];
  snprintf(text, sizeof text, "%g", value);
  return text;
}

struct ApplyOptimizer : kiln::impl::ApplyOptimizerBase<ApplyOptimizer> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(func::FuncOp func);
};

/// One state tensor to append: an argument and the result holding its new
/// value.
struct NewState {
  std::string name;
  llvm::StringLiteral role;
  Type type;
  Value update; // set once the update is built
};

LogicalResult ApplyOptimizer::run(func::FuncOp func) {
  // The options first: they are the same for every function.
  if (optimizer != "sgd" && optimizer != "momentum" && optimizer != "adam")
    return func.emitError("expects optimizer 'sgd', 'momentum' or 'adam', "
                          "found '")
           << optimizer << "'";
  if (!(lr > 0.0))
    return func.emitError("expects a learning rate lr > 0, found ")
           << number(lr);
  if (optimizer == "momentum" && !(momentum >= 0.0 && momentum < 1.0))
    return func.emitError("expects momentum in [0, 1), found ")
           << number(momentum);
  if (optimizer == "adam" && !(beta1 >= 0.0 && beta1 < 1.0))
    return func.emitError("expects beta1 in [0, 1), found ") << number(beta1);
  if (optimizer == "adam" && !(beta2 >= 0.0 && beta2 < 1.0))
    return func.emitError("expects beta2 in [0, 1), found ") << number(beta2);
  if (optimizer == "adam" && !(epsilon > 0.0))
    return func.emitError("expects epsilon > 0, found ") << number(epsilon);
  if (!(weightDecay >= 0.0))
    return func.emitError("expects weight-decay >= 0, found ")
           << number(weightDecay);

  if (!func.getBody().hasOneBlock())
    return func.emitError("expects a body of one block");
  Block &body = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return func.emitError("expects the body to end in func.return");
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, kStateAttr))
      return func.emitError("expects a function without state arguments, "
                            "found '")
             << kStateAttr << "' on argument #" << i
             << " (the optimizer is applied once)";

  // Parameters (arguments marked kiln.parameter, in order), each with the
  // result named grad.<name>.
  auto resultName = [&](unsigned i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
    return name ? name.str() : std::string();
  };
  SmallVector<unsigned> params, gradResults;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgAttr(i, kParameterAttr))
      continue;
    auto nameAttr = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
    std::string name = nameAttr ? nameAttr.str() : "input" + std::to_string(i);
    std::optional<unsigned> grad;
    for (unsigned r = 0; r < func.getNumResults(); ++r)
      if (resultName(r) == "grad." + name)
        grad = r;
    if (!grad)
      return func.emitError("expects a result 'grad.")
             << name << "' with the gradient of parameter '" << name
             << "' (run kiln-generate-gradients first), found none";
    if (func.getResultTypes()[*grad] != func.getArgument(i).getType())
      return func.emitError("expects 'grad.")
             << name << "' of type " << func.getArgument(i).getType()
             << " like its parameter, found " << func.getResultTypes()[*grad];
    params.push_back(i);
    gradResults.push_back(*grad);
  }
  if (params.empty())
    return func.emitError("expects arguments marked '")
           << kParameterAttr << "' to train, found none";

  // The state: parameters, then each parameter's moments, then the step.
  SmallVector<NewState> moments;
  auto paramName = [&](unsigned i) {
    return func.getArgAttrOfType<StringAttr>(i, kNameAttr).str();
  };
  for (unsigned i : params) {
    Type type = func.getArgument(i).getType();
    if (optimizer == "momentum")
      moments.push_back(
          {"optimizer.velocity." + paramName(i), "moment", type, {}});
    if (optimizer == "adam") {
      moments.push_back({"optimizer.m." + paramName(i), "moment", type, {}});
      moments.push_back({"optimizer.v." + paramName(i), "moment", type, {}});
    }
  }
  OpBuilder builder(ret);
  Location loc =
      NameLoc::get(builder.getStringAttr("optimizer"), func.getLoc());
  auto stepType = RankedTensorType::get({}, builder.getF64Type());
  NewState step{"optimizer.step", "step", stepType, {}};

  // Append the new arguments (moments, step) with their roles.
  auto stateAttrs = [&](StringRef name, StringRef role) {
    return builder.getDictionaryAttr(
        {builder.getNamedAttr(kNameAttr, builder.getStringAttr(name)),
         builder.getNamedAttr(kStateAttr, builder.getStringAttr(role))});
  };
  SmallVector<Value> momentArgs;
  for (NewState &m : moments) {
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, m.type, stateAttrs(m.name, m.role),
                                   func.getLoc())))
      return failure();
    momentArgs.push_back(func.getArgument(index));
  }
  unsigned stepIndex = func.getNumArguments();
  if (failed(func.insertArgument(stepIndex, stepType,
                                 stateAttrs(step.name, step.role),
                                 func.getLoc())))
    return failure();
  Value stepArg = func.getArgument(stepIndex);
  for (unsigned i : params)
    func.setArgAttr(i, kStateAttr, builder.getStringAttr("parameter"));

  // The updates, one parameter at a time, after everything the gradient
  // function computes (the schedule may move them earlier where that is
  // safe: the values are SSA, the storage is decided by codegen).
  UpdateBuilder u{{builder, loc}};
  Value newStep = u.add(stepArg, u.scalar(builder.getF64Type(), 1.0));
  step.update = newStep;
  // Adam's bias corrections depend on the step only: once per function.
  Value stepSize, sqrtCorrection2;
  if (optimizer == "adam") {
    Value correction1 = u.biasCorrection(beta1, newStep);
    Value correction2 = u.biasCorrection(beta2, newStep);
    Value lrValue = u.scalar(builder.getF64Type(), lr);
    stepSize = u.div(lrValue, correction1); // lr / (1 - beta1^t)
    sqrtCorrection2 = u.sqrt(correction2);  // sqrt(1 - beta2^t)
  }

  SmallVector<Value> newParams;
  unsigned nextMoment = 0;
  for (auto [k, i] : llvm::enumerate(params)) {
    Value w = func.getArgument(i);
    Value g = ret.getOperand(gradResults[k]);
    Type elt = UpdateBuilder::elementType(w);
    u.loc = NameLoc::get(builder.getStringAttr("optimizer." + paramName(i)),
                         func.getLoc());
    g = u.regularized(w, g, weightDecay); // L2 added to the gradient
    Value delta;
    if (optimizer == "sgd") {
      delta = u.scale(g, lr);
    } else if (optimizer == "momentum") {
      NewState &v = moments[nextMoment];
      Value vOld = momentArgs[nextMoment++];
      Value vNew = u.velocity(vOld, g, momentum); // v = mu v + g
      v.update = vNew;
      delta = u.scale(vNew, lr);
    } else {
      NewState &m = moments[nextMoment];
      Value mOld = momentArgs[nextMoment++];
      NewState &v = moments[nextMoment];
      Value vOld = momentArgs[nextMoment++];
      Value mNew = u.movingAverage(mOld, g, beta1);
      Value vNew = u.movingAverage(vOld, u.mul(g, g), beta2);
      m.update = mNew;
      v.update = vNew;
      // denom = sqrt(v) / sqrt(1 - beta2^t) + eps;
      // w -= lr / (1 - beta1^t) * m / denom
      Value root = u.sqrt(vNew);
      Value corrected = u.div(root, u.castTo(sqrtCorrection2, elt));
      Value denom = u.add(corrected, u.scalar(elt, epsilon));
      Value ratio = u.div(mNew, denom);
      delta = u.mul(ratio, u.castTo(stepSize, elt));
    }
    newParams.push_back(u.sub(w, delta));
  }

  // Results: the function's own results without the gradients, then the new
  // value of every state tensor, in state order.
  llvm::BitVector dropped(func.getNumResults());
  for (unsigned r : gradResults)
    dropped.set(r);
  SmallVector<Value> results;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (!dropped.test(r))
      results.push_back(ret.getOperand(r));
  if (failed(func.eraseResults(dropped)))
    return failure();
  auto appendResult = [&](Value v, StringRef name, StringRef role) {
    (void)func.insertResult(func.getNumResults(), v.getType(),
                            stateAttrs(name, role));
    results.push_back(v);
  };
  for (auto [k, i] : llvm::enumerate(params))
    appendResult(newParams[k], paramName(i), "parameter");
  for (NewState &m : moments)
    appendResult(m.update, m.name, m.role);
  appendResult(step.update, step.name, step.role);
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  numStateTensors += params.size() + moments.size() + 1;
  return success();
}

} // namespace

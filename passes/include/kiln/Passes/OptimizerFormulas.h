//===- OptimizerFormulas.h - the update rules' shared terms -----*- C++ -*-===//
//
// The terms the optimizers' update rules are made of, each defined once and
// built as core elementwise ops: kiln-apply-optimizer (`kilnc train`, the
// PyTorch forms of SGD, momentum and Adam) and the importer's
// ai.onnx.preview.training ops (Momentum, Adagrad, Adam as the ONNX spec
// writes them) both call these. Where the two specs differ (where Adam adds
// epsilon, ONNX's count T = 0 case, Nesterov), the caller says so next to
// its own step; the terms they share live here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_OPTIMIZERFORMULAS_H
#define KILN_PASSES_OPTIMIZERFORMULAS_H

#include "mlir/IR/Builders.h"

namespace kiln {

struct OptimizerTerms {
  mlir::OpBuilder &b;
  mlir::Location loc;

  /// A rank-0 float constant of element type `elt`.
  mlir::Value scalar(mlir::Type elt, double value);
  /// `x * c` for a compile-time scalar c.
  mlir::Value scale(mlir::Value x, double c);

  /// L2 regularization added to the gradient: `g + w * c` (`g` when c is 0).
  mlir::Value regularized(mlir::Value w, mlir::Value g, double c);

  /// An exponential moving average, Adam's moments in both specs:
  /// `old * decay + x * (1 - decay)`.
  mlir::Value movingAverage(mlir::Value old, mlir::Value x, double decay);

  /// The momentum velocity: `v * mu + g`, or `v * mu + g * gScale` where
  /// ONNX scales the gradient (its beta, 1 at T = 0).
  mlir::Value velocity(mlir::Value v, mlir::Value g, double mu,
                       mlir::Value gScale = {});

  /// Adam's bias correction `1 - beta^t`, in `t`'s element type.
  mlir::Value biasCorrection(double beta, mlir::Value t);
};

} // namespace kiln

#endif // KILN_PASSES_OPTIMIZERFORMULAS_H

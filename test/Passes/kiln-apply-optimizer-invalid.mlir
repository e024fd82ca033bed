// RUN: kiln-opt %s --split-input-file --kiln-apply-optimizer -verify-diagnostics
// Options out of range are refused before anything changes (checked without
// -verify-diagnostics: the options apply to every case).
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=rmsprop" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: expects optimizer 'sgd', 'momentum' or 'adam', found 'rmsprop'
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="lr=0" 2>&1 | FileCheck %s --check-prefix=LR
// LR: error: expects a learning rate lr > 0, found 0
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="lr=-0.5" 2>&1 | FileCheck %s --check-prefix=NEGLR
// NEGLR: error: expects a learning rate lr > 0, found -0.5
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=momentum momentum=1" 2>&1 | FileCheck %s --check-prefix=MU
// MU: error: expects momentum in [0, 1), found 1
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=adam beta2=1.5" 2>&1 | FileCheck %s --check-prefix=BETA2
// BETA2: error: expects beta2 in [0, 1), found 1.5
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="optimizer=adam epsilon=0" 2>&1 | FileCheck %s --check-prefix=EPS
// EPS: error: expects epsilon > 0, found 0
// RUN: not kiln-opt %s --split-input-file --kiln-apply-optimizer="weight-decay=-1" 2>&1 | FileCheck %s --check-prefix=WD
// WD: error: expects weight-decay >= 0, found -1

// A parameter needs its gradient among the results.
// expected-error @+1 {{expects a result 'grad.w' with the gradient of parameter 'w' (run kiln-generate-gradients first), found none}}
func.func @no_gradient(%w: tensor<2xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %l = kiln.reduce_sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The gradient must have the parameter's type.
// expected-error @+1 {{expects 'grad.w' of type 'tensor<2xf32>' like its parameter, found 'tensor<f32>'}}
func.func @gradient_type(%w: tensor<2xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}, tensor<f32> {kiln.name = "grad.w"}) {
  %l = kiln.reduce_sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l, %l : tensor<f32>, tensor<f32>
}

// -----

// Nothing to train.
// expected-error @+1 {{expects arguments marked 'kiln.parameter' to train, found none}}
func.func @no_parameters(%x: tensor<2xf32> {kiln.name = "x"})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %l = kiln.reduce_sum %x axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The pass runs once: a function with state already is refused.
// expected-error @+1 {{expects a function without state arguments, found 'kiln.state' on argument #0 (the optimizer is applied once)}}
func.func @twice(%w: tensor<2xf32> {kiln.name = "w", kiln.parameter, kiln.state = "parameter"},
                 %t: tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
    -> (tensor<f32> {kiln.name = "loss"}, tensor<2xf32> {kiln.name = "grad.w"}) {
  %l = kiln.reduce_sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<2xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-generate-gradients="loss=loss wrt=w" -verify-diagnostics --allow-unregistered-dialect
// A name given twice in wrt would give two results of the same name (checked
// without -verify-diagnostics: the cases below expect other errors).
// RUN: not kiln-opt %s --split-input-file --kiln-generate-gradients="loss=loss wrt=w,w" --allow-unregistered-dialect 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: expects each name once in 'wrt', found 'w' twice

// The loss must be one float element.
// expected-error @+1 {{expects the loss 'loss' to be one float element (a scalar loss), found 'tensor<2xf32>'}}
func.func @vector_loss(%w: tensor<2xf32> {kiln.name = "w"})
    -> (tensor<2xf32> {kiln.name = "loss"}) {
  %e = kiln.exp %w : tensor<2xf32>
  return %e : tensor<2xf32>
}

// -----

// The loss must name a result.
// expected-error @+1 {{expects a result named 'loss' to differentiate, found results 'out'}}
func.func @unknown_loss(%w: tensor<2xf32> {kiln.name = "w"})
    -> (tensor<f32> {kiln.name = "out"}) {
  %l = kiln.reduce_sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// wrt must name an argument.
// expected-error @+1 {{expects an argument named 'w' to differentiate with respect to, found 'v'}}
func.func @unknown_wrt(%v: tensor<2xf32> {kiln.name = "v"})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %l = kiln.reduce_sum %v axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Integers cannot be differentiated.
// expected-error @+1 {{expects argument 'w' to hold floats to differentiate it, found 'tensor<2xi32>'}}
func.func @integer_wrt(%w: tensor<2xi32> {kiln.name = "w"})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %c = kiln.cast %w : tensor<2xi32> -> tensor<2xf32>
  %l = kiln.reduce_sum %c axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op on the path from the parameters to the loss without a rule (here an
// op of another dialect) is an error at that op.
func.func @no_rule(%w: tensor<3xf32> {kiln.name = "w"})
    -> (tensor<f32> {kiln.name = "loss"}) {
  // expected-error @+1 {{'foreign.op' op has no gradient rule, but lies between the loss 'loss' and the parameters}}
  %y = "foreign.op"(%w) : (tensor<3xf32>) -> tensor<3xf32>
  %l = kiln.reduce_sum %y axes = [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}


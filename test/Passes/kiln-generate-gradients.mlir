// RUN: kiln-opt %s --split-input-file --kiln-generate-gradients="loss=loss" --kiln-dce | FileCheck %s
// Errors are in kiln-generate-gradients-invalid.mlir.

// A chain: exp then sum; d/dw sum(exp(w)) = broadcast(1) * exp(w). The
// gradient is appended as a result named grad.w.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad.w"})
// CHECK: %[[E:.*]] = kiln.exp %arg0
// CHECK: %[[SEED:.*]] = kiln.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]] = kiln.reshape %[[SEED]] : tensor<f32> -> tensor<1xf32>
// CHECK: %[[B:.*]] = kiln.broadcast %[[R]] : tensor<1xf32> -> tensor<3xf32>
// CHECK: %[[G:.*]] = kiln.mul %[[B]], %[[E]]
// CHECK: return %{{.*}}, %[[G]]
func.func @chain(%w: tensor<3xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %e = kiln.exp %w : tensor<3xf32>
  %l = kiln.reduce_sum %e axes = [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A diamond: w feeds two paths that meet again, so its two contributions are
// added (one kiln.add more than the forward graph has).
// CHECK-LABEL: func.func @diamond
// CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
// CHECK: %[[ACC:.*]] = kiln.add %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
// CHECK: return %{{.*}}, %[[ACC]]
func.func @diamond(%w: tensor<f32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %a = kiln.exp %w : tensor<f32>
  %b = kiln.sin %w : tensor<f32>
  %l = kiln.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Broadcasting is undone: the bias [3] was stretched to [2, 3], so its
// gradient sums over axis 0 and reshapes back to [3].
// CHECK-LABEL: func.func @broadcast_bias
// CHECK: %[[S:.*]] = kiln.reduce_sum %{{.*}} axes = [0] keepdims : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK: %[[G:.*]] = kiln.reshape %[[S]] : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[G]] : tensor<f32>, tensor<3xf32>
func.func @broadcast_bias(%x: tensor<2x3xf32> {kiln.name = "x"},
                          %b: tensor<3xf32> {kiln.name = "b", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %y = kiln.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %t = kiln.tanh %y : tensor<2x3xf32>
  %l = kiln.reduce_sum %t axes = [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A non-differentiable operand: the gather's indices get no gradient (they
// are integers), only the table does, through a one-hot product.
// CHECK-LABEL: func.func @gather_indices
// CHECK-SAME: tensor<4x2xf32> {kiln.name = "grad.table"}
// CHECK: kiln.cmp eq
// CHECK: kiln.matmul
// CHECK: return
func.func @gather_indices(%table: tensor<4x2xf32> {kiln.name = "table", kiln.parameter},
                          %i: tensor<3xi64> {kiln.name = "i"})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %g = kiln.gather %table, %i axis = 0 : tensor<4x2xf32>, tensor<3xi64> -> tensor<3x2xf32>
  %l = kiln.reduce_sum %g axes = [0, 1] : tensor<3x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Unused paths are removed: x is not a parameter, so the gradient of the
// product with respect to x (a product with w) is never built into the
// result and DCE removes it; only the gradient of w (a product with x) stays.
// CHECK-LABEL: func.func @unused_path
// CHECK-SAME: -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad.w"})
// CHECK-COUNT-2: kiln.mul
// CHECK-NOT: kiln.mul
// CHECK: return
func.func @unused_path(%x: tensor<3xf32> {kiln.name = "x"},
                       %w: tensor<3xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %p = kiln.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = kiln.reduce_sum %p axes = [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter the loss does not depend on gets a zero gradient; a floor on
// the way carries none either (its derivative is zero almost everywhere).
// CHECK-LABEL: func.func @zero_gradient
// CHECK: %[[Z:.*]] = kiln.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %[[Z]]
func.func @zero_gradient(%w: tensor<2xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %f = kiln.floor %w : tensor<2xf32>
  %l = kiln.reduce_sum %f axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ReLU's mask compares its result, not its input (relu(x) > 0 is x > 0,
// NaN included): the result is what the next layer keeps, so the backward
// kernel recomputes the mask from it.
// CHECK-LABEL: func.func @relu_mask_from_result
// CHECK: %[[Y:.*]] = kiln.relu %arg0
// CHECK: %[[P:.*]] = kiln.cmp gt, %[[Y]], %{{.*}}
// CHECK: kiln.select %[[P]]
func.func @relu_mask_from_result(%w: tensor<8xf32> {kiln.name = "w", kiln.parameter})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %y = kiln.relu %w : tensor<8xf32>
  %l = kiln.reduce_sum %y axes = [0] : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

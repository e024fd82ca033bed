// RUN: kiln-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// kiln.fused round-trips: kernel id, class, inputs, node names and region.
// CHECK-LABEL: func.func @roundtrip
// CHECK: %[[K:.*]]:2 = kiln.fused 3 reduction(%arg0) nodes = ["a", "b"] : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x4xf32>):
// CHECK-NEXT: %[[E:.*]] = kiln.exp %[[A]]
// CHECK-NEXT: %[[S:.*]] = kiln.reduce_sum %[[E]]
// CHECK-NEXT: kiln.yield %[[E]], %[[S]] : tensor<2x4xf32>, tensor<2xf32>
func.func @roundtrip(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %0:2 = kiln.fused 3 reduction (%x) nodes = ["a", "b"] : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  ^bb0(%a: tensor<2x4xf32>):
    %e = kiln.exp %a : tensor<2x4xf32>
    %s = kiln.reduce_sum %e axes = [1] : tensor<2x4xf32> -> tensor<2xf32>
    kiln.yield %e, %s : tensor<2x4xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<2xf32>
}

// -----

// One block argument per input.
func.func @missing_argument(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.fused' op expects one block argument per input (2), got 1}}
  %0 = kiln.fused 0 elementwise (%x, %y) nodes = [] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Block arguments have their inputs' types.
func.func @argument_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.fused' op expects block argument 0 of the type of its input, 'tensor<4xf32>', got 'tensor<4xf16>'}}
  %0 = kiln.fused 0 elementwise (%x) nodes = [] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf16>):
    %c = kiln.cast %a : tensor<4xf16> -> tensor<4xf32>
    kiln.yield %c : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// The yield gives the results.
func.func @yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.fused' op expects kiln.yield of 1 values (one per result), got 2}}
  %0 = kiln.fused 0 elementwise (%x) nodes = [] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

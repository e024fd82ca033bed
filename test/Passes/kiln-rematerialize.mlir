// RUN: kiln-opt %s --split-input-file --kiln-rematerialize="budget=1024 remarks=1" -verify-diagnostics | FileCheck %s

// Every case has a budget of 1024 bytes; a 128xf32 tensor takes 512.

// %e is read at once and again at the end: with it, %a and %b, three
// tensors are live at the tanh (1536 bytes). The exp runs again before its
// late reader, so %e dies at the reduction.
// CHECK-LABEL: func.func @recomputed
// CHECK: %[[E:.*]] = kiln.exp %arg0
// CHECK-NEXT: kiln.reduce_sum %[[E]]
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: %[[B:.*]] = kiln.tanh
// CHECK-NEXT: %[[E2:.*]] = kiln.exp %arg0
// CHECK-NEXT: kiln.mul %[[B]], %[[E2]]
// CHECK-NEXT: return
// expected-remark @+1 {{values recomputed: 1, ops added: 1; estimated peak 1536 -> 1024 bytes}}
func.func @recomputed(%x: tensor<128xf32>) -> tensor<128xf32> {
  // expected-remark @+1 {{recomputed here instead of kept live}}
  %e = kiln.exp %x : tensor<128xf32>
  %r = kiln.reduce_sum %e axes = [0] keepdims : tensor<128xf32> -> tensor<1xf32>
  %a = kiln.mul %x, %r : tensor<128xf32>, tensor<1xf32> -> tensor<128xf32>
  %b = kiln.tanh %a : tensor<128xf32>
  %c = kiln.mul %b, %e : tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>
  return %c : tensor<128xf32>
}

// -----

// The same graph with %e made by a matmul, which is never recomputed: the
// peak stays and the pass says the budget cannot be met.
// CHECK-LABEL: func.func @expensive_producer
// CHECK-COUNT-1: kiln.matmul
// CHECK-NOT: kiln.matmul
// expected-warning @+2 {{cannot bring the estimated peak of 1536 live bytes under the budget of 1024 bytes by recomputation; reached 1536 bytes}}
// expected-remark @+1 {{values recomputed: 0, ops added: 0; estimated peak 1536 -> 1536 bytes}}
func.func @expensive_producer(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %e = kiln.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %r = kiln.reduce_sum %e axes = [0, 1] keepdims : tensor<8x16xf32> -> tensor<1x1xf32>
  %a = kiln.mul %x, %r : tensor<8x16xf32>, tensor<1x1xf32> -> tensor<8x16xf32>
  %b = kiln.tanh %a : tensor<8x16xf32>
  %c = kiln.mul %b, %e : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// The first graph with 64-byte tensors: the peak (192 bytes) already fits,
// so nothing changes.
// CHECK-LABEL: func.func @budget_met
// CHECK: kiln.exp
// CHECK-NOT: kiln.exp
// CHECK: return
// expected-remark @+1 {{values recomputed: 0, ops added: 0; estimated peak 192 -> 192 bytes}}
func.func @budget_met(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = kiln.exp %x : tensor<16xf32>
  %r = kiln.reduce_sum %e axes = [0] keepdims : tensor<16xf32> -> tensor<1xf32>
  %a = kiln.mul %x, %r : tensor<16xf32>, tensor<1xf32> -> tensor<16xf32>
  %b = kiln.tanh %a : tensor<16xf32>
  %c = kiln.mul %b, %e : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// %v is read early and at the end; the %u it is made from is dead by then,
// so both are recomputed from the input (a chain of two copies). %s is
// returned, so it takes no arena memory.
// CHECK-LABEL: func.func @chain
// CHECK: kiln.reduce_sum
// CHECK-NEXT: %[[U:.*]] = kiln.exp %arg0
// CHECK-NEXT: %[[V:.*]] = kiln.neg %[[U]]
// CHECK-NEXT: kiln.mul %[[V]]
// CHECK-NEXT: return
// expected-remark @+1 {{values recomputed: 1, ops added: 2; estimated peak 1536 -> 1024 bytes}}
func.func @chain(%x: tensor<128xf32>) -> (tensor<128xf32>, tensor<1xf32>) {
  // expected-remark @+1 {{recomputed here instead of kept live}}
  %u = kiln.exp %x : tensor<128xf32>
  // expected-remark @+1 {{recomputed here instead of kept live}}
  %v = kiln.neg %u : tensor<128xf32>
  %w = kiln.tanh %v : tensor<128xf32>
  %big = kiln.mul %w, %w : tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>
  %s = kiln.reduce_sum %big axes = [0] keepdims : tensor<128xf32> -> tensor<1xf32>
  %y = kiln.mul %v, %s : tensor<128xf32>, tensor<1xf32> -> tensor<128xf32>
  return %y, %s : tensor<128xf32>, tensor<1xf32>
}

// -----

// A late reader of a view (reshape) of the value reads a copy of the view
// of a copy of the value.
// CHECK-LABEL: func.func @view
// CHECK: kiln.reduce_sum
// CHECK-NEXT: %[[E:.*]] = kiln.exp %arg0
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[E]]
// CHECK-NEXT: kiln.mul %[[R]]
// expected-remark @+1 {{values recomputed: 1, ops added: 2; estimated peak 1536 -> 1024 bytes}}
func.func @view(%x: tensor<128xf32>) -> (tensor<8x16xf32>, tensor<1x1xf32>) {
  // expected-remark @+1 {{recomputed here instead of kept live}}
  %e = kiln.exp %x : tensor<128xf32>
  // expected-remark @+1 {{recomputed here instead of kept live}}
  %v = kiln.reshape %e : tensor<128xf32> -> tensor<8x16xf32>
  %w = kiln.tanh %v : tensor<8x16xf32>
  %big = kiln.mul %w, %w : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %s = kiln.reduce_sum %big axes = [0, 1] keepdims : tensor<8x16xf32> -> tensor<1x1xf32>
  %y = kiln.mul %v, %s : tensor<8x16xf32>, tensor<1x1xf32> -> tensor<8x16xf32>
  return %y, %s : tensor<8x16xf32>, tensor<1x1xf32>
}

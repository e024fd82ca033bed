// RUN: kiln-opt %s --split-input-file --kiln-schedule | FileCheck %s

// Two independent branches, each a big temporary reduced to a scalar: run
// in source order both temporaries are live at once; the schedule finishes
// one branch before starting the other.
// CHECK-LABEL: func.func @interleaved_branches
// CHECK: %[[A:.*]] = kiln.exp %arg0
// CHECK-NEXT: kiln.reduce_sum %[[A]]
// CHECK-NEXT: %[[B:.*]] = kiln.exp %arg1
// CHECK-NEXT: kiln.reduce_sum %[[B]]
// CHECK-NEXT: kiln.add
// CHECK-NEXT: return
func.func @interleaved_branches(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> tensor<1xf32> {
  %a = kiln.exp %x : tensor<1024xf32>
  %b = kiln.exp %y : tensor<1024xf32>
  %ra = kiln.reduce_sum %a axes = [0] keepdims : tensor<1024xf32> -> tensor<1xf32>
  %rb = kiln.reduce_sum %b axes = [0] keepdims : tensor<1024xf32> -> tensor<1xf32>
  %s = kiln.add %ra, %rb : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
  return %s : tensor<1xf32>
}

// -----

// A chain has one order: nothing moves.
// CHECK-LABEL: func.func @chain
// CHECK: kiln.exp
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: return
func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = kiln.exp %x : tensor<64xf32>
  %b = kiln.relu %a : tensor<64xf32>
  %c = kiln.neg %b : tensor<64xf32>
  return %c : tensor<64xf32>
}

// -----

// When no order lowers the peak the source order stays, even where another
// topological order exists (the two exps are independent).
// CHECK-LABEL: func.func @no_gain_no_move
// CHECK: kiln.exp %arg0
// CHECK-NEXT: kiln.exp %arg1
// CHECK-NEXT: kiln.add
func.func @no_gain_no_move(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %a = kiln.exp %x : tensor<16xf32>
  %b = kiln.exp %y : tensor<16xf32>
  %s = kiln.add %a, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %s : tensor<16xf32>
}

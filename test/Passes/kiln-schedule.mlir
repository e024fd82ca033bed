// RUN: kiln-opt %s --split-input-file --allow-unregistered-dialect --kiln-schedule | FileCheck %s

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

// -----

// An op with a region moves whole, and never above a value its region
// reads: the scf.if that consumes %a runs right after %a, before %b exists.
// CHECK-LABEL: func.func @region_op_moves_whole
// CHECK: %[[A:.*]] = kiln.exp %arg0
// CHECK-NEXT: scf.if %arg2
// CHECK-NEXT: kiln.reduce_sum %[[A]]
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: kiln.reduce_max %[[A]]
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: kiln.exp %arg1
func.func @region_op_moves_whole(%x: tensor<1024xf32>, %y: tensor<1024xf32>, %c: i1) -> tensor<1xf32> {
  %a = kiln.exp %x : tensor<1024xf32>
  %b = kiln.exp %y : tensor<1024xf32>
  %ra = scf.if %c -> tensor<1xf32> {
    %s = kiln.reduce_sum %a axes = [0] keepdims : tensor<1024xf32> -> tensor<1xf32>
    scf.yield %s : tensor<1xf32>
  } else {
    %m = kiln.reduce_max %a axes = [0] keepdims : tensor<1024xf32> -> tensor<1xf32>
    scf.yield %m : tensor<1xf32>
  }
  %rb = kiln.reduce_sum %b axes = [0] keepdims : tensor<1024xf32> -> tensor<1xf32>
  %s = kiln.add %ra, %rb : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
  return %s : tensor<1xf32>
}

// -----

// Ops with side effects keep their relative order. Running each effect
// right after the exp it reads halves the peak; the effect on %a may not
// pass the one on %b, so the %b branch goes first.
// CHECK-LABEL: func.func @side_effects_keep_order
// CHECK: %[[B:.*]] = kiln.exp %arg1
// CHECK-NEXT: "test.effect"(%[[B]]) {id = 0
// CHECK-NEXT: %[[A:.*]] = kiln.exp %arg0
// CHECK-NEXT: "test.effect"(%[[A]]) {id = 1
func.func @side_effects_keep_order(%x: tensor<1024xf32>, %y: tensor<1024xf32>) {
  %a = kiln.exp %x : tensor<1024xf32>
  %b = kiln.exp %y : tensor<1024xf32>
  "test.effect"(%b) {id = 0} : (tensor<1024xf32>) -> ()
  "test.effect"(%a) {id = 1} : (tensor<1024xf32>) -> ()
  return
}

// -----

// A reshape is a view: it takes no bytes and keeps its input live until
// the view's last reader. The small branch runs first (its 16 bytes die
// before the 4 KiB one is made); the big one follows with its reshape.
// CHECK-LABEL: func.func @reshape_is_a_view
// CHECK: kiln.exp %arg1
// CHECK-NEXT: kiln.reduce_sum
// CHECK-NEXT: %[[A:.*]] = kiln.exp %arg0
// CHECK-NEXT: kiln.reshape %[[A]]
// CHECK-NEXT: kiln.reduce_sum
func.func @reshape_is_a_view(%x: tensor<1024xf32>, %y: tensor<4xf32>) -> tensor<1xf32> {
  %a = kiln.exp %x : tensor<1024xf32>
  %v = kiln.reshape %a : tensor<1024xf32> -> tensor<32x32xf32>
  %b = kiln.exp %y : tensor<4xf32>
  %ra = kiln.reduce_sum %v axes = [0, 1] : tensor<32x32xf32> -> tensor<f32>
  %rb = kiln.reduce_sum %b axes = [0] keepdims : tensor<4xf32> -> tensor<1xf32>
  %r = kiln.reshape %ra : tensor<f32> -> tensor<1xf32>
  %s = kiln.add %r, %rb : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
  return %s : tensor<1xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-dce | FileCheck %s

// An op whose result nothing uses is erased.
// CHECK-LABEL: func.func @dead_op
// CHECK-NOT: kiln.exp
// CHECK: kiln.relu
// CHECK-NOT: kiln.exp
func.func @dead_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %dead = kiln.exp %x : tensor<4xf32>
  %y = kiln.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A dead chain goes in one sweep: each op's only user was dead.
// CHECK-LABEL: func.func @dead_chain
// CHECK-NEXT: return %{{.*}} : tensor<4xf32>
func.func @dead_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.exp %x : tensor<4xf32>
  %1 = kiln.neg %0 : tensor<4xf32>
  %2 = kiln.reshape %1 : tensor<4xf32> -> tensor<2x2xf32>
  %3 = kiln.transpose %2 perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
  return %x : tensor<4xf32>
}

// -----

// A dead diamond (one value used by two dead ops that meet again) goes whole.
// CHECK-LABEL: func.func @dead_diamond
// CHECK-NEXT: return %{{.*}} : tensor<4xf32>
func.func @dead_diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = kiln.exp %x : tensor<4xf32>
  %b = kiln.neg %a : tensor<4xf32>
  %c = kiln.tanh %a : tensor<4xf32>
  %d = kiln.add %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// An unused constant is erased; the one the result needs stays.
// CHECK-LABEL: func.func @dead_constant
// CHECK-NOT: kiln.constant dense<[1.000000e+00
// CHECK: %[[C:.*]] = kiln.constant dense<2.000000e+00>
// CHECK-NOT: kiln.constant
// CHECK: kiln.mul %{{.*}}, %[[C]]
func.func @dead_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %unused = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<4xf32>
  %y = kiln.mul %x, %two : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An op used only by the return stays.
// CHECK-LABEL: func.func @used_by_return
// CHECK: %[[Y:.*]] = kiln.sigmoid
// CHECK-NEXT: return %[[Y]]
func.func @used_by_return(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kiln.sigmoid %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Everything on the path to the output stays, even ops far from the return;
// only the dead branch off the chain goes.
// CHECK-LABEL: func.func @live_chain
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.reduce_sum
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.reshape
// CHECK-NEXT: return
func.func @live_chain(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x1xf32> {
  %0 = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %1 = kiln.reduce_sum %0 axes = [1] : tensor<2x4xf32> -> tensor<2xf32>
  %dead = kiln.log %1 : tensor<2xf32>
  %2 = kiln.exp %1 : tensor<2xf32>
  %3 = kiln.reshape %2 : tensor<2xf32> -> tensor<2x1xf32>
  return %3 : tensor<2x1xf32>
}

// -----

// A live diamond stays whole.
// CHECK-LABEL: func.func @live_diamond
// CHECK: kiln.exp
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: kiln.tanh
// CHECK-NEXT: kiln.add
// CHECK-NEXT: return
func.func @live_diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = kiln.exp %x : tensor<4xf32>
  %b = kiln.neg %a : tensor<4xf32>
  %c = kiln.tanh %a : tensor<4xf32>
  %d = kiln.add %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// Unused function arguments stay: the signature is the caller's contract.
// CHECK-LABEL: func.func @unused_args
// CHECK-SAME: (%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<2xi64>, %{{.*}}: tensor<i1>) -> tensor<4xf32>
// CHECK-NEXT: return
func.func @unused_args(%x: tensor<4xf32>, %unused: tensor<2xi64>, %also: tensor<i1>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A value returned twice stays; a dead user of it goes.
// CHECK-LABEL: func.func @multiple_results
// CHECK: kiln.relu
// CHECK-NOT: kiln.sqrt
// CHECK: return
func.func @multiple_results(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = kiln.relu %x : tensor<4xf32>
  %dead = kiln.sqrt %y : tensor<4xf32>
  return %y, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// A value defined in one block and read only by a dead op in a later block
// goes too: blocks are visited back to front.
// CHECK-LABEL: func.func @dead_across_blocks
// CHECK-NOT: kiln.exp
// CHECK-NOT: kiln.neg
func.func @dead_across_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = kiln.exp %x : tensor<4xf32>
  cf.br ^bb1
^bb1:
  %n = kiln.neg %e : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// Dead ops inside a nested region are removed; the region's op stays.
// CHECK-LABEL: func.func @dead_in_region
// CHECK-NOT: kiln.exp
func.func @dead_in_region(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    %dead = kiln.exp %x : tensor<4xf32>
    scf.yield %x : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-simplify | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-simplify="max-iterations=1" | FileCheck %s --check-prefix=ONE

// Folding makes two constants equal, cse merges them, and then the two adds
// are duplicates (operands swapped).
// CHECK-LABEL: func.func @needs_rounds
// CHECK: %[[C:.*]] = kiln.constant dense<4.000000e+00>
// CHECK-NEXT: %[[Y:.*]] = kiln.add %{{.*}}, %[[C]]
// CHECK-NEXT: kiln.sub %[[Y]], %[[Y]]
func.func @needs_rounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = kiln.constant dense<2.0> : tensor<4xf32>
  %b = kiln.constant dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>
  %c = kiln.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %d = kiln.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y = kiln.add %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %z = kiln.add %d, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = kiln.sub %y, %z : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Half of the function does not reach the result: it is gone.
// CHECK-LABEL: func.func @dead_half
// CHECK-NOT: kiln.exp
// CHECK-NOT: kiln.tanh
// CHECK: kiln.relu
// CHECK-NEXT: return
func.func @dead_half(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = kiln.exp %x : tensor<4xf32>
  %t = kiln.tanh %e : tensor<4xf32>
  %r = kiln.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Two identical subgraphs feeding one output become one.
// CHECK-LABEL: func.func @twin_subgraphs
// CHECK-COUNT-1: kiln.matmul
// CHECK-NOT: kiln.matmul
// CHECK-COUNT-1: kiln.relu
// CHECK-NOT: kiln.relu
func.func @twin_subgraphs(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<0.25> : tensor<3x4xf32>
  %w2 = kiln.constant dense<0.25> : tensor<3x4xf32>
  %a = kiln.matmul %x, %w1 : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %ra = kiln.relu %a : tensor<2x4xf32>
  %b = kiln.matmul %x, %w2 : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %rb = kiln.relu %b : tensor<2x4xf32>
  %r = kiln.add %ra, %rb : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// A shape computation on constants feeding a reshape folds away entirely.
// CHECK-LABEL: func.func @shape_computation
// CHECK-NEXT: kiln.reshape
// CHECK-NEXT: return
func.func @shape_computation(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  %n = kiln.reduce_prod %s axes = [0] : tensor<2xi64> -> tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %m = kiln.mul %n, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  %r = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  return %r : tensor<6xf32>
}

// -----

// Batch norm after a conv without bias folds to a conv with a new filter and
// one bias add, the constants fully evaluated.
// CHECK-LABEL: func.func @batchnorm
// CHECK-COUNT-2: kiln.constant
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: return
func.func @batchnorm(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x2x2xf32> {
  %w = kiln.constant dense<0.5> : tensor<3x2x3x3xf32>
  %mean = kiln.constant dense<[[[0.5]], [[1.0]], [[1.5]]]> : tensor<3x1x1xf32>
  %var = kiln.constant dense<[[[4.0]], [[1.0]], [[0.25]]]> : tensor<3x1x1xf32>
  %scale = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>
  %b = kiln.constant dense<[[[0.1]], [[0.2]], [[0.3]]]> : tensor<3x1x1xf32>
  %sd = kiln.sqrt %var : tensor<3x1x1xf32>
  %factor = kiln.div %scale, %sd : tensor<3x1x1xf32>, tensor<3x1x1xf32> -> tensor<3x1x1xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x2x2xf32>
  %c = kiln.sub %y, %mean : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  %s = kiln.mul %c, %factor : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  %r = kiln.add %s, %b : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  return %r : tensor<1x3x2x2xf32>
}

// -----

// A function with nothing to simplify comes out unchanged.
// CHECK-LABEL: func.func @already_simple
// CHECK-NEXT: kiln.sigmoid
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: return
func.func @already_simple(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = kiln.sigmoid %x : tensor<4xf32>
  %r = kiln.mul %x, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Merging the two exps makes the select's operands equal, which only the
// next round's canonicalization sees: one round leaves the select.
// CHECK-LABEL: func.func @needs_two_rounds
// CHECK-NOT: kiln.select
// CHECK: return
// ONE-LABEL: func.func @needs_two_rounds
// ONE: kiln.select
func.func @needs_two_rounds(%c: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %a = kiln.exp %x : tensor<4xf32>
  %b = kiln.exp %x : tensor<4xf32>
  %r = kiln.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

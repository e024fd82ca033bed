// RUN: kiln-opt %s --split-input-file --kiln-cse | FileCheck %s

// Two identical adds of the same operands collapse into the first.
// CHECK-LABEL: func.func @duplicate_add
// CHECK: %[[A:.*]] = kiln.add
// CHECK-NOT: kiln.add
// CHECK: kiln.mul %[[A]], %[[A]]
func.func @duplicate_add(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = kiln.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = kiln.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = kiln.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Commutative ops match with their operands swapped: mul, max, and.
// CHECK-LABEL: func.func @commutative_swapped
// CHECK-COUNT-1: kiln.mul
// CHECK-COUNT-1: kiln.max
// CHECK-COUNT-1: kiln.and
// CHECK-NOT: kiln.mul
// CHECK-NOT: kiln.max
// CHECK-NOT: kiln.and
func.func @commutative_swapped(%x: tensor<4xi32>, %y: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %m1 = kiln.mul %x, %y : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %m2 = kiln.mul %y, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %x1 = kiln.max %x, %y : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %x2 = kiln.max %y, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %a1 = kiln.and %x, %y : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %a2 = kiln.and %y, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %m1, %m2, %x1, %x2, %a1, %a2 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// Non-commutative ops with swapped operands are different values: both stay.
// CHECK-LABEL: func.func @sub_swapped_stays
// CHECK-COUNT-2: kiln.sub
// CHECK-COUNT-2: kiln.div
func.func @sub_swapped_stays(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = kiln.sub %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = kiln.sub %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = kiln.div %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %d = kiln.div %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// cmp eq and ne are symmetric; lt with swapped operands is gt, not lt: stays.
// CHECK-LABEL: func.func @cmp_symmetry
// CHECK-COUNT-1: kiln.cmp eq
// CHECK-NOT: kiln.cmp eq
// CHECK-COUNT-2: kiln.cmp lt
func.func @cmp_symmetry(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %e1 = kiln.cmp eq, %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %e2 = kiln.cmp eq, %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %l1 = kiln.cmp lt, %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %l2 = kiln.cmp lt, %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  return %e1, %e2, %l1, %l2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Constants merge by contents: a dense_resource blob and an inline dense
// value with the same bits are one constant; the first one is kept.
// CHECK-LABEL: func.func @resource_equals_dense
// CHECK: %[[C:.*]] = kiln.constant dense_resource<ones>
// CHECK-NOT: kiln.constant
// CHECK: kiln.add %[[C]], %[[C]]
func.func @resource_equals_dense() -> tensor<2xf32> {
  %a = kiln.constant dense_resource<ones> : tensor<2xf32>
  %b = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = kiln.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      ones: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// A splat and a non-splat spelling of one value are one constant.
// CHECK-LABEL: func.func @splat_equals_elements
// CHECK: %[[C:.*]] = kiln.constant dense<3> : tensor<3xi64>
// CHECK-NOT: kiln.constant
// CHECK: kiln.sub %[[C]], %[[C]]
func.func @splat_equals_elements() -> tensor<3xi64> {
  %a = kiln.constant dense<3> : tensor<3xi64>
  %b = kiln.constant dense_resource<threes> : tensor<3xi64>
  %r = kiln.sub %a, %b : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  return %r : tensor<3xi64>
}

{-#
  dialect_resources: {
    builtin: {
      threes: "0x08000000030000000000000003000000000000000300000000000000"
    }
  }
#-}

// -----

// Constants that differ stay apart: other values, another type, and -0.0
// versus 0.0 (equal as numbers, different bits).
// CHECK-LABEL: func.func @different_constants_stay
// CHECK-COUNT-4: kiln.constant
func.func @different_constants_stay() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf64>, tensor<2xf32>) {
  %a = kiln.constant dense<0.0> : tensor<2xf32>
  %b = kiln.constant dense<-0.0> : tensor<2xf32>
  %c = kiln.constant dense<0.0> : tensor<2xf64>
  %d = kiln.constant dense<[0.0, 1.0]> : tensor<2xf32>
  return %a, %b, %c, %d : tensor<2xf32>, tensor<2xf32>, tensor<2xf64>, tensor<2xf32>
}

// -----

// Same op and operand but different attributes: both transposes stay.
// CHECK-LABEL: func.func @different_attributes_stay
// CHECK: kiln.transpose %{{.*}} perm = [1, 0, 2]
// CHECK: kiln.transpose %{{.*}} perm = [0, 2, 1]
func.func @different_attributes_stay(%x: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>) {
  %a = kiln.transpose %x perm = [1, 0, 2] : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  %b = kiln.transpose %x perm = [0, 2, 1] : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  return %a, %b : tensor<2x2x2xf32>, tensor<2x2x2xf32>
}

// -----

// An op in a nested region reuses an equal op from the enclosing region; the
// two branches' ops do not merge with each other.
// CHECK-LABEL: func.func @nested_region
// CHECK: %[[E:.*]] = kiln.exp
// CHECK: scf.if
// CHECK-NEXT: scf.yield %[[E]]
// CHECK: else
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: scf.yield
// CHECK: kiln.neg
func.func @nested_region(%c: i1, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = kiln.exp %x : tensor<4xf32>
  %r = scf.if %c -> tensor<4xf32> {
    %e2 = kiln.exp %x : tensor<4xf32>
    scf.yield %e2 : tensor<4xf32>
  } else {
    %n = kiln.neg %x : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  %n2 = kiln.neg %x : tensor<4xf32>
  return %r, %n2 : tensor<4xf32>, tensor<4xf32>
}

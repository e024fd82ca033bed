// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// Every op prints in the form it parses from, both from the custom and from
// the generic form.

// A constant and a broadcasting add, the first smoke case.
// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%x: tensor<2x3xf32>, %v: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: kiln.constant dense<1.000000e+00> : tensor<3xf32>
  %c = kiln.constant dense<1.0> : tensor<3xf32>
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %a = kiln.add %x, %v : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}

// Constants: splat, non-splat, rank 0, i1, and a dense_resource blob.
// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2xf32>, tensor<2x2xi64>, tensor<i32>, tensor<3xi1>, tensor<2xf32>, tensor<2xbf16>) {
  // CHECK: kiln.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: kiln.constant dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi64>
  %1 = kiln.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  // CHECK: kiln.constant dense<7> : tensor<i32>
  %2 = kiln.constant dense<7> : tensor<i32>
  // CHECK: kiln.constant dense<[true, false, true]> : tensor<3xi1>
  %3 = kiln.constant dense<[true, false, true]> : tensor<3xi1>
  // CHECK: kiln.constant dense_resource<blob1> : tensor<2xf32>
  %4 = kiln.constant dense_resource<blob1> : tensor<2xf32>
  // CHECK: kiln.constant dense<5.000000e-01> : tensor<2xbf16>
  %5 = kiln.constant dense<0.5> : tensor<2xbf16>
  return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<2x2xi64>, tensor<i32>, tensor<3xi1>, tensor<2xf32>, tensor<2xbf16>
}

// The four binary ops, with equal shapes and with numpy broadcasting
// (missing leading dimensions, size-1 dimensions on either side).
// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<4x1xf32>,
                  %d: tensor<1x3xf32>, %s: tensor<f32>) {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %0 = kiln.add %a, %a : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: kiln.sub %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %1 = kiln.sub %b, %a : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: kiln.mul %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<1x3xf32> -> tensor<4x3xf32>
  %2 = kiln.mul %c, %d : tensor<4x1xf32>, tensor<1x3xf32> -> tensor<4x3xf32>
  // CHECK: kiln.div %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %3 = kiln.div %a, %s : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
  %4 = kiln.add %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  return
}

// Binary ops accept every numeric element type.
// CHECK-LABEL: func.func @binary_types
func.func @binary_types(%h: tensor<4xf16>, %bf: tensor<4xbf16>, %d: tensor<4xf64>,
                        %i8: tensor<4xi8>, %i32: tensor<4xi32>, %i64: tensor<4xi64>) {
  // CHECK: kiln.add {{.*}} : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %0 = kiln.add %h, %h : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  // CHECK: kiln.sub {{.*}} : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
  %1 = kiln.sub %bf, %bf : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
  // CHECK: kiln.mul {{.*}} : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %2 = kiln.mul %d, %d : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  // CHECK: kiln.div {{.*}} : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
  %3 = kiln.div %i8, %i8 : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
  // CHECK: kiln.add {{.*}} : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %4 = kiln.add %i32, %i32 : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  // CHECK: kiln.mul {{.*}} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %5 = kiln.mul %i64, %i64 : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return
}

// Unary ops: neg and relu take any numeric type, the transcendental ones
// floats only.
// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x3xf32>, %h: tensor<5xf16>, %bf: tensor<5xbf16>,
                 %d: tensor<f64>, %i: tensor<4xi32>, %i8: tensor<4xi8>, %i64: tensor<4xi64>) {
  // CHECK: kiln.neg %{{.*}} : tensor<2x3xf32>
  %0 = kiln.neg %x : tensor<2x3xf32>
  // CHECK: kiln.neg %{{.*}} : tensor<4xi32>
  %1 = kiln.neg %i : tensor<4xi32>
  // CHECK: kiln.relu %{{.*}} : tensor<2x3xf32>
  %2 = kiln.relu %x : tensor<2x3xf32>
  // CHECK: kiln.relu %{{.*}} : tensor<4xi8>
  %3 = kiln.relu %i8 : tensor<4xi8>
  // CHECK: kiln.relu %{{.*}} : tensor<4xi64>
  %4 = kiln.relu %i64 : tensor<4xi64>
  // CHECK: kiln.exp %{{.*}} : tensor<2x3xf32>
  %5 = kiln.exp %x : tensor<2x3xf32>
  // CHECK: kiln.log %{{.*}} : tensor<5xf16>
  %6 = kiln.log %h : tensor<5xf16>
  // CHECK: kiln.tanh %{{.*}} : tensor<5xbf16>
  %7 = kiln.tanh %bf : tensor<5xbf16>
  // CHECK: kiln.sigmoid %{{.*}} : tensor<f64>
  %8 = kiln.sigmoid %d : tensor<f64>
  // CHECK: kiln.sqrt %{{.*}} : tensor<2x3xf32>
  %9 = kiln.sqrt %x : tensor<2x3xf32>
  return
}

// Matmul: rank 2, batched with equal batches, and batch dimensions that
// broadcast (missing on one side, size 1 on the other).
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<4x16xf32>, %b: tensor<16x5xf32>, %ba: tensor<8x4x16xf32>,
                  %bb: tensor<8x16x5xf32>, %c: tensor<2x1x4x3xf16>, %d: tensor<6x3x7xf16>,
                  %i: tensor<2x3xi32>, %j: tensor<3x2xi32>,
                  %lt: tensor<16x4xf32>, %rt: tensor<8x5x16xf32>) {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x5xf32> -> tensor<4x5xf32>
  %0 = kiln.matmul %a, %b : tensor<4x16xf32>, tensor<16x5xf32> -> tensor<4x5xf32>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<8x4x16xf32>, tensor<8x16x5xf32> -> tensor<8x4x5xf32>
  %1 = kiln.matmul %ba, %bb : tensor<8x4x16xf32>, tensor<8x16x5xf32> -> tensor<8x4x5xf32>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<8x4x16xf32>, tensor<16x5xf32> -> tensor<8x4x5xf32>
  %2 = kiln.matmul %ba, %b : tensor<8x4x16xf32>, tensor<16x5xf32> -> tensor<8x4x5xf32>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<2x1x4x3xf16>, tensor<6x3x7xf16> -> tensor<2x6x4x7xf16>
  %3 = kiln.matmul %c, %d : tensor<2x1x4x3xf16>, tensor<6x3x7xf16> -> tensor<2x6x4x7xf16>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<2x3xi32>, tensor<3x2xi32> -> tensor<2x2xi32>
  %4 = kiln.matmul %i, %j : tensor<2x3xi32>, tensor<3x2xi32> -> tensor<2x2xi32>
  // Transpose flags read an operand's last two dimensions swapped.
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<16x4xf32>, tensor<16x5xf32> -> tensor<4x5xf32>
  %5 = kiln.matmul %lt, %b transpose_lhs : tensor<16x4xf32>, tensor<16x5xf32> -> tensor<4x5xf32>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<16x4xf32>, tensor<8x5x16xf32> -> tensor<8x4x5xf32>
  %6 = kiln.matmul %lt, %rt transpose_lhs transpose_rhs : tensor<16x4xf32>, tensor<8x5x16xf32> -> tensor<8x4x5xf32>
  return
}

// Every reduction, with and without keepdims; axes may be empty.
// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>, %h: tensor<5xf16>,
                      %d: tensor<2x3xf64>, %i8: tensor<2x3xi8>) {
  // CHECK: kiln.reduce_sum %{{.*}} axes = [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %0 = kiln.reduce_sum %x axes = [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  // CHECK: kiln.reduce_sum %{{.*}} axes = [0, 2] keepdims : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %1 = kiln.reduce_sum %x axes = [0, 2] keepdims : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  // CHECK: kiln.reduce_mean %{{.*}} axes = [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  %2 = kiln.reduce_mean %x axes = [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  // CHECK: kiln.reduce_mean %{{.*}} axes = [0] keepdims : tensor<5xf16> -> tensor<1xf16>
  %3 = kiln.reduce_mean %h axes = [0] keepdims : tensor<5xf16> -> tensor<1xf16>
  // CHECK: kiln.reduce_max %{{.*}} axes = [1] : tensor<2x3xi64> -> tensor<2xi64>
  %4 = kiln.reduce_max %i axes = [1] : tensor<2x3xi64> -> tensor<2xi64>
  // CHECK: kiln.reduce_max %{{.*}} axes = [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  %5 = kiln.reduce_max %x axes = [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  // CHECK: kiln.reduce_min %{{.*}} axes = [0] : tensor<2x3xf64> -> tensor<3xf64>
  %6 = kiln.reduce_min %d axes = [0] : tensor<2x3xf64> -> tensor<3xf64>
  // CHECK: kiln.reduce_min %{{.*}} axes = [0, 1] keepdims : tensor<2x3xi8> -> tensor<1x1xi8>
  %7 = kiln.reduce_min %i8 axes = [0, 1] keepdims : tensor<2x3xi8> -> tensor<1x1xi8>
  // CHECK: kiln.reduce_prod %{{.*}} axes = [0] : tensor<2x3xi8> -> tensor<3xi8>
  %8 = kiln.reduce_prod %i8 axes = [0] : tensor<2x3xi8> -> tensor<3xi8>
  // CHECK: kiln.reduce_prod %{{.*}} axes = [1] keepdims : tensor<2x3xf64> -> tensor<2x1xf64>
  %9 = kiln.reduce_prod %d axes = [1] keepdims : tensor<2x3xf64> -> tensor<2x1xf64>
  // CHECK: kiln.reduce_sum %{{.*}} axes = [] : tensor<2x3xi64> -> tensor<2x3xi64>
  %10 = kiln.reduce_sum %i axes = [] : tensor<2x3xi64> -> tensor<2x3xi64>
  return
}

// Reshape and transpose accept every element type, i1 included, and rank 0.
// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops(%x: tensor<2x3xf32>, %b: tensor<2x3x4xi1>, %s: tensor<i32>,
                     %bf: tensor<4x1xbf16>, %i64: tensor<6xi64>) {
  // CHECK: kiln.reshape %{{.*}} : tensor<2x3xf32> -> tensor<6xf32>
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  // CHECK: kiln.reshape %{{.*}} : tensor<2x3x4xi1> -> tensor<4x6xi1>
  %1 = kiln.reshape %b : tensor<2x3x4xi1> -> tensor<4x6xi1>
  // CHECK: kiln.reshape %{{.*}} : tensor<i32> -> tensor<1x1xi32>
  %2 = kiln.reshape %s : tensor<i32> -> tensor<1x1xi32>
  // CHECK: kiln.reshape %{{.*}} : tensor<6xi64> -> tensor<3x2xi64>
  %3 = kiln.reshape %i64 : tensor<6xi64> -> tensor<3x2xi64>
  // CHECK: kiln.transpose %{{.*}} perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %4 = kiln.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK: kiln.transpose %{{.*}} perm = [2, 0, 1] : tensor<2x3x4xi1> -> tensor<4x2x3xi1>
  %5 = kiln.transpose %b perm = [2, 0, 1] : tensor<2x3x4xi1> -> tensor<4x2x3xi1>
  // CHECK: kiln.transpose %{{.*}} perm = [] : tensor<i32> -> tensor<i32>
  %6 = kiln.transpose %s perm = [] : tensor<i32> -> tensor<i32>
  // CHECK: kiln.transpose %{{.*}} perm = [1, 0] : tensor<4x1xbf16> -> tensor<1x4xbf16>
  %7 = kiln.transpose %bf perm = [1, 0] : tensor<4x1xbf16> -> tensor<1x4xbf16>
  return
}

{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F00000040"
    }
  }
#-}

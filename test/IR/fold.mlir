// RUN: kiln-opt %s --split-input-file --canonicalize | FileCheck %s

// x + (-0.0) folds to x: it is the identity for every float, -0.0 included.
// CHECK-LABEL: func.func @add_negative_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: kiln.add
// CHECK: return %[[X]]
func.func @add_negative_zero(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = kiln.constant dense<-0.0> : tensor<2x3xf32>
  %0 = kiln.add %x, %z : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// x + (+0.0) does not fold for floats: -0.0 + 0.0 is +0.0, not x.
// CHECK-LABEL: func.func @add_positive_zero_not_folded
// CHECK: kiln.add
func.func @add_positive_zero_not_folded(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = kiln.constant dense<0.0> : tensor<2x3xf32>
  %0 = kiln.add %x, %z : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// 0 + x folds to x, also when the zero broadcasts into x's type.
// CHECK-LABEL: func.func @zero_add
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi32>)
// CHECK-NOT: kiln.add
// CHECK: return %[[X]]
func.func @zero_add(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %z = kiln.constant dense<0> : tensor<3xi32>
  %0 = kiln.add %z, %x : tensor<3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// x - 0 folds to x.
// CHECK-LABEL: func.func @sub_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NOT: kiln.sub
// CHECK: return %[[X]]
func.func @sub_zero(%x: tensor<4xf16>) -> tensor<4xf16> {
  %z = kiln.constant dense<0.0> : tensor<4xf16>
  %0 = kiln.sub %x, %z : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// 0 - x is a negation, not x: it stays.
// CHECK-LABEL: func.func @zero_sub_not_folded
// CHECK: kiln.sub
func.func @zero_sub_not_folded(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = kiln.constant dense<0.0> : tensor<4xf32>
  %0 = kiln.sub %z, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// x * 1 folds to x.
// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf64>)
// CHECK-NOT: kiln.mul
// CHECK: return %[[X]]
func.func @mul_one(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %one = kiln.constant dense<1.0> : tensor<2x3xf64>
  %0 = kiln.mul %x, %one : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// -----

// 1 * x folds to x, here with a broadcasting i8 one.
// CHECK-LABEL: func.func @one_mul
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi8>)
// CHECK-NOT: kiln.mul
// CHECK: return %[[X]]
func.func @one_mul(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %one = kiln.constant dense<1> : tensor<3xi8>
  %0 = kiln.mul %one, %x : tensor<3xi8>, tensor<2x3xi8> -> tensor<2x3xi8>
  return %0 : tensor<2x3xi8>
}

// -----

// x / 1 folds to x.
// CHECK-LABEL: func.func @div_one
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NOT: kiln.div
// CHECK: return %[[X]]
func.func @div_one(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %one = kiln.constant dense<1.0> : tensor<4xbf16>
  %0 = kiln.div %x, %one : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// x + 0 does not fold when the zero broadcasts x to a larger type.
// CHECK-LABEL: func.func @add_zero_broadcast_not_folded
// CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
func.func @add_zero_broadcast_not_folded(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %z = kiln.constant dense<0.0> : tensor<2x3xf32>
  %0 = kiln.add %x, %z : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// 1 * x does not fold when the one broadcasts x to a larger type (the
// canonicalizer may move the constant to the right of the commutative mul).
// CHECK-LABEL: func.func @one_mul_broadcast_not_folded
// CHECK: kiln.mul {{.*}} -> tensor<4x3xi64>
func.func @one_mul_broadcast_not_folded(%x: tensor<3xi64>) -> tensor<4x3xi64> {
  %one = kiln.constant dense<1> : tensor<4x1xi64>
  %0 = kiln.mul %one, %x : tensor<4x1xi64>, tensor<3xi64> -> tensor<4x3xi64>
  return %0 : tensor<4x3xi64>
}

// -----

// A non-identity constant does not fold: x + 1 stays.
// CHECK-LABEL: func.func @add_one_not_folded
// CHECK: kiln.add
func.func @add_one_not_folded(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = kiln.constant dense<1.0> : tensor<4xf32>
  %0 = kiln.add %x, %one : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Adding two float constants folds elementwise.
// CHECK-LABEL: func.func @add_constants
// CHECK: %[[C:.*]] = kiln.constant dense<[4.000000e+00, 6.500000e+00]> : tensor<2xf32>
// CHECK-NOT: kiln.add
// CHECK: return %[[C]]
func.func @add_constants() -> tensor<2xf32> {
  %a = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = kiln.constant dense<[3.0, 4.5]> : tensor<2xf32>
  %0 = kiln.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Subtracting two i64 constants folds elementwise.
// CHECK-LABEL: func.func @sub_constants
// CHECK: %[[C:.*]] = kiln.constant dense<[-2, 10]> : tensor<2xi64>
// CHECK-NOT: kiln.sub
// CHECK: return %[[C]]
func.func @sub_constants() -> tensor<2xi64> {
  %a = kiln.constant dense<[1, 12]> : tensor<2xi64>
  %b = kiln.constant dense<[3, 2]> : tensor<2xi64>
  %0 = kiln.sub %a, %b : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// Multiplying two splat constants gives a splat; i8 wraps around.
// CHECK-LABEL: func.func @mul_constants
// CHECK: %[[C:.*]] = kiln.constant dense<44> : tensor<2x2xi8>
// CHECK-NOT: kiln.mul
// CHECK: return %[[C]]
func.func @mul_constants() -> tensor<2x2xi8> {
  %a = kiln.constant dense<100> : tensor<2x2xi8>
  %b = kiln.constant dense<3> : tensor<2x2xi8>
  %0 = kiln.mul %a, %b : tensor<2x2xi8>, tensor<2x2xi8> -> tensor<2x2xi8>
  return %0 : tensor<2x2xi8>
}

// -----

// Dividing two float constants folds elementwise.
// CHECK-LABEL: func.func @div_float_constants
// CHECK: %[[C:.*]] = kiln.constant dense<[2.500000e-01, -3.000000e+00]> : tensor<2xf64>
// CHECK-NOT: kiln.div
// CHECK: return %[[C]]
func.func @div_float_constants() -> tensor<2xf64> {
  %a = kiln.constant dense<[1.0, 6.0]> : tensor<2xf64>
  %b = kiln.constant dense<[4.0, -2.0]> : tensor<2xf64>
  %0 = kiln.div %a, %b : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
  return %0 : tensor<2xf64>
}

// -----

// Integer division of constants truncates toward zero.
// CHECK-LABEL: func.func @div_int_constants
// CHECK: %[[C:.*]] = kiln.constant dense<[3, -3]> : tensor<2xi32>
// CHECK-NOT: kiln.div
// CHECK: return %[[C]]
func.func @div_int_constants() -> tensor<2xi32> {
  %a = kiln.constant dense<[7, -7]> : tensor<2xi32>
  %b = kiln.constant dense<[2, 2]> : tensor<2xi32>
  %0 = kiln.div %a, %b : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// Integer division by zero is left to run time, even if only one element is zero.
// CHECK-LABEL: func.func @div_int_by_zero_not_folded
// CHECK: kiln.div
func.func @div_int_by_zero_not_folded() -> tensor<2xi32> {
  %a = kiln.constant dense<[7, -7]> : tensor<2xi32>
  %b = kiln.constant dense<[0, 2]> : tensor<2xi32>
  %0 = kiln.div %a, %b : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// INT_MIN / -1 overflows and is left to run time.
// CHECK-LABEL: func.func @div_int_min_by_minus_one_not_folded
// CHECK: kiln.div
func.func @div_int_min_by_minus_one_not_folded() -> tensor<i8> {
  %a = kiln.constant dense<-128> : tensor<i8>
  %b = kiln.constant dense<-1> : tensor<i8>
  %0 = kiln.div %a, %b : tensor<i8>, tensor<i8> -> tensor<i8>
  return %0 : tensor<i8>
}

// -----

// Constants of different shapes fold through broadcasting.
// CHECK-LABEL: func.func @add_constants_broadcast
// CHECK: kiln.constant dense<{{\[\[}}4.000000e+00, 5.500000e+00], [2.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>
// CHECK-NOT: kiln.add
func.func @add_constants_broadcast() -> tensor<2x2xf32> {
  %a = kiln.constant dense<1.0> : tensor<2xf32>
  %b = kiln.constant dense<[[3.0, 4.5], [1.0, 2.0]]> : tensor<2x2xf32>
  %0 = kiln.add %a, %b : tensor<2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// neg(neg(x)) folds to x.
// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
// CHECK-NOT: kiln.neg
// CHECK: return %[[X]]
func.func @neg_neg(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = kiln.neg %x : tensor<4xi32>
  %1 = kiln.neg %0 : tensor<4xi32>
  return %1 : tensor<4xi32>
}

// -----

// neg of a float constant folds to the negated constant.
// CHECK-LABEL: func.func @neg_constant
// CHECK: %[[C:.*]] = kiln.constant dense<[-1.000000e+00, 2.000000e+00]> : tensor<2xf16>
// CHECK-NOT: kiln.neg
// CHECK: return %[[C]]
func.func @neg_constant() -> tensor<2xf16> {
  %a = kiln.constant dense<[1.0, -2.0]> : tensor<2xf16>
  %0 = kiln.neg %a : tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// relu(relu(x)) folds to relu(x).
// CHECK-LABEL: func.func @relu_relu
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi8>)
// CHECK: %[[R:.*]] = kiln.relu %[[X]]
// CHECK-NOT: kiln.relu
// CHECK: return %[[R]]
func.func @relu_relu(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %0 = kiln.relu %x : tensor<2x3xi8>
  %1 = kiln.relu %0 : tensor<2x3xi8>
  return %1 : tensor<2x3xi8>
}

// -----

// A reshape to the input's own type folds away.
// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]]
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// reshape(reshape(x)) becomes one reshape of x.
// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NOT: kiln.reshape
// CHECK: return %[[R]]
func.func @reshape_reshape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = kiln.reshape %0 : tensor<6xf32> -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// reshape(reshape(x)) back to x's type disappears.
// CHECK-LABEL: func.func @reshape_reshape_cancel
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi1>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]]
func.func @reshape_reshape_cancel(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %0 = kiln.reshape %x : tensor<2x3xi1> -> tensor<6xi1>
  %1 = kiln.reshape %0 : tensor<6xi1> -> tensor<2x3xi1>
  return %1 : tensor<2x3xi1>
}

// -----

// A reshape of a dense constant folds to the reshaped constant.
// CHECK-LABEL: func.func @reshape_constant
// CHECK: %[[C:.*]] = kiln.constant dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK-NOT: kiln.reshape
// CHECK: return %[[C]]
func.func @reshape_constant() -> tensor<2x2xi64> {
  %a = kiln.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %0 = kiln.reshape %a : tensor<4xi64> -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

// An identity perm folds away.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: kiln.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.transpose %x perm = [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Two transposes compose into one: [1, 2, 0] then [1, 0, 2] is [2, 1, 0].
// CHECK-LABEL: func.func @transpose_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.*]] = kiln.transpose %[[X]] perm = [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[T]]
func.func @transpose_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = kiln.transpose %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = kiln.transpose %0 perm = [1, 0, 2] : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// A transpose followed by its inverse cancels.
// CHECK-LABEL: func.func @transpose_transpose_cancel
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: kiln.transpose
// CHECK: return %[[X]]
func.func @transpose_transpose_cancel(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.transpose %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = kiln.transpose %0 perm = [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// A transpose of a splat constant is a splat of the new shape.
// CHECK-LABEL: func.func @transpose_splat
// CHECK: %[[C:.*]] = kiln.constant dense<5.000000e+00> : tensor<3x2xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[C]]
func.func @transpose_splat() -> tensor<3x2xf32> {
  %a = kiln.constant dense<5.0> : tensor<2x3xf32>
  %0 = kiln.transpose %a perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// A transpose of a non-splat constant is not folded.
// CHECK-LABEL: func.func @transpose_non_splat_not_folded
// CHECK: kiln.transpose
func.func @transpose_non_splat_not_folded() -> tensor<2x2xf32> {
  %a = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = kiln.transpose %a perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// A reduction over no axes folds to its input, with or without keepdims.
// CHECK-LABEL: func.func @reduce_empty_axes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NOT: kiln.reduce
// CHECK: return %[[X]], %[[I]]
func.func @reduce_empty_axes(%x: tensor<2x3xf32>, %i: tensor<4xi32>) -> (tensor<2x3xf32>, tensor<4xi32>) {
  %0 = kiln.reduce_sum %x axes = [] : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = kiln.reduce_mean %0 axes = [] keepdims : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = kiln.reduce_max %1 axes = [] : tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = kiln.reduce_min %i axes = [] : tensor<4xi32> -> tensor<4xi32>
  %4 = kiln.reduce_prod %3 axes = [] : tensor<4xi32> -> tensor<4xi32>
  return %2, %4 : tensor<2x3xf32>, tensor<4xi32>
}

// -----

// A reduction over real axes stays.
// CHECK-LABEL: func.func @reduce_not_folded
// CHECK: kiln.reduce_sum
func.func @reduce_not_folded(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = kiln.reduce_sum %x axes = [1] keepdims : tensor<2x3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Shape arithmetic on constants folds: comparison, select, cast, bitwise,
// remainder, min/max and integer negation (what ONNX's expanded functions
// compute on shapes).
// CHECK-LABEL: func.func @shape_arithmetic
// CHECK-DAG: kiln.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-DAG: kiln.constant dense<[2, 5, 7]> : tensor<3xi64>
// CHECK-DAG: kiln.constant dense<[2.000000e+00, 5.000000e+00, 7.000000e+00]> : tensor<3xf32>
// CHECK-DAG: kiln.constant dense<[-2, -5, -7]> : tensor<3xi64>
// CHECK-DAG: kiln.constant dense<[2, 2, 1]> : tensor<3xi64>
// CHECK-DAG: kiln.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK-DAG: kiln.constant dense<[3, 5, 7]> : tensor<3xi64>
// CHECK-NOT: kiln.cmp
// CHECK-NOT: kiln.select
// CHECK-NOT: kiln.cast
// CHECK-NOT: kiln.neg
// CHECK-NOT: kiln.rem
// CHECK-NOT: kiln.not
// CHECK-NOT: kiln.max
func.func @shape_arithmetic() -> (tensor<3xi1>, tensor<3xi64>, tensor<3xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi1>, tensor<3xi64>) {
  %a = kiln.constant dense<[2, 5, 7]> : tensor<3xi64>
  %b = kiln.constant dense<3> : tensor<i64>
  %lt = kiln.cmp lt, %a, %b : tensor<3xi64>, tensor<i64> -> tensor<3xi1>
  %sel = kiln.select %lt, %a, %a : tensor<3xi1>, tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  %f = kiln.cast %a : tensor<3xi64> -> tensor<3xf32>
  %n = kiln.neg %a : tensor<3xi64>
  %r = kiln.rem %a, %b : tensor<3xi64>, tensor<i64> -> tensor<3xi64>
  %not = kiln.not %lt : tensor<3xi1>
  %m = kiln.max %a, %b : tensor<3xi64>, tensor<i64> -> tensor<3xi64>
  return %lt, %sel, %f, %n, %r, %not, %m : tensor<3xi1>, tensor<3xi64>, tensor<3xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi1>, tensor<3xi64>
}

// -----

// A float that does not fit the integer type is left to run time.
// CHECK-LABEL: func.func @cast_out_of_range_not_folded
// CHECK: kiln.cast
func.func @cast_out_of_range_not_folded() -> tensor<i8> {
  %a = kiln.constant dense<1000.0> : tensor<f32>
  %0 = kiln.cast %a : tensor<f32> -> tensor<i8>
  return %0 : tensor<i8>
}

// -----

// Large results are not materialized by folding (weights stay as they are).
// CHECK-LABEL: func.func @large_broadcast_not_folded
// CHECK: kiln.add
func.func @large_broadcast_not_folded(%x: tensor<1xf32>) -> tensor<300x300xf32> {
  %a = kiln.constant dense<1.0> : tensor<300x1xf32>
  %b = kiln.constant dense_resource<big> : tensor<300x300xf32>
  %0 = kiln.add %a, %b : tensor<300x1xf32>, tensor<300x300xf32> -> tensor<300x300xf32>
  return %0 : tensor<300x300xf32>
}

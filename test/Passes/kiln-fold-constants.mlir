// RUN: kiln-opt %s --split-input-file --kiln-fold-constants | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-fold-constants="max-elements=4" | FileCheck %s --check-prefix=SMALL

// A shape computation (transpose, then a product per row) folds in one sweep.
// CHECK-LABEL: func.func @shape_chain
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<[8, 15]> : tensor<2xi64>
// CHECK-NEXT: return %[[C]]
func.func @shape_chain() -> tensor<2xi64> {
  %s = kiln.constant dense<[[2, 3], [4, 5]]> : tensor<2x2xi64>
  %t = kiln.transpose %s perm = [1, 0] : tensor<2x2xi64> -> tensor<2x2xi64>
  %p = kiln.reduce_prod %t axes = [1] : tensor<2x2xi64> -> tensor<2xi64>
  return %p : tensor<2xi64>
}

// -----

// f32 arithmetic rounds like f32: 1 + 1e-8 is 1 in f32 (not in f64).
// CHECK-LABEL: func.func @f32_rounding
// CHECK-NEXT: kiln.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT: kiln.constant dense<1.00000000{{[0-9]*}}> : tensor<2xf64>
func.func @f32_rounding() -> (tensor<2xf32>, tensor<2xf64>) {
  %one = kiln.constant dense<1.0> : tensor<2xf32>
  %eps = kiln.constant dense<1.0e-8> : tensor<2xf32>
  %r = kiln.add %one, %eps : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %one64 = kiln.constant dense<1.0> : tensor<2xf64>
  %eps64 = kiln.constant dense<1.0e-8> : tensor<2xf64>
  %r64 = kiln.add %one64, %eps64 : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
  return %r, %r64 : tensor<2xf32>, tensor<2xf64>
}

// -----

// Data movement on constants: concat, strided slice, gather with a negative
// index, broadcast, and a cast of the result.
// CHECK-LABEL: func.func @data_movement
// CHECK-NEXT: kiln.constant dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: kiln.constant dense<{{\[}}[2, 4], [2, 4]]> : tensor<2x2xi64>
// CHECK-NEXT: return
func.func @data_movement() -> (tensor<2xf32>, tensor<2x2xi64>) {
  %a = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %b = kiln.constant dense<[3, 4]> : tensor<2xi64>
  %c = kiln.concat %a, %b axis = 0 : tensor<2xi64>, tensor<2xi64> -> tensor<4xi64>
  %s = kiln.slice %c starts = [3] strides = [-2] : tensor<4xi64> -> tensor<2xi64>
  %i = kiln.constant dense<[-1, 0]> : tensor<2xi64>
  %g = kiln.gather %s, %i axis = 0 : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  %f = kiln.cast %g : tensor<2xi64> -> tensor<2xf32>
  %bc = kiln.broadcast %g : tensor<2xi64> -> tensor<2x2xi64>
  return %f, %bc : tensor<2xf32>, tensor<2x2xi64>
}

// -----

// Elementwise math on initializers, computed in the element type: exp in f16,
// sqrt then reciprocal in f32, a comparison and a select.
// CHECK-LABEL: func.func @math
// CHECK-NEXT: kiln.constant dense<[1.000000e+00, 2.718750e+00]> : tensor<2xf16>
// CHECK-NEXT: kiln.constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK-NEXT: kiln.constant dense<[4.000000e+00, 1.600000e+01]> : tensor<2xf32>
// CHECK-NEXT: return
func.func @math() -> (tensor<2xf16>, tensor<2xf32>, tensor<2xf32>) {
  %h = kiln.constant dense<[0.0, 1.0]> : tensor<2xf16>
  %e = kiln.exp %h : tensor<2xf16>
  %v = kiln.constant dense<[4.0, 16.0]> : tensor<2xf32>
  %s = kiln.sqrt %v : tensor<2xf32>
  %r = kiln.reciprocal %s : tensor<2xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %m = kiln.cmp lt, %r, %one : tensor<2xf32>, tensor<f32> -> tensor<2xi1>
  %sel = kiln.select %m, %s, %one : tensor<2xi1>, tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %q = kiln.mul %sel, %sel : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %sq = kiln.sqrt %q : tensor<2xf32>
  %w = kiln.mul %sq, %s : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %e, %r, %w : tensor<2xf16>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Reductions and argmax on a constant: sum, mean, max over axes.
// CHECK-LABEL: func.func @reductions
// CHECK-NEXT: kiln.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: kiln.constant dense<2.500000e+00> : tensor<f32>
// CHECK-NEXT: kiln.constant dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: kiln.constant dense<1> : tensor<2xi64>
func.func @reductions() -> (tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<2xi64>) {
  %c = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = kiln.reduce_sum %c axes = [0] : tensor<2x2xf32> -> tensor<2xf32>
  %m = kiln.reduce_mean %c axes = [0, 1] : tensor<2x2xf32> -> tensor<f32>
  %x = kiln.reduce_max %c axes = [0] : tensor<2x2xf32> -> tensor<2xf32>
  %a = kiln.argmax %c axis = 1 : tensor<2x2xf32> -> tensor<2xi64>
  return %s, %m, %x, %a : tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<2xi64>
}

// -----

// An op with a non-constant operand stays.
// CHECK-LABEL: func.func @non_constant_operand
// CHECK: kiln.add
func.func @non_constant_operand(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = kiln.add %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// Run-time behaviour is not folded: integer division by zero, matmul and
// conv (not evaluated), and arithmetic-free casts to narrow floats (left to
// the runtime's rounding). Nothing crashes on any element type.
// CHECK-LABEL: func.func @left_to_run_time
// CHECK: kiln.div
// CHECK: kiln.matmul
// CHECK: kiln.cast
// CHECK: return
func.func @left_to_run_time() -> (tensor<2xi32>, tensor<2x2xf32>, tensor<2xf8E4M3FN>) {
  %a = kiln.constant dense<[1, 2]> : tensor<2xi32>
  %z = kiln.constant dense<[1, 0]> : tensor<2xi32>
  %d = kiln.div %a, %z : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  %m = kiln.constant dense<1.0> : tensor<2x2xf32>
  %p = kiln.matmul %m, %m : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %f = kiln.constant dense<[0.3, 500.0]> : tensor<2xf32>
  %n = kiln.cast %f : tensor<2xf32> -> tensor<2xf8E4M3FN>
  return %d, %p, %n : tensor<2xi32>, tensor<2x2xf32>, tensor<2xf8E4M3FN>
}

// -----

// Data movement works on storage-only types too: a transpose of f8 and i4.
// CHECK-LABEL: func.func @narrow_data_movement
// CHECK-NOT: kiln.transpose
// CHECK: kiln.constant dense<{{\[}}[1, 3], [2, 4]]> : tensor<2x2xi4>
func.func @narrow_data_movement() -> (tensor<2x2xf8E4M3FN>, tensor<2x2xi4>) {
  %f = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf8E4M3FN>
  %tf = kiln.transpose %f perm = [1, 0] : tensor<2x2xf8E4M3FN> -> tensor<2x2xf8E4M3FN>
  %i = kiln.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi4>
  %ti = kiln.transpose %i perm = [1, 0] : tensor<2x2xi4> -> tensor<2x2xi4>
  return %tf, %ti : tensor<2x2xf8E4M3FN>, tensor<2x2xi4>
}

// -----

// A result larger than max-elements is not folded (it would duplicate a big
// constant); the default limit folds it.
// CHECK-LABEL: func.func @max_elements
// CHECK-NOT: kiln.broadcast
// SMALL-LABEL: func.func @max_elements
// SMALL: kiln.broadcast
func.func @max_elements() -> tensor<2x4xf32> {
  %c = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = kiln.broadcast %c : tensor<4xf32> -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}

// -----

// A transpose that is its weight's only user replaces the weight whatever
// its size: nothing is stored twice (a Gemm's transB weight). With a second
// user the limit holds.
// CHECK-LABEL: func.func @sole_user_transpose
// CHECK: kiln.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: kiln.transpose
// SMALL-LABEL: func.func @sole_user_transpose
// SMALL: kiln.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// SMALL-NOT: kiln.transpose
func.func @sole_user_transpose() -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = kiln.transpose %w perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @shared_transpose
// CHECK-NOT: kiln.transpose
// SMALL-LABEL: func.func @shared_transpose
// SMALL: kiln.transpose
func.func @shared_transpose() -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = kiln.transpose %w perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t, %w : tensor<3x2xf32>, tensor<2x3xf32>
}

// -----

// A weight scaled per channel (a folded BatchNorm) by its only user is
// replaced by the scaled weight whatever its size; with a second user of
// the weight the limit holds.
// CHECK-LABEL: func.func @sole_user_scale
// CHECK: kiln.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00], [1.200000e+01, 1.500000e+01, 1.800000e+01]]> : tensor<2x3xf32>
// CHECK-NOT: kiln.mul
// SMALL-LABEL: func.func @sole_user_scale
// SMALL: kiln.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00], [1.200000e+01, 1.500000e+01, 1.800000e+01]]> : tensor<2x3xf32>
// SMALL-NOT: kiln.mul
func.func @sole_user_scale() -> tensor<2x3xf32> {
  %s = kiln.constant dense<[[2.0], [3.0]]> : tensor<2x1xf32>
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %m = kiln.mul %s, %w : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %m : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @shared_scale
// CHECK-NOT: kiln.mul
// SMALL-LABEL: func.func @shared_scale
// SMALL: kiln.mul
func.func @shared_scale() -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = kiln.constant dense<[[2.0], [3.0]]> : tensor<2x1xf32>
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %m = kiln.mul %s, %w : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %m, %w : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Transposes of raw storage with a rank-3 permutation, for 8-byte and
// 2-byte elements: element (i, j, k) of the result is (j, k, i) of the input.
// CHECK-LABEL: func.func @transpose_rank3
// CHECK: kiln.constant dense<{{\[}}{{\[}}[0, 3], [6, 9]], {{\[}}[1, 4], [7, 10]], {{\[}}[2, 5], [8, 11]]]> : tensor<3x2x2xi64>
// CHECK: kiln.constant dense<{{\[}}{{\[}}[0.000000e+00, 3.000000e+00], [6.000000e+00, 9.000000e+00]], {{\[}}[1.000000e+00, 4.000000e+00], [7.000000e+00, 1.000000e+01]], {{\[}}[2.000000e+00, 5.000000e+00], [8.000000e+00, 1.100000e+01]]]> : tensor<3x2x2xf16>
// CHECK-NOT: kiln.transpose
func.func @transpose_rank3() -> (tensor<3x2x2xi64>, tensor<3x2x2xf16>) {
  %i = kiln.constant dense<[[[0, 1, 2], [3, 4, 5]], [[6, 7, 8], [9, 10, 11]]]> : tensor<2x2x3xi64>
  %ti = kiln.transpose %i perm = [2, 0, 1] : tensor<2x2x3xi64> -> tensor<3x2x2xi64>
  %h = kiln.constant dense<[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]]> : tensor<2x2x3xf16>
  %th = kiln.transpose %h perm = [2, 0, 1] : tensor<2x2x3xf16> -> tensor<3x2x2xf16>
  return %ti, %th : tensor<3x2x2xi64>, tensor<3x2x2xf16>
}

// -----

// A matrix transpose (the tiled path) of a 3x5 f32 constant.
// CHECK-LABEL: func.func @transpose_matrix
// CHECK: kiln.constant dense<{{\[}}[0.000000e+00, 5.000000e+00, 1.000000e+01], [1.000000e+00, 6.000000e+00, 1.100000e+01], [2.000000e+00, 7.000000e+00, 1.200000e+01], [3.000000e+00, 8.000000e+00, 1.300000e+01], [4.000000e+00, 9.000000e+00, 1.400000e+01]]> : tensor<5x3xf32>
// CHECK-NOT: kiln.transpose
func.func @transpose_matrix() -> tensor<5x3xf32> {
  %m = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0], [10.0, 11.0, 12.0, 13.0, 14.0]]> : tensor<3x5xf32>
  %t = kiln.transpose %m perm = [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32>
  return %t : tensor<5x3xf32>
}

// -----

// f32 and f64 add, sub, mul and div over broadcast operands are computed in
// the machine's arithmetic: the same rounding as APFloat, denormals kept
// (expected values from numpy float32/float64), and a NaN result (0 * inf)
// is APFloat's positive quiet NaN, not the hardware's negative default NaN.
// (numpy's 0 * inf is 0xFFC00000.)
// CHECK-LABEL: func.func @native_arithmetic
// CHECK: kiln.constant dense<{{\[}}[3.000000e-01, 0.000000e+00, 0x7F800000], [0.000000e+00, 0.000000e+00, 0x7FC00000]]> : tensor<2x3xf32>
// CHECK: kiln.constant dense<{{\[}}[0.30000000000000004, 3.100000e+00, 0x7FF0000000000000], [0.79999999999999993, 0.69999999999999996, 0xFFF0000000000000]]> : tensor<2x3xf64>
// CHECK: kiln.constant dense<{{\[}}[2.900000e+00, -1.000000e-01, 0x7F800000], [3.000000e+00, 1.401300e-45, 0x7F800000]]> : tensor<2x3xf32>
// CHECK: kiln.constant dense<{{\[}}[3.000000e+01, 1.401300e-44, 0x7F800000], [0x7F800000, 0x7F800000, 0x7F800000]]> : tensor<2x3xf32>
// CHECK-NOT: kiln.mul
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.sub
// CHECK-NOT: kiln.div
func.func @native_arithmetic() -> (tensor<2x3xf32>, tensor<2x3xf64>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = kiln.constant dense<[[0.1], [0.0]]> : tensor<2x1xf32>
  %b = kiln.constant dense<[[3.0, 0x00000001, 0x7F800000]]> : tensor<1x3xf32>
  %m = kiln.mul %a, %b : tensor<2x1xf32>, tensor<1x3xf32> -> tensor<2x3xf32>
  %a64 = kiln.constant dense<[[0.1], [0.7]]> : tensor<2x1xf64>
  %c = kiln.constant dense<[[0.2, 3.0, 0x7FF0000000000000], [0.1, 1.0e-300, 0xFFF0000000000000]]> : tensor<2x3xf64>
  %s = kiln.add %a64, %c : tensor<2x1xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
  %d = kiln.sub %b, %a : tensor<1x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  %q = kiln.div %b, %a : tensor<1x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  return %m, %s, %d, %q : tensor<2x3xf32>, tensor<2x3xf64>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A constant that a slice and the function's return both read: the slice
// folds, the constant stays for the return.
// CHECK-LABEL: func.func @slice_of_returned_constant
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[\[}}4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<1x3xf32>
// CHECK-NOT: kiln.slice
// CHECK: return %[[W]], %[[S]]
func.func @slice_of_returned_constant() -> (tensor<2x3xf32>, tensor<1x3xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = kiln.slice %w starts = [1, 0] strides = [1, 1] : tensor<2x3xf32> -> tensor<1x3xf32>
  return %w, %s : tensor<2x3xf32>, tensor<1x3xf32>
}

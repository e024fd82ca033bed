// RUN: kiln-opt %s --split-input-file --verify-diagnostics

// Errors found by result-type inference are followed by MLIR's generic
// "failed to infer returned types" on the same op, so those cases expect both.

// Binary ops need operands of one element type.
func.func @binary_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{expects operands of equal element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

// Trailing dimensions 4 and 3 do not broadcast.
func.func @binary_not_broadcastable(%a: tensor<2x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{expects broadcast-compatible shapes, got [2, 4] and [3]}}
  // expected-error @+1 {{'kiln.sub' op failed to infer returned types}}
  %0 = kiln.sub %a, %b : tensor<2x4xf32>, tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

// A non-trailing dimension that differs and is not 1 does not broadcast either.
func.func @binary_not_broadcastable_leading(%a: tensor<2x3xi32>, %b: tensor<5x3xi32>) {
  // expected-error @+2 {{expects broadcast-compatible shapes, got [2, 3] and [5, 3]}}
  // expected-error @+1 {{'kiln.mul' op failed to infer returned types}}
  %0 = kiln.mul %a, %b : tensor<2x3xi32>, tensor<5x3xi32> -> tensor<2x3xi32>
  return
}

// -----

// The declared result type must be the broadcast type.
func.func @binary_wrong_result_type(%a: tensor<4xf32>) {
  // expected-error @+2 {{'kiln.div' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'kiln.div' op failed to infer returned types}}
  %0 = kiln.div %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Binary ops are numeric: i1 is not accepted.
func.func @binary_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'kiln.add' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<4xi1>'}}
  %0 = kiln.add %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

// Shapes must be static.
func.func @dynamic_shape(%a: tensor<?xf32>) {
  // expected-error @+1 {{'kiln.relu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<?xf32>'}}
  %0 = kiln.relu %a : tensor<?xf32>
  return
}

// -----

// exp is defined on floats only.
func.func @exp_of_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = kiln.exp %a : tensor<4xi32>
  return
}

// -----

// A unary op's result has its operand's type (only expressible in generic form).
func.func @unary_wrong_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.neg' op requires the same type for all operands and results}}
  %0 = "kiln.neg"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Matmul needs rank 2 or more on both sides.
func.func @matmul_rank1(%a: tensor<4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{expects operands of rank 2 or more, got 1 and 2}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<4xf32>, tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----

// With transpose_rhs the right operand's last dimension is contracted.
func.func @matmul_transposed_k_mismatch(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{expects lhs columns to equal rhs rows, got 4 and 3}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b transpose_rhs : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
  return
}

// -----

// Matmul operands must share their element type.
func.func @matmul_element_type_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+2 {{expects operands of equal element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf16> -> tensor<2x4xf32>
  return
}

// -----

// The contracted dimensions (lhs columns, rhs rows) must be equal.
func.func @matmul_k_mismatch(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+2 {{expects lhs columns to equal rhs rows, got 4 and 5}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<2x4xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Batch dimensions 2 and 3 do not broadcast.
func.func @matmul_batch_mismatch(%a: tensor<2x2x4xf32>, %b: tensor<3x4x3xf32>) {
  // expected-error @+2 {{expects broadcast-compatible batch dimensions, got [2] and [3]}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<2x2x4xf32>, tensor<3x4x3xf32> -> tensor<2x2x3xf32>
  return
}

// -----

// The declared matmul result must be [M, N].
func.func @matmul_wrong_result_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'kiln.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  return
}

// -----

// A reduction axis equal to the rank is out of range.
func.func @reduce_axis_too_large(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects axes in [0, 2), got 2}}
  // expected-error @+1 {{'kiln.reduce_sum' op failed to infer returned types}}
  %0 = kiln.reduce_sum %a axes = [2] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Negative axes are not accepted (the importer normalizes them).
func.func @reduce_axis_negative(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects axes in [0, 2), got -1}}
  // expected-error @+1 {{'kiln.reduce_prod' op failed to infer returned types}}
  %0 = kiln.reduce_prod %a axes = [-1] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// Axes must be sorted.
func.func @reduce_axes_decreasing(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects strictly increasing axes, got [1, 0]}}
  // expected-error @+1 {{'kiln.reduce_max' op failed to infer returned types}}
  %0 = kiln.reduce_max %a axes = [1, 0] : tensor<2x3xf32> -> tensor<f32>
  return
}

// -----

// Axes must not repeat.
func.func @reduce_axes_repeated(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects strictly increasing axes, got [1, 1]}}
  // expected-error @+1 {{'kiln.reduce_min' op failed to infer returned types}}
  %0 = kiln.reduce_min %a axes = [1, 1] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// Without keepdims the reduced dimension is removed, so 2x1 is wrong.
func.func @reduce_wrong_result_type(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'kiln.reduce_sum' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error @+1 {{'kiln.reduce_sum' op failed to infer returned types}}
  %0 = kiln.reduce_sum %a axes = [1] : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

// -----

// reduce_mean is defined on floats only.
func.func @reduce_mean_of_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.reduce_mean' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = kiln.reduce_mean %a axes = [0] : tensor<4xi32> -> tensor<i32>
  return
}

// -----

// Reshape keeps the number of elements.
func.func @reshape_count_mismatch(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.reshape' op expects the same number of elements, got 6 in the input and 5 in the result}}
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<5xf32>
  return
}

// -----

// Reshape keeps the element type.
func.func @reshape_element_type_mismatch(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.reshape' op expects the result element type to equal the input's, got 'f16' and 'f32'}}
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<6xf16>
  return
}

// -----

// perm has one entry per input dimension.
func.func @transpose_perm_wrong_size(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects perm of size 2 (the input rank), got 1}}
  // expected-error @+1 {{'kiln.transpose' op failed to infer returned types}}
  %0 = kiln.transpose %a perm = [0] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// A repeated entry is not a permutation.
func.func @transpose_perm_repeated(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects perm to be a permutation of [0, 2), got [0, 0]}}
  // expected-error @+1 {{'kiln.transpose' op failed to infer returned types}}
  %0 = kiln.transpose %a perm = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

// An entry out of [0, rank) is not a permutation.
func.func @transpose_perm_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects perm to be a permutation of [0, 2), got [0, 2]}}
  // expected-error @+1 {{'kiln.transpose' op failed to infer returned types}}
  %0 = kiln.transpose %a perm = [0, 2] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

// The declared transpose result must be the permuted shape.
func.func @transpose_wrong_result_type(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'kiln.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'kiln.transpose' op failed to infer returned types}}
  %0 = kiln.transpose %a perm = [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Signed (si) integers are not a kiln element type: signed is signless.
func.func @signed_element(%a: tensor<4xsi32>) {
  // expected-error @+1 {{'kiln.transpose' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer or f8E4M3FN type or f8E4M3FNUZ type or f8E5M2 type or f8E5M2FNUZ type or f8E8M0FNU type or f4E2M1FN type or 4-bit signless integer or 4-bit unsigned integer or 2-bit signless integer or 2-bit unsigned integer values, but got 'tensor<4xsi32>'}}
  %0 = kiln.transpose %a perm = [0] : tensor<4xsi32> -> tensor<4xsi32>
  return
}

// -----

// A sparse constant is neither dense nor dense_resource.
func.func @constant_sparse() {
  // expected-error @+1 {{'kiln.constant' op expects a dense or dense_resource value, got sparse<0, 1.000000e+00> : tensor<4xf32>}}
  %0 = kiln.constant sparse<[[0]], [1.0]> : tensor<4xf32>
  return
}

// -----

// A constant's result type is its value's type (only expressible in generic form).
func.func @constant_type_mismatch() {
  // expected-error @+1 {{'kiln.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "kiln.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf16>
  return
}

// -----

// round_mode is one of up, down, nearest.
func.func @cast_bad_round_mode(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.cast' op expects round_mode 'up', 'down' or 'nearest', got 'odd'}}
  %0 = kiln.cast %a {round_mode = "odd"} : tensor<4xf32> -> tensor<4xf8E8M0FNU>
  return
}

// -----

// The narrow types are storage only: no comparison on them.
func.func @cmp_narrow(%a: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'kiln.cmp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<4xf8E4M3FN>'}}
  %0 = kiln.cmp eq, %a, %a : tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN> -> tensor<4xi1>
  return
}

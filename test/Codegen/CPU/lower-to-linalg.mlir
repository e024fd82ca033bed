// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg))' | FileCheck %s

// Tensor inputs are marked not writable; other arguments get no attribute.
// CHECK-LABEL: func.func @inputs_not_writable
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {bufferization.writable = false}, %{{.*}}: tensor<2x2xi32> {bufferization.writable = false}, %{{.*}}: i32)
func.func @inputs_not_writable(%x: tensor<4xf32>, %y: tensor<2x2xi32>, %s: i32) -> tensor<4xf32> {
  %0 = kiln.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A missing leading dimension is dropped from the operand's map.
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast_leading
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: outs(%[[E]] : tensor<4x3xf32>)
// CHECK: arith.addf
// CHECK-NOT: kiln.
func.func @add_broadcast_leading(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = kiln.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A size-1 dimension that the result stretches reads index 0.
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @sub_broadcast_size_one
// CHECK: linalg.generic {indexing_maps = [#[[COL]], #[[ROW]], #[[ID]]]
// CHECK: arith.subf
func.func @sub_broadcast_size_one(%a: tensor<4x1xf32>, %b: tensor<1x3xf32>) -> tensor<4x3xf32> {
  %0 = kiln.sub %a, %b : tensor<4x1xf32>, tensor<1x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A size-1 dimension that stays size 1 in the result is indexed normally.
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[B:map[0-9]*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @mul_kept_size_one
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[B]], #[[ID]]]
// CHECK: arith.muli
func.func @mul_kept_size_one(%a: tensor<4x1xi64>, %b: tensor<1x1xi64>) -> tensor<4x1xi64> {
  %0 = kiln.mul %a, %b : tensor<4x1xi64>, tensor<1x1xi64> -> tensor<4x1xi64>
  return %0 : tensor<4x1xi64>
}

// -----

// A rank-0 operand has an empty map.
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[S:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @div_by_scalar
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[S]], #[[ID]]]
// CHECK: arith.divf
func.func @div_by_scalar(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %0 = kiln.div %a, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Integer binary and unary ops use the signed integer arith ops.
// CHECK-LABEL: func.func @int_elementwise
// CHECK: arith.addi
// CHECK: arith.subi
// CHECK: arith.divsi
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT: arith.subi %[[Z]], %{{.*}} : i32
// CHECK: %[[Z2:.*]] = arith.constant 0 : i32
// CHECK-NEXT: arith.maxsi %{{.*}}, %[[Z2]] : i32
// CHECK-NOT: kiln.
func.func @int_elementwise(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = kiln.add %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %1 = kiln.sub %0, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %2 = kiln.div %1, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %3 = kiln.neg %2 : tensor<4xi32>
  %4 = kiln.relu %3 : tensor<4xi32>
  return %4 : tensor<4xi32>
}

// -----

// Float unary ops: neg, relu as max with 0, and the math ops.
// CHECK-LABEL: func.func @float_unary
// CHECK: arith.negf
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f16
// CHECK-NEXT: arith.maximumf %{{.*}}, %[[Z]] : f16
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.tanh
// CHECK: math.sqrt
// CHECK-NOT: kiln.
func.func @float_unary(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = kiln.neg %x : tensor<2x3xf16>
  %1 = kiln.relu %0 : tensor<2x3xf16>
  %2 = kiln.exp %1 : tensor<2x3xf16>
  %3 = kiln.log %2 : tensor<2x3xf16>
  %4 = kiln.tanh %3 : tensor<2x3xf16>
  %5 = kiln.sqrt %4 : tensor<2x3xf16>
  return %5 : tensor<2x3xf16>
}

// -----

// Sigmoid is 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @sigmoid
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[NEG:.*]] = arith.negf %[[IN]]
// CHECK: %[[EXP:.*]] = math.exp %[[NEG]]
// CHECK: %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]]
// CHECK: %[[R:.*]] = arith.divf %[[ONE]], %[[DEN]]
// CHECK: linalg.yield %[[R]]
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.sigmoid %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A rank-2 matmul becomes linalg.matmul into a zero-filled output.
// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[A:.*]]: tensor<4x16xf32> {{.*}}, %[[B:.*]]: tensor<16x5xf32> {{.*}})
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x5xf32>)
// CHECK: linalg.matmul ins(%[[A]], %[[B]] : tensor<4x16xf32>, tensor<16x5xf32>) outs(%[[F]] : tensor<4x5xf32>)
func.func @matmul_2d(%a: tensor<4x16xf32>, %b: tensor<16x5xf32>) -> tensor<4x5xf32> {
  %0 = kiln.matmul %a, %b : tensor<4x16xf32>, tensor<16x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A batched matmul is a linalg.generic over (batch, m, n, k) with k a
// reduction; rhs lacks the batch dimension, so its map drops it.
// CHECK-DAG: #[[LHS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[OUT:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul_batched
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[F]] : tensor<8x4x5xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[X]], %[[Y]]
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[P]]
// CHECK: linalg.yield %[[S]]
// CHECK-NOT: linalg.matmul
func.func @matmul_batched(%a: tensor<8x4x16xf32>, %b: tensor<16x5xf32>) -> tensor<8x4x5xf32> {
  %0 = kiln.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x5xf32> -> tensor<8x4x5xf32>
  return %0 : tensor<8x4x5xf32>
}

// -----

// Batch dimensions broadcast: lhs's size-1 batch reads 0, rhs's missing one is dropped.
// CHECK-DAG: #[[LHS:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[RHS:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
// CHECK-DAG: #[[OUT:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK: linalg.fill ins(%[[Z]] : i32)
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.muli
// CHECK: arith.addi
func.func @matmul_batch_broadcast(%a: tensor<2x1x4x3xi32>, %b: tensor<6x3x7xi32>) -> tensor<2x6x4x7xi32> {
  %0 = kiln.matmul %a, %b : tensor<2x1x4x3xi32>, tensor<6x3x7xi32> -> tensor<2x6x4x7xi32>
  return %0 : tensor<2x6x4x7xi32>
}

// -----

// reduce_sum starts from 0; the reduced axis is a reduction loop missing from
// the output map.
// CHECK-DAG: #[[IN:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[OUT:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @reduce_sum
// CHECK: %[[INIT:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[INIT]] : f32) outs(%[[E]] : tensor<2x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[F]] : tensor<2x4xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: arith.addf %[[ACC]], %[[X]]
// CHECK-NOT: tensor.expand_shape
func.func @reduce_sum(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %0 = kiln.reduce_sum %x axes = [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// reduce_prod starts from 1.
// CHECK-LABEL: func.func @reduce_prod
// CHECK: %[[INIT:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: linalg.fill ins(%[[INIT]] : f64)
// CHECK: arith.mulf
func.func @reduce_prod(%x: tensor<4xf64>) -> tensor<f64> {
  %0 = kiln.reduce_prod %x axes = [0] : tensor<4xf64> -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

// reduce_max on floats starts from -inf.
// CHECK-LABEL: func.func @reduce_max_float
// CHECK: %[[INIT:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[INIT]] : f32)
// CHECK: arith.maximumf
func.func @reduce_max_float(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = kiln.reduce_max %x axes = [1] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// reduce_min on floats starts from +inf.
// CHECK-LABEL: func.func @reduce_min_float
// CHECK: %[[INIT:.*]] = arith.constant 0x7F800000 : f32
// CHECK: linalg.fill ins(%[[INIT]] : f32)
// CHECK: arith.minimumf
func.func @reduce_min_float(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = kiln.reduce_min %x axes = [1] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Infinities in half types: -inf in f16, +inf in bf16.
// CHECK-LABEL: func.func @reduce_half_infinities
// CHECK: arith.constant 0xFC00 : f16
// CHECK: arith.constant 0x7F80 : bf16
func.func @reduce_half_infinities(%h: tensor<4xf16>, %b: tensor<4xbf16>) -> (tensor<f16>, tensor<bf16>) {
  %0 = kiln.reduce_max %h axes = [0] : tensor<4xf16> -> tensor<f16>
  %1 = kiln.reduce_min %b axes = [0] : tensor<4xbf16> -> tensor<bf16>
  return %0, %1 : tensor<f16>, tensor<bf16>
}

// -----

// Integer reductions: sum from 0, prod from 1, max from INT_MIN, min from
// INT_MAX, combined with the signed integer ops.
// CHECK-LABEL: func.func @reduce_int
// CHECK: arith.constant 0 : i8
// CHECK: arith.addi
// CHECK: arith.constant 1 : i32
// CHECK: arith.muli
// CHECK: arith.constant -2147483648 : i32
// CHECK: arith.maxsi
// CHECK: arith.constant 2147483647 : i32
// CHECK: arith.minsi
// CHECK: arith.constant -9223372036854775808 : i64
// CHECK: arith.constant 127 : i8
func.func @reduce_int(%a: tensor<2x3xi8>, %b: tensor<2x3xi32>, %c: tensor<5xi64>)
    -> (tensor<2xi8>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<i64>, tensor<3xi8>) {
  %0 = kiln.reduce_sum %a axes = [1] : tensor<2x3xi8> -> tensor<2xi8>
  %1 = kiln.reduce_prod %b axes = [1] : tensor<2x3xi32> -> tensor<2xi32>
  %2 = kiln.reduce_max %b axes = [1] : tensor<2x3xi32> -> tensor<2xi32>
  %3 = kiln.reduce_min %b axes = [1] : tensor<2x3xi32> -> tensor<2xi32>
  %4 = kiln.reduce_max %c axes = [0] : tensor<5xi64> -> tensor<i64>
  %5 = kiln.reduce_min %a axes = [0] : tensor<2x3xi8> -> tensor<3xi8>
  return %0, %1, %2, %3, %4, %5 : tensor<2xi8>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<i64>, tensor<3xi8>
}

// -----

// reduce_mean sums, then divides each result by the number of reduced
// elements (2 * 4 = 8); keepdims expands the result back to rank 3.
// CHECK-LABEL: func.func @reduce_mean_keepdims
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[Z]] : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel", "reduction"]
// CHECK: arith.addf
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<3xf32>)
// CHECK: %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: %[[R:.*]] = tensor.expand_shape %[[MEAN]] {{\[\[}}0, 1, 2]] output_shape [1, 3, 1] : tensor<3xf32> into tensor<1x3x1xf32>
// CHECK: return %[[R]]
func.func @reduce_mean_keepdims(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = kiln.reduce_mean %x axes = [0, 2] keepdims : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// keepdims on a trailing axis groups the size-1 dimension with the one before it.
// CHECK-LABEL: func.func @keepdims_trailing
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [2, 3, 1] : tensor<2x3xi64> into tensor<2x3x1xi64>
func.func @keepdims_trailing(%x: tensor<2x3x4xi64>) -> tensor<2x3x1xi64> {
  %0 = kiln.reduce_max %x axes = [2] keepdims : tensor<2x3x4xi64> -> tensor<2x3x1xi64>
  return %0 : tensor<2x3x1xi64>
}

// -----

// Reducing every axis with keepdims expands a rank-0 result with no groups.
// CHECK-LABEL: func.func @keepdims_all_axes
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: tensor.expand_shape %{{.*}} [] output_shape [1, 1] : tensor<i8> into tensor<1x1xi8>
func.func @keepdims_all_axes(%x: tensor<2x3xi8>) -> tensor<1x1xi8> {
  %0 = kiln.reduce_min %x axes = [0, 1] keepdims : tensor<2x3xi8> -> tensor<1x1xi8>
  return %0 : tensor<1x1xi8>
}

// -----

// A reshape goes through 1-D: collapse everything, then expand.
// CHECK-LABEL: func.func @reshape_2d_to_2d
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// CHECK: return %[[E]]
func.func @reshape_2d_to_2d(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Reshapes to and from 1-D need only one step.
// CHECK-LABEL: func.func @reshape_1d
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xi1> {{.*}}, %[[Y:.*]]: tensor<24xi1> {{.*}})
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<2x3x4xi1> into tensor<24xi1>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[Y]] {{\[\[}}0, 1]] output_shape [4, 6] : tensor<24xi1> into tensor<4x6xi1>
// CHECK: return %[[C]], %[[E]]
func.func @reshape_1d(%x: tensor<2x3x4xi1>, %y: tensor<24xi1>) -> (tensor<24xi1>, tensor<4x6xi1>) {
  %0 = kiln.reshape %x : tensor<2x3x4xi1> -> tensor<24xi1>
  %1 = kiln.reshape %y : tensor<24xi1> -> tensor<4x6xi1>
  return %0, %1 : tensor<24xi1>, tensor<4x6xi1>
}

// -----

// Rank-0 reshapes use an empty reassociation in one step.
// CHECK-LABEL: func.func @reshape_rank0
// CHECK: tensor.expand_shape %{{.*}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: tensor.collapse_shape %{{.*}} [] : tensor<1x1x1xf32> into tensor<f32>
// CHECK: tensor.collapse_shape %{{.*}} [] : tensor<1xf32> into tensor<f32>
func.func @reshape_rank0(%s: tensor<f32>, %o: tensor<1x1x1xf32>, %v: tensor<1xf32>) -> (tensor<1x1xf32>, tensor<f32>, tensor<f32>) {
  %0 = kiln.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %1 = kiln.reshape %o : tensor<1x1x1xf32> -> tensor<f32>
  %2 = kiln.reshape %v : tensor<1xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<1x1xf32>, tensor<f32>, tensor<f32>
}

// -----

// Transpose becomes linalg.transpose into an empty tensor of the result shape.
// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x2x3xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[E]] : tensor<4x2x3xf32>) permutation = [2, 0, 1]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = kiln.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Constants become arith.constant with the same value, dense_resource included.
// CHECK-LABEL: func.func @constants
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: arith.constant dense<[true, false]> : tensor<2xi1>
// CHECK: arith.constant dense_resource<blob1> : tensor<2xf32>
// CHECK-NOT: kiln.constant
func.func @constants() -> (tensor<2xf32>, tensor<2xi1>, tensor<2xf32>) {
  %0 = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = kiln.constant dense<[true, false]> : tensor<2xi1>
  %2 = kiln.constant dense_resource<blob1> : tensor<2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xi1>, tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// f16 sums and means accumulate in f32, so a count of 65536 (inf in f16)
// never appears as an f16 constant; the result is truncated back.
// CHECK-LABEL: func.func @reduce_mean_f16_widens
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.addf %{{.*}} : f32
// CHECK: arith.constant 6.553600e+04 : f32
// CHECK: arith.divf %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @reduce_mean_f16_widens(%x: tensor<1x4x256x256xf16>) -> tensor<1x4xf16> {
  %r = kiln.reduce_mean %x axes = [2, 3] : tensor<1x4x256x256xf16> -> tensor<1x4xf16>
  return %r : tensor<1x4xf16>
}

// -----

// Float ne is unordered (true for NaN); the other predicates are ordered.
// CHECK-LABEL: func.func @cmp_predicates
// CHECK: arith.cmpf une
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi sge
func.func @cmp_predicates(%a: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.cmp ne, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %1 = kiln.cmp lt, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %2 = kiln.cmp ge, %i, %i : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Positive strides slice as a view; a negative stride reads through indices.
// CHECK-LABEL: func.func @slices
// CHECK: tensor.extract_slice %{{.*}}[1, 0] [2, 2] [1, 2]
// CHECK: linalg.generic
// CHECK: linalg.index
// CHECK: tensor.extract
func.func @slices(%x: tensor<3x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %0 = kiln.slice %x starts = [1, 0] strides = [1, 2] : tensor<3x4xf32> -> tensor<2x2xf32>
  %1 = kiln.slice %x starts = [2, 3] strides = [-1, -3] : tensor<3x4xf32> -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Gather wraps negative indices and clamps the rest into range.
// CHECK-LABEL: func.func @gather_clamps
// CHECK: arith.index_cast
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract
func.func @gather_clamps(%x: tensor<5x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = kiln.gather %x, %i axis = 0 : tensor<5x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Concat inserts each input at its offset along the axis.
// CHECK-LABEL: func.func @concat
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 3] [2, 1] [1, 1]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = kiln.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// argmax reduces value and index together; the first element always wins.
// CHECK-LABEL: func.func @argmax
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpi eq
// CHECK: tensor.expand_shape
func.func @argmax(%x: tensor<2x3xf32>) -> tensor<2x1xi64> {
  %0 = kiln.argmax %x axis = 1 keepdims : tensor<2x3xf32> -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

// A grouped, strided, dilated, padded conv: zero padding, channels split
// into [group, channels per group], one generic with window maps o*s + k*d.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 + d7 * 2)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-LABEL: func.func @conv
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] {{.*}} into tensor<1x2x2x11x9xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] {{.*}} into tensor<2x3x2x3x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: tensor.collapse_shape
func.func @conv(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32> {
  %0 = kiln.conv %x, %w strides = [2, 1] dilations = [1, 2] pads = [1, 0, 1, 0] group = 2 : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x5x5xf32>
  return %0 : tensor<1x6x5x5xf32>
}

// -----

// Max pooling pads with -inf and gives the kernel loops their extent
// through an unused window operand.
// CHECK-LABEL: func.func @maxpool
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: tensor.empty() : tensor<2x2xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.maximumf
func.func @maxpool(%x: tensor<1x4x9x9xf32>) -> tensor<1x4x5x5xf32> {
  %0 = kiln.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 1, 1] : tensor<1x4x9x9xf32> -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}

// -----

// Unsigned tensors lower to signless ones of the same width, in the signature
// too; division, comparison and max pick their unsigned forms.
// CHECK-LABEL: func.func @unsigned
// CHECK-SAME: (%{{.*}}: tensor<4xi8> {{.*}}, %{{.*}}: tensor<4xi8> {{.*}}) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xi8>)
// CHECK: arith.divui
// CHECK: arith.cmpi ult
// CHECK: arith.maxui
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xi1>, tensor<4xui8>) {
  %0 = kiln.div %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %1 = kiln.cmp lt, %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xi1>
  %2 = kiln.max %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xi1>, tensor<4xui8>
}

// -----

// kiln.scatter: one sequential loop over the updates carrying the result;
// negative indices wrap, indices still out of range write nothing.
// CHECK-LABEL: func.func @scatter_add
// CHECK: %[[R:.*]] = scf.for %[[U:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %arg0) -> (tensor<6xf32>)
// CHECK:   tensor.extract %arg1[%[[U]]] : tensor<3xi64>
// CHECK:   %[[IN:.*]] = arith.cmpi ult
// CHECK:   scf.if %[[IN]] -> (tensor<6xf32>)
// CHECK:     arith.addf
// CHECK:     tensor.insert %{{.*}} into %[[ACC]]
// CHECK:   } else {
// CHECK:     scf.yield %[[ACC]]
// CHECK: return %[[R]]
func.func @scatter_add(%d: tensor<6xf32>, %i: tensor<3xi64>, %u: tensor<3xf32>) -> tensor<6xf32> {
  %0 = kiln.scatter add %d, %i, %u : tensor<6xf32>, tensor<3xi64>, tensor<3xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// kiln.topk: rows x k passes x a scan of the row; unsigned values compare
// unsigned.
// CHECK-LABEL: func.func @topk_smallest
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK:     tensor.insert %{{.*}} : tensor<2x2xi32>
// CHECK:     tensor.insert %{{.*}} : tensor<2x2xi64>
func.func @topk_smallest(%x: tensor<2x4xui32>) -> (tensor<2x2xui32>, tensor<2x2xi64>) {
  %v, %i = kiln.topk %x k = 2 smallest : tensor<2x4xui32> -> tensor<2x2xui32>, tensor<2x2xi64>
  return %v, %i : tensor<2x2xui32>, tensor<2x2xi64>
}

// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32}))' | FileCheck %s

// A 1x1 convolution at stride 1 (over more than 64 positions, which would be
// computed as positions x channels) multiplies the input in place: its
// column matrix is the input reshaped, so the only generics left are the matmul's
// tiles (no im2col copy yields an input element as it is).
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: linalg.yield %in : f32
// CHECK: vector.fma
// CHECK-NOT: linalg.yield %in : f32
// CHECK: return
func.func @pointwise(%x: tensor<1x16x12x12xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<1x32x12x12xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x16x12x12xf32>, tensor<32x16x1x1xf32> -> tensor<1x32x12x12xf32>
  return %y : tensor<1x32x12x12xf32>
}

// -----

// At stride 2 a 1x1 convolution still gathers its input into columns.
// CHECK-LABEL: func.func @pointwise_strided
// CHECK: linalg.generic
// CHECK: linalg.yield %in : f32
func.func @pointwise_strided(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32> {
  %y = kiln.conv %x, %w strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32> -> tensor<1x32x4x4xf32>
  return %y : tensor<1x32x4x4xf32>
}

// -----

// Computed as positions x channels (36 positions, 64 output channels), a
// 1x1 convolution at stride 1 takes the input transposed as its columns,
// [1, 1, 16, 36] -> [1, 1, 36, 16]: a linalg.transpose, which
// kiln-vectorize-elementwise copies in blocks, not a gather copy.
// CHECK-LABEL: func.func @pointwise_positions
// CHECK-NOT: linalg.yield %in : f32
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x1x16x36xf32>) outs(%{{.*}} : tensor<1x1x36x16xf32>) permutation = [0, 1, 3, 2]
// CHECK-NOT: linalg.yield %in : f32
// CHECK: vector.fma
// CHECK: linalg.transpose
// CHECK: return
func.func @pointwise_positions(%x: tensor<1x16x6x6xf32>) -> tensor<1x64x6x6xf32> {
  %w = arith.constant dense<0.5> : tensor<64x16x1x1xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x16x6x6xf32>, tensor<64x16x1x1xf32> -> tensor<1x64x6x6xf32>
  return %y : tensor<1x64x6x6xf32>
}

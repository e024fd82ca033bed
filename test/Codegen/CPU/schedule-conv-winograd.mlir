// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32 prepare-only=1}))' | FileCheck %s
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32},kiln-vectorize-elementwise{width=32}))' | FileCheck %s --check-prefix=SCHED
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32 winograd=false}))' | FileCheck %s --check-prefix=OFF

// A 3x3 stride-1 convolution with a constant filter, 40 x 32 channels over
// 16x16 (8x8 tiles of 2x2 outputs per image), is Winograd's F(2x2, 3x3):
// the padded input split into even and odd columns, one generic computing
// the 16 points of B^T d B for every tile (reading them through 16
// strided views of those), 16 matmuls with the transformed filters G g G^T,
// one generic computing the four outputs of A^T M A, and one interleaving
// them into the output. A filter of 0.25 everywhere transforms to
// 0.25 * (G 1 G^T)[xi, nu]: 0.25, 0.375, 0.125, 0.25 along the first row.
// CHECK-LABEL: func.func @winograd
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[SPLIT:.*]]:2 = linalg.generic {{.*}} outs({{.*}} : tensor<2x32x18x9xf32>, tensor<2x32x18x9xf32>)
// CHECK: tensor.extract_slice %[[SPLIT]]#0[0, 0, 0, 0] [2, 32, 8, 8] [1, 1, 2, 1]
// CHECK: tensor.extract_slice %[[SPLIT]]#1[0, 0, 0, 0] [2, 32, 8, 8] [1, 1, 2, 1]
// CHECK: tensor.extract_slice %[[SPLIT]]#0[0, 0, 0, 1] [2, 32, 8, 8] [1, 1, 2, 1]
// CHECK: tensor.extract_slice %[[SPLIT]]#1[0, 0, 0, 1] [2, 32, 8, 8] [1, 1, 2, 1]
// CHECK: tensor.extract_slice %[[SPLIT]]#0[0, 0, 1, 0] [2, 32, 8, 8] [1, 1, 2, 1]
// CHECK-COUNT-10: tensor.extract_slice %[[SPLIT]]
// CHECK: tensor.extract_slice %[[SPLIT]]#1[0, 0, 3, 1] [2, 32, 8, 8] [1, 1, 2, 1]
// CHECK: %[[V:.*]]:16 = linalg.generic
// CHECK: arith.constant dense<2.500000e-01> : tensor<1x40x32xf32>
// CHECK: tensor.collapse_shape %[[V]]#0
// CHECK: arith.mulf
// CHECK: arith.constant dense<3.750000e-01> : tensor<1x40x32xf32>
// CHECK: tensor.collapse_shape %[[V]]#1
// CHECK: arith.constant dense<1.250000e-01> : tensor<1x40x32xf32>
// CHECK: tensor.collapse_shape %[[V]]#2
// CHECK-COUNT-13: tensor.collapse_shape %[[V]]
// CHECK: %[[Y:.*]]:4 = linalg.generic
// CHECK: } -> (tensor<2x40x8x8xf32>, tensor<2x40x8x8xf32>, tensor<2x40x8x8xf32>, tensor<2x40x8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Y]]#0, %[[Y]]#1, %[[Y]]#2, %[[Y]]#3 : {{.*}}) outs({{.*}} : tensor<2x40x8x2x8x2xf32>)
// CHECK: linalg.index 3
// CHECK: linalg.index 5
// CHECK: tensor.collapse_shape {{.*}} into tensor<2x40x16x16xf32>
// Scheduled: the products are register tiles, the transforms vector code
// (no generic with 16 or 4 results is left); the even/odd split, whose
// reads are strided, stays a loop nest for LLVM.
// SCHED-LABEL: func.func @winograd
// SCHED-NOT: :16 = linalg.generic
// SCHED: vector.fma
// SCHED-NOT: :4 = linalg.generic
// SCHED-LABEL: func.func @not_winograd
// With winograd=false it is a matmul over shifted rows of the input (the
// padded rows flattened to 19 x 18).
// OFF-LABEL: func.func @winograd
// OFF-NOT: tensor<2x40x8x2x8x2xf32>
// OFF: tensor<2x1x32x342xf32>
// OFF-NOT: tensor<2x40x8x2x8x2xf32>
// OFF: return
func.func @winograd(%x: tensor<2x32x16x16xf32>) -> tensor<2x40x16x16xf32> {
  %w = kiln.constant dense<0.25> : tensor<40x32x3x3xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<2x32x16x16xf32>, tensor<40x32x3x3xf32> -> tensor<2x40x16x16xf32>
  return %y : tensor<2x40x16x16xf32>
}

// -----

// An odd output (15x15) is 8x8 tiles over the input padded by one more
// zero row and column; the 16x16 result is sliced back to 15x15.
// CHECK-LABEL: func.func @odd
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.pad {{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: } : tensor<1x32x17x17xf32> to tensor<1x32x18x18xf32>
// CHECK: %[[V:.*]]:16 = linalg.generic
// CHECK: tensor<1x32x8x2x8x2xf32>
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x32x16x16xf32>
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0, 0] [1, 32, 15, 15] [1, 1, 1, 1] : tensor<1x32x16x16xf32> to tensor<1x32x15x15xf32>
func.func @odd(%x: tensor<1x32x15x15xf32>) -> tensor<1x32x15x15xf32> {
  %w = kiln.constant dense<0.25> : tensor<32x32x3x3xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x32x15x15xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x15x15xf32>
  return %y : tensor<1x32x15x15xf32>
}

// -----

// Not Winograd: a filter computed at run time, a stride, too few channels,
// too few tiles (6x6, and 7x7's 4x4 of ResNet's last stage).
// CHECK-LABEL: func.func @not_winograd
// CHECK-NOT: linalg.index
// CHECK: return
func.func @not_winograd(%x: tensor<1x32x16x16xf32>, %wr: tensor<32x32x3x3xf32>, %x7: tensor<1x32x7x7xf32>, %xs: tensor<1x16x16x16xf32>, %x6: tensor<1x32x12x12xf32>) -> (tensor<1x32x16x16xf32>, tensor<1x32x7x7xf32>, tensor<1x32x8x8xf32>, tensor<1x32x16x16xf32>, tensor<1x32x12x12xf32>) {
  %w = kiln.constant dense<0.25> : tensor<32x32x3x3xf32>
  %w16 = kiln.constant dense<0.25> : tensor<32x16x3x3xf32>
  %a = kiln.conv %x, %wr strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x16x16xf32>
  %b = kiln.conv %x7, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x7x7xf32>
  %c = kiln.conv %x, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x8x8xf32>
  %d = kiln.conv %xs, %w16 strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32> -> tensor<1x32x16x16xf32>
  %e = kiln.conv %x6, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x32x12x12xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x12x12xf32>
  return %a, %b, %c, %d, %e : tensor<1x32x16x16xf32>, tensor<1x32x7x7xf32>, tensor<1x32x8x8xf32>, tensor<1x32x16x16xf32>, tensor<1x32x12x12xf32>
}

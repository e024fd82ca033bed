// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32}))' | FileCheck %s
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32 shifted-rows=false}))' | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32}))' | FileCheck %s --check-prefix=FLAT

// A 3x3 convolution at stride 1 is a matmul over shifted rows of its padded
// input: the conv's own pad grows by one zero row at the bottom (so the last
// output row's right taps stay in bounds), each channel is flattened to one
// row of 23 * 32 elements, the filter is transposed so that the input
// channel is the contiguous k loop, and the 20 x 32 positions computed (two
// columns per row past the 30 real ones) are sliced back to 20 x 30. No
// im2col copy is written.
// CHECK-LABEL: func.func @shifted
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 2, 1]
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x1x16x736xf32>
// CHECK: linalg.transpose ins({{.*}} : tensor<1x24x16x3x3xf32>) outs({{.*}} : tensor<1x24x3x3x16xf32>) permutation = [0, 1, 3, 4, 2]
// CHECK: tensor.empty() : tensor<1x1x24x640xf32>
// CHECK-NOT: linalg.yield %in : f32
// CHECK: vector.fma
// CHECK: } {kiln.parallel}
// CHECK: tensor.expand_shape {{.*}} into tensor<1x1x24x20x32xf32>
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0, 0, 0] [1, 1, 24, 20, 30] [1, 1, 1, 1, 1]
// OFF-LABEL: func.func @shifted
// OFF: linalg.yield %in : f32
func.func @shifted(%x: tensor<1x16x20x30xf32>, %w: tensor<24x16x3x3xf32>) -> tensor<1x24x20x30xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x16x20x30xf32>, tensor<24x16x3x3xf32> -> tensor<1x24x20x30xf32>
  return %y : tensor<1x24x20x30xf32>
}

// -----

// A constant filter is transposed at compile time: w[m, c, kh, kw] =
// 9c + 3kh + kw + 1 becomes [m, kh, kw, c] = 1, 10, 2, 11, ... (as f32 hex).
// CHECK-LABEL: func.func @constant_filter
// CHECK-NOT: linalg.transpose
// CHECK: arith.constant dense<"0x0000803F000020410000004000003041{{.*}}"> : tensor<1x8x3x3x2xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @constant_filter(%x: tensor<1x2x20x30xf32>) -> tensor<1x8x20x30xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]]]> : tensor<8x2x3x3xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x2x20x30xf32>, tensor<8x2x3x3xf32> -> tensor<1x8x20x30xf32>
  return %y : tensor<1x8x20x30xf32>
}

// -----

// Over 7x7 the dropped columns would be 2 of every 9 (29 % more work), and
// 49 columns make register tiles of 32, 16 and 1: a small image is computed
// as positions x channels instead, from a transposed im2col copy
// [positions, Cg * taps], with a runtime filter transposed to [R, Mg], and
// the result transposed back.
// CHECK-LABEL: func.func @small_image
// CHECK: tensor.empty() : tensor<1x1x7x7x16x3x3xf32>
// CHECK: linalg.yield %in : f32
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x1x49x144xf32>
// CHECK: linalg.transpose ins({{.*}} : tensor<1x32x144xf32>) outs({{.*}} : tensor<1x144x32xf32>) permutation = [0, 2, 1]
// CHECK-NOT: vector.transpose
// CHECK: vector.fma
// CHECK-NOT: vector.transpose
// CHECK: linalg.transpose ins({{.*}} : tensor<1x1x49x32xf32>) outs({{.*}} : tensor<1x1x32x49xf32>) permutation = [0, 1, 3, 2]
// At stride 2 over a larger image the convolution stays im2col + matmul.
// CHECK-LABEL: func.func @strided
// CHECK: tensor.empty() : tensor<1x1x16x3x3x20x20xf32>
// CHECK: linalg.yield %in : f32
func.func @small_image(%x: tensor<1x16x7x7xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x7x7xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x16x7x7xf32>, tensor<32x16x3x3xf32> -> tensor<1x32x7x7xf32>
  return %y : tensor<1x32x7x7xf32>
}
func.func @strided(%x: tensor<1x16x40x40xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x20x20xf32> {
  %y = kiln.conv %x, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x16x40x40xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x20x20xf32>
  return %y : tensor<1x16x20x20xf32>
}

// -----

// A constant filter of a small image is used as a [N, K] weight (packed
// into panels at compile time), not transposed at run time; this splat one
// then folds to a constant row of 32 channels per register tile.
// CHECK-LABEL: func.func @small_image_constant
// CHECK: arith.constant dense<5.000000e-01> : tensor<1x32xf32>
// CHECK-NOT: transpose ins({{.*}}permutation = [0, 2, 1]
// CHECK-NOT: vector.transpose
// CHECK: linalg.transpose ins({{.*}} : tensor<1x1x49x64xf32>) outs({{.*}} : tensor<1x1x64x49xf32>) permutation = [0, 1, 3, 2]
func.func @small_image_constant(%x: tensor<1x16x7x7xf32>) -> tensor<1x64x7x7xf32> {
  %w = kiln.constant dense<0.5> : tensor<64x16x3x3xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x16x7x7xf32>, tensor<64x16x3x3xf32> -> tensor<1x64x7x7xf32>
  return %y : tensor<1x64x7x7xf32>
}

// -----

// A depthwise convolution at stride 1 whose zero padding keeps the plane's
// size is one flat row of 196 positions per channel (full 16-lane reads; a
// tap's lanes on the padding zeroed by a select, or by a shuffle where the
// read starts before the plane), whatever the width of its rows. One over
// rows narrower than the row FMAs' 16 lanes that is not (no padding) is
// read as shifted rows (14 x 16 positions per channel); a wider one keeps
// the row FMAs (which read the unpadded input: no pad), as does a plane too
// large to unroll as one row (3600 positions).
// CHECK-LABEL: func.func @depthwise_flat
// CHECK-NOT: tensor.pad
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x8x196xf32>
// 13 chunks x 9 taps, less the 3 taps of the last chunk (row 13) that
// read only the row below the plane.
// CHECK-COUNT-114: vector.fma
// CHECK-NOT: vector.fma
// CHECK: vector.extract_strided_slice {{.*}} {offsets = [0], sizes = [4], strides = [1]}
// CHECK: tensor.expand_shape {{.*}} into tensor<1x8x14x14xf32>
// FLAT-LABEL: func.func @depthwise_flat
// FLAT: vector.shuffle {{.*}} [16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 0]
// FLAT: arith.select {{.*}} : vector<16xi1>, vector<16xf32>
// CHECK-LABEL: func.func @depthwise_narrow
// CHECK: tensor.pad
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x8x1x272xf32>
// CHECK: tensor.extract_slice {{.*}} [1, 8, 1, 14, 14]
// CHECK-LABEL: func.func @depthwise_wide
// CHECK-NOT: tensor.pad
// CHECK-NOT: into tensor<1x8x3600xf32>
// CHECK: return
func.func @depthwise_flat(%x: tensor<1x8x14x14xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x14x14xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 8 : tensor<1x8x14x14xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x14x14xf32>
  return %y : tensor<1x8x14x14xf32>
}
func.func @depthwise_narrow(%x: tensor<1x8x16x16xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x14x14xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 8 : tensor<1x8x16x16xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x14x14xf32>
  return %y : tensor<1x8x14x14xf32>
}
func.func @depthwise_wide(%x: tensor<1x8x60x60xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x60x60xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 8 : tensor<1x8x60x60xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x60x60xf32>
  return %y : tensor<1x8x60x60xf32>
}

// -----

// A column buffer that would not stay in cache (7 x 7 x 3 taps over
// 112 x 112 positions: 7.4 MB) is made a block of 7 output rows at a time
// (147 x 784, 461 KB) into a buffer the next block reuses; the 16 blocks
// run as 4 parallel chunks of 4, each chunk with its own buffer. The
// output's fill goes into each cache tile of each block.
// CHECK-LABEL: func.func @row_blocks
// CHECK-NOT: linalg.fill
// CHECK: tensor.empty() : tensor<4x1x1x3x7x7x7x112xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (tensor<1x1x64x112x112xf32>, tensor<4x1x1x3x7x7x7x112xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (tensor<1x1x64x112x112xf32>, tensor<1x1x3x7x7x7x112xf32>)
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x1x147x784xf32>
// CHECK: linalg.fill {{.*}} -> tensor<1x1x64x64xf32>
// CHECK: vector.fma
// CHECK: } {kiln.parallel}
// CHECK-NOT: tensor.empty() : tensor<1x1x3x7x7x112x112xf32>
func.func @row_blocks(%x: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32> {
  %y = kiln.conv %x, %w strides = [2, 2] dilations = [1, 1] pads = [3, 3, 3, 3] group = 1 : tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32> -> tensor<1x64x112x112xf32>
  return %y : tensor<1x64x112x112xf32>
}

// -----

// A flat row of more than 32 chunks (784 positions, 49 chunks of 16 lanes)
// loops over the periods of its padding's pattern, lcm(28, 16) = 112
// positions (7 chunks): periods 1 to 5 are alike and run as one loop, the
// first and last (with the plane's top and bottom rows) are unrolled
// without the 3 taps of their edge chunk that read only the padding.
// CHECK-LABEL: func.func @depthwise_flat_loop
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x8x784xf32>
// CHECK-COUNT-60: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.for %{{.*}} = %c1 to %c6 step %c1
// CHECK: arith.muli %{{.*}}, %c112
// CHECK-COUNT-63: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-60: vector.fma
// CHECK-NOT: vector.fma
// CHECK: tensor.expand_shape {{.*}} into tensor<1x8x28x28xf32>
func.func @depthwise_flat_loop(%x: tensor<1x8x28x28xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x28x28xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 8 : tensor<1x8x28x28xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x28x28xf32>
  return %y : tensor<1x8x28x28xf32>
}

// -----

// A 5x5 filter over 28x28 is 49 chunks x 25 taps, more FMAs than one flat
// row unrolls, but its rows leave a remainder (28 columns, 16 lanes) and
// its period is 7 chunks: looped, it emits 21 chunks' taps, so it is a
// flat row too. A 64-column plane, whole vectors per row, keeps the row
// FMAs.
// CHECK-LABEL: func.func @depthwise_flat_5x5
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x8x784xf32>
// CHECK: scf.for %{{.*}} = %c1 to %c6 step %c1
// CHECK: tensor.expand_shape {{.*}} into tensor<1x8x28x28xf32>
// CHECK-LABEL: func.func @depthwise_whole_rows
// CHECK-NOT: into tensor<1x8x1792xf32>
// CHECK: return
func.func @depthwise_flat_5x5(%x: tensor<1x8x28x28xf32>, %w: tensor<8x1x5x5xf32>) -> tensor<1x8x28x28xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [2, 2, 2, 2] group = 8 : tensor<1x8x28x28xf32>, tensor<8x1x5x5xf32> -> tensor<1x8x28x28xf32>
  return %y : tensor<1x8x28x28xf32>
}
func.func @depthwise_whole_rows(%x: tensor<1x8x28x64xf32>, %w: tensor<8x1x5x5xf32>) -> tensor<1x8x28x64xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [2, 2, 2, 2] group = 8 : tensor<1x8x28x64xf32>, tensor<8x1x5x5xf32> -> tensor<1x8x28x64xf32>
  return %y : tensor<1x8x28x64xf32>
}

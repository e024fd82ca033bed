// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32}))' | FileCheck %s
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,kiln-schedule-matmul{tile-m=8 tile-n=32 fuse-epilogues=false}))' | FileCheck %s --check-prefix=OFF

// A pointwise conv's bias and relu run on each 40x64 output cache tile
// right after the tile's register tiles (and on the 40x16 remainder after
// its own), updating the tile in place: the bias [40, 1, 1] is read along
// the matmul's channel dim. Nothing is left to run over the whole output,
// and (k = 16 fits one cache tile) nothing fills it.
// CHECK-LABEL: func.func @pointwise_bias_relu
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK: vector.fma
// CHECK: linalg.generic {indexing_maps = [#[[BIAS:map[0-9]*]], #[[ID:map[0-9]*]]], {{.*}} ins(%arg2 : tensor<40x1x1xf32>) outs({{.*}} : tensor<1x1x40x64xf32>)
// CHECK: arith.addf %out, %in
// CHECK-NEXT: arith.maximumf
// CHECK: } {kiln.parallel}
// CHECK: vector.fma
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<40x1x1xf32>) outs({{.*}} : tensor<1x1x40x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @pointwise_bias_relu
// OFF: } {kiln.parallel}
// OFF: linalg.generic {{.*}} ins({{.*}} : tensor<1x40x12x12xf32>, tensor<40x1x1xf32>)
func.func @pointwise_bias_relu(%x: tensor<1x16x12x12xf32>, %w: tensor<40x16x1x1xf32>, %b: tensor<40x1x1xf32>) -> tensor<1x40x12x12xf32> {
  %0 = kiln.fused 0 contraction (%x, %w, %b) nodes = [] : (tensor<1x16x12x12xf32>, tensor<40x16x1x1xf32>, tensor<40x1x1xf32>) -> tensor<1x40x12x12xf32> {
  ^bb0(%a: tensor<1x16x12x12xf32>, %f: tensor<40x16x1x1xf32>, %c: tensor<40x1x1xf32>):
    %y = kiln.conv %a, %f strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x16x12x12xf32>, tensor<40x16x1x1xf32> -> tensor<1x40x12x12xf32>
    %s = kiln.add %y, %c : tensor<1x40x12x12xf32>, tensor<40x1x1xf32> -> tensor<1x40x12x12xf32>
    %r = kiln.relu %s : tensor<1x40x12x12xf32>
    kiln.yield %r : tensor<1x40x12x12xf32>
  }
  return %0 : tensor<1x40x12x12xf32>
}

// -----

// The same convolution, bias and relu where kiln-fuse made two kernels (the
// conv alone in one, the bias and relu in another): only an op of the
// conv's own kernel is its epilogue, so the bias and relu stay a pass over
// the whole output, as with fuse-epilogues=false.
// CHECK-LABEL: func.func @epilogue_in_another_kernel
// CHECK: } {kiln.parallel}
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<1x40x12x12xf32>, tensor<40x1x1xf32>)
// CHECK: arith.addf
// CHECK-NEXT: arith.maximumf
func.func @epilogue_in_another_kernel(%x: tensor<1x16x12x12xf32>, %w: tensor<40x16x1x1xf32>, %b: tensor<40x1x1xf32>) -> tensor<1x40x12x12xf32> {
  %0 = kiln.fused 0 contraction (%x, %w) nodes = [] : (tensor<1x16x12x12xf32>, tensor<40x16x1x1xf32>) -> tensor<1x40x12x12xf32> {
  ^bb0(%a: tensor<1x16x12x12xf32>, %f: tensor<40x16x1x1xf32>):
    %y = kiln.conv %a, %f strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x16x12x12xf32>, tensor<40x16x1x1xf32> -> tensor<1x40x12x12xf32>
    kiln.yield %y : tensor<1x40x12x12xf32>
  }
  %1 = kiln.fused 1 elementwise (%0, %b) nodes = [] : (tensor<1x40x12x12xf32>, tensor<40x1x1xf32>) -> tensor<1x40x12x12xf32> {
  ^bb0(%y: tensor<1x40x12x12xf32>, %c: tensor<40x1x1xf32>):
    %s = kiln.add %y, %c : tensor<1x40x12x12xf32>, tensor<40x1x1xf32> -> tensor<1x40x12x12xf32>
    %r = kiln.relu %s : tensor<1x40x12x12xf32>
    kiln.yield %r : tensor<1x40x12x12xf32>
  }
  return %1 : tensor<1x40x12x12xf32>
}

// -----

// An operand that varies along the image rows only covers part of the
// flattened positions the matmul tiles: the add stays a pass of its own.
// CHECK-LABEL: func.func @row_operand
// CHECK: } {kiln.parallel}
// CHECK: linalg.generic {{.*}} ins({{.*}}, %arg2 : tensor<1x40x12x12xf32>, tensor<1x1x12x1xf32>)
func.func @row_operand(%x: tensor<1x16x12x12xf32>, %w: tensor<40x16x1x1xf32>, %r: tensor<1x1x12x1xf32>) -> tensor<1x40x12x12xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x16x12x12xf32>, tensor<40x16x1x1xf32> -> tensor<1x40x12x12xf32>
  %s = kiln.add %y, %r : tensor<1x40x12x12xf32>, tensor<1x1x12x1xf32> -> tensor<1x40x12x12xf32>
  return %s : tensor<1x40x12x12xf32>
}

// -----

// Shifted rows: the bias runs on the 12 x 42 positions computed, before
// the two extra columns per row are sliced off.
// CHECK-LABEL: func.func @shifted_bias
// CHECK: vector.fma
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<10x1x1xf32>) outs({{.*}} : tensor<1x1x10x64xf32>)
// CHECK: } {kiln.parallel}
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<10x1x1xf32>)
// CHECK: tensor.expand_shape {{.*}} into tensor<1x1x10x12x42xf32>
// CHECK: tensor.extract_slice {{.*}} [1, 1, 10, 12, 40]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @shifted_bias(%x: tensor<1x8x12x40xf32>, %w: tensor<10x8x3x3xf32>, %b: tensor<10x1x1xf32>) -> tensor<1x10x12x40xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x8x12x40xf32>, tensor<10x8x3x3xf32> -> tensor<1x10x12x40xf32>
  %s = kiln.add %y, %b : tensor<1x10x12x40xf32>, tensor<10x1x1xf32> -> tensor<1x10x12x40xf32>
  return %s : tensor<1x10x12x40xf32>
}

// -----

// A residual would have to be read on the cut-off columns too: not fused.
// CHECK-LABEL: func.func @shifted_residual
// CHECK: tensor.extract_slice {{.*}} [1, 1, 8, 12, 40]
// CHECK: linalg.generic {{.*}} ins({{.*}}, %arg0 : tensor<1x8x12x40xf32>, tensor<1x8x12x40xf32>)
func.func @shifted_residual(%x: tensor<1x8x12x40xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x12x40xf32> {
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x8x12x40xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x12x40xf32>
  %s = kiln.add %y, %x : tensor<1x8x12x40xf32>, tensor<1x8x12x40xf32> -> tensor<1x8x12x40xf32>
  return %s : tensor<1x8x12x40xf32>
}

// -----

// Depthwise: the bias and clip apply to each row chunk (16, 16 and 5
// columns) before it is stored, and the accumulators start at zero rather
// than from a zero-filled output. (A plane of 60 x 37 is too large for one
// flat row.)
// CHECK-LABEL: func.func @depthwise_clip
// CHECK-NOT: linalg.fill
// CHECK: vector.fma
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK-NEXT: arith.maximumf {{.*}} : vector<16xf32>
// CHECK-NEXT: arith.minimumf {{.*}} : vector<16xf32>
// CHECK-NEXT: vector.transfer_write
// CHECK: arith.minimumf {{.*}} : vector<5xf32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK: return
// OFF-LABEL: func.func @depthwise_clip
// OFF: vector.fma
// OFF: linalg.generic
func.func @depthwise_clip(%x: tensor<1x8x60x37xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8x1x1xf32>) -> tensor<1x8x60x37xf32> {
  %0 = kiln.fused 0 contraction (%x, %w, %b) nodes = [] : (tensor<1x8x60x37xf32>, tensor<8x1x3x3xf32>, tensor<8x1x1xf32>) -> tensor<1x8x60x37xf32> {
  ^bb0(%a: tensor<1x8x60x37xf32>, %f: tensor<8x1x3x3xf32>, %c: tensor<8x1x1xf32>):
    %y = kiln.conv %a, %f strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 8 : tensor<1x8x60x37xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x60x37xf32>
    %s = kiln.add %y, %c : tensor<1x8x60x37xf32>, tensor<8x1x1xf32> -> tensor<1x8x60x37xf32>
    %zero = kiln.constant dense<0.0> : tensor<f32>
    %six = kiln.constant dense<6.0> : tensor<f32>
    %m = kiln.max %s, %zero : tensor<1x8x60x37xf32>, tensor<f32> -> tensor<1x8x60x37xf32>
    %n = kiln.min %m, %six : tensor<1x8x60x37xf32>, tensor<f32> -> tensor<1x8x60x37xf32>
    kiln.yield %n : tensor<1x8x60x37xf32>
  }
  return %0 : tensor<1x8x60x37xf32>
}

// -----

// A depthwise convolution computed as one flat row per channel applies a
// per-channel bias and clip to each 16-position chunk (the last one's 4
// positions cut out after it); a residual, which varies by position, stays
// a pass of its own over the output, updating it in place.
// CHECK-LABEL: func.func @depthwise_flat_clip
// CHECK-NOT: linalg.fill
// CHECK: vector.fma
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK-NEXT: arith.maximumf {{.*}} : vector<16xf32>
// CHECK-NEXT: arith.minimumf {{.*}} : vector<16xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16xf32>, tensor<1x8x196xf32>
// CHECK: vector.extract_strided_slice {{.*}} sizes = [4]
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<4xf32>, tensor<1x8x196xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @depthwise_flat_residual
// CHECK: vector.fma
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: return
func.func @depthwise_flat_clip(%x: tensor<1x8x14x14xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8x1x1xf32>) -> tensor<1x8x14x14xf32> {
  %0 = kiln.fused 0 contraction (%x, %w, %b) nodes = [] : (tensor<1x8x14x14xf32>, tensor<8x1x3x3xf32>, tensor<8x1x1xf32>) -> tensor<1x8x14x14xf32> {
  ^bb0(%a: tensor<1x8x14x14xf32>, %f: tensor<8x1x3x3xf32>, %c: tensor<8x1x1xf32>):
    %y = kiln.conv %a, %f strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 8 : tensor<1x8x14x14xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x14x14xf32>
    %s = kiln.add %y, %c : tensor<1x8x14x14xf32>, tensor<8x1x1xf32> -> tensor<1x8x14x14xf32>
    %zero = kiln.constant dense<0.0> : tensor<f32>
    %six = kiln.constant dense<6.0> : tensor<f32>
    %m = kiln.max %s, %zero : tensor<1x8x14x14xf32>, tensor<f32> -> tensor<1x8x14x14xf32>
    %n = kiln.min %m, %six : tensor<1x8x14x14xf32>, tensor<f32> -> tensor<1x8x14x14xf32>
    kiln.yield %n : tensor<1x8x14x14xf32>
  }
  return %0 : tensor<1x8x14x14xf32>
}
func.func @depthwise_flat_residual(%x: tensor<1x8x14x14xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x14x14xf32> {
  %0 = kiln.fused 0 contraction (%x, %w) nodes = [] : (tensor<1x8x14x14xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x14x14xf32> {
  ^bb0(%a: tensor<1x8x14x14xf32>, %f: tensor<8x1x3x3xf32>):
    %y = kiln.conv %a, %f strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 8 : tensor<1x8x14x14xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x14x14xf32>
    %s = kiln.add %y, %a : tensor<1x8x14x14xf32>, tensor<1x8x14x14xf32> -> tensor<1x8x14x14xf32>
    kiln.yield %s : tensor<1x8x14x14xf32>
  }
  return %0 : tensor<1x8x14x14xf32>
}

// -----

// A matmul's bias, sliced per 64-column tile.
// CHECK-LABEL: func.func @matmul_bias
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<64xf32>) outs({{.*}} : tensor<3x64xf32>)
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<8xf32>) outs({{.*}} : tensor<3x8xf32>)
func.func @matmul_bias(%a: tensor<3x37xf32>, %w: tensor<37x200xf32>, %b: tensor<200xf32>) -> tensor<3x200xf32> {
  %y = kiln.matmul %a, %w : tensor<3x37xf32>, tensor<37x200xf32> -> tensor<3x200xf32>
  %s = kiln.add %y, %b : tensor<3x200xf32>, tensor<200xf32> -> tensor<3x200xf32>
  return %s : tensor<3x200xf32>
}

// -----

// The product itself is a result too: the epilogue reads it, not in place.
// CHECK-LABEL: func.func @two_users
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK: linalg.generic {{.*}} ins({{.*}}, %arg2 : tensor<3x200xf32>, tensor<200xf32>)
func.func @two_users(%a: tensor<3x37xf32>, %w: tensor<37x200xf32>, %b: tensor<200xf32>) -> (tensor<3x200xf32>, tensor<3x200xf32>) {
  %y = kiln.matmul %a, %w : tensor<3x37xf32>, tensor<37x200xf32> -> tensor<3x200xf32>
  %s = kiln.add %y, %b : tensor<3x200xf32>, tensor<200xf32> -> tensor<3x200xf32>
  return %s, %y : tensor<3x200xf32>, tensor<3x200xf32>
}

// -----

// Max pooling takes the depthwise row path: per output row, one vector max
// per tap and chunk (16 lanes at tile-n = 32; 56 columns = 16 * 3 + 8),
// stride 2 read wide and compacted by a shuffle, the -inf padding left out
// instead of copied, and the accumulators starting at -inf. Away from the
// row's ends a tap reads two whole vectors (32 elements, the last unused),
// not an odd 31 that would be loaded in pieces.
// CHECK-LABEL: func.func @maxpool
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.fill
// CHECK: vector.transfer_read {{.*}} vector<32xf32>
// CHECK-NEXT: vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: arith.maximumf {{.*}} : vector<8xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @maxpool(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> {
  %y = kiln.pool max %x kernel = [3, 3] strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] : tensor<1x64x112x112xf32> -> tensor<1x64x56x56xf32>
  return %y : tensor<1x64x56x56xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-vectorize-elementwise="width=16" | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-vectorize-elementwise="width=16 reductions=false" | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --split-input-file --kiln-vectorize-elementwise="width=32" | FileCheck %s --check-prefix=BLOCK
// RUN: kiln-opt %s --split-input-file --kiln-vectorize-elementwise="width=8" | FileCheck %s --check-prefix=SSE

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A fused add + relu over 4x40 with a broadcast bias: tiles of 16 lanes
// along the rows, the last 8 columns as a vector<1x8> remainder; no scalar
// loop is left.
// CHECK-LABEL: func.func @bias_relu
// CHECK: scf.for
// CHECK: scf.for {{.*}} step %c16
// CHECK: vector.transfer_read {{.*}} vector<1x16xf32>
// CHECK: vector.broadcast {{.*}} vector<16xf32> to vector<1x16xf32>
// CHECK: arith.addf {{.*}} : vector<1x16xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x16xf32>
// CHECK: vector.transfer_write
// CHECK: arith.addf {{.*}} : vector<1x8xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_relu(%x: tensor<4x40xf32>, %b: tensor<40xf32>) -> tensor<4x40xf32> {
  %e = tensor.empty() : tensor<4x40xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x40xf32>, tensor<40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    linalg.yield %m : f32
  } -> tensor<4x40xf32>
  return %r : tensor<4x40xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// A transposed read would be a gather per lane: left to the scalar path.
// CHECK-LABEL: func.func @transposed_read
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @transposed_read(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %e = tensor.empty() : tensor<32x32xf32>
  %r = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Too short a row (2 < min-width) and non-f32 nests stay as they are.
// CHECK-LABEL: func.func @not_worth_it
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: vector.
func.func @not_worth_it(%x: tensor<2xf32>, %y: tensor<64xf64>) -> (tensor<2xf32>, tensor<64xf64>) {
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<2xf32>) outs(%e : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<2xf32>
  %f = tensor.empty() : tensor<64xf64>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<64xf64>) outs(%f : tensor<64xf64>) {
  ^bb0(%a: f64, %o: f64):
    %n = arith.negf %a : f64
    linalg.yield %n : f64
  } -> tensor<64xf64>
  return %r, %s : tensor<2xf32>, tensor<64xf64>
}

// -----

// A softmax row sum with its exp fused in (two outputs: the exp values and
// the row sums): one tile per row, the whole row of 40 as one vector, the
// sum as a vector.reduction. With reductions=false it stays a generic.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for
// CHECK: vector.transfer_read {{.*}} vector<1x40xf32>
// CHECK: math.exp {{.*}} : vector<1x40xf32>
// CHECK: vector.reduction <add>, {{.*}} : vector<40xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @row_sum
// OFF: linalg.generic
// OFF-NOT: vector.reduction
func.func @row_sum(%x: tensor<4x40xf32>) -> (tensor<4x40xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x40xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x40xf32>) outs(%e, %acc : tensor<4x40xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32, %s: f32):
    %x1 = math.exp %a : f32
    %t = arith.addf %s, %x1 : f32
    linalg.yield %x1, %t : f32, f32
  } -> (tensor<4x40xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4x40xf32>, tensor<4xf32>
}

// -----

// The same with the row's max subtracted first: the max is read once per
// row and broadcast, not read into each lane (which convert-vector-to-scf
// would lower to a loop of scalar inserts).
// CHECK-LABEL: func.func @row_sum_minus_max
// CHECK: vector.transfer_read {{.*}} : tensor<1xf32>, vector<1xf32>
// CHECK-NEXT: vector.broadcast {{.*}} : vector<1xf32> to vector<1x40xf32>
// CHECK-NOT: permutation_map
// CHECK: vector.reduction <add>, {{.*}} : vector<40xf32> into f32
// CHECK: return
func.func @row_sum_minus_max(%x: tensor<4x40xf32>, %m: tensor<4xf32>) -> (tensor<4x40xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x40xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x40xf32>, tensor<4xf32>) outs(%e, %acc : tensor<4x40xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32, %s: f32):
    %d = arith.subf %a, %b : f32
    %x1 = math.exp %d : f32
    %t = arith.addf %s, %x1 : f32
    linalg.yield %x1, %t : f32, f32
  } -> (tensor<4x40xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4x40xf32>, tensor<4xf32>
}

// -----

// A reduction over a column (the innermost loop parallel: a bias gradient
// summed over the batch) is tiled like an elementwise nest: one row at a
// time, one vector added into the output, in the same order as the scalar
// loops (so also without reassociation).
// CHECK-LABEL: func.func @column_sum
// CHECK: scf.for
// CHECK: vector.transfer_read {{.*}} vector<1x4xf32>
// CHECK: vector.shape_cast {{.*}} : vector<1x4xf32> to vector<4xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @column_sum
// OFF-NOT: fastmath<reassoc>
// OFF: arith.addf {{.*}} : vector<4xf32>
func.func @column_sum(%x: tensor<40x4xf32>) -> tensor<4xf32> {
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<40x4xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %s, %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A transpose that keeps the innermost dim in place copies whole rows and
// is vectorized like an elementwise nest (whose 16-element read and write
// fold into a slice copy).
// CHECK-LABEL: func.func @transpose_rows
// CHECK-NOT: linalg.transpose
// CHECK: scf.for {{.*}} step %c16
// CHECK: tensor.extract_slice {{.*}} [1, 1, 16] [1, 1, 1] : tensor<4x8x32xf32> to tensor<1x1x16xf32>
// CHECK-NEXT: tensor.insert_slice
// One that swaps the two innermost dims is done in blocks of one vector
// register: at AVX2's width (16, two 8-lane vectors) 8x8 blocks, 8 rows
// read, transposed by 8 x log2(8) = 24 two-input shuffles, 8 rows written.
// CHECK-LABEL: func.func @transpose_columns
// CHECK-NOT: linalg.transpose
// CHECK: scf.for {{.*}} = %c0 to %c16 step %c8
// CHECK: scf.for {{.*}} = %c0 to %c32 step %c8
// CHECK-COUNT-8: vector.transfer_read {{.*}} : tensor<32x16xf32>, vector<8xf32>
// CHECK-NEXT: vector.shuffle {{.*}} [0, 8, 2, 10, 4, 12, 6, 14]
// CHECK-COUNT-23: vector.shuffle
// CHECK-COUNT-8: vector.transfer_write {{.*}} : vector<8xf32>, tensor<16x32xf32>
// At SSE's (8), 4x4 blocks by 8 shuffles.
// SSE-LABEL: func.func @transpose_columns
// SSE-NOT: linalg.transpose
// SSE-COUNT-4: vector.transfer_read {{.*}} : tensor<32x16xf32>, vector<4xf32>
// SSE-COUNT-8: vector.shuffle
// SSE-COUNT-4: vector.transfer_write {{.*}} : vector<4xf32>, tensor<16x32xf32>
// SSE-NOT: vector.shuffle
// SSE: return
// With AVX-512's width (32, two 16-lane vectors) one that swaps the two
// innermost dims, both multiples of 16, is done in 16x16 blocks: 16 rows
// read, transposed by 64 shuffles, 16 rows written.
// BLOCK-LABEL: func.func @transpose_columns
// BLOCK-NOT: linalg.transpose
// BLOCK: scf.for {{.*}} = %c0 to %c32 step %c16
// BLOCK: vector.transfer_read {{.*}} : tensor<32x16xf32>, vector<16x16xf32>
// BLOCK-COUNT-64: vector.shuffle
// BLOCK: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x32xf32>
// Sides that are not multiples of 16 (a 7x7 image's 49 positions by 512
// channels, back to channels by positions): whole blocks over 48 x 512, the
// loops over them parallel (the transpose moves 200 KB), and the last input
// row transposed on its own, element by element, into the last column.
// BLOCK-LABEL: func.func @transpose_ragged
// BLOCK: scf.for {{.*}} = %c0 to %c512 step %c16
// BLOCK: scf.for {{.*}} = %c0 to %c48 step %c16
// BLOCK: vector.transfer_read {{.*}} : tensor<49x512xf32>, vector<16x16xf32>
// BLOCK: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<512x49xf32>
// BLOCK: } {kiln.parallel}
// BLOCK-NEXT: scf.yield
// BLOCK-NEXT: } {kiln.parallel}
// BLOCK: tensor.extract_slice %{{.*}}[48, 0] [1, 512] [1, 1] : tensor<49x512xf32> to tensor<1x512xf32>
// BLOCK: linalg.transpose ins(%{{.*}} : tensor<1x512xf32>) outs(%{{.*}} : tensor<512x1xf32>)
// BLOCK: tensor.insert_slice %{{.*}}[0, 48] [512, 1] [1, 1] : tensor<512x1xf32> into tensor<512x49xf32>
// BLOCK-NOT: linalg.transpose
// One whose side is less than a block stays as it is.
// BLOCK-LABEL: func.func @transpose_narrow
// BLOCK: linalg.transpose
// BLOCK-NOT: vector.transfer_read
// BLOCK: return
func.func @transpose_rows(%x: tensor<4x8x32xf32>) -> tensor<8x4x32xf32> {
  %e = tensor.empty() : tensor<8x4x32xf32>
  %t = linalg.transpose ins(%x : tensor<4x8x32xf32>) outs(%e : tensor<8x4x32xf32>) permutation = [1, 0, 2]
  return %t : tensor<8x4x32xf32>
}
func.func @transpose_columns(%x: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%x : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  return %t : tensor<16x32xf32>
}
func.func @transpose_ragged(%x: tensor<49x512xf32>) -> tensor<512x49xf32> {
  %e = tensor.empty() : tensor<512x49xf32>
  %t = linalg.transpose ins(%x : tensor<49x512xf32>) outs(%e : tensor<512x49xf32>) permutation = [1, 0]
  return %t : tensor<512x49xf32>
}
func.func @transpose_narrow(%x: tensor<12x64xf32>) -> tensor<64x12xf32> {
  %e = tensor.empty() : tensor<64x12xf32>
  %t = linalg.transpose ins(%x : tensor<12x64xf32>) outs(%e : tensor<64x12xf32>) permutation = [1, 0]
  return %t : tensor<64x12xf32>
}

// -----

// A bias gradient of a convolution, NCHW: the sum over N, H and W of the
// masked gradient, which the nest also writes. The innermost loop is a
// reduction with another one outside it and one inside the channel loop:
// each (n, c, h) row of 16 is one vector.reduction added into the
// channel's sum, and the masked values are written as vectors.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: arith.select {{.*}} : vector<1x1x1x16xi1>, vector<1x1x1x16xf32>
// CHECK: vector.reduction <add>, {{.*}} : vector<16xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @bias_gradient
// OFF: linalg.generic
func.func @bias_gradient(%y: tensor<2x4x3x16xf32>, %g: tensor<2x4x3x16xf32>) -> (tensor<2x4x3x16xf32>, tensor<4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3x16xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>],
                         iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%y, %g : tensor<2x4x3x16xf32>, tensor<2x4x3x16xf32>) outs(%e, %acc : tensor<2x4x3x16xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32, %s: f32):
    %p = arith.cmpf ogt, %a, %z : f32
    %m = arith.select %p, %b, %z : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %m, %t : f32, f32
  } -> (tensor<2x4x3x16xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<2x4x3x16xf32>, tensor<4xf32>
}

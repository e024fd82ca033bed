// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-schedule-matmul{tile-m=4 tile-n=8 cache-m=64 cache-n=64 cache-k=64}))' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-schedule-matmul{tile-m=4 tile-n=8 pack-weights=false}))' | FileCheck %s --check-prefix=OFF

// Constant right-hand sides are stored in panels of tile-n columns, k-major:
// packed[p][k][j] = B[k][p*8 + j]. Row 0 of B is 0..15, row 1 is 16..31, so
// panel 0 starts 0..7, 16..23 and panel 1 starts 8..15, 24..31. The result is
// written through a split of n and collapsed back.
// CHECK-LABEL: func.func @packed
// CHECK: arith.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00], [1.600000e+01, {{.*}}]], {{\[\[}}8.000000e+00, {{.*}}]]]> : tensor<2x2x8xf32>
// CHECK: tensor.expand_shape {{.*}} : tensor<4x16xf32> into tensor<4x2x8xf32>
// CHECK: vector.fma
// CHECK: tensor.collapse_shape {{.*}} : tensor<4x2x8xf32> into tensor<4x16xf32>
// OFF-LABEL: func.func @packed
// OFF-NOT: tensor<2x2x8xf32>
func.func @packed(%a: tensor<4x2xf32>) -> tensor<4x16xf32> {
  %b = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                             [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<2x16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// A transposed constant ([N, K], read at (n, k)) packs the same way:
// packed[p][k][j] = B[p*8 + j][k]; B[n][k] = 2n + k here, so panel 0 holds
// 0, 2, 4, ... for k = 0 and 1, 3, 5, ... for k = 1.
// CHECK-LABEL: func.func @transposed
// CHECK: arith.constant dense<{{\[\[\[}}0.000000e+00, 2.000000e+00, 4.000000e+00, {{.*}}], [1.000000e+00, 3.000000e+00, {{.*}}]], {{\[\[}}1.600000e+01, {{.*}}]]]> : tensor<2x2x8xf32>
func.func @transposed(%a: tensor<4x2xf32>) -> tensor<4x16xf32> {
  %b = arith.constant dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0], [12.0, 13.0], [14.0, 15.0],
                             [16.0, 17.0], [18.0, 19.0], [20.0, 21.0], [22.0, 23.0], [24.0, 25.0], [26.0, 27.0], [28.0, 29.0], [30.0, 31.0]]> : tensor<16x2xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x2xf32>, tensor<16x2xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// Not packed: a runtime right-hand side, a width that is not a multiple of
// the panel, and a single panel (already contiguous per k).
// CHECK-LABEL: func.func @unpacked
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @unpacked(%a: tensor<4x2xf32>, %b: tensor<2x16xf32>) -> (tensor<4x16xf32>, tensor<4x12xf32>, tensor<4x8xf32>) {
  %w12 = arith.constant dense<1.0> : tensor<2x12xf32>
  %w8 = arith.constant dense<1.0> : tensor<2x8xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e12 = tensor.empty() : tensor<4x12xf32>
  %c12 = linalg.fill ins(%z : f32) outs(%e12 : tensor<4x12xf32>) -> tensor<4x12xf32>
  %r12 = linalg.matmul ins(%a, %w12 : tensor<4x2xf32>, tensor<2x12xf32>) outs(%c12 : tensor<4x12xf32>) -> tensor<4x12xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %c8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r8 = linalg.matmul ins(%a, %w8 : tensor<4x2xf32>, tensor<2x8xf32>) outs(%c8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r, %r12, %r8 : tensor<4x16xf32>, tensor<4x12xf32>, tensor<4x8xf32>
}

// A transposed constant whose width is not a multiple of the panel is
// stored row-major [K, N] (B[n][k] = 2n + k: row 0 is 0, 2, 4, ...), so the
// tile reads a row with plain loads instead of gathering a column.
// CHECK-LABEL: func.func @transposed_partial
// CHECK: arith.constant dense<{{\[\[}}0.000000e+00, 2.000000e+00, 4.000000e+00, {{.*}}], [1.000000e+00, 3.000000e+00, {{.*}}]]> : tensor<2x12xf32>
// CHECK-NOT: tensor<12x2xf32>
// CHECK-NOT: vector.gather
// OFF-LABEL: func.func @transposed_partial
// OFF: tensor<12x2xf32>
func.func @transposed_partial(%a: tensor<4x2xf32>) -> tensor<4x12xf32> {
  %b = arith.constant dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0], [12.0, 13.0], [14.0, 15.0],
                             [16.0, 17.0], [18.0, 19.0], [20.0, 21.0], [22.0, 23.0]]> : tensor<12x2xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x12xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x12xf32>) -> tensor<4x12xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x2xf32>, tensor<12x2xf32>) outs(%c : tensor<4x12xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x12xf32>
  return %r : tensor<4x12xf32>
}

// A right-hand side that is not a constant and is read along k
// (transpose_rhs, attention's Q K^T) is transposed once into a [K, N] copy,
// so the register tiles load its rows instead of gathering columns; with
// fewer rows than a register tile to reuse it (2 < 4) it is read in place.
// CHECK-LABEL: func.func @transposed_operand
// CHECK: linalg.transpose ins(%{{.*}} : tensor<12x2xf32>) outs(%{{.*}} : tensor<2x12xf32>) permutation = [1, 0]
// CHECK: vector.fma
// CHECK-LABEL: func.func @transposed_operand_two_rows
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @transposed_operand(%a: tensor<4x2xf32>, %b: tensor<12x2xf32>) -> tensor<4x12xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x12xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x12xf32>) -> tensor<4x12xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x2xf32>, tensor<12x2xf32>) outs(%c : tensor<4x12xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x12xf32>
  return %r : tensor<4x12xf32>
}
func.func @transposed_operand_two_rows(%a: tensor<2x2xf32>, %b: tensor<12x2xf32>) -> tensor<2x12xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x12xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<2x12xf32>) -> tensor<2x12xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x2xf32>, tensor<12x2xf32>) outs(%c : tensor<2x12xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x12xf32>
  return %r : tensor<2x12xf32>
}

// A left-hand side that is not a constant and is read along m (transpose_lhs,
// a weight gradient x^T dy) is transposed once into an [M, K] copy, so a
// register tile's k rows are not M floats apart; with fewer columns than two
// register tiles to reuse it (8 < 16) it is read in place.
// CHECK-LABEL: func.func @transposed_lhs
// CHECK: linalg.transpose ins(%{{.*}} : tensor<3x8xf32>) outs(%{{.*}} : tensor<8x3xf32>) permutation = [1, 0]
// CHECK: vector.fma
// CHECK-LABEL: func.func @transposed_lhs_few_columns
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @transposed_lhs(%a: tensor<3x8xf32>, %b: tensor<3x16xf32>) -> tensor<8x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<3x8xf32>, tensor<3x16xf32>) outs(%c : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
func.func @transposed_lhs_few_columns(%a: tensor<3x8xf32>, %b: tensor<3x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<3x8xf32>, tensor<3x8xf32>) outs(%c : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// A right-hand side computed at run time (a trained weight), large enough
// (64K elements) and reused by enough rows (2 x tile-m = 8), is packed into
// the same panels by a transpose in front of the product: [K, N] split into
// [K, N / 8, 8] and moved to [N / 8, K, 8]; read transposed, [N, K] split
// into [N / 8, 8, K] with its two innermost dims swapped.
// CHECK-LABEL: func.func @runtime_packed
// CHECK: tensor.expand_shape %arg1 {{\[\[}}0], [1, 2]] {{.*}} : tensor<256x256xf32> into tensor<256x32x8xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<256x32x8xf32>) outs(%{{.*}} : tensor<32x256x8xf32>) permutation = [1, 0, 2]
// CHECK: vector.fma
// CHECK: tensor.expand_shape %arg2 {{\[\[}}0, 1], [2]] {{.*}} : tensor<256x256xf32> into tensor<32x8x256xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<32x8x256xf32>) outs(%{{.*}} : tensor<32x256x8xf32>) permutation = [0, 2, 1]
// OFF-LABEL: func.func @runtime_packed
// OFF-NOT: tensor<32x256x8xf32>
func.func @runtime_packed(%a: tensor<8x256xf32>, %b: tensor<256x256xf32>, %bt: tensor<256x256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x256xf32>, tensor<256x256xf32>) outs(%c : tensor<8x256xf32>) -> tensor<8x256xf32>
  %rt = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<8x256xf32>, tensor<256x256xf32>) outs(%c : tensor<8x256xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x256xf32>
  return %r, %rt : tensor<8x256xf32>, tensor<8x256xf32>
}

// Not at run time: too few rows (4 < 8) to repay the copy, and a smaller
// operand (attention's per-head keys) that stays in cache as it is.
// CHECK-LABEL: func.func @runtime_unpacked
// CHECK-NOT: permutation = [1, 0, 2]
// CHECK: return
func.func @runtime_unpacked(%a: tensor<4x256xf32>, %b: tensor<256x256xf32>, %q: tensor<64x64xf32>, %k: tensor<64x128xf32>)
    -> (tensor<4x256xf32>, tensor<64x128xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x256xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x256xf32>) -> tensor<4x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x256xf32>, tensor<256x256xf32>) outs(%c : tensor<4x256xf32>) -> tensor<4x256xf32>
  %e2 = tensor.empty() : tensor<64x128xf32>
  %c2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %s = linalg.matmul ins(%q, %k : tensor<64x64xf32>, tensor<64x128xf32>) outs(%c2 : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %r, %s : tensor<4x256xf32>, tensor<64x128xf32>
}

// A constant with two whole panels and columns past them (20 = 2 x 8 + 4)
// is split at the last whole panel: the 16 columns packed, the 4 left a
// row-major [K, 4] constant (B[k][n] = 20k + n: row 0 of the rest is 16..19),
// each writing its columns through extract_slice/insert_slice, each from its
// own fill.
// CHECK-LABEL: func.func @split_panels
// CHECK-DAG: arith.constant dense<{{\[\[\[}}0.000000e+00, {{.*}}]]]> : tensor<2x2x8xf32>
// CHECK-DAG: arith.constant dense<{{\[\[}}1.600000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01], [3.600000e+01, {{.*}}]]> : tensor<2x4xf32>
// CHECK: tensor.insert_slice {{.*}}[0, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<4x20xf32>
// CHECK: tensor.insert_slice {{.*}}[0, 16] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<4x20xf32>
// CHECK-NOT: tensor<2x20xf32>
// CHECK: return
func.func @split_panels(%a: tensor<4x2xf32>) -> tensor<4x20xf32> {
  %b = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0],
                             [20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0]]> : tensor<2x20xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x20xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x20xf32>) -> tensor<4x20xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x20xf32>) outs(%c : tensor<4x20xf32>) -> tensor<4x20xf32>
  return %r : tensor<4x20xf32>
}

// A product that fits one cache tile but has a packed weight of several
// panels (a 7x7 image's 49 positions by 960 channels, here 16 rows by 16
// panels of 8): the panel loop, its only parallel loop, comes outermost
// with the parallel mark (the register tiles used to take it unmarked, so
// such a product ran on one thread).
// CHECK-LABEL: func.func @panels_parallel
// CHECK: tensor.expand_shape {{.*}} : tensor<16x128xf32> into tensor<16x16x8xf32>
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c16 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4
// CHECK: vector.fma
// CHECK: } {kiln.parallel}
// CHECK-NEXT: tensor.collapse_shape
func.func @panels_parallel(%a: tensor<16x64xf32>) -> tensor<16x128xf32> {
  %b = arith.constant dense<0.5> : tensor<64x128xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<16x64xf32>, tensor<64x128xf32>) outs(%c : tensor<16x128xf32>) -> tensor<16x128xf32>
  return %r : tensor<16x128xf32>
}

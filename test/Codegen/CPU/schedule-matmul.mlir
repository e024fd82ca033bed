// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-schedule-matmul{tile-m=8 tile-n=32 cache-m=64 cache-n=64 cache-k=64}))' | FileCheck %s
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-schedule-matmul{tile-m=4 tile-n=8 cache-m=32 cache-n=64 cache-k=64}))' | FileCheck %s --check-prefix=SSE

// A full register tile: 8 rows of 32 lanes, accumulators carried by the k
// loop (hoisted out of it), one FMA per row and k.
// CHECK-LABEL: func.func @full
// CHECK-NOT: linalg.matmul
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8x32xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.yield
// CHECK: vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
// SSE-LABEL: func.func @full
// SSE-NOT: linalg.matmul
// SSE-COUNT-4: vector.fma {{.*}} : vector<8xf32>
func.func @full(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// 37x53x29: rows 32..36 and columns 0..28 are remainder tiles, peeled into
// static smaller tiles; the 29 columns are split into power-of-two widths
// (16 + 8 + 4 + 1), which LLVM does not have to legalize lane by lane.
// Nothing stays a scalar linalg op.
// CHECK-LABEL: func.func @remainders
// CHECK-NOT: linalg.matmul
// CHECK-NOT: vector<29xf32>
// CHECK-DAG: vector.fma {{.*}} : vector<16xf32>
// CHECK-DAG: vector.transfer_write {{.*}} : vector<8x16xf32>, tensor<8x16xf32>
// CHECK-DAG: vector.transfer_write {{.*}} : vector<8x8xf32>, tensor<8x8xf32>
// CHECK-DAG: vector.transfer_write {{.*}} : vector<8x4xf32>, tensor<8x4xf32>
// CHECK-DAG: vector.transfer_write {{.*}} : vector<8x1xf32>, tensor<8x1xf32>
// CHECK-DAG: vector.transfer_write {{.*}} : vector<5x16xf32>, tensor<5x16xf32>
// CHECK-DAG: vector.transfer_write {{.*}} : vector<5x1xf32>, tensor<5x1xf32>
// SSE-LABEL: func.func @remainders
// SSE-NOT: linalg.matmul
// SSE-DAG: vector.transfer_write {{.*}} : vector<4x8xf32>, tensor<4x8xf32>
// SSE-DAG: vector.transfer_write {{.*}} : vector<4x4xf32>, tensor<4x4xf32>
// SSE-DAG: vector.transfer_write {{.*}} : vector<4x1xf32>, tensor<4x1xf32>
// SSE-DAG: vector.transfer_write {{.*}} : vector<1x8xf32>, tensor<1x8xf32>
// SSE-DAG: vector.transfer_write {{.*}} : vector<1x1xf32>, tensor<1x1xf32>
// Single-row tiles (the 37th row) are FMAs too, not scalar dot products.
// SSE-NOT: arith.addf
// SSE-LABEL: func.func @batched
func.func @remainders(%a: tensor<37x53xf32>, %b: tensor<53x29xf32>) -> tensor<37x29xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x29xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<37x29xf32>) -> tensor<37x29xf32>
  %r = linalg.matmul ins(%a, %b : tensor<37x53xf32>, tensor<53x29xf32>) outs(%c : tensor<37x29xf32>) -> tensor<37x29xf32>
  return %r : tensor<37x29xf32>
}

// -----

// The batched matmul generic (as kiln-lower-to-linalg emits it) is tiled by
// one over the batch and vectorized like linalg.matmul.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: linalg.generic
// CHECK: vector.fma {{.*}} : vector<32xf32>
#lhs = affine_map<(b, m, n, k) -> (b, m, k)>
#rhs = affine_map<(b, m, n, k) -> (b, k, n)>
#out = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @batched(%a: tensor<3x17x33xf32>, %b: tensor<3x33x65xf32>) -> tensor<3x17x65xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x17x65xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<3x17x65xf32>) -> tensor<3x17x65xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<3x17x33xf32>, tensor<3x33x65xf32>) outs(%c : tensor<3x17x65xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x17x65xf32>
  return %r : tensor<3x17x65xf32>
}

// -----

// Other element types are left alone.
// CHECK-LABEL: func.func @f64
// CHECK: linalg.matmul
// CHECK-NOT: vector.fma
func.func @f64(%a: tensor<8x8xf64>, %b: tensor<8x8xf64>, %c: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %r = linalg.matmul ins(%a, %b : tensor<8x8xf64>, tensor<8x8xf64>) outs(%c : tensor<8x8xf64>) -> tensor<8x8xf64>
  return %r : tensor<8x8xf64>
}

// -----

// 75 rows pass cache-m (64) by less than a quarter: one m cache tile of all
// 75 rows (register tiles 9 x 8 and a 3-row rest inside it), not 64 and 11,
// which would read all of B twice (a 7x7 image's 49 positions against a
// 48-row tile). With cache-m 32 (SSE) 75 stays tiles of 32.
// CHECK-LABEL: func.func @absorbed
// CHECK: tensor.extract_slice %{{.*}}[0, %{{.*}}] [75, 64] [1, 1] : tensor<75x128xf32> to tensor<75x64xf32>
// CHECK: vector<3x32xf32>
// SSE-LABEL: func.func @absorbed
// SSE-NOT: [75, 64] [1, 1] : tensor<75x128xf32>
// SSE: [32, 64] [1, 1] : tensor<75x128xf32> to tensor<32x64xf32>
// SSE: [11, 64] [1, 1] : tensor<75x128xf32> to tensor<11x64xf32>
func.func @absorbed(%a: tensor<75x64xf32>, %b: tensor<64x128xf32>) -> tensor<75x128xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<75x128xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<75x128xf32>) -> tensor<75x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<75x64xf32>, tensor<64x128xf32>) outs(%c : tensor<75x128xf32>) -> tensor<75x128xf32>
  return %r : tensor<75x128xf32>
}

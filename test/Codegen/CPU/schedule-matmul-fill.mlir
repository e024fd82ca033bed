// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-schedule-matmul{tile-m=8 tile-n=32 cache-m=64 cache-n=64 cache-k=64}))' | FileCheck %s

// A matmul whose k (48) fits one cache tile fills nothing: each register
// tile's accumulators start as zeros and are stored once, at the end (no
// fill of the output, no load of it).
// CHECK-LABEL: func.func @fill_in_tile
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: vector.transfer_write %[[ZERO]]
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c1 iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK: vector.fma
// CHECK-NOT: linalg.fill
// CHECK-NOT: vector.transfer_write %[[ZERO]]
// CHECK: return
func.func @fill_in_tile(%a: tensor<128x48xf32>, %b: tensor<48x128xf32>) -> tensor<128x128xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x48xf32>, tensor<48x128xf32>) outs(%c : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

// -----

// With k cache-tiled (101 > 64 and no divisor of 101 between 32 and 64:
// chunks of 64 and 37), the fill still goes into each output tile, in
// front of both k chunks, which accumulate onto it.
// CHECK-LABEL: func.func @fill_before_k_tiles
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK: scf.for
// CHECK: linalg.fill {{.*}} -> tensor<64x64xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %c37 step %c1
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @fill_before_k_tiles(%a: tensor<128x101xf32>, %b: tensor<101x128xf32>) -> tensor<128x128xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x101xf32>, tensor<101x128xf32>) outs(%c : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

// -----

// Where k has a divisor between half the cache tile and the cache tile
// (100 = 2 x 50, cache-k 64), k is cut into equal chunks: one loop of k
// chunks, and no remainder chunk with a second copy of the tile's code.
// CHECK-LABEL: func.func @even_k_tiles
// CHECK: linalg.fill {{.*}} -> tensor<64x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c100 step %c50
// CHECK: scf.for %{{.*}} = %c0 to %c50 step %c1
// CHECK-NOT: scf.for %{{.*}} = %c0 to %c{{[0-9]+}} step %c1
// CHECK: return
func.func @even_k_tiles(%a: tensor<128x100xf32>, %b: tensor<100x128xf32>) -> tensor<128x128xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x100xf32>, tensor<100x128xf32>) outs(%c : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

// -----

// A batch-1 layer with a packed weight: m and the panel's columns fit one
// cache tile and only k (784) exceeds it. The loop over weight panels is
// still made with the output tiles, and marked parallel; k is tiled inside.
// CHECK-LABEL: func.func @panels_parallel
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 {{.*}} {
// CHECK: linalg.fill
// CHECK: } {kiln.parallel
func.func @panels_parallel(%a: tensor<1x784xf32>) -> tensor<1x512xf32> {
  %b = arith.constant dense<1.0> : tensor<784x512xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x512xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<1x512xf32>) -> tensor<1x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<1x784xf32>, tensor<784x512xf32>) outs(%c : tensor<1x512xf32>) -> tensor<1x512xf32>
  return %r : tensor<1x512xf32>
}

// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-prefetch-panels{min-rows=1}))' --split-input-file | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-prefetch-panels{min-rows=1 min-trips=512}))' --split-input-file | FileCheck %s --check-prefix=SHORT
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-prefetch-panels))' --split-input-file | FileCheck %s --check-prefix=FEW

// A register tile's k loop over a 256-row k tile of a packed panel: each
// step reads row k (32 floats, two cache lines) and gets two prefetches of
// row k + 256 of the panel view, one per line. The broadcast reads of A
// (a column, not a row) get none.
// CHECK-LABEL: func.func @register_tile
// CHECK-SAME:    (%[[PANEL:[^:]*]]: memref<1x256x32xf32
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:           %[[C256:.*]] = arith.constant 256 : index
// CHECK:           %[[NEXT:.*]] = arith.addi %[[K]], %[[C256]] : index
// CHECK:           %[[C0:.*]] = arith.constant 0 : index
// CHECK:           %[[C0B:.*]] = arith.constant 0 : index
// CHECK:           memref.prefetch %[[PANEL]][%[[C0]], %[[NEXT]], %[[C0B]]], read, locality<2>, data
// CHECK:           %[[C16:.*]] = arith.constant 16 : index
// CHECK:           memref.prefetch %[[PANEL]][%[[C0]], %[[NEXT]], %[[C16]]], read, locality<2>, data
// CHECK-NOT:       memref.prefetch
// CHECK:           vector.fma
// SHORT-LABEL: func.func @register_tile
// SHORT-NOT:     memref.prefetch
// With the default min-rows (4), this tile's one FMA per step is too few:
// a matrix-vector product is bound by its loads already.
// FEW-LABEL: func.func @register_tile
// FEW-NOT:     memref.prefetch
func.func @register_tile(%panel: memref<1x256x32xf32, strided<[32768, 32, 1], offset: ?>>,
                         %a: memref<1x1x2x256xf32, strided<[50176, 50176, 1024, 1], offset: ?>>,
                         %c: memref<2x32xf32, strided<[1024, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %init = vector.transfer_read %c[%c0, %c0], %zero {in_bounds = [true, true]} : memref<2x32xf32, strided<[1024, 1], offset: ?>>, vector<2x32xf32>
  %r = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %init) -> (vector<2x32xf32>) {
    %av = memref.subview %a[0, 0, 0, %k] [1, 1, 2, 1] [1, 1, 1, 1] : memref<1x1x2x256xf32, strided<[50176, 50176, 1024, 1], offset: ?>> to memref<2x1xf32, strided<[1024, 1], offset: ?>>
    %row = memref.subview %panel[0, %k, 0] [1, 1, 32] [1, 1, 1] : memref<1x256x32xf32, strided<[32768, 32, 1], offset: ?>> to memref<1x1x32xf32, strided<[32768, 32, 1], offset: ?>>
    %row2 = memref.subview %row[0, 0, 0] [1, 1, 32] [1, 1, 1] : memref<1x1x32xf32, strided<[32768, 32, 1], offset: ?>> to memref<1x32xf32, strided<[32768, 1], offset: ?>>
    %x = vector.transfer_read %av[%c0, %c0], %zero {in_bounds = [true, true]} : memref<2x1xf32, strided<[1024, 1], offset: ?>>, vector<2x1xf32>
    %b = vector.transfer_read %row2[%c0, %c0], %zero {in_bounds = [true, true]} : memref<1x32xf32, strided<[32768, 1], offset: ?>>, vector<1x32xf32>
    %bv = vector.extract %b[0] : vector<32xf32> from vector<1x32xf32>
    %x0 = vector.extract %x[0, 0] : f32 from vector<2x1xf32>
    %xb = vector.broadcast %x0 : f32 to vector<32xf32>
    %acc0 = vector.extract %acc[0] : vector<32xf32> from vector<2x32xf32>
    %f = vector.fma %xb, %bv, %acc0 : vector<32xf32>
    %next = vector.insert %f, %acc [0] : vector<32xf32> into vector<2x32xf32>
    scf.yield %next : vector<2x32xf32>
  }
  vector.transfer_write %r, %c[%c0, %c0] {in_bounds = [true, true]} : vector<2x32xf32>, memref<2x32xf32, strided<[1024, 1], offset: ?>>
  return
}

// -----

// Loops that are not register tiles' k loops get nothing: one without
// carried vectors (an elementwise loop) and one whose row is narrower
// than a cache line.
// CHECK-LABEL: func.func @not_register_tiles
// CHECK-NOT:     memref.prefetch
func.func @not_register_tiles(%src: memref<256x32xf32>, %narrow: memref<256x8xf32>,
                              %dst: memref<256x32xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %src[%i, 0] [1, 32] [1, 1] : memref<256x32xf32> to memref<1x32xf32, strided<[32, 1], offset: ?>>
    %v = vector.transfer_read %row[%c0, %c0], %zero {in_bounds = [true, true]} : memref<1x32xf32, strided<[32, 1], offset: ?>>, vector<1x32xf32>
    %f = vector.fma %v, %v, %v : vector<1x32xf32>
    %out = memref.subview %dst[%i, 0] [1, 32] [1, 1] : memref<256x32xf32> to memref<1x32xf32, strided<[32, 1], offset: ?>>
    vector.transfer_write %f, %out[%c0, %c0] {in_bounds = [true, true]} : vector<1x32xf32>, memref<1x32xf32, strided<[32, 1], offset: ?>>
  }
  %init = arith.constant dense<0.0> : vector<8xf32>
  %r = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %init) -> (vector<8xf32>) {
    %row = memref.subview %narrow[%k, 0] [1, 8] [1, 1] : memref<256x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %v = vector.transfer_read %row[%c0, %c0], %zero {in_bounds = [true, true]} : memref<1x8xf32, strided<[8, 1], offset: ?>>, vector<1x8xf32>
    %e = vector.extract %v[0] : vector<8xf32> from vector<1x8xf32>
    %f = vector.fma %e, %e, %acc : vector<8xf32>
    scf.yield %f : vector<8xf32>
  }
  return %r : vector<8xf32>
}

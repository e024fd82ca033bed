// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-copies))' | FileCheck %s

// A strided copy becomes linalg.copy (memref.copy would call memrefCopy).
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<2x2xf32, strided<[4, 1]>>) outs(%{{.*}} : memref<2x2xf32>)
func.func @strided(%src: memref<2x2xf32, strided<[4, 1]>>, %dst: memref<2x2xf32>) {
  memref.copy %src, %dst : memref<2x2xf32, strided<[4, 1]>> to memref<2x2xf32>
  return
}

// -----

// Contiguous copies go the same way; LLVM turns the loop into memcpy.
// CHECK-LABEL: func.func @contiguous
// CHECK: linalg.copy
func.func @contiguous(%src: memref<8xf32>, %dst: memref<8xf32>) {
  memref.copy %src, %dst : memref<8xf32> to memref<8xf32>
  return
}

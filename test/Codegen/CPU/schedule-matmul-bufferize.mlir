// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-schedule-matmul),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse,canonicalize)' | FileCheck %s

// Row remainders (13 = 8 + 5) inside a cache-tiled k loop (144 > 64): the
// scheduled IR must bufferize in place (the copies it leaves copy a view
// onto itself, and fold away). Hoisting the tiles' accumulators out
// of the outer loops once made one-shot bufferization copy each tile through
// an allocation inside the loops (conformance: test_operator_conv).
// CHECK-LABEL: func.func @remainder_rows
// CHECK: memref.alloc
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: return
func.func @remainder_rows(%a: tensor<13x144xf32>, %b: tensor<144x100xf32>) -> tensor<13x100xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13x100xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<13x100xf32>) -> tensor<13x100xf32>
  %r = linalg.matmul ins(%a, %b : tensor<13x144xf32>, tensor<144x100xf32>) outs(%c : tensor<13x100xf32>) -> tensor<13x100xf32>
  return %r : tensor<13x100xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-lower-to-linalg | FileCheck %s

// An elementwise kernel with a broadcast operand becomes one loop nest.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: scf.execute_region
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: math.tanh
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @chain(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.fused 0 elementwise (%x, %s) nodes = [] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    %m = kiln.mul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %p = kiln.add %m, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %t = kiln.tanh %p : tensor<4x8xf32>
    kiln.yield %t : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Softmax: the max, then sub + exp fused into the sum (which also writes
// the exponentials, computed once), then the division: three nests.
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.fused 0 reduction (%x) nodes = [] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %m = kiln.reduce_max %a axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %s = kiln.sub %a, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %e = kiln.exp %s : tensor<4x8xf32>
    %t = kiln.reduce_sum %e axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = kiln.div %e, %t : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    kiln.yield %d : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Cost rule: a cheap producer (add) read by two consumers is computed in
// each of them; nothing stores it. (The two nests then share their inputs
// and merge into one, whose duplicate add CSE removes later.)
// CHECK-LABEL: func.func @cheap_producer_duplicated
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.addf
// CHECK-NEXT: math.log
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @cheap_producer_duplicated(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0:2 = kiln.fused 0 elementwise (%x, %y) nodes = [] : (tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<16xf32>, %b: tensor<16xf32>):
    %s = kiln.add %a, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    %e = kiln.exp %s : tensor<16xf32>
    %l = kiln.log %s : tensor<16xf32>
    kiln.yield %e, %l : tensor<16xf32>, tensor<16xf32>
  }
  return %0#0, %0#1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// Cost rule: an expensive producer (exp) read by two consumers is computed
// once: fused into the first, whose nest also writes it for the second.
// CHECK-LABEL: func.func @expensive_producer_once
// CHECK-COUNT-1: math.exp
// CHECK-NOT: math.exp
// CHECK: return
func.func @expensive_producer_once(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0:2 = kiln.fused 0 elementwise (%x) nodes = [] : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<16xf32>):
    %e = kiln.exp %a : tensor<16xf32>
    %n = kiln.neg %e : tensor<16xf32>
    %b = kiln.abs %e : tensor<16xf32>
    kiln.yield %n, %b : tensor<16xf32>, tensor<16xf32>
  }
  return %0#0, %0#1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// Cost rule: an expensive producer read with broadcasting (sqrt of a
// [4, 1] tensor, divided into [4, 8]) keeps its own nest instead of being
// recomputed 8 times per row; a cheap one (the add) fuses.
// CHECK-LABEL: func.func @broadcast_producers
// CHECK: linalg.generic
// CHECK: math.sqrt
// CHECK: linalg.generic
// CHECK-NOT: math.sqrt
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @broadcast_producers(%x: tensor<4x8xf32>, %v: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = kiln.fused 0 elementwise (%x, %v) nodes = [] : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x1xf32>):
    %s = kiln.sqrt %b : tensor<4x1xf32>
    %c = kiln.add %b, %b : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
    %p = kiln.add %a, %c : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %d = kiln.div %p, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    kiln.yield %d : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A matmul epilogue (bias + relu) becomes one pass over the product.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @matmul_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.fused 0 contraction (%x, %w, %b) nodes = [] : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>, %d: tensor<16xf32>):
    %m = kiln.matmul %a, %c : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %s = kiln.add %m, %d : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
    %r = kiln.relu %s : tensor<4x16xf32>
    kiln.yield %r : tensor<4x16xf32>
  }
  return %0 : tensor<4x16xf32>
}

// -----

// A kernel whose types the conversion changes (unsigned) is inlined and
// lowered op by op: still correct, just not fused.
// CHECK-LABEL: func.func @unsigned_kernel
// CHECK-NOT: scf.execute_region
// CHECK: linalg.generic
// CHECK: arith.addi
// CHECK: linalg.generic
// CHECK: arith.muli
// CHECK: return
func.func @unsigned_kernel(%x: tensor<8xui8>) -> tensor<8xui8> {
  %0 = kiln.fused 0 elementwise (%x) nodes = [] : (tensor<8xui8>) -> tensor<8xui8> {
  ^bb0(%a: tensor<8xui8>):
    %s = kiln.add %a, %a : tensor<8xui8>, tensor<8xui8> -> tensor<8xui8>
    %m = kiln.mul %s, %a : tensor<8xui8>, tensor<8xui8> -> tensor<8xui8>
    kiln.yield %m : tensor<8xui8>
  }
  return %0 : tensor<8xui8>
}

// -----

// Horizontal fusion: two siblings over the same loops reading the same input
// become one nest with two outputs.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK: math.exp
// CHECK: math.tanh
// CHECK: linalg.yield {{.*}}, {{.*}} : f32, f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @siblings(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %0:2 = kiln.fused 0 elementwise (%x) nodes = [] : (tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%a: tensor<64xf32>):
    %s = kiln.sigmoid %a : tensor<64xf32>
    %t = kiln.tanh %a : tensor<64xf32>
    kiln.yield %s, %t : tensor<64xf32>, tensor<64xf32>
  }
  return %0#0, %0#1 : tensor<64xf32>, tensor<64xf32>
}

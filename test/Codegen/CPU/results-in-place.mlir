// RUN: kiln-opt %s --split-input-file --kiln-results-in-place | FileCheck %s
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-results-in-place),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse,buffer-results-to-out-params{hoist-static-allocs modify-public-functions})' | FileCheck %s --check-prefix=BUF

// A result that is a reshape of what a generic writes (a convolution
// computed as a matmul over [N, G, Mg, H*W]): the generic's output starts
// as an empty tensor of the result's shape, reshaped back, so after
// bufferization it writes the caller's buffer through views, with no
// allocation and no copy.
// CHECK-LABEL: func.func @reshaped
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x8x6x6xf32>
// CHECK: %[[X:.*]] = tensor.expand_shape %[[E]] {{\[\[}}0], [1, 2], [3], [4]] {{.*}} into tensor<1x1x8x6x6xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1], [2], [3, 4]] {{.*}} into tensor<1x1x8x36xf32>
// CHECK: linalg.generic {{.*}} outs(%[[C]] : tensor<1x1x8x36xf32>)
// BUF-LABEL: func.func @reshaped
// BUF-SAME: %[[OUT:arg[0-9]+]]: memref<1x8x6x6xf32>)
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: memref.expand_shape %[[OUT]]
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @reshaped(%x: tensor<1x1x8x36xf32>) -> tensor<1x8x6x6xf32> {
  %e = tensor.empty() : tensor<1x1x8x36xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x1x8x36xf32>) outs(%e : tensor<1x1x8x36xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<1x1x8x36xf32>
  %y = tensor.expand_shape %r [[0], [1], [2], [3, 4]] output_shape [1, 1, 8, 6, 6] : tensor<1x1x8x36xf32> into tensor<1x1x8x6x6xf32>
  %z = tensor.collapse_shape %y [[0], [1, 2], [3], [4]] : tensor<1x1x8x6x6xf32> into tensor<1x8x6x6xf32>
  return %z : tensor<1x8x6x6xf32>
}

// -----

// Through a loop's result and a fill to the empty tensor they start from.
// CHECK-LABEL: func.func @through_loop
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[E]] {{\[\[}}0, 1]] : tensor<4x8xf32> into tensor<32xf32>
// CHECK: linalg.fill {{.*}} outs(%[[C]] : tensor<32xf32>)
// BUF-LABEL: func.func @through_loop
// BUF-SAME: %[[OUT:arg[0-9]+]]: memref<4x8xf32>)
// BUF-NOT: memref.alloc
// BUF: %[[FLAT:.*]] = memref.collapse_shape %[[OUT]]
// BUF: linalg.fill {{.*}} outs(%[[FLAT]] : memref<32xf32>)
// BUF-NOT: memref.alloc
// BUF: return
func.func @through_loop(%x: tensor<32xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %r = scf.for %i = %c0 to %c32 step %c2 iter_args(%acc = %f) -> (tensor<32xf32>) {
    %s = tensor.extract_slice %x[%i] [2] [1] : tensor<32xf32> to tensor<2xf32>
    %t = tensor.insert_slice %s into %acc[%i] [2] [1] : tensor<2xf32> into tensor<32xf32>
    scf.yield %t : tensor<32xf32>
  }
  %y = tensor.expand_shape %r [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A reshaped argument is not a buffer Kiln allocates: left as it is.
// CHECK-LABEL: func.func @argument
// CHECK-NOT: tensor.empty
// CHECK: return
func.func @argument(%x: tensor<32xf32>) -> tensor<4x8xf32> {
  %y = tensor.expand_shape %x [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

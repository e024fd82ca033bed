// RUN: kiln-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg))' | FileCheck %s

// Symbolic sizes (decision 0027, step 5): the entry takes each symbol as a
// leading index argument, computes every size once from them, and works on
// dynamic tensors. The caller's buffers keep their bound types: an input is
// read at its run-time sizes through a view of its leading elements, and a
// result is written to the leading elements of its bound buffer.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[B:.*]]: index {kiln.symbol = "batch"}, %[[X:.*]]: tensor<64x16xf32> {bufferization.writable = false}) -> tensor<64x8xf32>
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<64x16xf32> into tensor<1024xf32>
// CHECK: %[[N:.*]] = arith.muli %{{.*}}, %[[B]] : index
// CHECK: %[[LEAD:.*]] = tensor.extract_slice %[[FLAT]][0] [%[[N]]] [1] : tensor<1024xf32> to tensor<?xf32>
// CHECK: %[[IN:.*]] = tensor.expand_shape %[[LEAD]] {{\[\[}}0, 1]] output_shape [%[[B]], 16] : tensor<?xf32> into tensor<?x16xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[B]]) : tensor<?x8xf32>
// CHECK: linalg.matmul ins(%[[IN]], %{{.*}} : tensor<?x16xf32>, tensor<16x8xf32>)
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: %[[RF:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1]] : tensor<?x8xf32> into tensor<?xf32>
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<512xf32>
// CHECK: tensor.insert_slice %[[RF]] into %[[OUT]][0] [%{{.*}}] [1] : tensor<?xf32> into tensor<512xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [64, 8] : tensor<512xf32> into tensor<64x8xf32>
func.func @mlp(%x: tensor<64x16xf32, #kiln.dims<["batch", "16"]>>) -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>> attributes {kiln.symbols = {batch = array<i64: 1, 64>}} {
  %w = kiln.constant dense<0.5> : tensor<16x8xf32>
  %m = kiln.matmul %x, %w : tensor<64x16xf32, #kiln.dims<["batch", "16"]>>, tensor<16x8xf32> -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  %r = kiln.relu %m : tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  return %r : tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
}

// -----

// A mean over a symbolic axis divides by the run-time count; products of
// symbols are computed once at the entry, in canonical order.
// CHECK-LABEL: func.func @mean_over_seq
// CHECK-SAME: (%[[BATCH:.*]]: index {kiln.symbol = "batch"}, %[[SEQ:.*]]: index {kiln.symbol = "seq"}
// CHECK: %[[BS:.*]] = arith.muli %[[BATCH]], %[[SEQ]] : index
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: %[[I:.*]] = arith.index_cast %[[SEQ]] : index to i64
// CHECK: %[[F:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK: linalg.generic
// CHECK: arith.divf %{{.*}}, %[[F]] : f32
// The reshape to [batch*seq, 4] views a 1-D tensor of the run-time count.
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [%[[BS]], 4] : tensor<?xf32> into tensor<?x4xf32>
func.func @mean_over_seq(%x: tensor<8x32x4xf32, #kiln.dims<["batch", "seq", "4"]>>) -> (tensor<8x4xf32, #kiln.dims<["batch", "4"]>>, tensor<256x4xf32, #kiln.dims<["batch*seq", "4"]>>) attributes {kiln.symbols = {batch = array<i64: 1, 8>, seq = array<i64: 1, 32>}} {
  %m = kiln.reduce_mean %x axes = [1] : tensor<8x32x4xf32, #kiln.dims<["batch", "seq", "4"]>> -> tensor<8x4xf32, #kiln.dims<["batch", "4"]>>
  %r = kiln.reshape %x : tensor<8x32x4xf32, #kiln.dims<["batch", "seq", "4"]>> -> tensor<256x4xf32, #kiln.dims<["batch*seq", "4"]>>
  return %m, %r : tensor<8x4xf32, #kiln.dims<["batch", "4"]>>, tensor<256x4xf32, #kiln.dims<["batch*seq", "4"]>>
}

// -----

// Gather wraps and clamps indices to the run-time size of a symbolic axis;
// kiln.sizes is the run-time value as data; a concat along a symbolic axis
// places the second input at the first one's run-time size.
// CHECK-LABEL: func.func @gather_sizes_concat
// CHECK-SAME: (%[[SEQ:.*]]: index {kiln.symbol = "seq"}
// CHECK: linalg.generic
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[LAST:.*]] = arith.subi %[[SEQ]], %[[ONE]] : index
// CHECK: arith.minsi %{{.*}}, %[[LAST]] : index
// CHECK: %[[S:.*]] = arith.index_cast %[[SEQ]] : index to i64
// CHECK: tensor.from_elements %[[S]] : tensor<1xi64>
// CHECK: %[[C:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%[[SEQ]], 4] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[C]][%[[SEQ]], 0] [%[[SEQ]], 4] [1, 1]
func.func @gather_sizes_concat(%x: tensor<32x4xf32, #kiln.dims<["seq", "4"]>>, %i: tensor<3xi64>) -> (tensor<3x4xf32>, tensor<1xi64>, tensor<64x4xf32, #kiln.dims<["2*seq", "4"]>>) attributes {kiln.symbols = {seq = array<i64: 2, 32>}} {
  %g = kiln.gather %x, %i axis = 0 : tensor<32x4xf32, #kiln.dims<["seq", "4"]>>, tensor<3xi64> -> tensor<3x4xf32>
  %n = kiln.sizes ["seq"] : tensor<1xi64>
  %c = kiln.concat %x, %x axis = 0 : tensor<32x4xf32, #kiln.dims<["seq", "4"]>>, tensor<32x4xf32, #kiln.dims<["seq", "4"]>> -> tensor<64x4xf32, #kiln.dims<["2*seq", "4"]>>
  return %g, %n, %c : tensor<3x4xf32>, tensor<1xi64>, tensor<64x4xf32, #kiln.dims<["2*seq", "4"]>>
}

// -----

// An op whose lowering does not compute with run-time sizes yet is an error
// that names it: a pool over a symbolic window axis (a symbolic batch is
// lowered).
func.func @unsupported(%x: tensor<4x3x8x8xf32, #kiln.dims<["batch", "3", "seq", "8"]>>) -> tensor<4x3x4x4xf32, #kiln.dims<["batch", "3", "floor(seq / 2)", "4"]>> attributes {kiln.symbols = {batch = array<i64: 1, 4>, seq = array<i64: 2, 8>}} {
  // expected-error @+1 {{'kiln.pool' op has symbolic sizes, which code generation does not handle for this op yet (decision 0027, step 5)}}
  %p = kiln.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<4x3x8x8xf32, #kiln.dims<["batch", "3", "seq", "8"]>> -> tensor<4x3x4x4xf32, #kiln.dims<["batch", "3", "floor(seq / 2)", "4"]>>
  return %p : tensor<4x3x4x4xf32, #kiln.dims<["batch", "3", "floor(seq / 2)", "4"]>>
}

// -----

// A convolution and a pool over a symbolic batch: the output and the
// padded input take the run-time batch.
// CHECK-LABEL: func.func @conv_pool_batch
// CHECK-SAME: (%[[B:.*]]: index {kiln.symbol = "batch"}
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<?x3x8x8xf32> to tensor<?x3x10x10xf32>
// CHECK: tensor.empty(%[[B]]) : tensor<?x1x4x8x8xf32>
// CHECK: tensor.empty(%[[B]]) : tensor<?x4x4x4xf32>
func.func @conv_pool_batch(%x: tensor<4x3x8x8xf32, #kiln.dims<["batch", "3", "8", "8"]>>) -> tensor<4x4x4x4xf32, #kiln.dims<["batch", "4", "4", "4"]>> attributes {kiln.symbols = {batch = array<i64: 1, 4>}} {
  %w = kiln.constant dense<0.5> : tensor<4x3x3x3xf32>
  %c = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<4x3x8x8xf32, #kiln.dims<["batch", "3", "8", "8"]>>, tensor<4x3x3x3xf32> -> tensor<4x4x8x8xf32, #kiln.dims<["batch", "4", "8", "8"]>>
  %p = kiln.pool max %c kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<4x4x8x8xf32, #kiln.dims<["batch", "4", "8", "8"]>> -> tensor<4x4x4x4xf32, #kiln.dims<["batch", "4", "4", "4"]>>
  return %p : tensor<4x4x4x4xf32, #kiln.dims<["batch", "4", "4", "4"]>>
}

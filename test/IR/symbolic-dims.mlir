// Symbolic dimensions (decision 0027): a tensor keeps the sizes at the
// symbols' upper bounds in its shape and states each size in a #kiln.dims
// encoding; every shape rule carries the expressions along.
// RUN: kiln-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// The graph passes keep the encodings (the verifier runs after each).
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --verify-each=1 --kiln-graph-pipeline | FileCheck %s --check-prefix=GRAPH
// GRAPH-LABEL: func.func @rules
// GRAPH: kiln.fused 0 contraction({{.*}}) -> (tensor<64x8xf32, #kiln.dims<["batch", "8"]>>, tensor<64x8xi1, #kiln.dims<["batch", "8"]>>)
// GRAPH: kiln.reshape %arg3 : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<64x4096xf32, #kiln.dims<["batch", "32*seq"]>>

// CHECK-LABEL: func.func @rules
func.func @rules(%x: tensor<64x16xf32, #kiln.dims<["batch", "16"]>>,
                 %w: tensor<16x8xf32>, %b: tensor<8xf32>,
                 %s: tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>>,
                 %img: tensor<64x3x32x32xf32, #kiln.dims<["batch", "3", "32", "32"]>>,
                 %f: tensor<4x3x3x3xf32>,
                 %idx: tensor<64xi64, #kiln.dims<["batch"]>>)
    -> (tensor<64x8xi1, #kiln.dims<["batch", "8"]>>, tensor<8xf32>,
        tensor<64x1xf32, #kiln.dims<["batch", "1"]>>,
        tensor<64x4096xf32, #kiln.dims<["batch", "32*seq"]>>,
        tensor<64x128x128xf32, #kiln.dims<["batch", "seq", "seq"]>>,
        tensor<128x64x32xf32, #kiln.dims<["seq", "batch", "32"]>>,
        tensor<64x256x32xf32, #kiln.dims<["batch", "2*seq", "32"]>>,
        tensor<64x4x16x16xf32, #kiln.dims<["batch", "4", "16", "16"]>>,
        tensor<64x32x64xf32, #kiln.dims<["batch", "32", "floor((seq + 1) / 2)"]>>,
        tensor<16x64xf32, #kiln.dims<["16", "batch"]>>,
        tensor<64x128x8xf32, #kiln.dims<["batch", "seq", "8"]>>,
        tensor<64x8xf32, #kiln.dims<["batch", "8"]>>) {
  // Products and broadcasting keep the batch.
  // CHECK: kiln.matmul {{.*}} -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  %0 = kiln.matmul %x, %w : tensor<64x16xf32, #kiln.dims<["batch", "16"]>>, tensor<16x8xf32> -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  // CHECK: kiln.add {{.*}} -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  %1 = kiln.add %0, %b : tensor<64x8xf32, #kiln.dims<["batch", "8"]>>, tensor<8xf32> -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  // CHECK: kiln.relu {{.*}} : tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  %2 = kiln.relu %1 : tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  // CHECK: kiln.cmp gt, {{.*}} -> tensor<64x8xi1, #kiln.dims<["batch", "8"]>>
  %3 = kiln.cmp gt, %2, %b : tensor<64x8xf32, #kiln.dims<["batch", "8"]>>, tensor<8xf32> -> tensor<64x8xi1, #kiln.dims<["batch", "8"]>>
  // Reducing over the batch leaves a static tensor; keepdims leaves 1.
  // CHECK: kiln.reduce_sum {{.*}} -> tensor<8xf32>
  %4 = kiln.reduce_sum %2 axes = [0] : tensor<64x8xf32, #kiln.dims<["batch", "8"]>> -> tensor<8xf32>
  // CHECK: kiln.reduce_max {{.*}} -> tensor<64x1xf32, #kiln.dims<["batch", "1"]>>
  %5 = kiln.reduce_max %2 axes = [1] keepdims : tensor<64x8xf32, #kiln.dims<["batch", "8"]>> -> tensor<64x1xf32, #kiln.dims<["batch", "1"]>>
  // Reshape with a product of symbols, and back.
  // CHECK: kiln.reshape {{.*}} -> tensor<8192x32xf32, #kiln.dims<["batch*seq", "32"]>>
  %6 = kiln.reshape %s : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<8192x32xf32, #kiln.dims<["batch*seq", "32"]>>
  %7 = kiln.reshape %6 : tensor<8192x32xf32, #kiln.dims<["batch*seq", "32"]>> -> tensor<64x4096xf32, #kiln.dims<["batch", "32*seq"]>>
  // Attention's seq x seq: transposes and batched products.
  // CHECK: kiln.matmul {{.*}} transpose_rhs {{.*}} -> tensor<64x128x128xf32, #kiln.dims<["batch", "seq", "seq"]>>
  %8 = kiln.matmul %s, %s transpose_rhs : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>>, tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<64x128x128xf32, #kiln.dims<["batch", "seq", "seq"]>>
  // CHECK: kiln.transpose {{.*}} -> tensor<128x64x32xf32, #kiln.dims<["seq", "batch", "32"]>>
  %9 = kiln.transpose %s perm = [1, 0, 2] : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<128x64x32xf32, #kiln.dims<["seq", "batch", "32"]>>
  // Concat adds along the axis.
  // CHECK: kiln.concat {{.*}} -> tensor<64x256x32xf32, #kiln.dims<["batch", "2*seq", "32"]>>
  %10 = kiln.concat %s, %s axis = 1 : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>>, tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<64x256x32xf32, #kiln.dims<["batch", "2*seq", "32"]>>
  // Window sizes over a symbolic length: floor((n + 2 - 3) / 2) + 1.
  %img2 = kiln.reshape %img : tensor<64x3x32x32xf32, #kiln.dims<["batch", "3", "32", "32"]>> -> tensor<64x3x32x32xf32, #kiln.dims<["batch", "3", "32", "32"]>>
  // CHECK: kiln.conv {{.*}} -> tensor<64x4x16x16xf32, #kiln.dims<["batch", "4", "16", "16"]>>
  %11 = kiln.conv %img2, %f strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<64x3x32x32xf32, #kiln.dims<["batch", "3", "32", "32"]>>, tensor<4x3x3x3xf32> -> tensor<64x4x16x16xf32, #kiln.dims<["batch", "4", "16", "16"]>>
  %12 = kiln.transpose %s perm = [0, 2, 1] : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<64x32x128xf32, #kiln.dims<["batch", "32", "seq"]>>
  // CHECK: kiln.pool max {{.*}} -> tensor<64x32x64xf32, #kiln.dims<["batch", "32", "floor((seq + 1) / 2)"]>>
  %13 = kiln.pool max %12 kernel = [3] strides = [2] dilations = [1] pads = [1, 1] : tensor<64x32x128xf32, #kiln.dims<["batch", "32", "seq"]>> -> tensor<64x32x64xf32, #kiln.dims<["batch", "32", "floor((seq + 1) / 2)"]>>
  // Gather with symbolic indices; slices take a symbolic axis whole.
  // CHECK: kiln.gather {{.*}} -> tensor<16x64xf32, #kiln.dims<["16", "batch"]>>
  %14 = kiln.gather %w, %idx axis = 1 : tensor<16x8xf32>, tensor<64xi64, #kiln.dims<["batch"]>> -> tensor<16x64xf32, #kiln.dims<["16", "batch"]>>
  %15 = kiln.slice %s starts = [0, 0, 4] strides = [1, 1, 2] : tensor<64x128x32xf32, #kiln.dims<["batch", "seq", "32"]>> -> tensor<64x128x8xf32, #kiln.dims<["batch", "seq", "8"]>>
  // CHECK: kiln.broadcast {{.*}} -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  %16 = kiln.broadcast %b : tensor<8xf32> -> tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
  return %3, %4, %5, %7, %8, %9, %10, %11, %13, %14, %15, %16
      : tensor<64x8xi1, #kiln.dims<["batch", "8"]>>, tensor<8xf32>,
        tensor<64x1xf32, #kiln.dims<["batch", "1"]>>,
        tensor<64x4096xf32, #kiln.dims<["batch", "32*seq"]>>,
        tensor<64x128x128xf32, #kiln.dims<["batch", "seq", "seq"]>>,
        tensor<128x64x32xf32, #kiln.dims<["seq", "batch", "32"]>>,
        tensor<64x256x32xf32, #kiln.dims<["batch", "2*seq", "32"]>>,
        tensor<64x4x16x16xf32, #kiln.dims<["batch", "4", "16", "16"]>>,
        tensor<64x32x64xf32, #kiln.dims<["batch", "32", "floor((seq + 1) / 2)"]>>,
        tensor<16x64xf32, #kiln.dims<["16", "batch"]>>,
        tensor<64x128x8xf32, #kiln.dims<["batch", "seq", "8"]>>,
        tensor<64x8xf32, #kiln.dims<["batch", "8"]>>
}

// -----

// Two different symbols never broadcast.
func.func @batch_against_seq(%a: tensor<64x4xf32, #kiln.dims<["batch", "4"]>>, %b: tensor<64x4xf32, #kiln.dims<["seq", "4"]>>) {
  // expected-error @+2 {{expects broadcast-compatible shapes, got [batch, 4] and [seq, 4]}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : tensor<64x4xf32, #kiln.dims<["batch", "4"]>>, tensor<64x4xf32, #kiln.dims<["seq", "4"]>> -> tensor<64x4xf32, #kiln.dims<["batch", "4"]>>
  return
}

// -----

// Nor does a symbol against a constant equal to its bound.
func.func @batch_against_its_bound(%a: tensor<64x4xf32, #kiln.dims<["batch", "4"]>>, %b: tensor<64x4xf32>) {
  // expected-error @+2 {{expects broadcast-compatible shapes, got [batch, 4] and [64, 4]}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : tensor<64x4xf32, #kiln.dims<["batch", "4"]>>, tensor<64x4xf32> -> tensor<64x4xf32>
  return
}

// -----

// A result type that drops the symbols is refused.
func.func @dropped_symbol(%a: tensor<64x16xf32, #kiln.dims<["batch", "16"]>>, %w: tensor<16x8xf32>) {
  // expected-error @+2 {{'kiln.matmul' op inferred type(s) 'tensor<64x8xf32, #kiln.dims<["batch", "8"]>>' are incompatible with return type(s) of operation 'tensor<64x8xf32>'}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %w : tensor<64x16xf32, #kiln.dims<["batch", "16"]>>, tensor<16x8xf32> -> tensor<64x8xf32>
  return
}

// -----

func.func @reshape_loses_elements(%a: tensor<64x16xf32, #kiln.dims<["batch", "16"]>>) {
  // expected-error @+1 {{expects the same number of elements, got 16*batch in the input and 1024 in the result}}
  %0 = kiln.reshape %a : tensor<64x16xf32, #kiln.dims<["batch", "16"]>> -> tensor<1024xf32>
  return
}

// -----

func.func @matmul_inner_sizes(%a: tensor<64x64xf32, #kiln.dims<["batch", "batch"]>>, %b: tensor<64x8xf32, #kiln.dims<["seq", "8"]>>) {
  // expected-error @+2 {{expects lhs columns to equal rhs rows, got batch and seq}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<64x64xf32, #kiln.dims<["batch", "batch"]>>, tensor<64x8xf32, #kiln.dims<["seq", "8"]>> -> tensor<64x8xf32>
  return
}

// -----

func.func @slice_part_of_batch(%a: tensor<64x16xf32, #kiln.dims<["batch", "16"]>>) {
  // expected-error @+1 {{expects a symbolic dimension to be taken from its start to its end, got batch of batch from 1 in dimension 0}}
  %0 = kiln.slice %a starts = [1, 0] strides = [1, 1] : tensor<64x16xf32, #kiln.dims<["batch", "16"]>> -> tensor<63x16xf32, #kiln.dims<["batch", "16"]>>
  return
}

// -----

// expected-error @+1 {{#kiln.dims: size 1 is 8 but the shape has 16}}
func.func @encoding_disagrees(%a: tensor<64x16xf32, #kiln.dims<["batch", "8"]>>) {
  return
}

// -----

// expected-error @+1 {{#kiln.dims has 1 sizes for a tensor of rank 2}}
func.func @encoding_rank(%a: tensor<64x16xf32, #kiln.dims<["batch"]>>) {
  return
}

// -----

// expected-error @+1 {{#kiln.dims: size 0 is not a size expression: "batch +"}}
func.func @encoding_syntax(%a: tensor<64xf32, #kiln.dims<["batch +"]>>) {
  return
}

// -----

// kiln.sizes: sizes over the symbols as data, one element per size.
// CHECK-LABEL: func.func @sizes
// CHECK: kiln.sizes ["seq", "4*batch"] : tensor<2xi64>
func.func @sizes() -> tensor<2xi64> {
  %0 = kiln.sizes ["seq", "4*batch"] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sizes_count() -> tensor<2xi64> {
  // expected-error @+1 {{expects a tensor of rank 0 or 1 with one element per size, got 'tensor<2xi64>' for 1 sizes}}
  %0 = kiln.sizes ["seq"] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sizes_syntax() -> tensor<i64> {
  // expected-error @+1 {{expects size expressions, got "seq *"}}
  %0 = kiln.sizes ["seq *"] : tensor<i64>
  return %0 : tensor<i64>
}

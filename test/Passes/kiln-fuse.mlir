// RUN: kiln-opt %s --split-input-file --kiln-fuse | FileCheck %s

// A chain of elementwise ops with broadcasting becomes one elementwise
// kernel; its node names come from the ops' locations, in order, once each.
// CHECK-LABEL: func.func @elementwise_chain
// CHECK: %[[K:.*]] = kiln.fused 0 elementwise(%arg0, %arg1) nodes = ["scale", "act"]
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[S:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[M:.*]] = kiln.mul %[[X]], %[[S]]
// CHECK-NEXT: %[[A:.*]] = kiln.add %[[M]], %[[X]]
// CHECK-NEXT: %[[T:.*]] = kiln.tanh %[[A]]
// CHECK-NEXT: kiln.yield %[[T]]
// CHECK: return %[[K]]
func.func @elementwise_chain(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = kiln.mul %x, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("scale")
  %a = kiln.add %m, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("scale")
  %t = kiln.tanh %a : tensor<4x8xf32> loc("act")
  return %t : tensor<4x8xf32>
}

// -----

// Softmax as imported: the reductions take their elementwise producers and
// consumers, one reduction kernel.
// CHECK-LABEL: func.func @softmax
// CHECK: kiln.fused 0 reduction(%arg0) nodes = ["softmax"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.reduce_max
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.reduce_sum
// CHECK-NEXT: kiln.div
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.fused
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = kiln.reduce_max %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32> loc("softmax")
  %s = kiln.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32> loc("softmax")
  %e = kiln.exp %s : tensor<4x8xf32> loc("softmax")
  %t = kiln.reduce_sum %e axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32> loc("softmax")
  %d = kiln.div %e, %t : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32> loc("softmax")
  return %d : tensor<4x8xf32>
}

// -----

// Layer norm (mean, variance, normalize, scale and shift) is one kernel.
// CHECK-LABEL: func.func @layer_norm
// CHECK: kiln.fused 0 reduction(%arg0, %{{.*}}, %arg1, %arg2) nodes = ["ln"]
// CHECK-COUNT-2: kiln.reduce_mean
// CHECK: kiln.sqrt
// CHECK: kiln.div
// CHECK: kiln.yield
// CHECK-NOT: kiln.fused
func.func @layer_norm(%x: tensor<2x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %mean = kiln.reduce_mean %x axes = [1] keepdims : tensor<2x16xf32> -> tensor<2x1xf32> loc("ln")
  %d = kiln.sub %x, %mean : tensor<2x16xf32>, tensor<2x1xf32> -> tensor<2x16xf32> loc("ln")
  %sq = kiln.mul %d, %d : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32> loc("ln")
  %var = kiln.reduce_mean %sq axes = [1] keepdims : tensor<2x16xf32> -> tensor<2x1xf32> loc("ln")
  %eps = kiln.constant dense<1.0e-05> : tensor<f32> loc("ln")
  %ve = kiln.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32> loc("ln")
  %sd = kiln.sqrt %ve : tensor<2x1xf32> loc("ln")
  %n = kiln.div %d, %sd : tensor<2x16xf32>, tensor<2x1xf32> -> tensor<2x16xf32> loc("ln")
  %y = kiln.mul %n, %g : tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32> loc("ln")
  %z = kiln.add %y, %b : tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32> loc("ln")
  return %z : tensor<2x16xf32>
}

// -----

// Matmul with a bias, an activation and a residual add: a contraction
// kernel with the epilogue.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: kiln.fused 0 contraction(%arg0, %arg1, %arg2, %arg3) nodes = ["fc", "relu", "residual"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
func.func @matmul_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %m = kiln.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32> loc("fc")
  %s = kiln.add %m, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32> loc("fc")
  %a = kiln.relu %s : tensor<4x16xf32> loc("relu")
  %o = kiln.add %a, %r : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32> loc("residual")
  return %o : tensor<4x16xf32>
}

// -----

// A convolution with a per-channel bias and relu.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK: kiln.fused 0 contraction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: kiln.yield
func.func @conv_epilogue(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %c = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  %s = kiln.add %c, %b : tensor<1x4x8x8xf32>, tensor<4x1x1xf32> -> tensor<1x4x8x8xf32>
  %r = kiln.relu %s : tensor<1x4x8x8xf32>
  return %r : tensor<1x4x8x8xf32>
}

// -----

// Horizontal fusion: two independent elementwise ops over the same shape
// reading the same input share one kernel with two outputs.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[K:.*]]:2 = kiln.fused 0 elementwise(%arg0) nodes = ["a", "b"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.sigmoid
// CHECK-NEXT: kiln.tanh
// CHECK-NEXT: kiln.yield
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @siblings(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %a = kiln.sigmoid %x : tensor<64xf32> loc("a")
  %b = kiln.tanh %x : tensor<64xf32> loc("b")
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// Two matmuls never share a kernel, and an op after a contraction whose
// shape differs from the contraction's result is no epilogue.
// CHECK-LABEL: func.func @no_second_contraction
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NOT: kiln.fused
func.func @no_second_contraction(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %m = kiln.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %n = kiln.matmul %m, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = kiln.add %n, %v : tensor<4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

// Opaque and data-movement ops stay outside kernels and split them: the
// transpose between the two relus keeps them apart, and the reduction after
// the matmul is no epilogue.
// CHECK-LABEL: func.func @opaque_splits
// CHECK-NOT: kiln.fused
// CHECK: return
func.func @opaque_splits(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4xf32> {
  %a = kiln.relu %x : tensor<4x8xf32>
  %t = kiln.transpose %a perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %b = kiln.relu %t : tensor<8x4xf32>
  %m = kiln.matmul %x, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %r = kiln.reduce_sum %m axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A cycle: %c reads the kernel of %a and %b through the transpose, which
// cannot join; %c would close the loop, so it starts its own kernel.
// CHECK-LABEL: func.func @cycle
// CHECK: %[[K:.*]]:2 = kiln.fused 0 elementwise(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: kiln.yield
// CHECK: %[[T:.*]] = kiln.transpose %[[K]]#0
// CHECK-NEXT: kiln.fused 1 elementwise(%[[K]]#1, %[[T]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
func.func @cycle(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = kiln.exp %x : tensor<8x8xf32>
  %b = kiln.neg %a : tensor<8x8xf32>
  %t = kiln.transpose %a perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %c = kiln.add %b, %t : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %d = kiln.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// -----

// Types the kernel lowering does not take: unsigned integers and empty
// tensors stay unfused.
// CHECK-LABEL: func.func @unsupported_types
// CHECK-NOT: kiln.fused
// CHECK: return
func.func @unsupported_types(%x: tensor<8xui8>, %y: tensor<0x4xf32>) -> (tensor<8xui8>, tensor<0x4xf32>) {
  %a = kiln.add %x, %x : tensor<8xui8>, tensor<8xui8> -> tensor<8xui8>
  %b = kiln.mul %a, %x : tensor<8xui8>, tensor<8xui8> -> tensor<8xui8>
  %c = kiln.relu %y : tensor<0x4xf32>
  %d = kiln.neg %c : tensor<0x4xf32>
  return %b, %d : tensor<8xui8>, tensor<0x4xf32>
}

// -----

// An op between two members of a kernel that reads the kernel moves after
// it; the op the kernel does not depend on stays.
// CHECK-LABEL: func.func @reorder
// CHECK: kiln.transpose %arg1
// CHECK: %[[K:.*]]:2 = kiln.fused 0 elementwise
// CHECK: kiln.transpose %[[K]]#0
func.func @reorder(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = kiln.exp %x : tensor<4x4xf32>
  %t = kiln.transpose %a perm = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %u = kiln.transpose %y perm = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %b = kiln.add %a, %u : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %b, %t : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A predicate that joined its operand's kernel but is read only by another
// kernel moves to the reader and is recomputed there from the operand,
// which its first kernel yields anyway: no tensor of i1 between kernels
// (a ReLU's backward mask).
// CHECK-LABEL: func.func @sink_predicate
// CHECK: %[[Y:.*]] = kiln.fused 0 elementwise(%arg0, %arg1) {{.*}} -> tensor<4x16xf32>
// CHECK: kiln.fused 1 contraction(%[[Y]], %{{.*}}, %arg2) {{.*}} -> tensor<4x16xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cmp gt
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.select
// CHECK-NEXT: kiln.yield
func.func @sink_predicate(%x: tensor<4x16xf32>, %b: tensor<16xf32>, %w: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %a = kiln.add %x, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %y = kiln.relu %a : tensor<4x16xf32>
  %p = kiln.cmp gt, %y, %zero : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xi1>
  %m = kiln.matmul %y, %w : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
  %s = kiln.select %p, %m, %zero : tensor<4x16xi1>, tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// The same predicate over the kernel's inner value (the sum before the
// ReLU, which nothing else outside reads) stays: moving it would make the
// kernel store an f32 tensor instead of an i1 one.
// CHECK-LABEL: func.func @predicate_stays
// CHECK: kiln.fused 0 elementwise
// CHECK: kiln.cmp gt
// CHECK: kiln.yield %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<4x16xi1>
func.func @predicate_stays(%x: tensor<4x16xf32>, %b: tensor<16xf32>, %w: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %a = kiln.add %x, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %y = kiln.relu %a : tensor<4x16xf32>
  %p = kiln.cmp gt, %a, %zero : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xi1>
  %m = kiln.matmul %y, %w : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
  %s = kiln.select %p, %m, %zero : tensor<4x16xi1>, tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-canonicalize | FileCheck %s

// Integer x * 0 is 0, with the result's type even when the zero broadcasts.
// CHECK-LABEL: func.func @int_mul_zero
// CHECK-NOT: kiln.mul
// CHECK: %[[Z:.*]] = kiln.constant dense<0> : tensor<2x3xi32>
// CHECK: return %[[Z]]
func.func @int_mul_zero(%x: tensor<3xi32>) -> tensor<2x3xi32> {
  %z = kiln.constant dense<0> : tensor<2x3xi32>
  %r = kiln.mul %x, %z : tensor<3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  return %r : tensor<2x3xi32>
}

// -----

// Float x * 0 stays: NaN * 0, inf * 0 and -1 * 0 are not +0.
// CHECK-LABEL: func.func @float_mul_zero_stays
// CHECK: kiln.mul
func.func @float_mul_zero_stays(%x: tensor<3xf32>) -> tensor<3xf32> {
  %z = kiln.constant dense<0.0> : tensor<3xf32>
  %r = kiln.mul %x, %z : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

// x * 1, x + (-0.0) and a cast to the same type go; x + 0.0 stays (float).
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT: kiln.mul
// CHECK-NOT: kiln.cast
// CHECK: %[[A:.*]] = kiln.add %[[X]]
// CHECK-NEXT: return %[[A]]
func.func @identities(%x: tensor<3xf32>) -> tensor<3xf32> {
  %one = kiln.constant dense<1.0> : tensor<3xf32>
  %nz = kiln.constant dense<-0.0> : tensor<3xf32>
  %z = kiln.constant dense<0.0> : tensor<3xf32>
  %a = kiln.mul %x, %one : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %b = kiln.add %a, %nz : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %c = kiln.cast %b : tensor<3xf32> -> tensor<3xf32>
  %d = kiln.add %c, %z : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %d : tensor<3xf32>
}

// -----

// Two transposes compose into one; a pair that cancels disappears; a reshape
// of a reshape reads the original.
// CHECK-LABEL: func.func @transpose_reshape_pairs
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: kiln.transpose %[[X]] perm = [2, 0, 1]
// CHECK-NEXT: kiln.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %{{.*}}, %[[X]], %{{.*}}
func.func @transpose_reshape_pairs(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<24xf32>) {
  %a = kiln.transpose %x perm = [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = kiln.transpose %a perm = [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %c = kiln.transpose %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %d = kiln.transpose %c perm = [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  %e = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %f = kiln.reshape %e : tensor<6x4xf32> -> tensor<24xf32>
  return %b, %d, %f : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<24xf32>
}

// -----

// Inference batch norm after a conv with bias, as the importer writes it
// ((y - mean) * factor + B), folds into the conv's filter and one bias add.
// CHECK-LABEL: func.func @batchnorm_into_conv
// CHECK: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: return
func.func @batchnorm_into_conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x2x2xf32> {
  %w = kiln.constant dense<0.5> : tensor<3x2x3x3xf32>
  %bias = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %bias3 = kiln.reshape %bias : tensor<3xf32> -> tensor<3x1x1xf32>
  %mean = kiln.constant dense<[[[0.5]], [[1.0]], [[1.5]]]> : tensor<3x1x1xf32>
  %factor = kiln.constant dense<[[[2.0]], [[0.5]], [[4.0]]]> : tensor<3x1x1xf32>
  %b = kiln.constant dense<[[[0.1]], [[0.2]], [[0.3]]]> : tensor<3x1x1xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x2x2xf32>
  %yb = kiln.add %y, %bias3 : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  %c = kiln.sub %yb, %mean : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  %s = kiln.mul %c, %factor : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  %r = kiln.add %s, %b : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  return %r : tensor<1x3x2x2xf32>
}

// -----

// A scale that varies along a spatial axis cannot go into the filter; nor
// can any scale when the filter is not a constant.
// CHECK-LABEL: func.func @conv_scale_stays
// CHECK: kiln.conv
// CHECK-NEXT: kiln.mul
// CHECK: kiln.conv
// CHECK-NEXT: kiln.mul
func.func @conv_scale_stays(%x: tensor<1x2x4x4xf32>, %wv: tensor<3x2x3x3xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) {
  %w = kiln.constant dense<0.5> : tensor<3x2x3x3xf32>
  %spatial = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %perchannel = kiln.constant dense<[[[2.0]], [[0.5]], [[4.0]]]> : tensor<3x1x1xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x2x2xf32>
  %s = kiln.mul %y, %spatial : tensor<1x3x2x2xf32>, tensor<2xf32> -> tensor<1x3x2x2xf32>
  %z = kiln.conv %x, %wv strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x2x2xf32>
  %t = kiln.mul %z, %perchannel : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  return %s, %t : tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>
}

// -----

// A per-column scale after a matmul with constant weights goes into the
// weights; a per-row scale does not.
// CHECK-LABEL: func.func @matmul_scale
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: return
func.func @matmul_scale(%x: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = kiln.constant dense<1.5> : tensor<3x4xf32>
  %col = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %row = kiln.constant dense<[[2.0], [3.0]]> : tensor<2x1xf32>
  %a = kiln.matmul %x, %w : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %b = kiln.mul %a, %col : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %c = kiln.matmul %x, %w : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %d = kiln.mul %c, %row : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  return %b, %d : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A constant add that widens the conv's result (broadcast) is not moved: the
// result type would change.
// CHECK-LABEL: func.func @widening_add_stays
// CHECK: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.mul
func.func @widening_add_stays(%x: tensor<1x2x4x4xf32>) -> tensor<2x3x2x2xf32> {
  %w = kiln.constant dense<0.5> : tensor<3x2x3x3xf32>
  %wide = kiln.constant dense<1.0> : tensor<2x3x1x1xf32>
  %f = kiln.constant dense<[[[2.0]], [[0.5]], [[4.0]]]> : tensor<3x1x1xf32>
  %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x2x2xf32>
  %a = kiln.add %y, %wide : tensor<1x3x2x2xf32>, tensor<2x3x1x1xf32> -> tensor<2x3x2x2xf32>
  %m = kiln.mul %a, %f : tensor<2x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<2x3x2x2xf32>
  return %m : tensor<2x3x2x2xf32>
}

// -----

// x / sqrt(y) stays as it is: the dialect has no rsqrt to rewrite it into.
// CHECK-LABEL: func.func @div_sqrt_stays
// CHECK: kiln.sqrt
// CHECK-NEXT: kiln.div
func.func @div_sqrt_stays(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %s = kiln.sqrt %y : tensor<3xf32>
  %r = kiln.div %x, %s : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

// A transpose of the last two dimensions feeding a matmul becomes the
// matmul's transpose flag, on either side or both.
// CHECK-LABEL: func.func @transpose_into_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>, %[[B:.*]]: tensor<5x3xf32>)
// CHECK-NOT: kiln.transpose
// CHECK: kiln.matmul %[[A]], %[[B]] transpose_lhs transpose_rhs : tensor<2x3x4xf32>, tensor<5x3xf32> -> tensor<2x4x5xf32>
// CHECK: kiln.matmul %[[B]], %[[B]] transpose_rhs : tensor<5x3xf32>, tensor<5x3xf32> -> tensor<5x5xf32>
func.func @transpose_into_matmul(%a: tensor<2x3x4xf32>, %b: tensor<5x3xf32>) -> (tensor<2x4x5xf32>, tensor<5x5xf32>) {
  %at = kiln.transpose %a perm = [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %bt = kiln.transpose %b perm = [1, 0] : tensor<5x3xf32> -> tensor<3x5xf32>
  %r = kiln.matmul %at, %bt : tensor<2x4x3xf32>, tensor<3x5xf32> -> tensor<2x4x5xf32>
  %s = kiln.matmul %b, %bt : tensor<5x3xf32>, tensor<3x5xf32> -> tensor<5x5xf32>
  return %r, %s : tensor<2x4x5xf32>, tensor<5x5xf32>
}

// -----

// Transposes that move a batch dimension, or transpose a constant, stay.
// CHECK-LABEL: func.func @transpose_matmul_stays
// CHECK: kiln.transpose %{{.*}} perm = [1, 0, 2]
// CHECK: kiln.matmul
// CHECK-NOT: transpose_
// CHECK: kiln.transpose %{{.*}} perm = [1, 0]
// CHECK: kiln.matmul
// CHECK-NOT: transpose_
// CHECK: return
func.func @transpose_matmul_stays(%a: tensor<3x2x4xf32>, %b: tensor<4x5xf32>, %x: tensor<2x3xf32>) -> (tensor<2x3x5xf32>, tensor<2x4xf32>) {
  %at = kiln.transpose %a perm = [1, 0, 2] : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %r = kiln.matmul %at, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 2.0, 3.0]]> : tensor<4x3xf32>
  %wt = kiln.transpose %w perm = [1, 0] : tensor<4x3xf32> -> tensor<3x4xf32>
  %s = kiln.matmul %x, %wt : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  return %r, %s : tensor<2x3x5xf32>, tensor<2x4xf32>
}

// -----

// Atrous convolutions whose outer taps only read padding: rate 6 over a 5x5
// map keeps only the centre tap (a 1x1 convolution without padding); rate 2
// over 5x5 reads the input with every tap and is left alone; on one axis
// only (a 1x7 map, rate 3 and pads 3 along the width) the height's dead
// taps go and the width keeps all three. An axis left with one tap has
// dilation 1.
// CHECK-LABEL: func.func @dead_conv_taps
// CHECK: %[[W:.*]] = kiln.slice %arg1 starts = [0, 0, 1, 1] strides = [1, 1, 1, 1] : tensor<8x4x3x3xf32> -> tensor<8x4x1x1xf32>
// CHECK: kiln.conv %arg0, %[[W]] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x4x5x5xf32>, tensor<8x4x1x1xf32> -> tensor<1x8x5x5xf32>
// CHECK: kiln.conv %arg0, %arg1 strides = [1, 1] dilations = [2, 2] pads = [2, 2, 2, 2]
// CHECK: %[[W2:.*]] = kiln.slice %arg1 starts = [0, 0, 1, 0] strides = [1, 1, 1, 1] : tensor<8x4x3x3xf32> -> tensor<8x4x1x3xf32>
// CHECK: kiln.conv %arg2, %[[W2]] strides = [1, 1] dilations = [1, 3] pads = [0, 3, 0, 3] group = 1 : tensor<1x4x1x7xf32>, tensor<8x4x1x3xf32> -> tensor<1x8x1x7xf32>
func.func @dead_conv_taps(%x: tensor<1x4x5x5xf32>, %w: tensor<8x4x3x3xf32>, %r: tensor<1x4x1x7xf32>)
    -> (tensor<1x8x5x5xf32>, tensor<1x8x5x5xf32>, tensor<1x8x1x7xf32>) {
  %a = kiln.conv %x, %w strides = [1, 1] dilations = [6, 6] pads = [6, 6, 6, 6] group = 1
      : tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x5x5xf32>
  %b = kiln.conv %x, %w strides = [1, 1] dilations = [2, 2] pads = [2, 2, 2, 2] group = 1
      : tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x5x5xf32>
  %c = kiln.conv %r, %w strides = [1, 1] dilations = [3, 3] pads = [3, 3, 3, 3] group = 1
      : tensor<1x4x1x7xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x1x7xf32>
  return %a, %b, %c : tensor<1x8x5x5xf32>, tensor<1x8x5x5xf32>, tensor<1x8x1x7xf32>
}

// -----

// Rate 4 over a 5x5 map: each outer tap reaches one row or column of the
// input (22% of the taps' reads land inside), so the convolution becomes
// one 1x1 convolution per tap over the window it reads, zeros around its
// part of the output, and a sum. The centre tap reads everything; a corner
// tap reads one position. Rate 2 over 5x5 (54% inside) and a strided
// convolution are left alone.
// CHECK-LABEL: func.func @sparse_conv_taps
// CHECK-NOT: dilations = [4, 4]
// CHECK: %[[X0:.*]] = kiln.slice %arg0 starts = [0, 0, 0, 0] strides = [1, 1, 1, 1] : tensor<1x4x5x5xf32> -> tensor<1x4x1x1xf32>
// CHECK: %[[W0:.*]] = kiln.slice %arg1 starts = [0, 0, 0, 0] strides = [1, 1, 1, 1] : tensor<8x4x3x3xf32> -> tensor<8x4x1x1xf32>
// CHECK: %[[C0:.*]] = kiln.conv %[[X0]], %[[W0]] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x4x1x1xf32>, tensor<8x4x1x1xf32> -> tensor<1x8x1x1xf32>
// CHECK: kiln.concat %{{.*}}, %[[C0]] axis = 2 : tensor<1x8x4x1xf32>, tensor<1x8x1x1xf32> -> tensor<1x8x5x1xf32>
// CHECK: %[[W4:.*]] = kiln.slice %arg1 starts = [0, 0, 1, 1] strides = [1, 1, 1, 1] : tensor<8x4x3x3xf32> -> tensor<8x4x1x1xf32>
// CHECK: kiln.conv %arg0, %[[W4]] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x4x5x5xf32>, tensor<8x4x1x1xf32> -> tensor<1x8x5x5xf32>
// CHECK-COUNT-5: kiln.add
// CHECK-NOT: kiln.add
// CHECK: kiln.conv %arg0, %arg1 strides = [1, 1] dilations = [2, 2] pads = [2, 2, 2, 2]
// CHECK: kiln.conv %arg0, %arg1 strides = [2, 2] dilations = [4, 4] pads = [4, 4, 4, 4]
func.func @sparse_conv_taps(%x: tensor<1x4x5x5xf32>, %w: tensor<8x4x3x3xf32>)
    -> (tensor<1x8x5x5xf32>, tensor<1x8x5x5xf32>, tensor<1x8x3x3xf32>) {
  %a = kiln.conv %x, %w strides = [1, 1] dilations = [4, 4] pads = [4, 4, 4, 4] group = 1
      : tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x5x5xf32>
  %b = kiln.conv %x, %w strides = [1, 1] dilations = [2, 2] pads = [2, 2, 2, 2] group = 1
      : tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x5x5xf32>
  %c = kiln.conv %x, %w strides = [2, 2] dilations = [4, 4] pads = [4, 4, 4, 4] group = 1
      : tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x3x3xf32>
  return %a, %b, %c : tensor<1x8x5x5xf32>, tensor<1x8x5x5xf32>, tensor<1x8x3x3xf32>
}

// -----

// A vector per batch against one shared matrix becomes one product with a
// row per batch, between reshapes; the transposed matrix keeps its flag.
// CHECK-LABEL: func.func @matvec_batches
// CHECK-SAME: (%[[X:.*]]: tensor<6x1x8xf32>, %[[W:.*]]: tensor<8x5xf32>, %[[T:.*]]: tensor<5x8xf32>)
// CHECK: %[[F:.*]] = kiln.reshape %[[X]] : tensor<6x1x8xf32> -> tensor<6x8xf32>
// CHECK: %[[P:.*]] = kiln.matmul %[[F]], %[[W]] : tensor<6x8xf32>, tensor<8x5xf32> -> tensor<6x5xf32>
// CHECK: kiln.reshape %[[P]] : tensor<6x5xf32> -> tensor<6x1x5xf32>
// CHECK: %[[Q:.*]] = kiln.matmul %{{.*}}, %[[T]] transpose_rhs : tensor<6x8xf32>, tensor<5x8xf32> -> tensor<6x5xf32>
// CHECK: kiln.reshape %[[Q]] : tensor<6x5xf32> -> tensor<6x1x5xf32>
func.func @matvec_batches(%x: tensor<6x1x8xf32>, %w: tensor<8x5xf32>, %t: tensor<5x8xf32>) -> (tensor<6x1x5xf32>, tensor<6x1x5xf32>) {
  %r = kiln.matmul %x, %w : tensor<6x1x8xf32>, tensor<8x5xf32> -> tensor<6x1x5xf32>
  %s = kiln.matmul %x, %t transpose_rhs : tensor<6x1x8xf32>, tensor<5x8xf32> -> tensor<6x1x5xf32>
  return %r, %s : tensor<6x1x5xf32>, tensor<6x1x5xf32>
}

// -----

// Left alone: several rows per batch, a single batch, a batched right
// operand, and a left operand read transposed.
// CHECK-LABEL: func.func @matvec_batches_not
// CHECK-NOT: kiln.reshape
// CHECK-COUNT-4: kiln.matmul
// CHECK-NOT: kiln.reshape
func.func @matvec_batches_not(%m: tensor<6x3x8xf32>, %one: tensor<1x1x8xf32>, %w: tensor<8x5xf32>,
                              %wb: tensor<6x8x5xf32>, %x: tensor<6x1x8xf32>, %xt: tensor<6x8x1xf32>)
    -> (tensor<6x3x5xf32>, tensor<1x1x5xf32>, tensor<6x1x5xf32>, tensor<6x1x5xf32>) {
  %a = kiln.matmul %m, %w : tensor<6x3x8xf32>, tensor<8x5xf32> -> tensor<6x3x5xf32>
  %b = kiln.matmul %one, %w : tensor<1x1x8xf32>, tensor<8x5xf32> -> tensor<1x1x5xf32>
  %c = kiln.matmul %x, %wb : tensor<6x1x8xf32>, tensor<6x8x5xf32> -> tensor<6x1x5xf32>
  %d = kiln.matmul %xt, %w transpose_lhs : tensor<6x8x1xf32>, tensor<8x5xf32> -> tensor<6x1x5xf32>
  return %a, %b, %c, %d : tensor<6x3x5xf32>, tensor<1x1x5xf32>, tensor<6x1x5xf32>, tensor<6x1x5xf32>
}

// -----

// A float power by a constant 1 to 4 becomes products (the tanh GELU's
// x ** 3, a decomposed layer norm's square); other exponents, a
// non-constant exponent and one that would widen x stay powers.
// CHECK-LABEL: func.func @pow_small_integer
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[E:.*]]: tensor<f32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[P2:.*]] = kiln.mul %[[X]], %[[X]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[SQ:.*]] = kiln.mul %[[X]], %[[X]]
// CHECK: %[[CUBE:.*]] = kiln.mul %[[SQ]], %[[X]]
// CHECK: %[[SQ2:.*]] = kiln.mul %[[X]], %[[X]]
// CHECK: %[[FOURTH:.*]] = kiln.mul %[[SQ2]], %[[SQ2]]
// CHECK: %[[HALF:.*]] = kiln.pow %[[X]], %{{.*}} : tensor<4x8xf32>, tensor<f32>
// CHECK: %[[VAR:.*]] = kiln.pow %[[X]], %[[E]]
// CHECK: %[[WIDE:.*]] = kiln.pow %[[S]], %{{.*}} : tensor<f32>, tensor<4x8xf32>
// CHECK: return %[[X]], %[[P2]], %[[CUBE]], %[[FOURTH]], %[[HALF]], %[[VAR]], %[[WIDE]]
func.func @pow_small_integer(%x: tensor<4x8xf32>, %e: tensor<f32>, %s: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<1x1xf32>
  %four = kiln.constant dense<4.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %threes = kiln.constant dense<3.0> : tensor<4x8xf32>
  %p1 = kiln.pow %x, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %p2 = kiln.pow %x, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %p3 = kiln.pow %x, %three : tensor<4x8xf32>, tensor<1x1xf32> -> tensor<4x8xf32>
  %p4 = kiln.pow %x, %four : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %ph = kiln.pow %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %pe = kiln.pow %x, %e : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %pw = kiln.pow %s, %threes : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %p1, %p2, %p3, %p4, %ph, %pe, %pw : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

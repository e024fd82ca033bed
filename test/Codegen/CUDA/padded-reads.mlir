// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s

// A padded max pooling reads its input itself: inside the padding the
// source (at the index less the padding), outside -inf, the fill's value.
// The -inf fill of a padded copy and the copy into it are not printed, so
// the pooling is the only step.
// CHECK: __global__ void __launch_bounds__(256) k0(char *__restrict__ in0, char *__restrict__ out0)
// CHECK: float [[V:v[0-9]+]] = ((((d2 * (int64_t)2) + d4)) >= 1 && (((d2 * (int64_t)2) + d4)) < 17 && (((d3 * (int64_t)2) + d5)) >= 1 && (((d3 * (int64_t)2) + d5)) < 17) ? ((float *)(in0))[0 + d0 * 768 + d1 * 256 + ((((d2 * (int64_t)2) + d4)) - 1) * 16 + ((((d3 * (int64_t)2) + d5)) - 1)] : __int_as_float(0xFF800000);
// CHECK: kiln_maximum({{.*}}[[V]])
// CHECK: // 0: k0<<<
// CHECK-NOT: // 1:
module {
  func.func @main(%x: tensor<2x3x16x16xf32> {kiln.name = "x"}) -> (tensor<2x3x8x8xf32> {kiln.name = "y"}) {
    %y = kiln.pool max %x kernel = [3, 3] strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] : tensor<2x3x16x16xf32> -> tensor<2x3x8x8xf32>
    return %y : tensor<2x3x8x8xf32>
  }
}

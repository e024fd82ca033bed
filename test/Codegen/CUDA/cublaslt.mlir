// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s
// RUN: kilnc %s --target=cuda --tf32 --emit=cuda | FileCheck %s --check-prefix=TF32
// RUN: kilnc %s --target=cuda --no-cublaslt --emit=cuda | FileCheck %s --check-prefix=KERNELS

// Matrix products are cuBLASLt steps (docs/decisions/0019), in its
// column-major terms: a row-major C[M x N] = A B is C^T = B^T A^T, so
// cuBLASLt's A is the model's B, its m is the model's N, and D's leading
// dimension is N. The step list follows the kernels' source.

// The kernels left: the tanh after a product (no cuBLASLt epilogue), and
// the product whose left side is broadcast over the batch.
// CHECK-LABEL: k0(
// CHECK:         tanhf(
// CHECK-LABEL: k1(
// CHECK-NOT:   __global__

// The product with bias + relu: cuBLASLt's RELU_BIAS epilogue writes the
// model's output; the bias runs along cuBLASLt's rows (the model's N).
// CHECK: // 0: cublasLt f32 m=3 n=2 k=40 batch=1 A=in1+0 lda=3 B=in0+0 ldb=40 D=out0+0 ldd=3 beta=0 epilogue=bias+relu bias=in2+0 workspace=arena+[[WS:[0-9]+]]
// A batch of 4 products of 2x5 and 5x3: one strided batched call.
// CHECK: // 1: cublasLt f32 m=3 n=2 k=5 batch=4 A=in4+0 lda=3 B=in3+0 ldb=5 D=out1+0 ldd=3 strides=15,10,6 beta=0 epilogue=none workspace=arena+[[WS]]
// [2, 5, 16] x [16, 24]: the batch and the rows merge into one m of 10.
// CHECK: // 2: cublasLt f32 m=24 n=10 k=16 batch=1 A=in6+0 lda=24 B=in5+0 ldb=16 D=out2+0 ldd=24 beta=0 epilogue=none
// f16 accumulating in f32, rounded to f16 as cuBLASLt stores D: one step.
// CHECK: // 3: cublasLt f16 m=2 n=3 k=8 batch=1 A=in8+0 lda=2 B=in7+0 ldb=8 D=out3+0 ldd=2 beta=0 epilogue=none
// The product under tanh goes to the arena, for k0.
// CHECK: // 4: cublasLt f32 m=3 n=2 k=40 batch=1 A=in10+0 lda=3 B=in9+0 ldb=40 D=arena+0 ldd=3 beta=0 epilogue=none
// CHECK: // 5: k0<<<1, 256>>>(out4+0, arena+0)
// A right side shared by the batch: the batch merges into m too.
// CHECK: // 6: cublasLt f32 m=5 n=6 k=4 batch=1 A=in12+0 lda=5 B=in11+0 ldb=4 D=out5+0 ldd=5 beta=0 epilogue=none
// CHECK: // 7: k1<<<

// --tf32 lets cuBLASLt round f32 inputs to TF32; f16 is unchanged.
// TF32: // 0: cublasLt f32 tf32 m=3
// TF32: // 3: cublasLt f16 m=2

// --no-cublaslt: every product is a kernel again.
// KERNELS-NOT: cublasLt
// KERNELS: // 0: k0<<<
module {
  func.func @main(%a: tensor<2x40xf32> {kiln.name = "a"}, %b: tensor<40x3xf32> {kiln.name = "b"},
                  %bias: tensor<3xf32> {kiln.name = "bias"},
                  %p: tensor<4x2x5xf32> {kiln.name = "p"}, %q: tensor<4x5x3xf32> {kiln.name = "q"},
                  %x: tensor<2x5x16xf32> {kiln.name = "x"}, %w: tensor<16x24xf32> {kiln.name = "w"},
                  %h: tensor<3x8xf16> {kiln.name = "h"}, %g: tensor<8x2xf16> {kiln.name = "g"},
                  %a2: tensor<2x40xf32> {kiln.name = "a2"}, %b2: tensor<40x3xf32> {kiln.name = "b2"},
                  %l: tensor<2x3x4xf32> {kiln.name = "l"}, %r: tensor<1x4x5xf32> {kiln.name = "r"},
                  %l2: tensor<1x3x4xf32> {kiln.name = "l2"}, %r2: tensor<2x4x5xf32> {kiln.name = "r2"})
      -> (tensor<2x3xf32> {kiln.name = "y"}, tensor<4x2x3xf32> {kiln.name = "bm"},
          tensor<2x5x24xf32> {kiln.name = "lin"}, tensor<3x2xf16> {kiln.name = "half"},
          tensor<2x3xf32> {kiln.name = "t"},
          tensor<2x3x5xf32> {kiln.name = "right_shared"}, tensor<2x3x5xf32> {kiln.name = "left_shared"}) {
    %m = kiln.matmul %a, %b : tensor<2x40xf32>, tensor<40x3xf32> -> tensor<2x3xf32>
    %s = kiln.add %m, %bias : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %y = kiln.relu %s : tensor<2x3xf32>
    %bm = kiln.matmul %p, %q : tensor<4x2x5xf32>, tensor<4x5x3xf32> -> tensor<4x2x3xf32>
    %lin = kiln.matmul %x, %w : tensor<2x5x16xf32>, tensor<16x24xf32> -> tensor<2x5x24xf32>
    %half = kiln.matmul %h, %g : tensor<3x8xf16>, tensor<8x2xf16> -> tensor<3x2xf16>
    %m2 = kiln.matmul %a2, %b2 : tensor<2x40xf32>, tensor<40x3xf32> -> tensor<2x3xf32>
    %t = kiln.tanh %m2 : tensor<2x3xf32>
    %rs = kiln.matmul %l, %r : tensor<2x3x4xf32>, tensor<1x4x5xf32> -> tensor<2x3x5xf32>
    %ls = kiln.matmul %l2, %r2 : tensor<1x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
    return %y, %bm, %lin, %half, %t, %rs, %ls
        : tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x5x24xf32>, tensor<3x2xf16>, tensor<2x3xf32>,
          tensor<2x3x5xf32>, tensor<2x3x5xf32>
  }
}

// RUN: kilnc %s --target=cuda --no-cublaslt --emit=cuda | FileCheck %s
// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s --check-prefix=LT

// By default the matmul is a cuBLASLt step instead of kernel k1 (0019).
// LT-LABEL: k0(
// LT-NOT:   __global__
// LT:       // 1: cublasLt f32 m=4 n=2 k=3 batch=1 A=in1+0 lda=4 B=in0+0 ldb=3 D=out1+0 ldd=4 beta=0 epilogue=none

// A row sum of 3 (too short for a block reduction): one thread per row
// accumulating the row in an inner loop. The fill before it is no kernel of
// its own: its value starts the accumulator.
// CHECK-LABEL: k0(char *__restrict__ in0, char *__restrict__ out0)
// CHECK:          t < 2;
// CHECK:          float [[ACC:v[0-9]+]] = 0.0f;
// CHECK-NEXT:     for (int64_t d1 = 0; d1 < 3; ++d1) {
// CHECK-NEXT:       float [[X:v[0-9]+]] = ((float *)(in0))[0 + d0 * 3 + d1];
// CHECK-NEXT:       float [[SUM:v[0-9]+]] = ([[ACC]] + [[X]]);
// CHECK-NEXT:       [[ACC]] = [[SUM]];
// CHECK-NEXT:     }
// CHECK-NEXT:     ((float *)(out0))[0 + d0] = [[ACC]];

// A matmul (2x3 times 3x4): a simple kernel, one thread per output element
// with the k loop inside, starting from the fill's zero; the right operand
// is read column-wise.
// CHECK-LABEL: k1(char *__restrict__ in0, char *__restrict__ in1, char *__restrict__ out1)
// CHECK:          t < 8;
// CHECK:          const int64_t d1 = r % 4; r /= 4;
// CHECK:          float {{v[0-9]+}} = 0.0f;
// CHECK-NEXT:     for (int64_t d2 = 0; d2 < 3; ++d2) {
// CHECK-NEXT:       float [[L:v[0-9]+]] = ((float *)(in0))[0 + d0 * 3 + d2];
// CHECK-NEXT:       float [[R:v[0-9]+]] = ((float *)(in1))[0 + d2 * 4 + d1];
// CHECK-NEXT:       float [[P:v[0-9]+]] = ([[L]] * [[R]]);
// CHECK-NEXT:       float {{v[0-9]+}} = ({{v[0-9]+}} + [[P]]);
// CHECK:          ((float *)(out1))[0 + d0 * 4 + d1] =
// CHECK-NOT: __global__
module {
  func.func @main(%a: tensor<2x3xf32> {kiln.name = "a"}, %b: tensor<3x4xf32> {kiln.name = "b"}) -> (tensor<2xf32> {kiln.name = "s"}, tensor<2x4xf32> {kiln.name = "m"}) {
    %s = kiln.reduce_sum %a axes = [1] : tensor<2x3xf32> -> tensor<2xf32>
    %m = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
    return %s, %m : tensor<2xf32>, tensor<2x4xf32>
  }
}

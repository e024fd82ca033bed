// RUN: kilnc %s --target=cuda --no-cublaslt --emit=cuda | FileCheck %s

// The elementwise kernel after a contraction or reduction that alone reads
// its result (kiln-fuse's epilogue: bias, activation; a mean's divide) runs
// in that kernel on each output element, where the result would have been
// stored: one launch, and the result never reaches memory.

// (Without --no-cublaslt the matmul and its epilogue are one cuBLASLt step,
// tested in cublaslt.mlir.)
// A matmul (k = 40: a block per output element) with bias + relu: the
// epilogue reads the bias by the output's column and writes the model's
// output; no kernel of its own.
// CHECK-LABEL: k0(char *__restrict__ in0, char *__restrict__ in1, char *__restrict__ in2, char *__restrict__ out0)
// CHECK:          if (threadIdx.x == 0) {
// CHECK:            float [[R:v[0-9]+]] = ({{v[0-9]+}} + kiln_partial0[0]);
// CHECK-NEXT:       { // the epilogue at
// CHECK-NEXT:         float [[X:v[0-9]+]] = [[R]];
// CHECK-NEXT:         float [[B:v[0-9]+]] = ((float *)(in2))[0 + (d1)];
// CHECK-NEXT:         float [[S:v[0-9]+]] = ([[X]] + [[B]]);
// CHECK-NEXT:         float [[Y:v[0-9]+]] = kiln_maximum([[S]], 0.0f);
// CHECK-NEXT:         ((float *)(out0))[0 + (d0) * 3 + (d1)] = [[Y]];
// CHECK-NEXT:       }

// A row sum of 6 (one thread per row) whose result is also a model output:
// stored, and the square after it is a kernel of its own.
// CHECK-LABEL: k1(char *__restrict__ in3, char *__restrict__ out1)
// CHECK-NOT:      epilogue
// CHECK:          ((float *)(out1))[0 + d0] =
// CHECK-LABEL: k2(char *__restrict__ out1, char *__restrict__ out2)

// The same sum read only by the square: the square is its epilogue.
// CHECK-LABEL: k3(char *__restrict__ in3, char *__restrict__ out3)
// CHECK:          for (int64_t d1 = 0; d1 < 6; ++d1) {
// CHECK:          { // the epilogue at
// CHECK:            ((float *)(out3))[0 + (d0)] =
// CHECK-NOT: __global__
module {
  func.func @main(%a: tensor<2x40xf32> {kiln.name = "a"}, %b: tensor<40x3xf32> {kiln.name = "b"},
                  %bias: tensor<3xf32> {kiln.name = "bias"}, %c: tensor<2x6xf32> {kiln.name = "c"})
      -> (tensor<2x3xf32> {kiln.name = "y"}, tensor<2xf32> {kiln.name = "s"}, tensor<2xf32> {kiln.name = "t"},
          tensor<2xf32> {kiln.name = "w"}) {
    %m = kiln.matmul %a, %b : tensor<2x40xf32>, tensor<40x3xf32> -> tensor<2x3xf32>
    %x = kiln.add %m, %bias : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %y = kiln.relu %x : tensor<2x3xf32>
    %s = kiln.reduce_sum %c axes = [1] : tensor<2x6xf32> -> tensor<2xf32>
    %t = kiln.mul %s, %s : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    %u = kiln.reduce_max %c axes = [1] : tensor<2x6xf32> -> tensor<2xf32>
    %w = kiln.mul %u, %u : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    return %y, %s, %t, %w : tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}

// RUN: kilnc %s --target=cuda --no-cublaslt --emit=cuda | FileCheck %s

// The matmul, bias and relu of epilogue.mlir's first case, but kiln-fuse's
// decision written in: the matmul is a kernel of its own and the bias and
// relu another. The printer computes an epilogue only when it is in its
// producer's kernel, so this stays two kernels: the matmul stores its
// result, and the bias and relu read it back.
// CHECK-LABEL: k0(char *__restrict__ in0, char *__restrict__ in1, char *__restrict__ arena)
// CHECK-NOT:      epilogue
// CHECK:          ((float *)(arena))[0 + d0 * 3 + d1] =
// CHECK:       // linalg.generic at loc("{{.*}}epilogue-kernels.mlir":{{[0-9]+}}:{{[0-9]+}})
// CHECK-NEXT:  k1(char *__restrict__ in2, char *__restrict__ out0, char *__restrict__ arena)
// CHECK:       0: k0<<<
// CHECK-NEXT:  1: k1<<<
module {
  func.func @main(%a: tensor<2x40xf32> {kiln.name = "a"}, %b: tensor<40x3xf32> {kiln.name = "b"},
                  %bias: tensor<3xf32> {kiln.name = "bias"}) -> (tensor<2x3xf32> {kiln.name = "y"}) {
    %m = kiln.fused 7 contraction (%a, %b) nodes = ["mm"] : (tensor<2x40xf32>, tensor<40x3xf32>) -> tensor<2x3xf32> {
    ^bb0(%p: tensor<2x40xf32>, %q: tensor<40x3xf32>):
      %r = kiln.matmul %p, %q : tensor<2x40xf32>, tensor<40x3xf32> -> tensor<2x3xf32>
      kiln.yield %r : tensor<2x3xf32>
    }
    %y = kiln.fused 8 elementwise (%m, %bias) nodes = ["bias", "relu"] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
    ^bb0(%s: tensor<2x3xf32>, %t: tensor<3xf32>):
      %x = kiln.add %s, %t : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
      %z = kiln.relu %x : tensor<2x3xf32>
      kiln.yield %z : tensor<2x3xf32>
    }
    return %y : tensor<2x3xf32>
  }
}

// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s

// Constants live in one device array the runtime fills at load, in
// 256-byte aligned pieces; a transpose reads its input with swapped strides;
// f16 is stored as 16 bits and computed in float, rounded after each op.
// CHECK: __device__ __align__(256) unsigned char kiln_constants[{{[0-9]+}}];
// CHECK-LABEL: k0(char *__restrict__ in0, char *__restrict__ out0)
// CHECK:          = ((float *)(kiln_constants{{( \+ [0-9]+)?}}))[0 + d1];
// CHECK-LABEL: k1(char *__restrict__ in0, char *__restrict__ out1)
// CHECK:          const int64_t d1 = r % 2; r /= 2;
// CHECK:          = ((float *)(in0))[0 + d1 * 3 + d0];
// CHECK-LABEL: k2(char *__restrict__ in1, char *__restrict__ out2)
// CHECK:          float [[H:v[0-9]+]] = kiln_f16_to_f32(((uint16_t *)(in1))[0 + d0]);
// CHECK:          float {{v[0-9]+}} = kiln_round_f16(([[H]] * {{v[0-9]+}}));
// CHECK:          ((uint16_t *)(out2))[0 + d0] = kiln_f32_to_f16(
module {
  func.func @main(%a: tensor<2x3xf32> {kiln.name = "a"}, %h: tensor<5xf16> {kiln.name = "h"}) -> (tensor<2x3xf32> {kiln.name = "y"}, tensor<3x2xf32> {kiln.name = "t"}, tensor<5xf16> {kiln.name = "hh"}) {
    %c = kiln.constant dense<[1.5, -2.0, 0.25]> : tensor<3xf32>
    %0 = kiln.mul %a, %c : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %t = kiln.transpose %a perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    %hh = kiln.mul %h, %h : tensor<5xf16>, tensor<5xf16> -> tensor<5xf16>
    return %0, %t, %hh : tensor<2x3xf32>, tensor<3x2xf32>, tensor<5xf16>
  }
}

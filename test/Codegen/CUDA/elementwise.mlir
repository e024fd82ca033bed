// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s
// RUN: kilnc %s --target=cuda --emit=cuda --no-fuse | FileCheck %s --check-prefix=UNFUSED
// RUN: kilnc %s --target=cuda --emit=fused | FileCheck %s --check-prefix=KERNELS

// KERNELS: 1 kernels hold 3 of 3 ops
// KERNELS: ops: add exp relu

// A broadcasting add, exp and relu: kiln-fuse makes them one kernel, a
// grid-stride loop over the flattened output that reads the broadcast
// operand by the column index alone and writes the caller's output; no
// intermediate touches memory.

// CHECK: typedef long long int64_t;
// CHECK: // linalg.generic at loc("{{.*}}elementwise.mlir":{{[0-9]+}}:{{[0-9]+}})
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) k0(char *__restrict__ in0, char *__restrict__ in1, char *__restrict__ out0) {
// CHECK-NEXT:   for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < 6; t += (int64_t)gridDim.x * blockDim.x) {
// CHECK:          const int64_t d1 = r % 3; r /= 3;
// CHECK-NEXT:     const int64_t d0 = r;
// CHECK:          float [[A:v[0-9]+]] = ((float *)(in0))[0 + d0 * 3 + d1];
// CHECK-NEXT:     float [[B:v[0-9]+]] = ((float *)(in1))[0 + d1];
// CHECK-NEXT:     float [[S:v[0-9]+]] = ([[A]] + [[B]]);
// CHECK-NEXT:     float [[E:v[0-9]+]] = expf([[S]]);
// CHECK-NEXT:     float [[R:v[0-9]+]] = kiln_maximum([[E]], 0.0f);
// CHECK:          ((float *)(out0))[0 + d0 * 3 + d1] =
// CHECK-NOT: __global__

// Unfused (--no-fuse): one kernel per op; exp overwrites its dying input in
// the arena (the memory plan's in-place reuse), and relu writes the
// caller's output.
// UNFUSED: k0(char *__restrict__ in0, char *__restrict__ in1, char *__restrict__ arena)
// UNFUSED:          ((float *)(arena))[0 + d0 * 3 + d1] = {{v[0-9]+}};
// UNFUSED: k1(char *__restrict__ arena)
// UNFUSED:          = expf(
// UNFUSED:          ((float *)(arena))[0 + d0 * 3 + d1] =
// UNFUSED: k2(char *__restrict__ out0, char *__restrict__ arena)
// UNFUSED:          kiln_maximum({{v[0-9]+}}, 0.0f)
// UNFUSED:          ((float *)(out0))[0 + d0 * 3 + d1] =
// UNFUSED-NOT: __global__
module {
  func.func @main(%a: tensor<2x3xf32> {kiln.name = "a"}, %b: tensor<3xf32> {kiln.name = "b"}) -> (tensor<2x3xf32> {kiln.name = "y"}) {
    %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %1 = kiln.exp %0 : tensor<2x3xf32>
    %2 = kiln.relu %1 : tensor<2x3xf32>
    return %2 : tensor<2x3xf32>
  }
}

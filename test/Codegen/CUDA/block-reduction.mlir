// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s

// Reductions of 32 or more elements per output element: one block per
// output element (a grid-stride loop over blocks), a power-of-two block no
// larger than the row, each thread combining a strided share of the row
// from the combiner's identity, then a tree in shared memory; thread 0
// combines the result with the start value, which the fill before it
// supplied as a literal (no fill kernel).

// A sum of 64: a block of 64 threads, -0.0 as the identity.
// CHECK-LABEL: k0(char *__restrict__ in0, char *__restrict__ out0)
// CHECK-NEXT:   __shared__ float kiln_partial0[256];
// CHECK-NEXT:   for (int64_t t = blockIdx.x; t < 2; t += gridDim.x) {
// CHECK:          float [[ACC:v[0-9]+]] = -0.0f;
// CHECK-NEXT:     for (int64_t l = threadIdx.x; l < 64; l += blockDim.x) {
// CHECK:            float [[X:v[0-9]+]] = ((float *)(in0))[0 + d0 * 64 + d1];
// CHECK-NEXT:       float [[S:v[0-9]+]] = ([[ACC]] + [[X]]);
// CHECK-NEXT:       [[ACC]] = [[S]];
// CHECK-NEXT:     }
// CHECK-NEXT:     kiln_partial0[threadIdx.x] = [[ACC]];
// CHECK-NEXT:     __syncthreads();
// CHECK-NEXT:     for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
// CHECK-NEXT:       if (threadIdx.x < s) {
// CHECK-NEXT:         float [[T:v[0-9]+]] = (kiln_partial0[threadIdx.x] + kiln_partial0[threadIdx.x + s]);
// CHECK-NEXT:         kiln_partial0[threadIdx.x] = [[T]];
// CHECK-NEXT:       }
// CHECK-NEXT:       __syncthreads();
// CHECK-NEXT:     }
// CHECK-NEXT:     if (threadIdx.x == 0) {
// CHECK-NEXT:       float [[I:v[0-9]+]] = 0.0f;
// CHECK-NEXT:       float [[F:v[0-9]+]] = ([[I]] + kiln_partial0[0]);
// CHECK-NEXT:       ((float *)(out0))[0 + d0] = [[F]];
// CHECK-NEXT:     }
// CHECK-NEXT:     __syncthreads();

// An int32 max over a middle dim of 40: the identity is INT32_MIN, and the
// reduced dim comes from the flat index l while the kept dims come from t.
// CHECK-LABEL: k1(char *__restrict__ in1, char *__restrict__ out1)
// CHECK:          __shared__ int32_t kiln_partial0[256];
// CHECK:          const int64_t d2 = r % 5; r /= 5;
// CHECK:          int32_t {{v[0-9]+}} = ((int32_t)-2147483648LL);
// CHECK-NEXT:     for (int64_t l = threadIdx.x; l < 40; l += blockDim.x) {
// CHECK:            ((int32_t *)(in1))[0 + d0 * 200 + d1 * 5 + d2]

// Softmax over 300: the max (identity -inf), then the sum that kiln-fuse
// fused with sub and exp; it also writes exp at every element, which the
// divide reads.
// CHECK-LABEL: k2(char *__restrict__ in2, char *__restrict__ arena)
// CHECK:          float {{v[0-9]+}} = __int_as_float(0xFF800000);
// CHECK:          kiln_maximum(
// CHECK-LABEL: k3(char *__restrict__ in2, char *__restrict__ arena)
// CHECK:          for (int64_t l = threadIdx.x; l < 300; l += blockDim.x) {
// CHECK:            float [[E:v[0-9]+]] = expf(
// CHECK-NEXT:       float [[SUM:v[0-9]+]] = ({{v[0-9]+}} + [[E]]);
// CHECK-NEXT:       ((float *)(arena))[0 + d0 * 300 + d1] = [[E]];
// CHECK:          __syncthreads();
// The divide: elementwise over 1200 points, 4 a thread (vectorized).
// CHECK-LABEL: k4(char *__restrict__ out2, char *__restrict__ arena)
// CHECK-NOT:      __syncthreads
// CHECK:          t < 300;
// CHECK:          kiln_vec<float, 4>

// A sum of 8: too short for a block; one thread per row.
// CHECK-LABEL: k5(char *__restrict__ in3, char *__restrict__ out3)
// CHECK-NOT:      __shared__
// CHECK:          for (int64_t d1 = 0; d1 < 8; ++d1) {
// CHECK-NOT: __global__
module {
  func.func @main(%a: tensor<2x64xf32> {kiln.name = "a"}, %b: tensor<3x40x5xi32> {kiln.name = "b"},
                  %c: tensor<4x300xf32> {kiln.name = "c"}, %e: tensor<2x8xf32> {kiln.name = "e"})
      -> (tensor<2xf32> {kiln.name = "s"}, tensor<3x5xi32> {kiln.name = "m"},
          tensor<4x300xf32> {kiln.name = "p"}, tensor<2xf32> {kiln.name = "z"}) {
    %s = kiln.reduce_sum %a axes = [1] : tensor<2x64xf32> -> tensor<2xf32>
    %m = kiln.reduce_max %b axes = [1] : tensor<3x40x5xi32> -> tensor<3x5xi32>
    %cm = kiln.reduce_max %c axes = [1] keepdims : tensor<4x300xf32> -> tensor<4x1xf32>
    %cs = kiln.sub %c, %cm : tensor<4x300xf32>, tensor<4x1xf32> -> tensor<4x300xf32>
    %ce = kiln.exp %cs : tensor<4x300xf32>
    %ct = kiln.reduce_sum %ce axes = [1] keepdims : tensor<4x300xf32> -> tensor<4x1xf32>
    %p = kiln.div %ce, %ct : tensor<4x300xf32>, tensor<4x1xf32> -> tensor<4x300xf32>
    %z = kiln.reduce_sum %e axes = [1] : tensor<2x8xf32> -> tensor<2xf32>
    return %s, %m, %p, %z : tensor<2xf32>, tensor<3x5xi32>, tensor<4x300xf32>, tensor<2xf32>
  }
}

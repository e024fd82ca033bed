// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && kilnc %s --target=cuda -o %t/m
// RUN: grep -a -o "ld.global.v4.f32\|st.global.v4.f32\|st.global.v4.b16\|ld.global.v4.b16\|ld.global.v4.u16\|st.global.v4.u16" %t/m.o | sort | uniq | FileCheck %s --check-prefix=PTX

// Elementwise kernels whose operands run contiguously along the last loop,
// 16-byte aligned, take 16 bytes of points a thread: one kiln_vec load per
// operand, the payload per point, one kiln_vec store, which NVRTC compiles
// to 16-byte accesses (the PTX in the artifact). The caller's buffers are
// assumed 16-byte aligned, which the runtime checks (io_alignment).

// f32 over [4, 64] + a bias row [64] + a per-row scalar [4, 1]: 64 threads
// of 4 points; the bias is a vector too, the per-row value a broadcast.
// CHECK-LABEL: k0(
// CHECK:         in0 = KILN_ALIGNED(in0, 16);
// CHECK:         t < 64;
// CHECK:         const int64_t d1 = d1_group * 4;
// CHECK:         kiln_vec<float, 4> [[A:v[0-9]+]] = *(const kiln_vec<float, 4> *)&((float *)(in0))[0 + d0 * 64 + d1];
// CHECK:         kiln_vec<float, 4> [[B:v[0-9]+]] = *(const kiln_vec<float, 4> *)&((float *)(in1))[0 + d1];
// CHECK:         float [[S:v[0-9]+]] = ((float *)(in2))[0 + d0 + (int64_t)0];
// CHECK-NOT:     (in2)
// CHECK:         ({{v[0-9]+}} * [[S]])
// CHECK:         ({{v[0-9]+}} * [[S]])
// CHECK:         *(kiln_vec<float, 4> *)&((float *)(out0))[0 + d0 * 64 + d1] = [[Y:v[0-9]+]];

// f16 over [2, 16]: 8 points a thread (stored as uint16_t, computed in float).
// CHECK-LABEL: k1(
// CHECK:         t < 4;
// CHECK:         kiln_vec<uint16_t, 8> {{v[0-9]+}} = *(const kiln_vec<uint16_t, 8> *)&

// [2, 3]: 3 is no multiple of 4, so one point a thread.
// CHECK-LABEL: k2(
// CHECK-NOT:     kiln_vec
// CHECK:         t < 6;

// PTX-DAG: ld.global.v4.f32
// PTX-DAG: st.global.v4.f32
module {
  func.func @main(%a: tensor<4x64xf32> {kiln.name = "a"}, %b: tensor<64xf32> {kiln.name = "b"},
                  %s: tensor<4x1xf32> {kiln.name = "s"}, %h: tensor<2x16xf16> {kiln.name = "h"},
                  %o: tensor<2x3xf32> {kiln.name = "o"})
      -> (tensor<4x64xf32> {kiln.name = "y"}, tensor<2x16xf16> {kiln.name = "hy"}, tensor<2x3xf32> {kiln.name = "oy"}) {
    %0 = kiln.add %a, %b : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
    %1 = kiln.mul %0, %s : tensor<4x64xf32>, tensor<4x1xf32> -> tensor<4x64xf32>
    %2 = kiln.relu %1 : tensor<4x64xf32>
    %3 = kiln.exp %h : tensor<2x16xf16>
    %4 = kiln.tanh %o : tensor<2x3xf32>
    return %2, %3, %4 : tensor<4x64xf32>, tensor<2x16xf16>, tensor<2x3xf32>
  }
}

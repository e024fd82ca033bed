// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg))' | FileCheck %s

// The narrow types are stored as one i8 per element. Decoding a float8
// indexes a 256-entry f32 table of its values (448 is 0x43E00000, the
// largest f8E4M3FN).
// CHECK-LABEL: func.func @decode_f8
// CHECK-SAME: (%{{.*}}: tensor<4xi8> {bufferization.writable = false}) -> tensor<4xf32>
// CHECK: %[[T:.*]] = arith.constant dense<"0x{{.*}}0000E043{{.*}}"> : tensor<256xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = arith.index_castui %{{.*}} : i8 to index
// CHECK: tensor.extract %[[T]][%[[I]]] : tensor<256xf32>
func.func @decode_f8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xf8E4M3FN> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A float4 uses only its low nibble to index a 16-entry table.
// CHECK-LABEL: func.func @decode_f4
// CHECK: arith.constant dense<{{.*}}> : tensor<16xf32>
// CHECK: arith.constant 15 : i8
// CHECK: arith.andi
func.func @decode_f4(%x: tensor<4xf4E2M1FN>) -> tensor<4xf16> {
  %0 = kiln.cast %x : tensor<4xf4E2M1FN> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Encoding works in f64: scale by a power of two, round half to even, add
// the exponent field. Without saturation, f8E5M2 overflows to infinity
// (code 124) past the largest code (123); -0 keeps its sign (128); NaN is 126.
// CHECK-LABEL: func.func @encode_f8_no_saturate
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: math.roundeven %{{.*}} : f64
// CHECK: arith.constant 123 : i64
// CHECK: arith.cmpi sgt
// CHECK: arith.constant 124 : i64
// CHECK: arith.constant 126 : i64
// CHECK: arith.trunci %{{.*}} : i64 to i8
func.func @encode_f8_no_saturate(%x: tensor<4xf32>) -> tensor<4xf8E5M2> {
  %0 = kiln.cast %x {saturate = false} : tensor<4xf32> -> tensor<4xf8E5M2>
  return %0 : tensor<4xf8E5M2>
}

// -----

// Saturating f8E4M3FNUZ: overflow gives the largest code (127) and a
// negative value that rounds to zero is +0 (the type has no -0).
// CHECK-LABEL: func.func @encode_fnuz_saturate
// CHECK: %[[MAX:.*]] = arith.constant 127 : i64
// CHECK: arith.cmpi sgt, %{{.*}}, %[[MAX]]
// CHECK: arith.select %{{.*}}, %[[MAX]], %{{.*}} : i64
// CHECK: %[[Z:.*]] = arith.constant 0 : i64
// CHECK: arith.select %{{.*}}, %[[Z]], %{{.*}} : i64
func.func @encode_fnuz_saturate(%x: tensor<4xf16>) -> tensor<4xf8E4M3FNUZ> {
  %0 = kiln.cast %x : tensor<4xf16> -> tensor<4xf8E4M3FNUZ>
  return %0 : tensor<4xf8E4M3FNUZ>
}

// -----

// To int4: convert like to i32, then wrap by shifting through the i8.
// CHECK-LABEL: func.func @to_int4
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: %[[S:.*]] = arith.constant 4 : i8
// CHECK: arith.shli %{{.*}}, %[[S]] : i8
// CHECK: arith.shrsi %{{.*}}, %[[S]] : i8
func.func @to_int4(%x: tensor<4xf32>) -> tensor<4xi4> {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xi4>
  return %0 : tensor<4xi4>
}

// -----

// uint2 wraps with a logical shift.
// CHECK-LABEL: func.func @to_uint2
// CHECK: %[[S:.*]] = arith.constant 6 : i8
// CHECK: arith.shrui %{{.*}}, %[[S]] : i8
func.func @to_uint2(%x: tensor<4xi64>) -> tensor<4xui2> {
  %0 = kiln.cast %x : tensor<4xi64> -> tensor<4xui2>
  return %0 : tensor<4xui2>
}

// -----

// f8E8M0FNU rounds on the f32 encoding's exponent field; rounding down
// never moves it.
// CHECK-LABEL: func.func @to_e8m0_down
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.constant 23 : i32
// CHECK: arith.constant false
func.func @to_e8m0_down(%x: tensor<4xf16>) -> tensor<4xf8E8M0FNU> {
  %0 = kiln.cast %x {round_mode = "down"} : tensor<4xf16> -> tensor<4xf8E8M0FNU>
  return %0 : tensor<4xf8E8M0FNU>
}

// -----

// Constants re-encode to one byte each: int4 sign-extended, uint2 as its
// value, float8 as its bit pattern (1.0 is 0x38 = 56, -448 is 0xFE = -2).
// CHECK-LABEL: func.func @constants
// CHECK-DAG: arith.constant dense<[-8, 7, -1]> : tensor<3xi8>
// CHECK-DAG: arith.constant dense<[56, -2]> : tensor<2xi8>
// CHECK-DAG: arith.constant dense<[3, 1]> : tensor<2xi8>
func.func @constants() -> (tensor<3xi4>, tensor<2xf8E4M3FN>, tensor<2xui2>) {
  %0 = kiln.constant dense<[-8, 7, -1]> : tensor<3xi4>
  %1 = kiln.constant dense<[1.0, -448.0]> : tensor<2xf8E4M3FN>
  %2 = kiln.constant dense<[3, 1]> : tensor<2xui2>
  return %0, %1, %2 : tensor<3xi4>, tensor<2xf8E4M3FN>, tensor<2xui2>
}

// -----

// Data movement needs no decoding: a transpose of float8 moves bytes.
// CHECK-LABEL: func.func @transpose_f8
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3xi8>) outs(%{{.*}} : tensor<3x2xi8>)
func.func @transpose_f8(%x: tensor<2x3xf8E5M2>) -> tensor<3x2xf8E5M2> {
  %0 = kiln.transpose %x perm = [1, 0] : tensor<2x3xf8E5M2> -> tensor<3x2xf8E5M2>
  return %0 : tensor<3x2xf8E5M2>
}

// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-approximate-math))' | FileCheck %s

// f32 exp, log, tanh and erf, scalar or vector, become arithmetic.
// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @approximated(%x: f32, %v: vector<16xf32>) -> (f32, f32, vector<16xf32>, vector<16xf32>, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.log %x : f32
  %2 = math.tanh %v : vector<16xf32>
  %3 = math.erf %v : vector<16xf32>
  %4 = math.log1p %x : f32
  %5 = math.expm1 %x : f32
  return %0, %1, %2, %3, %4, %5 : f32, f32, vector<16xf32>, vector<16xf32>, f32, f32
}

// Other functions, and f64, keep their library calls.
// CHECK-LABEL: func.func @kept
// CHECK: math.sin
// CHECK: math.atan
// CHECK: math.exp {{.*}} : f64
func.func @kept(%x: f32, %d: f64) -> (f32, f32, f64) {
  %0 = math.sin %x : f32
  %1 = math.atan %x : f32
  %2 = math.exp %d : f64
  return %0, %1, %2 : f32, f32, f64
}

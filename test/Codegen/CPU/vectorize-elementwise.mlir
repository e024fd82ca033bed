// RUN: kiln-opt %s --split-input-file --kiln-vectorize-elementwise="width=16" | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A fused add + relu over 4x40 with a broadcast bias: tiles of 16 lanes
// along the rows, the last 8 columns as a vector<1x8> remainder; no scalar
// loop is left.
// CHECK-LABEL: func.func @bias_relu
// CHECK: scf.for
// CHECK: scf.for {{.*}} step %c16
// CHECK: vector.transfer_read {{.*}} vector<1x16xf32>
// CHECK: vector.broadcast {{.*}} vector<16xf32> to vector<1x16xf32>
// CHECK: arith.addf {{.*}} : vector<1x16xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x16xf32>
// CHECK: vector.transfer_write
// CHECK: arith.addf {{.*}} : vector<1x8xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_relu(%x: tensor<4x40xf32>, %b: tensor<40xf32>) -> tensor<4x40xf32> {
  %e = tensor.empty() : tensor<4x40xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x40xf32>, tensor<40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    linalg.yield %m : f32
  } -> tensor<4x40xf32>
  return %r : tensor<4x40xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// A transposed read would be a gather per lane: left to the scalar path.
// CHECK-LABEL: func.func @transposed_read
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @transposed_read(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %e = tensor.empty() : tensor<32x32xf32>
  %r = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Too short a row (2 < min-width) and non-f32 nests stay as they are.
// CHECK-LABEL: func.func @not_worth_it
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: vector.
func.func @not_worth_it(%x: tensor<2xf32>, %y: tensor<64xf64>) -> (tensor<2xf32>, tensor<64xf64>) {
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<2xf32>) outs(%e : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<2xf32>
  %f = tensor.empty() : tensor<64xf64>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<64xf64>) outs(%f : tensor<64xf64>) {
  ^bb0(%a: f64, %o: f64):
    %n = arith.negf %a : f64
    linalg.yield %n : f64
  } -> tensor<64xf64>
  return %r, %s : tensor<2xf32>, tensor<64xf64>
}

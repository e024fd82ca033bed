// RUN: kiln-opt %s --split-input-file --kiln-state-in-place | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-state-in-place --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-results-to-out-params="hoist-static-allocs modify-public-functions" --kiln-drop-state-copies | FileCheck %s --check-prefix=BUF

#id = affine_map<(d0) -> (d0)>

// The update reads the old parameter at the indices it writes, and the only
// other reader (the product) comes before it: the old parameter becomes the
// destination, its input is dropped and the payload reads the output.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<64xf32> {bufferization.writable = true, kiln.state = "parameter"}
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %[[W]] : tensor<64xf32>, tensor<64xf32>)
// CHECK: %[[N:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%[[P]] : tensor<64xf32>) outs(%[[W]] : tensor<64xf32>)
// CHECK-NEXT: ^bb0(%[[G:.*]]: f32, %[[OLD:.*]]: f32):
// CHECK-NEXT: arith.mulf %[[G]]
// CHECK-NEXT: arith.subf %[[OLD]]
// CHECK: return %[[P]], %[[N]]
// After bufferization the update writes the caller's state buffer: the
// copy into the new state's out-parameter is gone, and the function says so.
// BUF-LABEL: func.func @sgd
// BUF-SAME: kiln.state_in_place = array<i64: 0>
// BUF-NOT: memref.copy
// BUF: return
func.func @sgd(%x: tensor<64xf32>, %w: tensor<64xf32> {bufferization.writable = false, kiln.state = "parameter"})
    -> (tensor<64xf32>, tensor<64xf32> {kiln.state = "parameter"}) {
  %e0 = tensor.empty() : tensor<64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %w : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %lr = arith.constant 0.5 : f32
  %e1 = tensor.empty() : tensor<64xf32>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %g : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%old: f32, %grad: f32, %o: f32):
    %s = arith.mulf %grad, %lr : f32
    %d = arith.subf %old, %s : f32
    linalg.yield %d : f32
  } -> tensor<64xf32>
  return %g, %n : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The old parameter is read again after the update (here by the returned
// product): updated in place, that read would see the new value, so the
// update keeps its own destination, and the state its copy.
// CHECK-LABEL: func.func @read_after
// CHECK-SAME: bufferization.writable = false
// CHECK: ins(%arg1, %arg0 : tensor<64xf32>, tensor<64xf32>) outs(%{{.*}} : tensor<64xf32>)
// CHECK: ins(%arg1, %arg0 : tensor<64xf32>, tensor<64xf32>) outs(%{{.*}} : tensor<64xf32>)
// BUF-LABEL: func.func @read_after
// BUF-NOT: kiln.state_in_place
// BUF: return
func.func @read_after(%x: tensor<64xf32>, %w: tensor<64xf32> {bufferization.writable = false, kiln.state = "parameter"})
    -> (tensor<64xf32>, tensor<64xf32> {kiln.state = "parameter"}) {
  %e1 = tensor.empty() : tensor<64xf32>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %x : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%old: f32, %grad: f32, %o: f32):
    %d = arith.subf %old, %grad : f32
    linalg.yield %d : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %x : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %g, %n : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// An update that reads the old value at other indices than it writes
// (transposed) would read elements it already overwrote: left alone.
// CHECK-LABEL: func.func @transposed
// CHECK: ins(%arg0, %arg1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<8x8xf32>)
// BUF-LABEL: func.func @transposed
// BUF-NOT: kiln.state_in_place
func.func @transposed(%w: tensor<8x8xf32> {bufferization.writable = false, kiln.state = "parameter"}, %x: tensor<8x8xf32>)
    -> (tensor<8x8xf32> {kiln.state = "parameter"}) {
  %e = tensor.empty() : tensor<8x8xf32>
  %n = linalg.generic {indexing_maps = [#t, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %x : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%old: f32, %grad: f32, %o: f32):
    %d = arith.subf %old, %grad : f32
    linalg.yield %d : f32
  } -> tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}

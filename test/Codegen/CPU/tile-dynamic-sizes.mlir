// RUN: kiln-opt %s --split-input-file --verify-each=1 --pass-pipeline='builtin.module(func.func(kiln-tile-dynamic-sizes{tile-m=4 tile-n=8 cache-m=16}))' | FileCheck %s

// A contraction's run-time rows: a loop of cache tiles (16 rows), a loop of
// register tiles (4 rows) over what is left, and one static case per count
// of the last 1 to 3 rows, each inserting its rows into the whole output.
// CHECK-LABEL: func.func @rows
// CHECK: %[[M:.*]] = tensor.dim %arg0, %c0
// CHECK: scf.for {{.*}} step %c16
// CHECK: linalg.matmul ins({{.*}} : tensor<16x64xf32>, tensor<64x32xf32>) outs({{.*}} : tensor<16x32xf32>)
// CHECK: scf.for {{.*}} step %c4
// CHECK: linalg.matmul ins({{.*}} : tensor<4x64xf32>, tensor<64x32xf32>) outs({{.*}} : tensor<4x32xf32>)
// CHECK: %[[R:.*]] = scf.index_switch
// CHECK: case 1 {
// CHECK: linalg.matmul ins({{.*}} : tensor<1x64xf32>, tensor<64x32xf32>)
// CHECK: tensor.insert_slice {{.*}} : tensor<1x32xf32> into tensor<?x32xf32>
// CHECK: case 3 {
// CHECK: linalg.matmul ins({{.*}} : tensor<3x64xf32>, tensor<64x32xf32>)
// CHECK: default {
// CHECK-NOT: linalg.matmul
// CHECK: return %[[R]]
func.func @rows(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>, %c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x32xf32>) outs(%c : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

// A run-time reduction (attention's probabilities times values): tiles of
// tile-n, then single steps, in order, each accumulating into the whole
// output; the rows are split first.
// CHECK-LABEL: func.func @reduction
// CHECK: linalg.matmul ins({{.*}} : tensor<4x8xf32>, tensor<8x32xf32>) outs({{.*}} : tensor<4x32xf32>)
// CHECK: linalg.matmul ins({{.*}} : tensor<4x1xf32>, tensor<1x32xf32>) outs({{.*}} : tensor<4x32xf32>)
// CHECK-NOT: tensor<4x?xf32>
func.func @reduction(%a: tensor<4x?xf32>, %b: tensor<?x32xf32>, %c: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x?xf32>, tensor<?x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}

// -----

// An elementwise op: outer run-time loops by one, the innermost in tiles of
// tile-n then single steps; every piece is static.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.for {{.*}} step %c1
// CHECK: scf.for {{.*}} step %c8
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<1x8xf32>)
// CHECK: scf.for {{.*}} step %c1
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<1x1xf32>)
#id = affine_map<(i, j) -> (i, j)>
func.func @elementwise(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x?xf32>) outs(%y : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// A body that reads its loop indices is tiled by one (the tiles' indices
// are offset), not split into pieces, and its run-time reduction stays.
// CHECK-LABEL: func.func @indices
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<1x?xf32>)
// CHECK-NOT: scf.index_switch
#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i)>
func.func @indices(%x: tensor<?x?xf32>, %y: tensor<?xi64>) -> tensor<?xi64> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%y : tensor<?xi64>) {
  ^bb0(%a: f32, %o: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %m = arith.maxsi %o, %ji : i64
    linalg.yield %m : i64
  } -> tensor<?xi64>
  return %r : tensor<?xi64>
}

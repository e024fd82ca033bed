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

// -----

// A convolution over a large image (3x3 over 10x10 from 1 to 8 channels,
// 100 positions) in kiln-lower-to-linalg's form ([N, G, Cg, H, W] input,
// [G, Mg, Cg, KH, KW] filter, [N, G, Mg, OH, OW] output) with its bias and
// relu, over a run-time batch: the chain (pad, reshapes, fill,
// convolution, bias, relu) runs once per image in one loop, on static
// shapes, so the convolution schedule sees what a batch-1 compile gives it.
// CHECK-LABEL: func.func @per_image
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x8x10x10xf32>
// CHECK: %[[R:.*]] = scf.for %[[I:.*]] = %c0 to %[[N]] step %c1 iter_args(%[[ACC:.*]] = %[[E]])
// CHECK: tensor.extract_slice %arg0[%[[I]], 0, 0, 0] [1, 1, 10, 10] [1, 1, 1, 1] : tensor<?x1x10x10xf32> to tensor<1x1x10x10xf32>
// CHECK: tensor.pad
// CHECK: } : tensor<1x1x10x10xf32> to tensor<1x1x12x12xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<1x1x1x12x12xf32>
// CHECK: linalg.fill {{.*}} -> tensor<1x1x8x10x10xf32>
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<1x1x1x12x12xf32>, tensor<1x8x1x3x3xf32>) outs({{.*}} : tensor<1x1x8x10x10xf32>)
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x8x10x10xf32>
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: tensor.insert_slice {{.*}} into %[[ACC]][%[[I]], 0, 0, 0] [1, 8, 10, 10] [1, 1, 1, 1] : tensor<1x8x10x10xf32> into tensor<?x8x10x10xf32>
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
#in = affine_map<(n, g, m, oh, ow, c, kh, kw) -> (n, g, c, oh + kh, ow + kw)>
#w = affine_map<(n, g, m, oh, ow, c, kh, kw) -> (g, m, c, kh, kw)>
#out = affine_map<(n, g, m, oh, ow, c, kh, kw) -> (n, g, m, oh, ow)>
#id = affine_map<(n, m, h, w) -> (n, m, h, w)>
#bias = affine_map<(n, m, h, w) -> (m)>
func.func @per_image(%x: tensor<?x1x10x10xf32>, %w: tensor<1x8x1x3x3xf32>, %b: tensor<8xf32>) -> tensor<?x8x10x10xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x1x10x10xf32>
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<?x1x10x10xf32> to tensor<?x1x12x12xf32>
  %pn = tensor.dim %padded, %c0 : tensor<?x1x12x12xf32>
  %grouped = tensor.expand_shape %padded [[0], [1, 2], [3], [4]] output_shape [%pn, 1, 1, 12, 12] : tensor<?x1x12x12xf32> into tensor<?x1x1x12x12xf32>
  %e = tensor.empty(%n) : tensor<?x1x8x10x10xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x1x8x10x10xf32>) -> tensor<?x1x8x10x10xf32>
  %conv = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%grouped, %w : tensor<?x1x1x12x12xf32>, tensor<1x8x1x3x3xf32>) outs(%init : tensor<?x1x8x10x10xf32>) {
  ^bb0(%a: f32, %f: f32, %acc: f32):
    %p = arith.mulf %a, %f : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x1x8x10x10xf32>
  %flat = tensor.collapse_shape %conv [[0], [1, 2], [3], [4]] : tensor<?x1x8x10x10xf32> into tensor<?x8x10x10xf32>
  %e2 = tensor.empty(%n) : tensor<?x8x10x10xf32>
  %biased = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%flat, %b : tensor<?x8x10x10xf32>, tensor<8xf32>) outs(%e2 : tensor<?x8x10x10xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x8x10x10xf32>
  %e3 = tensor.empty(%n) : tensor<?x8x10x10xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%biased : tensor<?x8x10x10xf32>) outs(%e3 : tensor<?x8x10x10xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x8x10x10xf32>
  return %relu : tensor<?x8x10x10xf32>
}

// -----

// An elementwise chain without a convolution over a large image keeps the
// op-by-op tiles: each op its own loop over the batch.
// CHECK-LABEL: func.func @no_window
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: arith.maximumf
#id2 = affine_map<(n, c) -> (n, c)>
func.func @no_window(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %s = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x64xf32>, tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  %e2 = tensor.empty(%n) : tensor<?x64xf32>
  %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<?x64xf32>) outs(%e2 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  return %m : tensor<?x64xf32>
}

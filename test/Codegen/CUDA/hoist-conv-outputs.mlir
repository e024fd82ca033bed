// RUN: kiln-opt %s --split-input-file --kiln-hoist-conv-outputs | FileCheck %s

// A padded convolution as bufferization leaves it: the zero fill of the
// padded buffer, the copy of the input into it, then the output's buffer,
// its fill, the convolution and the bias + relu epilogue into a buffer of
// its own. Both output buffers move above the copy, so the arena plan
// keeps them apart from the copy's source, which cuDNN reads instead.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @padded
// CHECK: %[[PAD:.*]] = memref.alloc() {{.*}} : memref<1x2x6x6xf32>
// CHECK: linalg.fill {{.*}} outs(%[[PAD]]
// CHECK: %[[Y:.*]] = memref.alloc() {{.*}} : memref<1x3x4x4xf32>
// CHECK-NEXT: %[[E:.*]] = memref.alloc() {{.*}} : memref<1x3x4x4xf32>
// CHECK-NEXT: memref.copy
// CHECK: linalg.fill {{.*}} outs(%[[Y]]
// CHECK: linalg.generic {{.*}} outs(%[[Y]]
// CHECK: linalg.generic {{.*}} outs(%[[E]]
func.func @padded(%in: memref<1x2x4x4xf32>, %w: memref<3x2x3x3xf32>, %out: memref<1x3x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %pad = memref.alloc() {alignment = 64 : i64} : memref<1x2x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%pad : memref<1x2x6x6xf32>)
  %inner = memref.subview %pad[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x6x6xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  memref.copy %in, %inner : memref<1x2x4x4xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x3x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x3x4x4xf32>)
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%pad, %w : memref<1x2x6x6xf32>, memref<3x2x3x3xf32>) outs(%y : memref<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  %e = memref.alloc() {alignment = 64 : i64} : memref<1x3x4x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : memref<1x3x4x4xf32>) outs(%e : memref<1x3x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %e, %out : memref<1x3x4x4xf32> to memref<1x3x4x4xf32>
  return
}

// -----

// A copy into a subview whose next reader is elementwise (a Concat, not a
// convolution): nothing moves.
#id2 = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @concat
// CHECK: memref.copy
// CHECK-NEXT: %[[E:.*]] = memref.alloc()
// CHECK-NEXT: linalg.generic
func.func @concat(%a: memref<4xf32>, %out: memref<8xf32>) {
  %buf = memref.alloc() : memref<8xf32>
  %head = memref.subview %buf[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  memref.copy %a, %head : memref<4xf32> to memref<4xf32, strided<[1]>>
  %e = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]} ins(%buf : memref<8xf32>) outs(%e : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  memref.copy %e, %out : memref<8xf32> to memref<8xf32>
  return
}

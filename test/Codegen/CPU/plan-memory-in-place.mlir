// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-plan-memory))' | FileCheck %s
// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-plan-memory{in-place=false}))' | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0) -> (d0)>

// An elementwise op whose input dies there writes its output over it: both
// views at one offset, one 64-byte block, and the plan says so.
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: kiln.arena_bytes = 64 : i64, kiln.arena_lower_bound_bytes = 64 : i64, kiln.arena_no_reuse_bytes = 128 : i64
// CHECK-SAME: {first = 1 : i64, in_place_of = 0 : i64
// CHECK: %[[O0:.*]] = arith.constant 0 : index
// CHECK: memref.view %{{.*}}[%[[O0]]][]
// CHECK: %[[O1:.*]] = arith.constant 0 : index
// CHECK: memref.view %{{.*}}[%[[O1]]][]
// Without in-place reuse both are live at the exp: 128 bytes.
// OFF-LABEL: func.func @in_place
// OFF-SAME: kiln.arena_bytes = 128 : i64
// OFF-NOT: in_place_of
func.func @in_place(%out: memref<16xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.copy ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// The input is read again after the op (z = x + exp(x)): overwriting it
// would change z, so the two buffers stay apart.
// CHECK-LABEL: func.func @input_read_later
// CHECK-SAME: kiln.arena_bytes = 128 : i64
// CHECK-NOT: in_place_of
// CHECK: return
func.func @input_read_later(%out: memref<16xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : memref<16xf32>, memref<16xf32>) outs(%out : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// A graph input is never overwritten and the caller's output buffer is
// never arena storage: the one intermediate reads an argument and is read
// into the output, and nothing is in place.
// CHECK-LABEL: func.func @arguments_never_taken
// CHECK-SAME: kiln.arena_bytes = 64 : i64
// CHECK-NOT: in_place_of
// CHECK: return
func.func @arguments_never_taken(%x: memref<16xf32>, %out: memref<16xf32>) {
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%out : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A transposing read, and an op whose payload reads the output's old value,
// are not elementwise in place: an output element would overwrite an input
// element another iteration still needs, or read garbage.
// CHECK-LABEL: func.func @not_elementwise
// CHECK-NOT: in_place_of
// CHECK: return
func.func @not_elementwise(%out: memref<4x4xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4x4xf32>)
  %b = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x4xf32>) outs(%b : memref<4x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %c = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  linalg.copy ins(%c : memref<4x4xf32>) outs(%out : memref<4x4xf32>)
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// In-place groups chain: exp over the fill, then neg over the exp, all in
// one block.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: kiln.arena_bytes = 64 : i64
// CHECK-SAME: in_place_of = 0
// CHECK-SAME: in_place_of = 1
func.func @chain(%out: memref<16xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  %c = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%c : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = arith.negf %in : f32
    linalg.yield %e : f32
  }
  linalg.copy ins(%c : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

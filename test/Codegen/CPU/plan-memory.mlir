// RUN: kiln-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(kiln-plan-memory{alignment=64}))' | FileCheck %s
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(kiln-plan-memory{alignment=16}))' | FileCheck %s --check-prefix=ALIGN16

// Two buffers live together get their own aligned ranges: the larger (32
// bytes) at 0, the 16-byte one at 64, so the arena is alignTo(80, 64) = 128
// bytes; both are live from the second alloc to the first dealloc, so the
// lower bound is the two rounded up to the alignment, 64 + 64: the arena
// meets it. Deallocations are dropped.
// CHECK-LABEL: func.func @two_buffers
// CHECK-SAME: (%{{.*}}: memref<4xf32>, %{{.*}}: memref<8xf32>, %[[ARENA:arg[0-9]+]]: memref<128xi8> {kiln.arena})
// CHECK-SAME: attributes {kiln.arena_alignment = 64 : i64, kiln.arena_bytes = 128 : i64, kiln.arena_lower_bound_bytes = 128 : i64, kiln.arena_no_reuse_bytes = 128 : i64
// CHECK: %[[O0:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[O0]]][] : memref<128xi8> to memref<4xf32>
// CHECK: %[[O1:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[O1]]][] : memref<128xi8> to memref<8xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK: return
// With 16-byte alignment the smaller buffer starts at 32: the arena is 48
// bytes, the lower bound itself.
// ALIGN16-LABEL: func.func @two_buffers
// ALIGN16-SAME: %[[ARENA:arg[0-9]+]]: memref<48xi8> {kiln.arena}
// ALIGN16-SAME: attributes {kiln.arena_alignment = 16 : i64, kiln.arena_bytes = 48 : i64, kiln.arena_lower_bound_bytes = 48 : i64, kiln.arena_no_reuse_bytes = 48 : i64
// ALIGN16: %[[O1:.*]] = arith.constant 32 : index
// ALIGN16: memref.view %[[ARENA]][%[[O1]]][] : memref<48xi8> to memref<4xf32>
func.func @two_buffers(%in: memref<4xf32>, %out: memref<8xf32>) {
  %cst = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  memref.copy %in, %a : memref<4xf32> to memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<8xf32>)
  memref.copy %b, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// Buffers with disjoint lifetimes share storage: both at offset 0, the
// arena is the larger one, 64 bytes, against 128 without reuse (each
// buffer rounded up to the 64-byte alignment).
// CHECK-LABEL: func.func @disjoint_lifetimes
// CHECK-SAME: %[[ARENA:arg[0-9]+]]: memref<64xi8> {kiln.arena}
// CHECK-SAME: kiln.arena_bytes = 64 : i64, kiln.arena_lower_bound_bytes = 64 : i64, kiln.arena_no_reuse_bytes = 128 : i64
// CHECK: %[[O0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[O0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: %[[O1:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[O1]]][] : memref<64xi8> to memref<8xf32>
// CHECK-NOT: memref.dealloc
// ALIGN16-LABEL: func.func @disjoint_lifetimes
// ALIGN16-SAME: kiln.arena_bytes = 64 : i64, kiln.arena_lower_bound_bytes = 64 : i64
func.func @disjoint_lifetimes(%in: memref<16xf32>, %out: memref<8xf32>) {
  %cst = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  memref.dealloc %a : memref<16xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<8xf32>)
  memref.copy %b, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// A buffer stays live until the last use of a view of it: %c (24 bytes) is
// read through %e after %d (48 bytes) is written, so the peak is 24 + 48,
// 128 rounded to the alignment (80 at 16), and the two never share; %f
// comes after both and reuses offset 0.
// CHECK-LABEL: func.func @lifetime_follows_views
// CHECK-SAME: %[[ARENA:arg[0-9]+]]: memref<128xi8> {kiln.arena}
// CHECK-SAME: kiln.arena_bytes = 128 : i64, kiln.arena_lower_bound_bytes = 128 : i64
// CHECK: %[[O0:.*]] = arith.constant 64 : index
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[O0]]][] : memref<128xi8> to memref<6xf32>
// CHECK: memref.expand_shape %[[C]]
// CHECK: %[[O1:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[O1]]][] : memref<128xi8> to memref<2x3xf64>
// CHECK: %[[O2:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[O2]]][] : memref<128xi8> to memref<4xf32>
// With 16-byte alignment: %c at 48 right after %d, arena 80.
// ALIGN16-LABEL: func.func @lifetime_follows_views
// ALIGN16-SAME: kiln.arena_bytes = 80 : i64, kiln.arena_lower_bound_bytes = 80 : i64
// ALIGN16: arith.constant 48 : index
func.func @lifetime_follows_views(%out: memref<2x3xf32>, %out2: memref<4xf32>) {
  %cst = arith.constant 1.0 : f32
  %cst64 = arith.constant 2.0 : f64
  %c = memref.alloc() : memref<6xf32>
  linalg.fill ins(%cst : f32) outs(%c : memref<6xf32>)
  %e = memref.expand_shape %c [[0, 1]] output_shape [2, 3] : memref<6xf32> into memref<2x3xf32>
  %d = memref.alloc() : memref<2x3xf64>
  linalg.fill ins(%cst64 : f64) outs(%d : memref<2x3xf64>)
  memref.copy %e, %out : memref<2x3xf32> to memref<2x3xf32>
  %f = memref.alloc() : memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%f : memref<4xf32>)
  memref.copy %f, %out2 : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A chain of views (collapse, then expand) is followed to its end: %a (64
// bytes) is last read through %v2 while %b (16 bytes) is live, peak 64 + 64.
// CHECK-LABEL: func.func @lifetime_follows_view_chains
// CHECK-SAME: kiln.arena_bytes = 128 : i64, kiln.arena_lower_bound_bytes = 128 : i64
func.func @lifetime_follows_view_chains(%out: memref<4x4xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<2x8xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<2x8xf32>)
  %v1 = memref.collapse_shape %a [[0, 1]] : memref<2x8xf32> into memref<16xf32>
  %v2 = memref.expand_shape %v1 [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<4xf32>)
  memref.copy %v2, %out : memref<4x4xf32> to memref<4x4xf32>
  return
}

// -----

// A use inside a loop counts at the loop: %a (64 bytes) is read in the loop
// after %b (16 bytes) is allocated, so the peak is 64 + 64 (80 at 16).
// CHECK-LABEL: func.func @nested_use_counts_at_ancestor
// CHECK-SAME: kiln.arena_bytes = 128 : i64, kiln.arena_lower_bound_bytes = 128 : i64
// ALIGN16-LABEL: func.func @nested_use_counts_at_ancestor
// ALIGN16-SAME: kiln.arena_bytes = 80 : i64, kiln.arena_lower_bound_bytes = 80 : i64
func.func @nested_use_counts_at_ancestor(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<4xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %a[%i] : memref<16xf32>
    memref.store %v, %b[%i] : memref<4xf32>
  }
  memref.copy %b, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// Element sizes: i1 takes a byte, bf16 two, f16 two, i64 eight; a rank-0 and
// a zero-size buffer are placed too (25 bytes, 256 rounded to the alignment,
// without reuse). Nothing is used, so each is live only at its own alloc:
// all share offset 0, the lower bound is one aligned block, and so is the
// arena.
// CHECK-LABEL: func.func @element_sizes
// CHECK-SAME: %[[ARENA:arg[0-9]+]]: memref<64xi8> {kiln.arena}
// CHECK-SAME: kiln.arena_bytes = 64 : i64, kiln.arena_lower_bound_bytes = 64 : i64, kiln.arena_no_reuse_bytes = 256 : i64
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<64xi8> to memref<3xi1>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<64xi8> to memref<i64>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<64xi8> to memref<3xbf16>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<64xi8> to memref<0xf32>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<64xi8> to memref<2x2xf16>
func.func @element_sizes() {
  %a = memref.alloc() : memref<3xi1>
  %b = memref.alloc() : memref<i64>
  %c = memref.alloc() : memref<3xbf16>
  %d = memref.alloc() : memref<0xf32>
  %e = memref.alloc() : memref<2x2xf16>
  return
}

// -----

// A function that allocates nothing still gets an (empty) arena argument.
// CHECK-LABEL: func.func @no_alloc
// CHECK-SAME: (%{{.*}}: memref<4xf32>, %{{.*}}: memref<0xi8> {kiln.arena})
// CHECK-SAME: kiln.arena_bytes = 0 : i64, kiln.arena_lower_bound_bytes = 0 : i64
// ALIGN16-LABEL: func.func @no_alloc
// ALIGN16-SAME: memref<0xi8> {kiln.arena}
func.func @no_alloc(%x: memref<4xf32>) {
  return
}

// -----

// A declaration has no body to plan and keeps its signature.
// CHECK-LABEL: func.func private @external(memref<4xf32>)
// CHECK-NOT: kiln.arena
func.func private @external(%x: memref<4xf32>)

// -----

// A dynamic size that is not computed from a symbol's argument has no
// bound to plan at.
func.func @dynamic_alloc(%n: index) {
  // expected-error @+1 {{'memref.alloc' op expects each dynamic size to be computed from the symbols' arguments, whose ranges bound it}}
  %a = memref.alloc(%n) : memref<?xf32>
  return
}

// -----

// Sizes computed from symbols (decision 0027) take slots at their upper
// bounds: batch <= 8, so 2 * batch + 1 floats of the first buffer need 68
// bytes (128 aligned), ceil(batch / 3) * 4 of the second 48; the views keep
// the run-time sizes. kiln.arena_terms: where each buffer ends at a run's
// sizes (the second starts at 128), and "0" for the static buffers' end;
// at batch = 8 the largest, 16 * 3 + 128, is the arena.
// CHECK-LABEL: func.func @symbolic_sizes
// CHECK-SAME: %[[ARENA:[a-z0-9]+]]: memref<192xi8> {kiln.arena}
// CHECK-SAME: kiln.arena_bytes = 192
// CHECK-SAME: kiln.arena_terms = ["0", "16*ceil(batch / 3) + 128", "8*batch + 4"]
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[N:[a-z0-9]+]]] : memref<192xi8> to memref<?xf32>
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[M:[a-z0-9]+]]] : memref<192xi8> to memref<?x4xf32>
func.func @symbolic_sizes(%batch: index {kiln.symbol = "batch"}, %out: memref<4xf32>) attributes {kiln.symbols = {batch = array<i64: 1, 8>}} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %twice = arith.muli %batch, %c2 : index
  %n = arith.addi %twice, %c1 : index
  %m = arith.ceildivsi %batch, %c3 : index
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%m) : memref<?x4xf32>
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%a : memref<?xf32>)
  linalg.fill ins(%cst : f32) outs(%b : memref<?x4xf32>)
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?x4xf32>
  return
}

// -----

// A non-identity layout cannot be a view of the arena.
func.func @non_identity_layout() {
  // expected-error @+1 {{'memref.alloc' op expects an identity layout in the default memory space, got 'memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>'}}
  %a = memref.alloc() : memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>
  return
}

// -----

// An index buffer has no size in bytes before the target is chosen.
func.func @index_elements() {
  // expected-error @+1 {{'memref.alloc' op expects integer or float elements, got 'memref<4xindex>'}}
  %a = memref.alloc() : memref<4xindex>
  return
}

// -----

// Op positions are only defined for a single block.
// expected-error @+1 {{'func.func' op expects a single-block body for arena allocation}}
func.func @multi_block() {
  cf.br ^bb1
^bb1:
  return
}

// -----

// Another memory space cannot be a view of the arena.
func.func @memory_space() {
  // expected-error @+1 {{'memref.alloc' op expects an identity layout in the default memory space, got 'memref<4xf32, 1>'}}
  %a = memref.alloc() : memref<4xf32, 1>
  return
}

// -----

// An allocation inside a branch would stay a real allocation.
func.func @nested_alloc(%c: i1) {
  scf.if %c {
    // expected-error @+1 {{'memref.alloc' op expects allocations at the top level of the function for arena placement}}
    %a = memref.alloc() : memref<4xf32>
  }
  return
}

// RUN: kiln-opt %s --split-input-file --kiln-outline-parallel-loops | FileCheck %s

// A marked loop becomes a call of its region with the captured buffers and
// the trip count when there is a dispatcher, and a call of its body over
// all iterations when there is none: the loop's code exists once. The body
// runs iterations [lo, hi) with the constants it uses cloned in. The
// context argument is appended once.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<8x16xf32>, %[[PAR:.*]]: !llvm.ptr)
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[SERIAL:.*]] = llvm.icmp "eq" %[[PAR]], %[[NULL]]
// CHECK: scf.if %[[SERIAL]] {
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[ALL:.*]] = arith.constant 4 : index
// CHECK: call @rows_body0(%[[A]], %[[B]], %[[ZERO]], %[[ALL]])
// CHECK: } else {
// CHECK: %[[N:.*]] = arith.constant 4 : index
// CHECK: call @rows_region0(%[[PAR]], %[[A]], %[[B]], %[[N]])
// CHECK-NOT: scf.for
// CHECK: return
// CHECK-LABEL: func.func private @rows_body0(
// CHECK-SAME: %{{.*}}: memref<8x16xf32>, %{{.*}}: memref<8x16xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK: %[[LOS:.*]] = arith.muli %[[LO]], %[[STEP:.*]] : index
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %[[LOS]]
// CHECK: %[[HIS:.*]] = arith.muli %[[HI]], %[[STEP]]
// CHECK: %[[LAST:.*]] = arith.addi %{{.*}}, %[[HIS]]
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %[[STEP]] {
// CHECK: arith.mulf
// CHECK-NOT: kiln.parallel
// CHECK: func.func private @rows_region0(!llvm.ptr, memref<8x16xf32>, memref<8x16xf32>, index)
func.func @rows(%a: memref<8x16xf32>, %b: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c8 step %c2 {
    %v = memref.load %a[%i, %c0] : memref<8x16xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %b[%i, %c0] : memref<8x16xf32>
  } {kiln.parallel}
  return
}

// -----

// Two marked loops get two regions and share one context argument; an
// unmarked loop is called in place, and a nested mark is dropped.
// CHECK-LABEL: func.func @two(
// CHECK-SAME: %{{.*}}: memref<64xf32>, %[[PAR:.*]]: !llvm.ptr)
// CHECK: call @two_region0(%[[PAR]]
// CHECK: }
// CHECK-NOT: scf.for
// CHECK: call @two_loop0(
// CHECK: call @two_body1(
// CHECK: call @two_region1(%[[PAR]]
// CHECK-NOT: kiln.parallel
// CHECK-DAG: func.func private @two_body0(
// CHECK-DAG: func.func private @two_body1(
func.func @two(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c1 step %c1 {
      memref.store %one, %a[%i] : memref<64xf32>
    } {kiln.parallel}
  } {kiln.parallel}
  return
}

// -----

// Stays serial: one iteration, a loop with results, or a capture that is
// not a static memref (a value computed in the function). Each runs whole
// in a function of its own, which returns the loop's results and takes its
// scalars. No context argument is added when nothing runs in parallel.
// CHECK-LABEL: func.func @serial(
// CHECK-SAME: %[[A:.*]]: memref<64xf32>, %[[X:.*]]: f32)
// CHECK: call @serial_loop0(%[[A]]) : (memref<64xf32>) -> ()
// CHECK-NEXT: %{{.*}} = call @serial_loop1(%[[A]]) : (memref<64xf32>) -> f32
// CHECK-NEXT: call @serial_loop2(%[[X]], %[[A]]) : (f32, memref<64xf32>) -> ()
// CHECK-NEXT: return
// CHECK-NOT: kiln.parallel
// CHECK-NOT: _region
// CHECK: func.func private @serial_loop1(%{{.*}}: memref<64xf32> {llvm.noalias}) -> f32
// CHECK: %[[S:.*]] = scf.for {{.*}} -> (f32)
// CHECK: return %[[S]] : f32
func.func @serial(%a: memref<64xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  } {kiln.parallel}
  %s = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %one) -> f32 {
    %v = memref.load %a[%i] : memref<64xf32>
    %t = arith.addf %acc, %v : f32
    scf.yield %t : f32
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %x, %a[%i] : memref<64xf32>
  } {kiln.parallel}
  return
}

// -----

// The body receives an arena view itself, not the arena and an offset, so
// loops that differ only in where their buffers sit share one body and one
// region. Views whose bytes no other capture touches are noalias, as a
// constant global is; views that overlap are not.
// CHECK-LABEL: func.func @arena_views(
// CHECK-SAME: %[[ARENA:.*]]: memref<4096xi8>, %[[PAR:.*]]: !llvm.ptr)
// CHECK-DAG: %[[V0:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<4096xi8> to memref<64xf32>
// CHECK-DAG: %[[V1:.*]] = memref.view %[[ARENA]][%c256{{.*}}][] : memref<4096xi8> to memref<64xf32>
// CHECK-DAG: %[[V2:.*]] = memref.view %[[ARENA]][%c1024{{.*}}][] : memref<4096xi8> to memref<64xf32>
// CHECK-DAG: %[[V3:.*]] = memref.view %[[ARENA]][%c1280{{.*}}][] : memref<4096xi8> to memref<64xf32>
// CHECK: call @arena_views_body0(%[[V0]], %[[V1]],
// CHECK: call @arena_views_region0(%[[PAR]], %[[V0]], %[[V1]],
// CHECK: call @arena_views_body0(%[[V2]], %[[V3]],
// CHECK: call @arena_views_region0(%[[PAR]], %[[V2]], %[[V3]],
// CHECK: call @arena_views_body1(
// CHECK: call @arena_views_region1(
// CHECK-LABEL: func.func private @arena_views_body0(
// CHECK-SAME: %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: index, %{{.*}}: index)
// CHECK-NOT: memref.view
// CHECK: return
// CHECK: func.func private @arena_views_region0(!llvm.ptr, memref<64xf32>, memref<64xf32>, index)
// CHECK-LABEL: func.func private @arena_views_body1(
// CHECK-SAME: %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: memref<64xf32>, %{{.*}}: index, %{{.*}}: index)
// CHECK-NOT: @arena_views_body2
memref.global "private" constant @weights : memref<64xf32> = dense<2.0>
func.func @arena_views(%arena: memref<4096xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %c1280 = arith.constant 1280 : index
  %v0 = memref.view %arena[%c0][] : memref<4096xi8> to memref<64xf32>
  %v1 = memref.view %arena[%c256][] : memref<4096xi8> to memref<64xf32>
  %v2 = memref.view %arena[%c1024][] : memref<4096xi8> to memref<64xf32>
  %v3 = memref.view %arena[%c1280][] : memref<4096xi8> to memref<64xf32>
  %overlap = memref.view %arena[%c128][] : memref<4096xi8> to memref<64xf32>
  %w = memref.get_global @weights : memref<64xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %v0[%i] : memref<64xf32>
    memref.store %x, %v1[%i] : memref<64xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %v2[%i] : memref<64xf32>
    memref.store %x, %v3[%i] : memref<64xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %v0[%i] : memref<64xf32>
    %y = memref.load %w[%i] : memref<64xf32>
    %z = arith.mulf %x, %y : f32
    memref.store %z, %overlap[%i] : memref<64xf32>
  } {kiln.parallel}
  return
}

// -----

// Unmarked loops become functions called over all their iterations, one
// per distinct loop: loops that print the same share one. No loop is left
// in place.
// CHECK-LABEL: func.func @repeated(
// CHECK-SAME: %[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>)
// CHECK-NOT: scf.for
// CHECK: call @repeated_loop0(%[[A]],
// CHECK: call @repeated_loop0(%[[B]],
// CHECK-NOT: scf.for
// CHECK: call @repeated_loop1(%[[B]],
// CHECK-NOT: scf.for
// CHECK: return
// CHECK-DAG: func.func private @repeated_loop0(
// CHECK-DAG: func.func private @repeated_loop1(
// CHECK-NOT: func.func private @repeated_loop2
func.func @repeated(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %a[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %b[%i] : memref<64xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %two, %b[%i] : memref<64xf32>
  }
  return
}

// -----

// In a planned entry (kiln.arena_bytes), the caller's buffers are apart by
// the ABI: an input, an output and the arena are noalias to each other.
// A state tensor is two arguments, read from one and written to the other
// in place: the same buffer, so neither is noalias while both are
// captured. Views of the arena still need disjoint bytes.
// CHECK-LABEL: func.func @entry(
// CHECK: call @entry_body0(
// CHECK: call @entry_body1(%{{.*}}, %{{.*}}, %{{.*}}, %c0
// CHECK: call @entry_body1(%{{.*}}, %{{.*}}, %{{.*}}, %c0
// CHECK-LABEL: func.func private @entry_body0(
// CHECK-SAME: %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: index, %{{.*}}: index)
// CHECK-LABEL: func.func private @entry_body1(
// CHECK-SAME: %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: index, %{{.*}}: index)
// The overlapping arena views print the same as the state's loop: one body.
// CHECK-NOT: func.func private @entry_body2(
func.func @entry(%x: memref<64xf32> {kiln.name = "x"},
                 %w: memref<64xf32> {kiln.name = "w", kiln.state = "parameter"},
                 %y: memref<64xf32> {kiln.name = "y"},
                 %wNew: memref<64xf32> {kiln.name = "w", kiln.state = "parameter"},
                 %arena: memref<4096xi8> {kiln.arena})
    attributes {kiln.arena_bytes = 4096 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %v0 = memref.view %arena[%c0][] : memref<4096xi8> to memref<64xf32>
  %overlap = memref.view %arena[%c128][] : memref<4096xi8> to memref<64xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    %a = memref.load %x[%i] : memref<64xf32>
    memref.store %a, %v0[%i] : memref<64xf32>
    memref.store %a, %y[%i] : memref<64xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    %a = memref.load %w[%i] : memref<64xf32>
    memref.store %a, %wNew[%i] : memref<64xf32>
    memref.store %a, %y[%i] : memref<64xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %c64 step %c1 {
    %a = memref.load %v0[%i] : memref<64xf32>
    memref.store %a, %overlap[%i] : memref<64xf32>
    memref.store %a, %y[%i] : memref<64xf32>
  } {kiln.parallel}
  return
}

// -----

// Loops over sizes known only at run time (a size computed from data,
// decision 0031, loaded from the dims argument) run whole in functions of
// their own: the bound is passed, and the view of run-time size is rebuilt
// inside from the arena and its byte offset, which is passed too, so loops
// that differ only in where their buffers sit share one function. The
// count a loop computes is its function's result.
// CHECK-LABEL: func.func @run_time_sizes(
// CHECK-SAME: %[[ARENA:.*]]: memref<4096xi8>, %[[DIMS:.*]]: memref<2xindex>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : index
// CHECK: %[[N:.*]] = memref.load %[[DIMS]]
// CHECK: %[[M:.*]] = memref.load %[[DIMS]]
// CHECK: call @run_time_sizes_loop0(%[[ARENA]], %[[C0]], %[[N]]) : (memref<4096xi8>, index, index) -> ()
// CHECK: call @run_time_sizes_loop0(%[[ARENA]], %[[C1024]], %[[M]]) : (memref<4096xi8>, index, index) -> ()
// CHECK: %[[COUNT:.*]] = call @run_time_sizes_loop1(%[[ARENA]], %[[C1024]], %[[M]]) : (memref<4096xi8>, index, index) -> index
// CHECK: memref.store %[[COUNT]], %[[DIMS]]
// CHECK-NOT: scf.for
// CHECK: func.func private @run_time_sizes_loop0(%[[A:.*]]: memref<4096xi8>, %[[OFF:.*]]: index, %[[SIZE:.*]]: index)
// CHECK: %[[VIEW:.*]] = memref.view %[[A]][%[[OFF]]][%[[SIZE]]] : memref<4096xi8> to memref<?xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SIZE]]
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK-NOT: func.func private @run_time_sizes_loop2
func.func @run_time_sizes(%arena: memref<4096xi8>, %dims: memref<2xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %one = arith.constant 1.0 : f32
  %n = memref.load %dims[%c0] : memref<2xindex>
  %m = memref.load %dims[%c1] : memref<2xindex>
  %a = memref.view %arena[%c0][%n] : memref<4096xi8> to memref<?xf32>
  %b = memref.view %arena[%c1024][%m] : memref<4096xi8> to memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %one, %a[%i] : memref<?xf32>
  } {kiln.parallel}
  scf.for %i = %c0 to %m step %c1 {
    memref.store %one, %b[%i] : memref<?xf32>
  }
  %count = scf.for %i = %c0 to %m step %c1 iter_args(%k = %c0) -> index {
    memref.store %one, %b[%i] : memref<?xf32>
    %next = arith.addi %k, %c1 : index
    scf.yield %next : index
  }
  memref.store %count, %dims[%c0] : memref<2xindex>
  return
}

// -----

// A marked loop of few iterations (3 m cache tiles) around a marked loop
// (8 weight panels), with only views between them, is one loop over the 24
// pairs: the dispatcher splits pairs, not 3 tiles over 2 threads. The view
// moves into the pair's body.
// CHECK-LABEL: func.func @pairs(
// CHECK: call @pairs_region0(%{{.*}}, %{{.*}}, %c24{{.*}})
// CHECK-LABEL: func.func private @pairs_body0(
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: affine.delinearize_index %{{.*}} into (3, 8)
// CHECK: memref.subview %{{.*}}[%{{.*}}, 0] [64, 256]
// CHECK: memref.subview %{{.*}}[0, %{{.*}}] [64, 32]
// CHECK-NOT: scf.for
// CHECK: memref.store
// A loop of 16 or more iterations keeps them; its inner mark is dropped.
// CHECK-LABEL: func.func @many(
// CHECK: call @many_region0(%{{.*}}, %{{.*}}, %c16{{.*}})
// CHECK-LABEL: func.func private @many_body0(
// CHECK-NOT: affine.delinearize_index
// CHECK: scf.for
// CHECK: scf.for
// A store between the loops keeps them apart.
// CHECK-LABEL: func.func @stored(
// CHECK: call @stored_region0(%{{.*}}, %{{.*}}, %c3{{.*}})
func.func @pairs(%out: memref<192x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c192 = arith.constant 192 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c192 step %c64 {
    %rows = memref.subview %out[%i, 0] [64, 256] [1, 1] : memref<192x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
    scf.for %j = %c0 to %c8 step %c1 {
      %col = arith.muli %j, %c64 : index
      %tile = memref.subview %rows[0, %col] [64, 32] [1, 1] : memref<64x256xf32, strided<[256, 1], offset: ?>> to memref<64x32xf32, strided<[256, 1], offset: ?>>
      memref.store %one, %tile[%c0, %c0] : memref<64x32xf32, strided<[256, 1], offset: ?>>
    } {kiln.parallel}
  } {kiln.parallel}
  return
}
func.func @many(%out: memref<16x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %one, %out[%i, %j] : memref<16x256xf32>
    } {kiln.parallel}
  } {kiln.parallel}
  return
}
func.func @stored(%out: memref<3x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c3 step %c1 {
    memref.store %one, %out[%i, %c0] : memref<3x256xf32>
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %one, %out[%i, %j] : memref<3x256xf32>
    } {kiln.parallel}
  } {kiln.parallel}
  return
}

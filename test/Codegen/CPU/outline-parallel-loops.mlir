// RUN: kiln-opt %s --split-input-file --kiln-outline-parallel-loops | FileCheck %s

// A marked loop becomes a call of its region with the captured buffers and
// the trip count when there is a dispatcher, and stays in place when there
// is none; the body runs iterations [lo, hi) with the constants it uses
// cloned in. The context argument is appended once.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<8x16xf32>, %[[PAR:.*]]: !llvm.ptr)
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[SERIAL:.*]] = llvm.icmp "eq" %[[PAR]], %[[NULL]]
// CHECK: scf.if %[[SERIAL]] {
// CHECK-NEXT: scf.for
// CHECK: } else {
// CHECK: %[[N:.*]] = arith.constant 4 : index
// CHECK: call @rows_region0(%[[PAR]], %[[A]], %[[B]], %[[N]])
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
// unmarked loop stays, and a nested mark is dropped.
// CHECK-LABEL: func.func @two(
// CHECK-SAME: %{{.*}}: memref<64xf32>, %[[PAR:.*]]: !llvm.ptr)
// CHECK: call @two_region0(%[[PAR]]
// CHECK: }
// CHECK-NEXT: scf.for
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
// not a static memref (a value computed in the function). No context
// argument is added when nothing is outlined.
// CHECK-LABEL: func.func @serial(
// CHECK-SAME: %{{.*}}: memref<64xf32>, %{{.*}}: f32)
// CHECK-NOT: call
// CHECK-COUNT-3: scf.for
// CHECK-NOT: kiln.parallel
// CHECK-NOT: func.func private
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

// A view of the arena is rebuilt in the body from the arena itself, so the
// body sees the same constant offsets as the function.
// CHECK-LABEL: func.func @arena_view(
// CHECK-SAME: %[[ARENA:.*]]: memref<4096xi8>, %[[PAR:.*]]: !llvm.ptr)
// CHECK: call @arena_view_region0(%[[PAR]], %[[ARENA]], %{{.*}}) : (!llvm.ptr, memref<4096xi8>, index) -> ()
// CHECK-LABEL: func.func private @arena_view_body0(
// CHECK-SAME: %[[A:.*]]: memref<4096xi8>, %{{.*}}: index, %{{.*}}: index)
// CHECK-DAG: %[[OFF:.*]] = arith.constant 1024 : index
// CHECK: memref.view %[[A]][%[[OFF]]][] : memref<4096xi8> to memref<64xf32>
func.func @arena_view(%arena: memref<4096xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %one = arith.constant 1.0 : f32
  %v = memref.view %arena[%c1024][] : memref<4096xi8> to memref<64xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %one, %v[%i] : memref<64xf32>
  } {kiln.parallel}
  return
}

// RUN: kiln-opt %s --allow-unregistered-dialect --split-input-file --pass-pipeline='builtin.module(func.func(kiln-plan-memory{alignment=16}))' | FileCheck %s

// An allocation asking for more alignment than the option gets it: the
// 128-aligned buffer goes at 0 and the arena's base alignment becomes 128,
// the largest any buffer needs; the byte buffer follows at 16.
// CHECK-LABEL: func.func @alloc_alignment
// CHECK-SAME: memref<32xi8>
// CHECK-SAME: kiln.arena_alignment = 128 : i64
// CHECK: memref.view %{{.*}}[%c16{{.*}}][] : memref<32xi8> to memref<3xi8>
// CHECK: memref.view %{{.*}}[%c0{{.*}}][] : memref<32xi8> to memref<4xf32>
func.func @alloc_alignment(%out: memref<4xf32>) {
  %a = memref.alloc() : memref<3xi8>
  %b = memref.alloc() {alignment = 128 : i64} : memref<4xf32>
  "test.use"(%a, %b) : (memref<3xi8>, memref<4xf32>) -> ()
  return
}

// -----

// A dealloc of a view of the buffer goes too: the arena is never freed.
// CHECK-LABEL: func.func @dealloc_through_view
// CHECK-NOT: memref.dealloc
func.func @dealloc_through_view() {
  %a = memref.alloc() : memref<2x2xf32>
  %c = memref.collapse_shape %a [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  memref.dealloc %c : memref<4xf32>
  return
}

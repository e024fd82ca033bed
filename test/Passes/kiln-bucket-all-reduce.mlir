// RUN: kiln-opt %s --kiln-bucket-all-reduce="bucket-bytes=64" | FileCheck %s --check-prefix=BUCKET
// RUN: kiln-opt %s --kiln-bucket-all-reduce="bucket-bytes=1000000" | FileCheck %s --check-prefix=ONE

// A training step as kiln-apply-optimizer and the schedule leave it: the
// all-reduces at the end, the updates reading them. Each all-reduce moves
// up to just after its gradient (one of an argument, to the top). With
// 64-byte buckets, db2 (16 bytes) and dw2 (64) fill bucket 0; dw1 starts
// bucket 1, which the update of w1 closes (a reader of its result) before
// db1 can join; db1 is bucket 2.
// BUCKET-LABEL: func.func @step
// BUCKET: %[[DW2:.*]] = kiln.matmul %arg0, %arg0 transpose_lhs
// BUCKET-NEXT: %[[B0:.*]]:2 = kiln.all_reduce %arg2, %[[DW2]] {kiln.bucket = 0 : i64} : tensor<4xf32>, tensor<4x4xf32>
// BUCKET-NEXT: %[[DW1:.*]] = kiln.matmul %arg1, %arg1 transpose_lhs
// BUCKET-NEXT: %[[B1:.*]] = kiln.all_reduce %[[DW1]] {kiln.bucket = 1 : i64} : tensor<2x2xf32>
// BUCKET-NEXT: %[[W1:.*]] = kiln.sub %arg1, %[[B1]]
// BUCKET-NEXT: %[[DB1:.*]] = kiln.neg %[[W1]]
// BUCKET-NEXT: %[[B2:.*]] = kiln.all_reduce %[[DB1]] {kiln.bucket = 2 : i64} : tensor<2x2xf32>
// BUCKET-NEXT: %[[W2:.*]] = kiln.sub %arg0, %[[B0]]#1
// BUCKET: return %[[W1]], %[[W2]], %[[B0]]#0, %[[B2]]

// A large bucket takes everything up to the first reader of a result.
// ONE-LABEL: func.func @step
// ONE: %[[DW2:.*]] = kiln.matmul %arg0, %arg0 transpose_lhs
// ONE-NEXT: %[[DW1:.*]] = kiln.matmul %arg1, %arg1 transpose_lhs
// ONE-NEXT: %[[B0:.*]]:3 = kiln.all_reduce %arg2, %[[DW2]], %[[DW1]] {kiln.bucket = 0 : i64}
// ONE-NEXT: kiln.sub %arg1, %[[B0]]#2
// ONE: kiln.all_reduce %{{.*}} {kiln.bucket = 1 : i64}
// ONE-NOT: kiln.all_reduce
func.func @step(%x: tensor<4x4xf32>, %y: tensor<2x2xf32>, %db2: tensor<4xf32>)
    -> (tensor<2x2xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<2x2xf32>) {
  %dw2 = kiln.matmul %x, %x transpose_lhs : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dw1 = kiln.matmul %y, %y transpose_lhs : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %a1 = kiln.all_reduce %dw1 : tensor<2x2xf32>
  %w1 = kiln.sub %y, %a1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %db1 = kiln.neg %w1 : tensor<2x2xf32>
  %a2 = kiln.all_reduce %dw2 : tensor<4x4xf32>
  %ab = kiln.all_reduce %db2 : tensor<4xf32>
  %ad = kiln.all_reduce %db1 : tensor<2x2xf32>
  %w2 = kiln.sub %x, %a2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %w1, %w2, %ab, %ad : tensor<2x2xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<2x2xf32>
}

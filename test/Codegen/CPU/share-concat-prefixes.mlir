// RUN: kiln-opt %s --split-input-file --verify-each --kiln-share-concat-prefixes | FileCheck %s
// RUN: kiln-opt %s --split-input-file --verify-each --pass-pipeline='builtin.module(func.func(kiln-share-concat-prefixes),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize)' | FileCheck %s --check-prefix=BUF

// Three concats, each extending the one before (a DenseNet block): one
// buffer of the last one's shape, each input inserted once, the earlier
// concats prefix views of it.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<2x4xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x16xf32>
// CHECK-NEXT: %[[I1:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 4] [1, 1]
// CHECK-NEXT: %[[I2:.*]] = tensor.insert_slice %[[B]] into %[[I1]][0, 4] [2, 4] [1, 1]
// CHECK-NEXT: %[[C1:.*]] = tensor.extract_slice %[[I2]][0, 0] [2, 8] [1, 1] : tensor<2x16xf32> to tensor<2x8xf32>
// CHECK: %[[F1:.*]] = linalg.exp ins(%[[C1]]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[F1]]
// CHECK-NEXT: %[[I3:.*]] = tensor.insert_slice %[[S1]] into %[[I2]][0, 8] [2, 4] [1, 1]
// CHECK-NEXT: %[[C2:.*]] = tensor.extract_slice %[[I3]][0, 0] [2, 12] [1, 1] : tensor<2x16xf32> to tensor<2x12xf32>
// CHECK: %[[F2:.*]] = linalg.exp ins(%[[C2]]
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[F2]]
// CHECK-NEXT: %[[I4:.*]] = tensor.insert_slice %[[S2]] into %[[I3]][0, 12] [2, 4] [1, 1]
// CHECK-NEXT: return %[[I4]]
// CHECK-NOT: tensor.insert_slice

// Bufferized: one buffer, one copy per input, no copy of a concat.
// BUF-LABEL: func.func @chain
// BUF: memref.alloc() {{.*}} : memref<2x16xf32>
// BUF-COUNT-4: memref.copy {{.*}} : memref<2x4xf32{{.*}}> to memref<2x4xf32, strided<[16, 1]{{.*}}>>
// BUF-NOT: memref.copy
// BUF: return
func.func @chain(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x16xf32> {
  %e1 = tensor.empty() : tensor<2x8xf32>
  %i1 = tensor.insert_slice %a into %e1[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %c1 = tensor.insert_slice %b into %i1[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %o1 = tensor.empty() : tensor<2x8xf32>
  %g1 = linalg.exp ins(%c1 : tensor<2x8xf32>) outs(%o1 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %f1 = tensor.extract_slice %g1[0, 0] [2, 4] [1, 1] : tensor<2x8xf32> to tensor<2x4xf32>
  %e2 = tensor.empty() : tensor<2x12xf32>
  %j1 = tensor.insert_slice %a into %e2[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %j2 = tensor.insert_slice %b into %j1[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %c2 = tensor.insert_slice %f1 into %j2[0, 8] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %o2 = tensor.empty() : tensor<2x12xf32>
  %g2 = linalg.exp ins(%c2 : tensor<2x12xf32>) outs(%o2 : tensor<2x12xf32>) -> tensor<2x12xf32>
  %f2 = tensor.extract_slice %g2[0, 0] [2, 4] [1, 1] : tensor<2x12xf32> to tensor<2x4xf32>
  %e3 = tensor.empty() : tensor<2x16xf32>
  %k1 = tensor.insert_slice %a into %e3[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x16xf32>
  %k2 = tensor.insert_slice %b into %k1[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x16xf32>
  %k3 = tensor.insert_slice %f1 into %k2[0, 8] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x16xf32>
  %c3 = tensor.insert_slice %f2 into %k3[0, 12] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x16xf32>
  return %c3 : tensor<2x16xf32>
}

// -----

// The shorter concat is read after the longer one's own input is inserted
// (and returned): building both in one buffer would overwrite what that
// reader sees, so each keeps its own.
// CHECK-LABEL: func.func @read_after
// CHECK: tensor.empty() : tensor<2x8xf32>
// CHECK: tensor.empty() : tensor<2x12xf32>
// CHECK-NOT: tensor.extract_slice %{{.*}}[0, 0] [2, 8]
// CHECK: return
func.func @read_after(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %f: tensor<2x4xf32>) -> (tensor<2x12xf32>, tensor<2x8xf32>) {
  %e1 = tensor.empty() : tensor<2x8xf32>
  %i1 = tensor.insert_slice %a into %e1[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %c1 = tensor.insert_slice %b into %i1[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %e2 = tensor.empty() : tensor<2x12xf32>
  %j1 = tensor.insert_slice %a into %e2[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %j2 = tensor.insert_slice %b into %j1[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %c2 = tensor.insert_slice %f into %j2[0, 8] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %o = tensor.empty() : tensor<2x8xf32>
  %g = linalg.exp ins(%c1 : tensor<2x8xf32>) outs(%o : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %c2, %g : tensor<2x12xf32>, tensor<2x8xf32>
}

// -----

// Along different axes, or with other sizes off the axis: not a prefix.
// CHECK-LABEL: func.func @not_prefix
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @not_prefix(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<2x12xf32>) {
  %e1 = tensor.empty() : tensor<4x4xf32>
  %i1 = tensor.insert_slice %a into %e1[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  %c1 = tensor.insert_slice %b into %i1[2, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<2x12xf32>
  %j1 = tensor.insert_slice %a into %e2[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %j2 = tensor.insert_slice %b into %j1[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  %c2 = tensor.insert_slice %a into %j2[0, 8] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x12xf32>
  return %c1, %c2 : tensor<4x4xf32>, tensor<2x12xf32>
}

// RUN: kiln-opt %s --split-input-file --kiln-outline-kernels | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-outline-kernels --kiln-inline-kernels | FileCheck %s --check-prefix=BACK
// RUN: kiln-opt %s --split-input-file --kiln-outline-kernels --kiln-inline-kernels --mlir-print-debuginfo | FileCheck %s --check-prefix=LOCS

// Two kernels that differ only in their weights share one function: the
// weights are arguments, the splat fill value is rebuilt inside. The third
// kernel (another shape) gets its own. Each call names the values the
// kernel uses and returns what later kernels use.
// CHECK-LABEL: func.func @blocks(
// CHECK-SAME: %[[X:.*]]: tensor<4x2xf32>
// CHECK-DAG: %[[W1:.*]] = arith.constant dense<{{\[\[}}1.0{{.*}}> : tensor<2x2xf32>
// CHECK-DAG: %[[W2:.*]] = arith.constant dense<{{\[\[}}5.0{{.*}}> : tensor<2x2xf32>
// CHECK-DAG: %[[W3:.*]] = arith.constant dense<{{.*}}> : tensor<2x3xf32>
// CHECK: call @kiln.kernel_probe
// CHECK: %[[A:.*]] = call @blocks.kernel0(%[[X]], %[[W1]])
// CHECK: call @kiln.kernel_probe
// CHECK: %[[B:.*]] = call @blocks.kernel0(%[[A]], %[[W2]]) {kiln.kernel_locs = [
// CHECK: call @kiln.kernel_probe
// CHECK: %[[C:.*]] = call @blocks.kernel1(%[[B]], %[[W3]])
// CHECK: return %[[C]]
// CHECK: func.func private @blocks.kernel0(%{{.*}}: tensor<4x2xf32>, %{{.*}}: tensor<2x2xf32>) -> tensor<4x2xf32>
// CHECK-SAME: kiln.kernel_body
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: func.func private @blocks.kernel1(
// CHECK-NOT: func.func private @blocks.kernel

// Put back, each kernel is where it was, with its own weights and no
// kernel function left.
// BACK-LABEL: func.func @blocks(
// BACK-NOT: call @blocks.kernel
// BACK: linalg.matmul ins(%{{.*}}, %[[W1:.*]] :
// BACK: linalg.matmul ins(%{{.*}}, %[[W2:.*]] :
// BACK: linalg.matmul ins(
// BACK-NOT: func.func private @blocks.kernel

// The second kernel's copy keeps its own ONNX node, not the first's.
// LOCS-LABEL: func.func @blocks(
// LOCS: linalg.matmul {{.*}} loc(#[[FIRST:loc[0-9]*]])
// LOCS: linalg.matmul {{.*}} loc(#[[SECOND:loc[0-9]*]])
// LOCS-DAG: #[[FIRST]] = loc("first")
// LOCS-DAG: #[[SECOND]] = loc("second")

func.func private @kiln.kernel_probe(i32)

func.func @blocks(%x: tensor<4x2xf32>) -> tensor<4x3xf32>
    attributes {kiln.kernel_names = ["first", "second", "third"]} {
  %w1 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %w2 = arith.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %w3 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  call @kiln.kernel_probe(%c0) : (i32) -> ()
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x2xf32> loc("first")
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x2xf32>) -> tensor<4x2xf32> loc("first")
  %a = linalg.matmul ins(%x, %w1 : tensor<4x2xf32>, tensor<2x2xf32>)
                     outs(%f1 : tensor<4x2xf32>) -> tensor<4x2xf32> loc("first")
  call @kiln.kernel_probe(%c1) : (i32) -> ()
  %e2 = tensor.empty() : tensor<4x2xf32> loc("second")
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x2xf32>) -> tensor<4x2xf32> loc("second")
  %b = linalg.matmul ins(%a, %w2 : tensor<4x2xf32>, tensor<2x2xf32>)
                     outs(%f2 : tensor<4x2xf32>) -> tensor<4x2xf32> loc("second")
  call @kiln.kernel_probe(%c2) : (i32) -> ()
  %e3 = tensor.empty() : tensor<4x3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = linalg.matmul ins(%b, %w3 : tensor<4x2xf32>, tensor<2x3xf32>)
                     outs(%f3 : tensor<4x3xf32>) -> tensor<4x3xf32>
  call @kiln.kernel_probe(%c3) : (i32) -> ()
  return %c : tensor<4x3xf32>
}

// -----

// A kernel that touches memrefs (a data-parallel step's bucket call, a
// copy into a caller's buffer) or has run-time sizes stays in place; so
// does a function kiln-mark-kernels did not mark.
// CHECK-LABEL: func.func @stays(
// CHECK-NOT: call @stays.kernel
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: bufferization.to_buffer
// CHECK-NOT: func.func private @stays.kernel
// CHECK-LABEL: func.func @unmarked(
// CHECK: linalg.generic
// CHECK-NOT: func.func private @unmarked.kernel

func.func private @kiln.kernel_probe(i32)

#id = affine_map<(d0) -> (d0)>
func.func @stays(%x: tensor<?xf32>, %y: tensor<8xf32>, %out: memref<8xf32>)
    -> tensor<?xf32> attributes {kiln.kernel_names = ["dynamic", "memref"]} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %i0 = arith.constant 0 : index
  call @kiln.kernel_probe(%c0) : (i32) -> ()
  %n = tensor.dim %x, %i0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  call @kiln.kernel_probe(%c1) : (i32) -> ()
  %e8 = tensor.empty() : tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %buf = bufferization.to_buffer %s : tensor<8xf32> to memref<8xf32>
  memref.copy %buf, %out : memref<8xf32> to memref<8xf32>
  call @kiln.kernel_probe(%c2) : (i32) -> ()
  return %r : tensor<?xf32>
}

func.func @unmarked(%y: tensor<8xf32>) -> tensor<8xf32> {
  %e8 = tensor.empty() : tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

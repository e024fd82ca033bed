// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// The math, logic, comparison and data-movement ops print as they parse.
// CHECK-LABEL: func.func @coverage_ops
func.func @coverage_ops(%x: tensor<2x3xf32>, %v: tensor<3xf32>, %i: tensor<2x3xi32>, %b: tensor<2x3xi1>, %idx: tensor<4xi64>) {
  // CHECK: kiln.floor %{{.*}} : tensor<2x3xf32>
  %0 = kiln.floor %x : tensor<2x3xf32>
  // CHECK: kiln.erf
  %1 = kiln.erf %x : tensor<2x3xf32>
  // CHECK: kiln.abs %{{.*}} : tensor<2x3xi32>
  %2 = kiln.abs %i : tensor<2x3xi32>
  // CHECK: kiln.not %{{.*}} : tensor<2x3xi1>
  %3 = kiln.not %b : tensor<2x3xi1>
  // CHECK: kiln.max %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %4 = kiln.max %x, %v : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: kiln.xor %{{.*}}, %{{.*}} : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %5 = kiln.xor %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  // CHECK: kiln.cmp ge, %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %6 = kiln.cmp ge, %x, %v : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  // CHECK: kiln.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %7 = kiln.select %b, %x, %v : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: kiln.cast %{{.*}} : tensor<2x3xf32> -> tensor<2x3xbf16>
  %8 = kiln.cast %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  // CHECK: kiln.broadcast %{{.*}} : tensor<3xf32> -> tensor<4x2x3xf32>
  %9 = kiln.broadcast %v : tensor<3xf32> -> tensor<4x2x3xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} axis = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  %10 = kiln.concat %x, %x axis = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  // CHECK: kiln.slice %{{.*}} starts = [1, 2] strides = [-1, -2] : tensor<2x3xf32> -> tensor<2x2xf32>
  %11 = kiln.slice %x starts = [1, 2] strides = [-1, -2] : tensor<2x3xf32> -> tensor<2x2xf32>
  // CHECK: kiln.gather %{{.*}}, %{{.*}} axis = 1 : tensor<2x3xf32>, tensor<4xi64> -> tensor<2x4xf32>
  %12 = kiln.gather %x, %idx axis = 1 : tensor<2x3xf32>, tensor<4xi64> -> tensor<2x4xf32>
  // CHECK: kiln.argmax %{{.*}} axis = 1 keepdims select_last_index : tensor<2x3xf32> -> tensor<2x1xi64>
  %13 = kiln.argmax %x axis = 1 keepdims select_last_index : tensor<2x3xf32> -> tensor<2x1xi64>
  // CHECK: kiln.argmin %{{.*}} axis = 0 : tensor<2x3xi32> -> tensor<3xi64>
  %14 = kiln.argmin %i axis = 0 : tensor<2x3xi32> -> tensor<3xi64>
  return
}

// Convolution and pooling keep their window attributes.
// CHECK-LABEL: func.func @windows
// CHECK: kiln.conv %{{.*}}, %{{.*}} strides = [2, 1] dilations = [1, 2] pads = [1, 0, 1, 0] group = 2 : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x5x5xf32>
// CHECK: kiln.pool max %{{.*}} kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 1, 1] : tensor<1x4x9x9xf32> -> tensor<1x4x5x5xf32>
func.func @windows(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>) {
  %0 = kiln.conv %x, %w strides = [2, 1] dilations = [1, 2] pads = [1, 0, 1, 0] group = 2 : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x5x5xf32>
  %1 = kiln.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 1, 1] : tensor<1x4x9x9xf32> -> tensor<1x4x5x5xf32>
  return
}

// kiln.scatter and kiln.topk (the ops ONNX's Scatter*, TopK import into).
// CHECK-LABEL: func.func @scatter_topk
// CHECK: kiln.scatter add %{{.*}}, %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<3xi64>, tensor<3xf32> -> tensor<8xf32>
// CHECK: kiln.scatter none %{{.*}}, %{{.*}}, %{{.*}} : tensor<8xi1>, tensor<3xi64>, tensor<3xi1> -> tensor<8xi1>
// CHECK: kiln.topk %{{.*}} k = 2 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
// CHECK: kiln.topk %{{.*}} k = 1 smallest : tensor<3x4xui64> -> tensor<3x1xui64>, tensor<3x1xi64>
func.func @scatter_topk(%d: tensor<8xf32>, %i: tensor<3xi64>, %u: tensor<3xf32>, %db: tensor<8xi1>, %ub: tensor<3xi1>, %x: tensor<3x4xf32>, %xu: tensor<3x4xui64>) {
  %0 = kiln.scatter add %d, %i, %u : tensor<8xf32>, tensor<3xi64>, tensor<3xf32> -> tensor<8xf32>
  %1 = kiln.scatter none %db, %i, %ub : tensor<8xi1>, tensor<3xi64>, tensor<3xi1> -> tensor<8xi1>
  %2:2 = kiln.topk %x k = 2 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
  %3:2 = kiln.topk %xu k = 1 smallest : tensor<3x4xui64> -> tensor<3x1xui64>, tensor<3x1xi64>
  return
}

// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-lower-precision))' --split-input-file | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-lower-precision{type=bf16}))' --split-input-file | FileCheck %s --check-prefix=BF16
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-lower-precision{type=f8}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// A matmul and a conv of f32: operands cast to the narrow type, the result
// cast back; the add between them stays f32.
// CHECK-LABEL: func.func @products
// CHECK:         %[[X:.*]] = kiln.cast %arg0 : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK:         %[[W:.*]] = kiln.cast %arg1 : tensor<8x4xf32> -> tensor<8x4xf16>
// CHECK:         %[[M:.*]] = kiln.matmul %[[X]], %[[W]] : tensor<2x8xf16>, tensor<8x4xf16> -> tensor<2x4xf16>
// CHECK:         %[[MB:.*]] = kiln.cast %[[M]] : tensor<2x4xf16> -> tensor<2x4xf32>
// CHECK:         %[[S:.*]] = kiln.add %[[MB]], %[[MB]] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK:         kiln.conv {{.*}} : tensor<1x2x5x5xf16>, tensor<3x2x3x3xf16> -> tensor<1x3x3x3xf16>
// CHECK:         kiln.cast {{.*}} : tensor<1x3x3x3xf16> -> tensor<1x3x3x3xf32>
// BF16:          kiln.matmul {{.*}} : tensor<2x8xbf16>, tensor<8x4xbf16> -> tensor<2x4xbf16>
// BF16:          kiln.conv {{.*}} -> tensor<1x3x3x3xbf16>
// BAD: kiln-lower-precision: expected type f16 or bf16, found 'f8'
func.func @products(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %i: tensor<1x2x5x5xf32>, %k: tensor<3x2x3x3xf32>)
    -> (tensor<2x4xf32>, tensor<1x3x3x3xf32>) {
  %m = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %s = kiln.add %m, %m : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %c = kiln.conv %i, %k strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return %s, %c : tensor<2x4xf32>, tensor<1x3x3x3xf32>
}

// -----

// Products of other types are left alone.
// CHECK-LABEL: func.func @others
// CHECK-NOT:     kiln.cast
// CHECK:         kiln.matmul %arg0, %arg1 : tensor<2x8xf16>, tensor<8x4xf16> -> tensor<2x4xf16>
// CHECK:         kiln.matmul %arg2, %arg3 : tensor<2x8xi32>, tensor<8x4xi32> -> tensor<2x4xi32>
func.func @others(%a: tensor<2x8xf16>, %b: tensor<8x4xf16>, %c: tensor<2x8xi32>, %d: tensor<8x4xi32>)
    -> (tensor<2x4xf16>, tensor<2x4xi32>) {
  %0 = kiln.matmul %a, %b : tensor<2x8xf16>, tensor<8x4xf16> -> tensor<2x4xf16>
  %1 = kiln.matmul %c, %d : tensor<2x8xi32>, tensor<8x4xi32> -> tensor<2x4xi32>
  return %0, %1 : tensor<2x4xf16>, tensor<2x4xi32>
}

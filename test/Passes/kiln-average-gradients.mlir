// RUN: kiln-opt %s --kiln-average-gradients | FileCheck %s --check-prefix=AVG

// A gradient function as kiln-generate-gradients leaves it: each
// grad.<p> result becomes the all-reduce of the gradient; others stay.
// AVG-LABEL: func.func @gradients
// AVG: %[[DW2:.*]] = kiln.matmul %arg0, %arg0 transpose_lhs
// AVG: %[[DW1:.*]] = kiln.matmul %arg1, %arg1 transpose_lhs
// AVG: %[[LATE:.*]] = kiln.add %[[DW1]], %arg1
// AVG: %[[A2:.*]] = kiln.all_reduce %[[DW2]] : tensor<4x4xf32>
// AVG: %[[A1:.*]] = kiln.all_reduce %[[DW1]] : tensor<2x2xf32>
// AVG: %[[AB:.*]] = kiln.all_reduce %arg2 : tensor<4xf32>
// AVG: return %[[LATE]], %[[A2]], %[[A1]], %[[AB]]
func.func @gradients(%x: tensor<4x4xf32>, %y: tensor<2x2xf32>, %db2: tensor<4xf32>)
    -> (tensor<2x2xf32> {kiln.name = "loss"},
        tensor<4x4xf32> {kiln.name = "grad.w2"},
        tensor<2x2xf32> {kiln.name = "grad.w1"},
        tensor<4xf32> {kiln.name = "grad.b2"}) {
  %dw2 = kiln.matmul %x, %x transpose_lhs : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dw1 = kiln.matmul %y, %y transpose_lhs : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %late = kiln.add %dw1, %y : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return %late, %dw2, %dw1, %db2 : tensor<2x2xf32>, tensor<4x4xf32>, tensor<2x2xf32>, tensor<4xf32>
}

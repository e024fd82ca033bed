func.func @main(%a: tensor<3x4xf64> {kiln.name = "a"}, %b: tensor<4xf64> {kiln.name = "b"}, %c: tensor<3x4xf64> {kiln.name = "c"})
    -> (tensor<f64> {kiln.name = "loss"}) {
  %y = kiln.add %a, %b : tensor<3x4xf64>, tensor<4xf64> -> tensor<3x4xf64>
  %yc = kiln.mul %y, %c : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = kiln.reduce_sum %yc axes = [0, 1] : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

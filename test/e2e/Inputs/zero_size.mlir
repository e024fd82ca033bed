func.func @main(%x: tensor<3x0x5xf32> {kiln.name = "x"}, %y: tensor<2xf32> {kiln.name = "y"})
    -> (tensor<3x0x5xf32> {kiln.name = "empty"}, tensor<3x5xf32> {kiln.name = "summed"}, tensor<2xf32> {kiln.name = "same"}) {
  %r = kiln.relu %x : tensor<3x0x5xf32>
  %s = kiln.reduce_sum %x axes = [1] : tensor<3x0x5xf32> -> tensor<3x5xf32>
  %n = kiln.neg %y : tensor<2xf32>
  %m = kiln.neg %n : tensor<2xf32>
  return %r, %s, %m : tensor<3x0x5xf32>, tensor<3x5xf32>, tensor<2xf32>
}

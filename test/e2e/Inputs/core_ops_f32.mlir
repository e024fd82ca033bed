func.func @main(%x: tensor<3x4xf32> {kiln.name = "x"}, %y: tensor<4xf32> {kiln.name = "y"}, %i: tensor<2xi64> {kiln.name = "i"})
    -> (tensor<3x4xf32> {kiln.name = "math"}, tensor<3x4xi1> {kiln.name = "cmp"}, tensor<3x4xf32> {kiln.name = "sel"},
        tensor<3x4xi32> {kiln.name = "cast"}, tensor<3x8xf32> {kiln.name = "cat"}, tensor<2x2xf32> {kiln.name = "slice"},
        tensor<2x4xf32> {kiln.name = "gather"}, tensor<3x1xi64> {kiln.name = "argmax"}, tensor<2x3x4xf32> {kiln.name = "bcast"},
        tensor<3x4xf32> {kiln.name = "sign"}, tensor<4xi64> {kiln.name = "argmin"}, tensor<3x4xf32> {kiln.name = "pow"}) {
  %a = kiln.abs %x : tensor<3x4xf32>
  %s = kiln.sin %a : tensor<3x4xf32>
  %e = kiln.erf %s : tensor<3x4xf32>
  %f = kiln.floor %x : tensor<3x4xf32>
  %r = kiln.round %x : tensor<3x4xf32>
  %m = kiln.max %e, %f : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %m2 = kiln.min %m, %r : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %rem = kiln.rem %m2, %y : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %c = kiln.cmp lt, %x, %y : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xi1>
  %sel = kiln.select %c, %x, %rem : tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %ci = kiln.cast %x : tensor<3x4xf32> -> tensor<3x4xi32>
  %cat = kiln.concat %x, %sel axis = 1 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x8xf32>
  %sl = kiln.slice %x starts = [2, 3] strides = [-2, -2] : tensor<3x4xf32> -> tensor<2x2xf32>
  %g = kiln.gather %x, %i axis = 0 : tensor<3x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  %am = kiln.argmax %x axis = 1 keepdims : tensor<3x4xf32> -> tensor<3x1xi64>
  %b = kiln.broadcast %y : tensor<4xf32> -> tensor<2x3x4xf32>
  %sg = kiln.sign %x : tensor<3x4xf32>
  %an = kiln.argmin %x axis = 0 select_last_index : tensor<3x4xf32> -> tensor<4xi64>
  %ax = kiln.abs %x : tensor<3x4xf32>
  %p = kiln.pow %ax, %y : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  return %rem, %c, %sel, %ci, %cat, %sl, %g, %am, %b, %sg, %an, %p : tensor<3x4xf32>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x8xf32>, tensor<2x2xf32>, tensor<2x4xf32>, tensor<3x1xi64>, tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xi64>, tensor<3x4xf32>
}

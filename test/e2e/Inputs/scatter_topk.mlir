// kiln.scatter and kiln.topk lowered and run; references in
// scatter_topk_reference.py.
func.func @main(%d: tensor<6xf32> {kiln.name = "d"}, %i: tensor<5xi64> {kiln.name = "i"}, %u: tensor<5xf32> {kiln.name = "u"},
                %di: tensor<6xi32> {kiln.name = "di"}, %ui: tensor<5xi32> {kiln.name = "ui"}, %x: tensor<3x5xf32> {kiln.name = "x"},
                %xi: tensor<2x4xi32> {kiln.name = "xi"})
    -> (tensor<6xf32> {kiln.name = "none"}, tensor<6xf32> {kiln.name = "add"}, tensor<6xi32> {kiln.name = "mul"},
        tensor<6xi32> {kiln.name = "max"}, tensor<6xf32> {kiln.name = "min"},
        tensor<3x3xf32> {kiln.name = "top"}, tensor<3x3xi64> {kiln.name = "topi"},
        tensor<2x2xi32> {kiln.name = "low"}, tensor<2x2xi64> {kiln.name = "lowi"}) {
  %0 = kiln.scatter none %d, %i, %u : tensor<6xf32>, tensor<5xi64>, tensor<5xf32> -> tensor<6xf32>
  %1 = kiln.scatter add %d, %i, %u : tensor<6xf32>, tensor<5xi64>, tensor<5xf32> -> tensor<6xf32>
  %2 = kiln.scatter mul %di, %i, %ui : tensor<6xi32>, tensor<5xi64>, tensor<5xi32> -> tensor<6xi32>
  %3 = kiln.scatter max %di, %i, %ui : tensor<6xi32>, tensor<5xi64>, tensor<5xi32> -> tensor<6xi32>
  %4 = kiln.scatter min %d, %i, %u : tensor<6xf32>, tensor<5xi64>, tensor<5xf32> -> tensor<6xf32>
  %v, %vi = kiln.topk %x k = 3 : tensor<3x5xf32> -> tensor<3x3xf32>, tensor<3x3xi64>
  %w, %wi = kiln.topk %xi k = 2 smallest : tensor<2x4xi32> -> tensor<2x2xi32>, tensor<2x2xi64>
  return %0, %1, %2, %3, %4, %v, %vi, %w, %wi : tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>, tensor<6xf32>,
      tensor<3x3xf32>, tensor<3x3xi64>, tensor<2x2xi32>, tensor<2x2xi64>
}

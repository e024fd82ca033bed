// The functions kiln-approximate-math replaces, each over its own sweep of
// inputs (test/e2e/Inputs/approx_math_reference.py makes them).
func.func @main(%e: tensor<4096xf32> {kiln.name = "e"}, %l: tensor<4096xf32> {kiln.name = "l"},
                %t: tensor<4096xf32> {kiln.name = "t"}, %r: tensor<4096xf32> {kiln.name = "r"})
    -> (tensor<4096xf32> {kiln.name = "exp"}, tensor<4096xf32> {kiln.name = "log"},
        tensor<4096xf32> {kiln.name = "tanh"}, tensor<4096xf32> {kiln.name = "erf"},
        tensor<4096xf32> {kiln.name = "sigmoid"}) {
  %0 = kiln.exp %e : tensor<4096xf32>
  %1 = kiln.log %l : tensor<4096xf32>
  %2 = kiln.tanh %t : tensor<4096xf32>
  %3 = kiln.erf %r : tensor<4096xf32>
  %4 = kiln.sigmoid %t : tensor<4096xf32>
  return %0, %1, %2, %3, %4 : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

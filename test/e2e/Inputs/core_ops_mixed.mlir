func.func @main(%a: tensor<2x5xi32> {kiln.name = "a"}, %b: tensor<5xi32> {kiln.name = "b"}, %h: tensor<2x5xf16> {kiln.name = "h"},
                %m: tensor<2x5xi1> {kiln.name = "m"})
    -> (tensor<2x5xi32> {kiln.name = "ipow"}, tensor<2x5xi32> {kiln.name = "irem"}, tensor<2x5xi32> {kiln.name = "bits"},
        tensor<2x5xi1> {kiln.name = "logic"}, tensor<2x5xf16> {kiln.name = "hmath"}, tensor<2x5xf32> {kiln.name = "tobf16"},
        tensor<2x2xi32> {kiln.name = "view"}, tensor<2x5xf32> {kiln.name = "fromi1"}, tensor<2x5xi1> {kiln.name = "toi1"},
        tensor<2x5xi8> {kiln.name = "trunc"}, tensor<2x5xi32> {kiln.name = "iabs"}) {
  %two = kiln.constant dense<2> : tensor<i32>
  %p = kiln.pow %a, %two : tensor<2x5xi32>, tensor<i32> -> tensor<2x5xi32>
  %r = kiln.rem %a, %b : tensor<2x5xi32>, tensor<5xi32> -> tensor<2x5xi32>
  %and = kiln.and %a, %b : tensor<2x5xi32>, tensor<5xi32> -> tensor<2x5xi32>
  %x = kiln.xor %and, %a : tensor<2x5xi32>, tensor<2x5xi32> -> tensor<2x5xi32>
  %n = kiln.not %x : tensor<2x5xi32>
  %ml = kiln.not %m : tensor<2x5xi1>
  %c = kiln.cmp gt, %a, %b : tensor<2x5xi32>, tensor<5xi32> -> tensor<2x5xi1>
  %o = kiln.or %ml, %c : tensor<2x5xi1>, tensor<2x5xi1> -> tensor<2x5xi1>
  %t = kiln.tanh %h : tensor<2x5xf16>
  %s = kiln.sin %t : tensor<2x5xf16>
  %bf16 = kiln.cast %s : tensor<2x5xf16> -> tensor<2x5xbf16>
  %bf = kiln.cast %bf16 : tensor<2x5xbf16> -> tensor<2x5xf32>
  %v = kiln.slice %a starts = [0, 1] strides = [1, 2] : tensor<2x5xi32> -> tensor<2x2xi32>
  %f = kiln.cast %m : tensor<2x5xi1> -> tensor<2x5xf32>
  %z = kiln.cast %a : tensor<2x5xi32> -> tensor<2x5xi1>
  %tr = kiln.cast %a : tensor<2x5xi32> -> tensor<2x5xi8>
  %ab = kiln.abs %a : tensor<2x5xi32>
  return %p, %r, %n, %o, %s, %bf, %v, %f, %z, %tr, %ab : tensor<2x5xi32>, tensor<2x5xi32>, tensor<2x5xi32>, tensor<2x5xi1>, tensor<2x5xf16>, tensor<2x5xf32>, tensor<2x2xi32>, tensor<2x5xf32>, tensor<2x5xi1>, tensor<2x5xi8>, tensor<2x5xi32>
}

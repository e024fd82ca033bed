// A training step small enough to check by hand (train_state.c):
// loss = sum(x * w) + sum(v * v), so grad w = x and grad v = 2 v.
func.func @main(%x: tensor<3xf32> {kiln.name = "x"},
                %w: tensor<3xf32> {kiln.name = "w", kiln.parameter,
                                   kiln.initial_value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>},
                %v: tensor<2xf32> {kiln.name = "v", kiln.parameter,
                                   kiln.initial_value = dense<[0.5, -1.5]> : tensor<2xf32>})
    -> (tensor<f32> {kiln.name = "loss"}) {
  %p = kiln.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %s = kiln.reduce_sum %p axes = [0] : tensor<3xf32> -> tensor<f32>
  %q = kiln.mul %v, %v : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %r = kiln.reduce_sum %q axes = [0] : tensor<2xf32> -> tensor<f32>
  %l = kiln.add %s, %r : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

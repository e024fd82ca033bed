// Convolutions for the im2col + matmul path of kiln-schedule-matmul: strides,
// dilations, asymmetric pads, groups, a 1x1 conv and a 1-D conv with a batch
// of two. The depthwise ones take the row-FMA path: stride 2 with a width
// that leaves a remainder chunk, dilation with asymmetric pads and strides,
// a 5x5 filter where most rows are edge rows, and pads so wide that whole
// taps, rows and columns read only padding.
func.func @main(%x: tensor<2x4x9x9xf32> {kiln.name = "x"}, %w: tensor<6x2x3x3xf32> {kiln.name = "w"},
                %wd: tensor<4x1x3x3xf32> {kiln.name = "wd"}, %w1: tensor<40x4x1x1xf32> {kiln.name = "w1"},
                %s: tensor<2x3x20xf32> {kiln.name = "s"}, %ws: tensor<5x3x4xf32> {kiln.name = "ws"},
                %xd: tensor<2x3x11x37xf32> {kiln.name = "xd"}, %wd3: tensor<3x1x3x3xf32> {kiln.name = "wd3"},
                %wd5: tensor<3x1x5x5xf32> {kiln.name = "wd5"})
    -> (tensor<2x6x5x5xf32> {kiln.name = "grouped"}, tensor<2x4x9x9xf32> {kiln.name = "depthwise"},
        tensor<2x40x9x9xf32> {kiln.name = "pointwise"}, tensor<2x5x9xf32> {kiln.name = "conv1d"},
        tensor<2x3x6x19xf32> {kiln.name = "dw_s2"}, tensor<2x3x9x19xf32> {kiln.name = "dw_dil"},
        tensor<2x3x11x37xf32> {kiln.name = "dw_5x5"}, tensor<2x3x15x41xf32> {kiln.name = "dw_wide_pad"}) {
  %0 = kiln.conv %x, %w strides = [2, 1] dilations = [1, 2] pads = [1, 0, 1, 0] group = 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x5x5xf32>
  %1 = kiln.conv %x, %wd strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 4 : tensor<2x4x9x9xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x9x9xf32>
  %2 = kiln.conv %x, %w1 strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<2x4x9x9xf32>, tensor<40x4x1x1xf32> -> tensor<2x40x9x9xf32>
  %3 = kiln.conv %s, %ws strides = [2] dilations = [1] pads = [1, 0] group = 1 : tensor<2x3x20xf32>, tensor<5x3x4xf32> -> tensor<2x5x9xf32>
  %4 = kiln.conv %xd, %wd3 strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x6x19xf32>
  %5 = kiln.conv %xd, %wd3 strides = [1, 2] dilations = [2, 2] pads = [2, 1, 0, 3] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x9x19xf32>
  %6 = kiln.conv %xd, %wd5 strides = [1, 1] dilations = [1, 1] pads = [2, 2, 2, 2] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x5x5xf32> -> tensor<2x3x11x37xf32>
  %7 = kiln.conv %xd, %wd3 strides = [1, 1] dilations = [1, 1] pads = [3, 3, 3, 3] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x15x41xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x6x5x5xf32>, tensor<2x4x9x9xf32>, tensor<2x40x9x9xf32>, tensor<2x5x9xf32>,
      tensor<2x3x6x19xf32>, tensor<2x3x9x19xf32>, tensor<2x3x11x37xf32>, tensor<2x3x15x41xf32>
}

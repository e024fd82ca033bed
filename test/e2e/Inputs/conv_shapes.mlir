// Convolutions for the im2col + matmul path of kiln-schedule-matmul: strides,
// dilations, asymmetric pads, groups, a 1x1 conv and a 1-D conv with a batch
// of two. The depthwise ones take the row-FMA path: stride 2 with a width
// that leaves a remainder chunk, dilation with asymmetric pads and strides,
// and pads so wide that whole taps, rows and columns read only padding; a
// 5x5 filter whose padding keeps the plane's size is one flat row of
// positions per channel. The stride-1 ones with taps
// wider than 1 read their input as shifted rows (no im2col copy): a batch of
// two with row remainders, dilation with asymmetric pads, groups without
// pads, a 3-D conv and a 1-D conv. Small images (at most 64 positions)
// are computed as positions x channels: a 3x3 conv, a grouped one with a
// batch of two, and a 1x1 conv. Depthwise convs over rows narrower than
// the row FMAs' vectors (host AVX-512: 16 lanes; 9 and 7 columns) are flat
// rows of positions too, and so are two over 26x26 planes (3x3, plain and
// dilated), long enough that the periods of the padding's pattern between
// the edge rows are a loop (85 chunks of 8 lanes, 43 of 16), and a 5x5
// over 28x28, too many FMAs to unroll but few once looped.
func.func @main(%x: tensor<2x4x9x9xf32> {kiln.name = "x"}, %w: tensor<6x2x3x3xf32> {kiln.name = "w"},
                %wd: tensor<4x1x3x3xf32> {kiln.name = "wd"}, %w1: tensor<40x4x1x1xf32> {kiln.name = "w1"},
                %s: tensor<2x3x20xf32> {kiln.name = "s"}, %ws: tensor<5x3x4xf32> {kiln.name = "ws"},
                %xd: tensor<2x3x11x37xf32> {kiln.name = "xd"}, %wd3: tensor<3x1x3x3xf32> {kiln.name = "wd3"},
                %wd5: tensor<3x1x5x5xf32> {kiln.name = "wd5"},
                %xs: tensor<2x5x12x40xf32> {kiln.name = "xs"}, %ws3: tensor<7x5x3x3xf32> {kiln.name = "ws3"},
                %wsd: tensor<6x5x3x2xf32> {kiln.name = "wsd"}, %xg: tensor<1x6x10x33xf32> {kiln.name = "xg"},
                %wg: tensor<4x3x3x3xf32> {kiln.name = "wg"}, %xv: tensor<1x2x4x30x30xf32> {kiln.name = "xv"},
                %wv: tensor<3x2x3x3x3xf32> {kiln.name = "wv"}, %sl: tensor<2x3x50xf32> {kiln.name = "sl"},
                %wl: tensor<4x3x5xf32> {kiln.name = "wl"}, %x7: tensor<1x40x7x7xf32> {kiln.name = "x7"},
                %w7: tensor<48x40x3x3xf32> {kiln.name = "w7"}, %xq: tensor<2x8x6x6xf32> {kiln.name = "xq"},
                %wq: tensor<64x4x3x3xf32> {kiln.name = "wq"}, %wq1: tensor<40x8x1x1xf32> {kiln.name = "wq1"},
                %wdn: tensor<40x1x3x3xf32> {kiln.name = "wdn"}, %xf: tensor<2x3x26x26xf32> {kiln.name = "xf"},
                %wf: tensor<3x1x3x3xf32> {kiln.name = "wf"}, %xt: tensor<1x4x28x28xf32> {kiln.name = "xt"},
                %wt: tensor<4x1x5x5xf32> {kiln.name = "wt"})
    -> (tensor<2x6x5x5xf32> {kiln.name = "grouped"}, tensor<2x4x9x9xf32> {kiln.name = "depthwise"},
        tensor<2x40x9x9xf32> {kiln.name = "pointwise"}, tensor<2x5x9xf32> {kiln.name = "conv1d"},
        tensor<2x3x6x19xf32> {kiln.name = "dw_s2"}, tensor<2x3x9x19xf32> {kiln.name = "dw_dil"},
        tensor<2x3x11x37xf32> {kiln.name = "dw_5x5"}, tensor<2x3x15x41xf32> {kiln.name = "dw_wide_pad"},
        tensor<2x7x12x40xf32> {kiln.name = "shifted"}, tensor<2x6x11x39xf32> {kiln.name = "shifted_dil"},
        tensor<1x4x8x31xf32> {kiln.name = "shifted_grouped"}, tensor<1x3x4x30x30xf32> {kiln.name = "shifted_3d"},
        tensor<2x4x50xf32> {kiln.name = "shifted_1d"}, tensor<1x48x7x7xf32> {kiln.name = "rows"},
        tensor<2x64x6x6xf32> {kiln.name = "rows_grouped"}, tensor<2x40x6x6xf32> {kiln.name = "rows_pointwise"},
        tensor<1x40x7x7xf32> {kiln.name = "dw_narrow"}, tensor<2x3x26x26xf32> {kiln.name = "dw_loop"},
        tensor<2x3x26x26xf32> {kiln.name = "dw_loop_dil"}, tensor<1x4x28x28xf32> {kiln.name = "dw_loop_5x5"}) {
  %0 = kiln.conv %x, %w strides = [2, 1] dilations = [1, 2] pads = [1, 0, 1, 0] group = 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x5x5xf32>
  %1 = kiln.conv %x, %wd strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 4 : tensor<2x4x9x9xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x9x9xf32>
  %2 = kiln.conv %x, %w1 strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<2x4x9x9xf32>, tensor<40x4x1x1xf32> -> tensor<2x40x9x9xf32>
  %3 = kiln.conv %s, %ws strides = [2] dilations = [1] pads = [1, 0] group = 1 : tensor<2x3x20xf32>, tensor<5x3x4xf32> -> tensor<2x5x9xf32>
  %4 = kiln.conv %xd, %wd3 strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x6x19xf32>
  %5 = kiln.conv %xd, %wd3 strides = [1, 2] dilations = [2, 2] pads = [2, 1, 0, 3] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x9x19xf32>
  %6 = kiln.conv %xd, %wd5 strides = [1, 1] dilations = [1, 1] pads = [2, 2, 2, 2] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x5x5xf32> -> tensor<2x3x11x37xf32>
  %7 = kiln.conv %xd, %wd3 strides = [1, 1] dilations = [1, 1] pads = [3, 3, 3, 3] group = 3 : tensor<2x3x11x37xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x15x41xf32>
  %8 = kiln.conv %xs, %ws3 strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<2x5x12x40xf32>, tensor<7x5x3x3xf32> -> tensor<2x7x12x40xf32>
  %9 = kiln.conv %xs, %wsd strides = [1, 1] dilations = [2, 1] pads = [2, 0, 1, 0] group = 1 : tensor<2x5x12x40xf32>, tensor<6x5x3x2xf32> -> tensor<2x6x11x39xf32>
  %10 = kiln.conv %xg, %wg strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 2 : tensor<1x6x10x33xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x31xf32>
  %11 = kiln.conv %xv, %wv strides = [1, 1, 1] dilations = [1, 1, 1] pads = [1, 1, 1, 1, 1, 1] group = 1 : tensor<1x2x4x30x30xf32>, tensor<3x2x3x3x3xf32> -> tensor<1x3x4x30x30xf32>
  %12 = kiln.conv %sl, %wl strides = [1] dilations = [1] pads = [2, 2] group = 1 : tensor<2x3x50xf32>, tensor<4x3x5xf32> -> tensor<2x4x50xf32>
  %13 = kiln.conv %x7, %w7 strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1 : tensor<1x40x7x7xf32>, tensor<48x40x3x3xf32> -> tensor<1x48x7x7xf32>
  %14 = kiln.conv %xq, %wq strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 2 : tensor<2x8x6x6xf32>, tensor<64x4x3x3xf32> -> tensor<2x64x6x6xf32>
  %15 = kiln.conv %xq, %wq1 strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<2x8x6x6xf32>, tensor<40x8x1x1xf32> -> tensor<2x40x6x6xf32>
  %16 = kiln.conv %x7, %wdn strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 40 : tensor<1x40x7x7xf32>, tensor<40x1x3x3xf32> -> tensor<1x40x7x7xf32>
  %17 = kiln.conv %xf, %wf strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 3 : tensor<2x3x26x26xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x26x26xf32>
  %18 = kiln.conv %xf, %wf strides = [1, 1] dilations = [2, 2] pads = [2, 2, 2, 2] group = 3 : tensor<2x3x26x26xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x26x26xf32>
  %19 = kiln.conv %xt, %wt strides = [1, 1] dilations = [1, 1] pads = [2, 2, 2, 2] group = 4 : tensor<1x4x28x28xf32>, tensor<4x1x5x5xf32> -> tensor<1x4x28x28xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19 : tensor<2x6x5x5xf32>, tensor<2x4x9x9xf32>, tensor<2x40x9x9xf32>, tensor<2x5x9xf32>,
      tensor<2x3x6x19xf32>, tensor<2x3x9x19xf32>, tensor<2x3x11x37xf32>, tensor<2x3x15x41xf32>,
      tensor<2x7x12x40xf32>, tensor<2x6x11x39xf32>, tensor<1x4x8x31xf32>, tensor<1x3x4x30x30xf32>, tensor<2x4x50xf32>,
      tensor<1x48x7x7xf32>, tensor<2x64x6x6xf32>, tensor<2x40x6x6xf32>, tensor<1x40x7x7xf32>,
      tensor<2x3x26x26xf32>, tensor<2x3x26x26xf32>, tensor<1x4x28x28xf32>
}

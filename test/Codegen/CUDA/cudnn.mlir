// RUN: kilnc %s --target=cuda --emit=cuda | FileCheck %s
// RUN: kilnc %s --target=cuda --tf32 --emit=cuda | FileCheck %s --check-prefix=TF32
// RUN: kilnc %s --target=cuda --no-cudnn --emit=cuda | FileCheck %s --check-prefix=KERNELS

// 2-d convolutions are cuDNN steps (docs/decisions/0019): a grouped,
// strided, dilated one whose symmetric padding cuDNN applies to the model's
// input itself (no zero fill, no pad copy: the first step is the
// convolution); one straight on the model's input whose bias and relu cuDNN
// applies (cudnnConvolutionBiasActivationForward) writing the model's
// output; and one padded at the bottom only, which cuDNN's symmetric
// padding cannot express: its pad copy stays, and cuDNN reads the padded
// copy in the arena. The 1-d convolution stays a kernel.
// CHECK-NOT: cudnn conv
// CHECK: // 0: cudnn conv f32 x=[1,4,9,9] w=[6,2,3,3] y=[1,6,5,5] stride=2,1 dilation=1,2 pad=1,0 groups=2 epilogue=none x=in0+0 w=in1+0 y=out0+0 workspace=arena+[[WS:[0-9]+]]
// CHECK: // {{[0-9]+}}: cudnn conv f32 x=[2,3,5,5] w=[8,3,1,1] y=[2,8,5,5] stride=1,1 dilation=1,1 groups=1 epilogue=bias+relu x=in2+0 w=in3+0 y=out1+0 workspace=arena+[[WS]] bias=in6+0
// CHECK: // {{[0-9]+}}: k{{[0-9]+}}<<<{{.*}}>>>(arena+0)
// CHECK-NEXT: // {{[0-9]+}}: k{{[0-9]+}}<<<{{.*}}(in0+0, arena+0)
// CHECK-NEXT: // {{[0-9]+}}: cudnn conv f32 x=[1,4,11,9] w=[6,2,3,3] y=[1,6,9,7] stride=1,1 dilation=1,1 groups=2 epilogue=none x=arena+0 w=in1+0 y=out3+0
// CHECK-NOT: cudnn conv

// TF32: cudnn conv f32 tf32 x=[1,4,9,9]

// KERNELS-NOT: cudnn conv
module {
  func.func @main(%x: tensor<1x4x9x9xf32> {kiln.name = "x"}, %w: tensor<6x2x3x3xf32> {kiln.name = "w"},
                  %p: tensor<2x3x5x5xf32> {kiln.name = "p"}, %q: tensor<8x3x1x1xf32> {kiln.name = "q"},
                  %s: tensor<1x2x16xf32> {kiln.name = "s"}, %k: tensor<3x2x3xf32> {kiln.name = "k"},
                  %b: tensor<8x1x1xf32> {kiln.name = "b"})
      -> (tensor<1x6x5x5xf32> {kiln.name = "y"}, tensor<2x8x5x5xf32> {kiln.name = "pw"},
          tensor<1x3x14xf32> {kiln.name = "line"}, tensor<1x6x9x7xf32> {kiln.name = "low"}) {
    %y = kiln.conv %x, %w strides = [2, 1] dilations = [1, 2] pads = [1, 0, 1, 0] group = 2 : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x5x5xf32>
    %pc = kiln.conv %p, %q strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 1 : tensor<2x3x5x5xf32>, tensor<8x3x1x1xf32> -> tensor<2x8x5x5xf32>
    %pb = kiln.add %pc, %b : tensor<2x8x5x5xf32>, tensor<8x1x1xf32> -> tensor<2x8x5x5xf32>
    %pw = kiln.relu %pb : tensor<2x8x5x5xf32>
    %line = kiln.conv %s, %k strides = [1] dilations = [1] pads = [0, 0] group = 1 : tensor<1x2x16xf32>, tensor<3x2x3xf32> -> tensor<1x3x14xf32>
    %low = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 2, 0] group = 2 : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x9x7xf32>
    return %y, %pw, %line, %low : tensor<1x6x5x5xf32>, tensor<2x8x5x5xf32>, tensor<1x3x14xf32>, tensor<1x6x9x7xf32>
  }
}

// RUN: kiln-opt %s --split-input-file --verify-diagnostics

// A cast keeps the shape.
func.func @cast_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.cast' op expects the result shape to equal the input's, got [3, 2] and [2, 3]}}
  %0 = kiln.cast %x : tensor<2x3xf32> -> tensor<3x2xi32>
  return
}

// -----

// Broadcasting only stretches size-1 dimensions.
func.func @broadcast_shape(%x: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.broadcast' op expects the input shape to broadcast to the result's, got [3] and [2, 4]}}
  %0 = kiln.broadcast %x : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_type(%x: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.broadcast' op expects the result element type to equal the input's, got 'f16' and 'f32'}}
  %0 = kiln.broadcast %x : tensor<3xf32> -> tensor<2x3xf16>
  return
}

// -----

// Concat inputs agree on every dimension but the axis.
func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{expects inputs to agree on every dimension but the axis, got [2, 3] and input 1 of [2, 4]}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = kiln.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{expects axis in [0, 2), got 2}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = kiln.concat %a, %a axis = 2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// A slice never reads outside its input.
func.func @slice_bounds(%x: tensor<5xf32>) {
  // expected-error @+1 {{'kiln.slice' op reads outside the input in dimension 0: elements 1 to 7 of 5}}
  %0 = kiln.slice %x starts = [1] strides = [2] : tensor<5xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<5xf32>) {
  // expected-error @+1 {{'kiln.slice' op expects nonzero strides, got 0 in dimension 0}}
  %0 = kiln.slice %x starts = [1] strides = [0] : tensor<5xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<5xf32>) {
  // expected-error @+1 {{'kiln.slice' op expects starts, strides and the result to have the input's rank 1}}
  %0 = kiln.slice %x starts = [1, 0] strides = [1, 1] : tensor<5xf32> -> tensor<2xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<5xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{expects axis in [0, 1), got 1}}
  // expected-error @+1 {{'kiln.gather' op failed to infer returned types}}
  %0 = kiln.gather %x, %i axis = 1 : tensor<5xf32>, tensor<2xi64> -> tensor<2xf32>
  return
}

// -----

func.func @argmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{expects axis in [0, 2), got -1}}
  // expected-error @+1 {{'kiln.argmax' op failed to infer returned types}}
  %0 = kiln.argmax %x axis = -1 : tensor<2x3xf32> -> tensor<2xi64>
  return
}

// -----

// The condition broadcasts with the values.
func.func @select_shape(%c: tensor<4xi1>, %x: tensor<3xf32>) {
  // expected-error @+2 {{expects the condition to broadcast with the values, got [4] and [3]}}
  // expected-error @+1 {{'kiln.select' op failed to infer returned types}}
  %0 = kiln.select %c, %x, %x : tensor<4xi1>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @cmp_types(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+2 {{expects operands of equal element type, got 'f32' and 'i32'}}
  // expected-error @+1 {{'kiln.cmp' op failed to infer returned types}}
  %0 = kiln.cmp lt, %a, %b : tensor<3xf32>, tensor<3xi32> -> tensor<3xi1>
  return
}

// -----

// Bitwise ops take i1 and integers only.
func.func @and_float(%a: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.and' op operand #0 must be statically shaped tensor of 1-bit signless integer or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values}}
  %0 = kiln.and %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

// Groups must divide channels and filters, with C/group channels per filter.
func.func @conv_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{expects group 2 to divide 4 input channels and 6 filters, with 2 channels per filter, got 4}}
  // expected-error @+1 {{'kiln.conv' op failed to infer returned types}}
  %0 = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] group = 2 : tensor<1x4x5x5xf32>, tensor<6x4x3x3xf32> -> tensor<1x6x3x3xf32>
  return
}

// -----

// The window must fit the padded input.
func.func @pool_window(%x: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{expects the window (4 elements) to fit the padded input (3) in spatial dimension 0}}
  // expected-error @+1 {{'kiln.pool' op failed to infer returned types}}
  %0 = kiln.pool sum %x kernel = [4, 1] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x1x3x3xf32> -> tensor<1x1x1x3xf32>
  return
}

// -----

func.func @pool_attrs(%x: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for 2 spatial dimensions}}
  // expected-error @+1 {{'kiln.pool' op failed to infer returned types}}
  %0 = kiln.pool sum %x kernel = [2] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
  return
}

// -----

// kiln.scatter is 1-D: the importer flattens.
func.func @scatter_rank(%d: tensor<2x4xf32>, %i: tensor<3xi64>, %u: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.scatter' op expects 1-D data, indices and updates, got 'tensor<2x4xf32>', 'tensor<3xi64>' and 'tensor<3xf32>'}}
  %0 = kiln.scatter none %d, %i, %u : tensor<2x4xf32>, tensor<3xi64>, tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @scatter_count(%d: tensor<8xf32>, %i: tensor<3xi64>, %u: tensor<2xf32>) {
  // expected-error @+1 {{'kiln.scatter' op expects one index per update, got 3 indices and 2 updates}}
  %0 = kiln.scatter add %d, %i, %u : tensor<8xf32>, tensor<3xi64>, tensor<2xf32> -> tensor<8xf32>
  return
}

// -----

func.func @scatter_type(%d: tensor<8xf32>, %i: tensor<3xi64>, %u: tensor<3xf16>) {
  // expected-error @+1 {{'kiln.scatter' op expects updates of the data's element type 'f32', got 'f16'}}
  %0 = kiln.scatter add %d, %i, %u : tensor<8xf32>, tensor<3xi64>, tensor<3xf16> -> tensor<8xf32>
  return
}

// -----

func.func @scatter_bool_add(%d: tensor<8xi1>, %i: tensor<3xi64>, %u: tensor<3xi1>) {
  // expected-error @+1 {{'kiln.scatter' op expects reduction none on i1 data, got add}}
  %0 = kiln.scatter add %d, %i, %u : tensor<8xi1>, tensor<3xi64>, tensor<3xi1> -> tensor<8xi1>
  return
}

// -----

func.func @topk_k(%x: tensor<3x4xf32>) {
  // expected-error @+2 {{expects k in [0, 4], got 5}}
  // expected-error @+1 {{'kiln.topk' op failed to infer returned types}}
  %0:2 = kiln.topk %x k = 5 : tensor<3x4xf32> -> tensor<3x5xf32>, tensor<3x5xi64>
  return
}

// -----

func.func @topk_rank(%x: tensor<12xf32>) {
  // expected-error @+2 {{expects a 2-D input, got 'tensor<12xf32>'}}
  // expected-error @+1 {{'kiln.topk' op failed to infer returned types}}
  %0:2 = kiln.topk %x k = 1 : tensor<12xf32> -> tensor<1xf32>, tensor<1xi64>
  return
}

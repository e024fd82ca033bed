// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-average-gradients -o /dev/null


// Only f32 and f64 gradients are averaged (the collectives' types).
// expected-error @+1 {{data-parallel training expects f32 or f64 gradients, found 'f16' for 'grad.w'}}
func.func @half(%g: tensor<4xf16>) -> (tensor<4xf16> {kiln.name = "grad.w"}) {
  return %g : tensor<4xf16>
}

// -----

// expected-error @+1 {{expects results named 'grad.<parameter>' to average (run kiln-generate-gradients first), found none}}
func.func @no_gradients(%x: tensor<4xf32>) -> (tensor<4xf32> {kiln.name = "y"}) {
  return %x : tensor<4xf32>
}

// Matmul shapes for the vectorized schedule (kiln-schedule-matmul): one row
// (batch-1 MLP), a full MLP layer, sizes that no register tile divides, a
// batched matmul and one whose right operand is broadcast over the batch;
// right operands read transposed (attention's Q K^T), copied to [K, N]
// first, in blocks of one vector register (16x16 on AVX-512, 8x8 on AVX2,
// 4x4 on SSE) where the block divides both sides (48 and 64) and element
// by element where not (37); and a transpose of the two innermost
// dims alone. A vector per batch against a shared matrix ([37, 1, 784] x
// [784, 512], ViT's attention projections as exported) becomes one product
// with 37 rows (kiln-canonicalize), plain and with the matrix transposed.
func.func @main(%x1: tensor<1x784xf32> {kiln.name = "x1"}, %x64: tensor<64x784xf32> {kiln.name = "x64"},
                %w: tensor<784x512xf32> {kiln.name = "w"},
                %a: tensor<37x53xf32> {kiln.name = "a"}, %b: tensor<53x29xf32> {kiln.name = "b"},
                %p: tensor<3x17x33xf32> {kiln.name = "p"}, %q: tensor<3x33x65xf32> {kiln.name = "q"},
                %r: tensor<33x65xf32> {kiln.name = "r"},
                %qa: tensor<2x40x64xf32> {kiln.name = "qa"}, %ka: tensor<2x48x64xf32> {kiln.name = "ka"},
                %kb: tensor<2x37x64xf32> {kiln.name = "kb"},
                %v: tensor<37x1x784xf32> {kiln.name = "v"}, %wt: tensor<96x784xf32> {kiln.name = "wt"})
    -> (tensor<1x512xf32> {kiln.name = "y1"}, tensor<64x512xf32> {kiln.name = "y64"},
        tensor<37x29xf32> {kiln.name = "ab"}, tensor<3x17x65xf32> {kiln.name = "pq"},
        tensor<3x17x65xf32> {kiln.name = "pr"}, tensor<2x40x48xf32> {kiln.name = "qk"},
        tensor<2x40x37xf32> {kiln.name = "qk37"}, tensor<2x64x48xf32> {kiln.name = "kt"},
        tensor<37x1x512xf32> {kiln.name = "vw"}, tensor<37x1x96xf32> {kiln.name = "vwt"}) {
  %y1 = kiln.matmul %x1, %w : tensor<1x784xf32>, tensor<784x512xf32> -> tensor<1x512xf32>
  %y64 = kiln.matmul %x64, %w : tensor<64x784xf32>, tensor<784x512xf32> -> tensor<64x512xf32>
  %ab = kiln.matmul %a, %b : tensor<37x53xf32>, tensor<53x29xf32> -> tensor<37x29xf32>
  %pq = kiln.matmul %p, %q : tensor<3x17x33xf32>, tensor<3x33x65xf32> -> tensor<3x17x65xf32>
  %pr = kiln.matmul %p, %r : tensor<3x17x33xf32>, tensor<33x65xf32> -> tensor<3x17x65xf32>
  %qk = kiln.matmul %qa, %ka transpose_rhs : tensor<2x40x64xf32>, tensor<2x48x64xf32> -> tensor<2x40x48xf32>
  %qk37 = kiln.matmul %qa, %kb transpose_rhs : tensor<2x40x64xf32>, tensor<2x37x64xf32> -> tensor<2x40x37xf32>
  %kt = kiln.transpose %ka perm = [0, 2, 1] : tensor<2x48x64xf32> -> tensor<2x64x48xf32>
  %vw = kiln.matmul %v, %w : tensor<37x1x784xf32>, tensor<784x512xf32> -> tensor<37x1x512xf32>
  %vwt = kiln.matmul %v, %wt transpose_rhs : tensor<37x1x784xf32>, tensor<96x784xf32> -> tensor<37x1x96xf32>
  return %y1, %y64, %ab, %pq, %pr, %qk, %qk37, %kt, %vw, %vwt : tensor<1x512xf32>, tensor<64x512xf32>, tensor<37x29xf32>, tensor<3x17x65xf32>, tensor<3x17x65xf32>, tensor<2x40x48xf32>, tensor<2x40x37xf32>, tensor<2x64x48xf32>, tensor<37x1x512xf32>, tensor<37x1x96xf32>
}

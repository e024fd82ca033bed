//===- Passes.td - code generation passes ------------------*- tablegen -*-===//
//
// Passes that take the kiln dialect down to buffers and loops. They run after
// the graph passes, inside the CPU code generator (codegen/lib/CPU), and each
// can be run alone through kiln-opt for testing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_PASSES_TD
#define KILN_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"kiln-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "lower kiln ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every kiln op into structured ops on tensors: elementwise ops
    become `linalg.generic` with broadcasting indexing maps, matmul becomes
    `linalg.matmul` (rank 2) or a `linalg.generic` with a reduction loop
    (batched), reductions become `linalg.generic` over an initialized output,
    reshape becomes `tensor.collapse_shape`/`tensor.expand_shape` (views, no
    copy), transpose becomes `linalg.transpose` and constants become
    `arith.constant`. Function arguments are marked not writable so that
    bufferization never writes into a caller's input.

    Before:
    ```mlir
    %r = kiln.relu %x : tensor<4xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %z = arith.constant 0.0 : f32
      %m = arith.maximumf %in, %z : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect",
    "mlir::bufferization::BufferizationDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect"
  ];
}

def StateInPlace : Pass<"kiln-state-in-place", "mlir::func::FuncOp"> {
  let summary = "let a training step's updates write the old state's tensor";
  let description = [{
    Runs on linalg on tensors, right after kiln-lower-to-linalg, on the CPU.
    A training step's k-th state result (`kiln.state` marks arguments and
    results, in the same order) is otherwise written into a buffer of its
    own, which the generated `_run` copies over the caller's state after
    the step (docs/decisions/0008): for Adam, three times the parameters'
    bytes per step. Where the new value is a result of an all-parallel
    `linalg.generic` in the function body that reads the old value at the
    indices it writes, and every other reader of the old value comes
    before it, the generic is rewritten to update the old value in place:
    the old value becomes that result's destination, its input is dropped
    and the payload reads the output's block argument instead, and the
    argument is marked `bufferization.writable`. Tiled and vectorized, the
    update then reads and writes the same slice, which one-shot
    bufferization places in the caller's buffer; where its analysis still
    finds a conflict it copies first, so correctness stays the analysis's.
    A data-parallel step (with `kiln.all_reduce`) is left alone: its state
    must stay untouched when a collective fails. kiln-drop-state-copies,
    after `buffer-results-to-out-params`, records which tensors ended up in
    place.

    Before:
    ```mlir
    %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    } -> tensor<8xf32>
    return %n : tensor<8xf32>
    ```
    After:
    ```mlir
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%g : tensor<8xf32>) outs(%w : tensor<8xf32>) {
    ^bb0(%b: f32, %a: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    } -> tensor<8xf32>
    ```
  }];
  let statistics = [
    Statistic<"numOffered", "num-offered",
              "state updates rewritten to write the old state's tensor">
  ];
}

def DropStateCopies : Pass<"kiln-drop-state-copies", "mlir::func::FuncOp"> {
  let summary = "drop the copy of a state tensor that was updated in place, and record which";
  let description = [{
    Runs on memrefs after `buffer-results-to-out-params`. Where the new
    value of the k-th state tensor bufferized into the old state's argument
    (kiln-state-in-place), the function ends by copying that argument into
    the k-th new-state out-parameter, its only use. The pass erases that
    copy and lists k in the function's `kiln.state_in_place` attribute: the
    code generator then passes the state buffer itself as the new state and
    copies only the other tensors after the step.
  }];
  let statistics = [
    Statistic<"numInPlace", "num-in-place",
              "state tensors updated in the caller's buffer">
  ];
}

def ShareConcatPrefixes : Pass<"kiln-share-concat-prefixes", "mlir::func::FuncOp"> {
  let summary = "build concats that extend another concat in its buffer";
  let description = [{
    Runs on tensors, right after kiln-lower-to-linalg, on the CPU. A
    concat is lowered as `tensor.insert_slice`s of its inputs into a
    `tensor.empty`. Where a concat's leading inputs are exactly an earlier
    concat's inputs, along the same axis (a DenseNet block concatenates
    every earlier feature map again at each layer), and everything that
    reads the earlier concat comes before the later one's own inputs are
    inserted, the two share one buffer: a `tensor.empty` of the last
    concat's shape, each input inserted into it once, and each earlier
    concat an `extract_slice` prefix of it. One-shot bufferization then
    keeps the inserts in place; where its analysis still finds a conflict
    it copies, so correctness stays the analysis's. A block of n layers
    copies each feature map once instead of up to n times, and its code has
    n copy loops instead of about n^2/2.

    Before:
    ```mlir
    %e1 = tensor.empty() : tensor<1x16x8x8xf32>
    %a1 = tensor.insert_slice %f0 into %e1[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    %c1 = tensor.insert_slice %f1 into %a1[0, 8, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    %f2 = ... %c1 ...
    %e2 = tensor.empty() : tensor<1x24x8x8xf32>
    %a2 = tensor.insert_slice %f0 into %e2[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    %b2 = tensor.insert_slice %f1 into %a2[0, 8, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    %c2 = tensor.insert_slice %f2 into %b2[0, 16, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<1x24x8x8xf32>
    %a1 = tensor.insert_slice %f0 into %e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    %b1 = tensor.insert_slice %f1 into %a1[0, 8, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    %c1 = tensor.extract_slice %b1[0, 0, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %f2 = ... %c1 ...
    %c2 = tensor.insert_slice %f2 into %b1[0, 16, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
    ```
  }];
  let statistics = [
    Statistic<"numShared", "num-shared",
              "concats built in the buffer of a longer one">
  ];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def ResultsInPlace : Pass<"kiln-results-in-place", "mlir::func::FuncOp"> {
  let summary = "give a reshaped result's buffer the result's shape, so it needs no copy";
  let description = [{
    Runs on tensors, right before bufferization. A result that is a reshape
    of the buffer its producer writes (a convolution computed as a matmul
    over `[N, G, Mg, H*W]` and returned as `[N, M, H, W]`) would bufferize to
    a view of an intermediate buffer, which `buffer-results-to-out-params`
    then copies into the caller's buffer. Following the result back through
    reshapes, the tied outputs of destination-style ops and loop results to
    the `tensor.empty` it is written into, the pass replaces that use by an
    empty tensor of the result's shape seen through the inverse reshapes.
    After bufferization the reshapes fold away, the returned buffer is the
    allocation itself, and the producer writes the caller's buffer.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<1x1x8x36xf32>
    %r = linalg.generic ... outs(%e : tensor<1x1x8x36xf32>) -> tensor<1x1x8x36xf32>
    %y = tensor.expand_shape %r [[0], [1], [2], [3, 4]] ... into tensor<1x1x8x6x6xf32>
    return %y : tensor<1x1x8x6x6xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<1x1x8x6x6xf32>
    %c = tensor.collapse_shape %e [[0], [1], [2], [3, 4]] : ... into tensor<1x1x8x36xf32>
    %r = linalg.generic ... outs(%c : tensor<1x1x8x36xf32>) -> tensor<1x1x8x36xf32>
    %y = tensor.expand_shape %r [[0], [1], [2], [3, 4]] ... into tensor<1x1x8x6x6xf32>
    return %y : tensor<1x1x8x6x6xf32>
    ```
  }];
  let statistics = [
    Statistic<"numResults", "num-results", "results given their own buffer's shape">
  ];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def PlanMemory : Pass<"kiln-plan-memory", "mlir::func::FuncOp"> {
  let summary = "plan every intermediate buffer at a fixed offset of one arena argument";
  let description = [{
    Runs after bufferization and `buffer-results-to-out-params`, when the
    only `memref.alloc`s left are intermediates with static shapes (results
    are already out-params written by their producers, straight into the
    caller's buffers). Appends one `memref<Nxi8>` argument, the arena the
    caller owns, and replaces each allocation by a `memref.view` at a fixed,
    aligned offset; deallocations are dropped. The generated code therefore
    never allocates at run time.

    Liveness follows the op order, the static schedule `kiln-schedule`
    chose: a buffer lives from its allocation to the last op that touches
    it or any memref made from it (views, reshapes, casts). Buffers whose
    live ranges do not overlap share storage: offsets come from an interval
    packer that tries several greedy orders and keeps the smallest arena
    (passes/lib/Algorithms/ArenaPacker.cpp).

    In-place reuse (option `in-place`, on by default): the output of an
    elementwise op takes its input's storage when, at buffer level,
    - the op is a top-level linalg op with only parallel loops and a single
      output whose payload does not read the output's old value;
    - input and output are whole allocations of the same memref type (the
      input possibly read through contiguous collapse/expand_shape views
      of its allocation), accessed through the same permutation indexing
      map, so every output
      element is written at the address of the input element it is
      computed from, after reading it;
    - this op is the input's last access (through any view of it, and of
      every buffer already sharing its storage) and the output's first;
    - no other operand of the op reads the input's storage.
    An input read later (e.g. `y = exp(x); z = x + y`) keeps its own buffer.
    Only allocations take part: graph inputs (arguments) are never written,
    and outputs are the caller's buffers, never arena storage.

    The pass records on the function the arena size, the live-set lower
    bound (most bytes live at one step, each buffer rounded up to the
    alignment) and the no-reuse total (every buffer alone, also rounded) as
    `kiln.arena_bytes`, `kiln.arena_lower_bound_bytes` and
    `kiln.arena_no_reuse_bytes`, and the whole plan (offset, size and live
    range of every buffer, the ONNX node that made it) as
    `kiln.memory_plan`, for readers of printed IR. The same three totals
    are pass statistics too (Debian's LLVM is built without statistics, so
    `--mlir-pass-statistics` prints them empty). The code generators do
    not read the attributes back: kilnc creates the pass with a sink
    (`createPlanMemoryPass`, codegen/include/kiln/Codegen/MemoryPlan.h)
    that receives the same plan as a typed value, which the header, the
    descriptor and `kilnc --emit=memory-plan` are written from.

    Before:
    ```mlir
    func.func @f(%x: memref<4xf32>, %y: memref<4xf32>) {
      %t = memref.alloc() : memref<4xf32>
      ...
    }
    ```
    After:
    ```mlir
    func.func @f(%x: memref<4xf32>, %y: memref<4xf32>, %arena: memref<64xi8>)
        attributes {kiln.arena_bytes = 64 : i64, ...} {
      %c0 = arith.constant 0 : index
      %t = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "byte alignment of every buffer and of the arena itself">,
    Option<"inPlace", "in-place", "bool", "true",
           "let an elementwise op write its output over an input that dies there">
  ];
  let statistics = [
    Statistic<"numBuffers", "num-buffers", "allocations placed in the arena">,
    Statistic<"numInPlace", "num-in-place", "outputs written over a dying input">,
    Statistic<"arenaBytesStat", "arena-bytes", "bytes of the planned arena">,
    Statistic<"lowerBoundBytesStat", "lower-bound-bytes",
              "most bytes live at one step">,
    Statistic<"noReuseBytesStat", "no-reuse-bytes",
              "bytes without any reuse">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def ApproximateMath : Pass<"kiln-approximate-math", "mlir::func::FuncOp"> {
  let summary = "f32 exp, expm1, log, log1p, log2, tanh and erf as polynomials";
  let description = [{
    Replaces these f32 `math` ops (scalar or vector) by MLIR's polynomial
    approximations (`populateMathPolynomialApproximationPatterns`): range
    reduction, a polynomial and bit manipulation, with infinities, NaN and
    the ends of the range handled. What they replace is a call into libm
    per element, which keeps the loop around it scalar; the approximations
    are arithmetic that LLVM vectorizes. Errors are within a few ulp over
    the normal range; denormal results flush to zero. f16 and bf16 math
    computes in f32 first (`math-extend-to-supported-types`), so it is
    approximated too. Other functions (sin, cos, atan, ...) keep libm.

    Before:
    ```mlir
    %y = math.exp %x : f32
    ```
    After: `arith` and `math.fma`/`math.floor` ops only.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::x86vector::X86VectorDialect"];
}

def LowerCopies : Pass<"kiln-lower-copies", "mlir::func::FuncOp"> {
  let summary = "turn memref.copy into linalg.copy";
  let description = [{
    `memref.copy` between buffers that are not both contiguous lowers to a
    call into MLIR's C runner library (`memrefCopy`), which an artifact must
    not depend on. Rewritten as `linalg.copy`, every copy becomes loops
    that LLVM turns back into `memcpy` where the data is contiguous.

    Before:
    ```mlir
    memref.copy %src, %dst : memref<2x2xf32, strided<[4, 1]>> to memref<2x2xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%src : memref<2x2xf32, strided<[4, 1]>>) outs(%dst : memref<2x2xf32>)
    ```

    It also rewrites, as `memref.reinterpret_cast` with the strides
    computed from the sizes, each `memref.expand_shape` of a contiguous
    buffer at offset 0 that gives one group several dynamic sizes (a 1-D
    view of a run's elements read as `[batch, seq, 4]`, decision 0027):
    MLIR 22's `expand-strided-metadata` crashes on those.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def TileDynamicSizes : Pass<"kiln-tile-dynamic-sizes", "mlir::func::FuncOp"> {
  let summary = "split loops over run-time sizes into tiles of static shapes";
  let description = [{
    Runs on linalg on tensors, after kiln-lower-to-linalg and before the CPU
    schedules, which work on static shapes only.

    First, per-image chains: where a kernel's ops (a convolution over more
    than 64 output positions, its padded input's pad and reshapes, its
    fill, and the elementwise ops after it) have the batch as their only
    run-time size and only the chain reads their results, the whole chain
    runs once per image in one `scf.for` over the batch, on static
    [1, ...] slices. The convolution schedule then sees what a batch-1
    compile gives it: the padded input read as shifted rows, and the bias
    and activation in the convolution's tiles.

    Then each loop of a structured op whose extent still depends on
    symbolic dimensions (decision 0027) is split into pieces of static
    extent, outer loops first:

    - whole tiles of a chunk in a loop, then whole tiles of the next chunk
      over what is left, and so on; when the last chunk is above one, the
      1 to chunk - 1 left go through an `scf.index_switch` on their count,
      a case per count, each yielding the whole updated output (so that
      one-shot bufferization writes in place);
    - the chunks: an f32 contraction's rows (m) `cache-m` then `tile-m`;
      its columns (n) and its reduction (k, attention's probabilities
      times values) `tile-n` then one; any other op's innermost loop
      (a softmax row over the sequence) `tile-n` then one; any other
      dynamic parallel loop, or one that an operand reads through an
      expression (a convolution window), is tiled by one;
    - parallel loops first, then reductions; pieces run in the loop's
      order, so a reduction updates its output in the same sequence. An op
      whose body reads its loop indices (`linalg.index`: gathers, arg-max)
      is tiled by one (tileUsingSCF offsets the indices) and keeps its
      dynamic reductions.

    Each piece is a copy of the op on slices, so the matmul, convolution
    and elementwise schedules take it as they take a static model's ops.
  }];
  let options = [
    Option<"tileM", "tile-m", "int64_t", "6", "register tile rows">,
    Option<"tileN", "tile-n", "int64_t", "16", "register tile columns">,
    Option<"cacheM", "cache-m", "int64_t", "96", "cache tile rows">
  ];
  let statistics = [
    Statistic<"numTiled", "num-tiled", "loops over run-time sizes tiled">,
    Statistic<"numPerImage", "num-per-image",
              "chains over a run-time batch run one image at a time">,
    Statistic<"numSplit", "num-split",
              "loops split into pieces of static extents">
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect"
  ];
}

def ScheduleMatmul : Pass<"kiln-schedule-matmul", "mlir::func::FuncOp"> {
  let summary = "tile, peel and vectorize f32 matmuls on tensors for the CPU";
  let description = [{
    Runs on linalg on tensors, before bufferization. Every f32 contraction
    with one m, n and k dim (`linalg.matmul`, and the batched matmul
    `linalg.generic`) is tiled for the cache (`cache-m/n/k`) and then for
    registers (`tile-m` x `tile-n`, k one at a time). Each tiled loop is
    peeled, so every tile, remainders included, has a static shape. A k
    longer than `cache-k` is cut into equal tiles where it has a divisor
    between `cache-k / 2` and `cache-k` (576 into three of 192), so that no
    remainder tile repeats the register tiles' code. Rows that pass
    `cache-m` by at most a quarter are one m tile (49 positions of a 7x7
    image, not 48 and 1: each m tile reads all of B once). The
    register tiles are vectorized; their accumulators are hoisted out of the
    k loop and the contraction becomes `vector.fma` on rows of `tile-n`
    lanes. The CPU code generator picks the tile from the target (13x32 with
    AVX-512, 6x16 with AVX, 4x8 otherwise). The output tiles are made
    first and k is cache-tiled inside them, so when the output starts as a
    constant `linalg.fill` the fill moves into each output tile, in front
    of its k loop (the tile is filled while it is in cache, just before its
    register tiles read it), instead of filling the whole output first.
    When k fits one cache tile (one reduction loop, at most `cache-k`),
    the fill goes further down, to the register tiles, and is folded away:
    their accumulators start as the constant and the output is written
    once, with no fill stored and no accumulator loaded.

    An elementwise op that consumes a contraction's result through reshapes
    (the bias, activation and residual add that kiln-fuse grouped with a
    matmul or convolution) runs per output cache tile, right after the
    tile's register tiles, while the tile is still in cache
    (`fuse-epilogues`): it is rewritten onto the contraction's own index
    space, with the contraction's output as its output (updated in place),
    and tiled with the contraction fused into each tile. Its other operands
    are re-indexed through the common refinement of the two shapes, so a
    per-channel bias of a convolution computed as `[N, G, Mg, H*W]` is read
    along `Mg`; an operand indexed by part of a flattened dim (by the image
    row alone), or by the columns a shifted-rows convolution computes past
    the real ones (a residual), keeps the epilogue a separate pass.
    Depthwise convolutions apply their epilogue to each row vector before
    it is stored, and start their accumulators from the output's fill value
    instead of a filled output. 2-D max poolings take the depthwise path
    too, with a vector max per tap and the -inf padding left out.

    First, f32 convolutions (the `linalg.generic` kiln-lower-to-linalg emits
    for `kiln.conv`) become an im2col copy into a
    `[N, G, Cg*K..., O...]` tensor and a grouped matmul, which is then
    scheduled like the others. Depthwise 2-D convolutions (one input and one
    output channel per group), where that copy would cost more than the
    arithmetic, instead become loops over batch, channel and output row with
    `tile-n / 2`-lane `vector.fma`s per filter tap and column chunk, reading
    the input rows in place. At stride 1 with padding that keeps the plane's
    size, a plane of up to 1024 unrolled FMAs is instead one flat row of
    positions per channel: a tap reads the flat input at a constant offset
    from the flat output position, so every read is one full vector, with
    the lanes that fall on the padding zeroed by a constant select (or a
    shuffle where the read would leave the plane). A 1x1 convolution at stride 1 makes no copy:
    its column matrix is the input, reshaped. Other stride-1 convolutions
    make none either (`shifted-rows`): with each padded input channel
    flattened, output position p reads element p + (offset of the tap), so
    every (tap, input channel) row of the matmul's right-hand side is a
    contiguous run of the input. The matmul computes every position of the
    padded row width and the result is a slice of it; convolutions where
    those extra columns would add more than 15 % of the work (3x3 over 7x7)
    keep im2col. An im2col column buffer larger than 1 MB (the 7x7
    stride-2 first layer of a ResNet: 7.4 MB) is made a block of output rows
    (of a 1-D convolution, of output positions: a multiple of 16 of them,
    the rest one block more) at a time, at most 512 KB,
    into a buffer the next block reuses, so it is read back from cache, not
    memory; the blocks run as up to four parallel chunks, each with its own
    buffer, and the conv's epilogue is applied per block. The input gets zero rows at the bottom (added to its own
    padding) so the last taps stay in bounds, and the filter is transposed,
    at compile time when constant, so that the input channel is the
    contiguous k loop. Depthwise convolutions whose output rows are
    narrower than the row FMAs' `tile-n / 2` lanes and that are not flat rows
    take this path too (with up to 50 % extra positions), instead of one
    partial vector per row. A
    convolution over a small image (at most 64 output
    positions, at least `tile-n` output channels per group) is computed the
    other way round, positions x channels, from a transposed im2col copy:
    49 positions as columns would make register tiles of 32, 16 and 1
    columns, while as rows only the last row tile is partial, and a
    constant filter is packed into channel panels like any weight (the
    panel loop, its only parallel one when the product fits one cache tile,
    is marked as the cache tiles' are). So is
    a convolution of up to 1,024 positions that cannot be shifted rows
    (1x1, strided, or too sparse) with a deep reduction into few channels
    (at least 1,024 products per output and twice the output channels: a
    1x1 2048 -> 512), whose input the matmul would otherwise read unpacked.

    Before all of these, a 3x3 stride-1 convolution with one group, a
    constant filter, at least 32 input and output channels and at least
    49 2x2 output tiles per image (an odd side rounds up: its last tiles
    read one more zero row or column, and the extra outputs are sliced
    off) is computed as Winograd's F(2x2, 3x3) (`winograd`): the padded
    input's columns are
    split into even and odd ones; one generic reads, through 16 strided
    views of those, the 4x4 input tile of every 2x2 block of outputs and
    writes the 16 points of `B^T d B` (additions only, vectorized along
    the tile row); 16 matmuls `[M, C] x [C, tiles]` with the transformed
    filters `G g G^T`, computed at compile time, make the 16 products per
    tile and channel that a direct convolution makes 36 of; one generic
    computes the four outputs `A^T m A` of each tile and one interleaves
    them into the output, both split among threads by image and channel.

    Then a constant right-hand side (a weight) `[K, N]`, or `[N, K]` read
    transposed, with N a multiple of `tile-n` is reordered at compile time
    into `[N / tile-n, K, tile-n]` panels (`pack-weights`): the register
    tile's row of B for each k is then one contiguous read, and the k loop
    walks the panel front to back instead of striding by N. A constant
    whose N is not a multiple of `tile-n` but holds at least two whole
    panels (a classifier's 1000 columns) is split there: the whole panels
    packed, the rest a row-major `[K, rest]` constant, two contractions
    writing their columns of the output through `tensor.extract_slice` /
    `tensor.insert_slice` (an epilogue then runs after both, not per
    tile). A transposed weight with fewer whole panels is stored row-major
    `[K, N]`, so its rows are still read with plain vector loads.
    A right-hand side computed at run time (a training step's weights and
    gradients) with whole panels, at least 64K elements and at least
    `2 * tile-m` rows to reuse it is packed into the same panels at run
    time, by a `linalg.transpose` in front of the contraction: a copy of
    K x N elements for M x K x N multiply-adds. A smaller one read
    transposed (attention's Q K^T) is transposed once into a `[K, N]` copy
    before a contraction of at least `tile-m` rows, rather than gathered
    one element at a time.

    Before:
    ```mlir
    %r = linalg.matmul ins(%a, %b : tensor<64x784xf32>, tensor<784x512xf32>)
                       outs(%c : tensor<64x512xf32>) -> tensor<64x512xf32>
    ```
    After (innermost loop):
    ```mlir
    %r:8 = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc0 = %init0, ...) {
      %a0 = vector.transfer_read ... : tensor<64x784xf32>, vector<1xf32>
      %b = vector.transfer_read ... : tensor<784x512xf32>, vector<32xf32>
      %s0 = vector.broadcast %e0 : f32 to vector<32xf32>
      %f0 = vector.fma %s0, %b, %acc0 : vector<32xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"tileM", "tile-m", "int64_t", "8", "register tile rows">,
    Option<"tileN", "tile-n", "int64_t", "32", "register tile columns">,
    Option<"cacheM", "cache-m", "int64_t", "64", "cache tile rows">,
    Option<"cacheN", "cache-n", "int64_t", "64", "cache tile columns">,
    Option<"cacheK", "cache-k", "int64_t", "64", "cache tile depth">,
    Option<"im2col", "im2col", "bool", "true",
           "rewrite f32 convolutions as an im2col copy and a matmul first">,
    Option<"shiftedRows", "shifted-rows", "bool", "true",
           "read stride-1 convolutions' inputs as shifted rows, no im2col copy">,
    Option<"maxColumnElements", "max-column-elements", "int64_t",
           "67108864", "largest im2col buffer, in elements">,
    Option<"winograd", "winograd", "bool", "true",
           "compute 3x3 stride-1 convolutions with a constant filter as "
           "Winograd's F(2x2, 3x3)">,
    Option<"packWeights", "pack-weights", "bool", "true",
           "store constant right-hand sides in panels of tile-n columns">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", "true",
           "compute elementwise epilogues per output cache tile">,
    Option<"prepareOnly", "prepare-only", "bool", "false",
           "only the steps that read weights (rewrite convolutions, pack "
           "weights, copy operands read transposed), then mark the "
           "function kiln.contractions_prepared; a marked function skips "
           "them">
  ];
  let statistics = [
    Statistic<"numVectorized", "num-vectorized", "register tiles vectorized">,
    Statistic<"numConvs", "num-convs", "convolutions rewritten as im2col + matmul">,
    Statistic<"numTransposedRhs", "num-transposed-rhs",
              "right-hand sides read along k copied to a [k, n] layout first">,
    Statistic<"numTransposedLhs", "num-transposed-lhs",
              "left-hand sides read along m copied to an [m, k] layout first">,
    Statistic<"numPositionRows", "num-position-rows",
              "convolutions over small images or deep reductions computed as positions x channels">,
    Statistic<"numShifted", "num-shifted",
              "convolutions rewritten as a matmul over shifted input rows">,
    Statistic<"numDepthwise", "num-depthwise",
              "depthwise convolutions vectorized over output rows">,
    Statistic<"numWinograd", "num-winograd",
              "3x3 convolutions computed as Winograd's F(2x2, 3x3)">,
    Statistic<"numPacked", "num-packed",
              "constant right-hand sides stored in panel order">,
    Statistic<"numPackedAtRunTime", "num-packed-at-run-time",
              "computed right-hand sides copied into panel order">,
    Statistic<"numFillsMoved", "num-fills-moved",
              "output fills moved into the cache tiles">,
    Statistic<"numEpilogues", "num-epilogues",
              "elementwise epilogues computed per output cache tile">
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect", "mlir::vector::VectorDialect"
  ];
}

def PrefetchPanels : Pass<"kiln-prefetch-panels", "mlir::func::FuncOp"> {
  let summary = "prefetch the rows of B the next k tile of a register tile reads";
  let description = [{
    Runs on buffers, after kiln-schedule-matmul's register tiles are
    bufferized. In each register tile's k loop (an `scf.for` that carries
    vectors and holds `vector.fma`) every whole-row read of a view that
    takes row `k` of a buffer defined outside the loop gets one
    `memref.prefetch` (read, locality 2: into L2) per cache line of the row
    one loop's length ahead: row `k + 256` of a 256-step k tile, which is
    the same columns of the next k tile, or, past the last one, the first
    rows of the next packed panel (panels are stored one after the other).
    A prefetch never faults, so reading past the view is harmless.

    Without it a weight too large for the caches (ResNet-50's deeper 1x1
    convolutions, 1-4 MB each) is read from memory only by the first
    register tile of each k tile, in a burst, while the other tiles of
    the cache tile compute on cached rows without touching memory: one
    core ran a chain of 1x1 1024->1024 convolutions over 7x7 1.38x slower
    than ONNX Runtime although each one alone, with its weight cached, was
    as fast. Every register tile of the cache tile issues the prefetches
    (the later ones find the lines already there), so the next tile's
    rows stream in during all of them.

    Loops of fewer than `min-trips` steps are left alone, and so are tiles
    of fewer than `min-rows` rows (FMAs per step): a matrix-vector
    product's one row is bound by its loads, and a prefetch is one more.

    Before:
    ```mlir
    %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %init) -> (vector<13x32xf32>) {
      %row = memref.subview %panel[0, %k, 0] [1, 1, 32] [1, 1, 1] : ...
      ...
    }
    ```
    After:
    ```mlir
    %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %init) -> (vector<13x32xf32>) {
      %next = arith.addi %k, %c256 : index
      memref.prefetch %panel[%c0, %next, %c0], read, locality<2>, data : ...
      memref.prefetch %panel[%c0, %next, %c16], read, locality<2>, data : ...
      %row = memref.subview %panel[0, %k, 0] [1, 1, 32] [1, 1, 1] : ...
      ...
    }
    ```
  }];
  let options = [
    Option<"minTrips", "min-trips", "int64_t", "8",
           "fewest steps of a k loop that gets prefetches">,
    Option<"minRows", "min-rows", "int64_t", "4",
           "fewest rows (FMAs per step) of a register tile that gets prefetches">,
  ];
  let statistics = [
    Statistic<"numPrefetches", "prefetches", "prefetches inserted">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def VectorizeElementwise : Pass<"kiln-vectorize-elementwise", "mlir::func::FuncOp"> {
  let summary = "tile f32 elementwise loop nests to the vector width and vectorize them";
  let description = [{
    Runs on linalg on tensors, after kiln-schedule-matmul. Every
    `linalg.generic` whose loops are all parallel, whose operands are all
    static f32 tensors read contiguously along the innermost loop (or
    broadcast across it) and whose innermost loop has at least `min-width`
    iterations (the elementwise ops, and the nests kiln-lower-to-linalg fused
    out of a kernel) is tiled by one on every loop but the innermost, which
    is tiled by `width`; that loop is peeled so the tiles and the remainder
    have static shapes, and each tile becomes vector transfers and vector
    arithmetic. The CPU code generator sets `width` to its register tile
    width (two vector registers). A `linalg.transpose` that keeps the
    innermost dim in place (it moves whole rows) is turned into such a
    generic first; one that swaps the two innermost dims, both at least
    one vector register's lanes (`width / 2`: 16 on AVX-512, 8 on AVX2, 4 on
    SSE), is done in blocks of that side, each read as rows, transposed in
    registers by shuffles and written as rows; the loops over the blocks
    are parallel when it moves enough data, and the rows and columns past
    the last whole block (a 7x7 image's 49th position) stay a
    `linalg.transpose` of that slice. A read that broadcasts a value along the row (a row's
    max or mean) reads it once and broadcasts it.

    Row reductions (`reductions`): a generic whose only reduction loop is
    the innermost one, with at most 1024 iterations (softmax's max and sum,
    layer norm's mean and variance, with the elementwise producers fused
    into them), is tiled by one on its parallel loops and vectorized whole:
    each row becomes vector loads, the fused arithmetic on vectors and a
    `vector.reduction`, which the LLVM lowering reassociates into a tree.
    Accumulations into an output of any other reduction are marked
    `fastmath<reassoc>` so LLVM's loop vectorizer may split them into lanes.
    Either way only the order of the additions changes.

    Before:
    ```mlir
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) { ... arith.maximumf ... }
    ```
    After:
    ```mlir
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c32 step %c32 {
        %v = vector.transfer_read ... : tensor<4x40xf32>, vector<1x32xf32>
        %m = arith.maximumf %v, %zero : vector<1x32xf32>
        ...
      }
      // the remainder: vector<1x8xf32>
    }
    ```
  }];
  let options = [
    Option<"width", "width", "int64_t", "32", "lanes per tile of the innermost loop">,
    Option<"minWidth", "min-width", "int64_t", "4",
           "shortest innermost loop worth vectorizing">,
    Option<"reductions", "reductions", "bool", "true",
           "also vectorize row reductions and reassociate reduction accumulators">
  ];
  let statistics = [
    Statistic<"numNests", "num-nests", "elementwise loop nests and row reductions vectorized">
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect", "mlir::vector::VectorDialect"
  ];
}

def OutlineParallelLoops
    : Pass<"kiln-outline-parallel-loops", "mlir::ModuleOp"> {
  let summary = "outline the loops marked kiln.parallel into bodies run over index ranges";
  let description = [{
    Runs on buffers, after kiln-plan-memory: every function is one block
    of static memrefs, and every buffer a loop touches is an argument or a
    view of the arena, never a per-iteration allocation. The schedules mark
    loops whose iterations write disjoint parts of their outputs and read
    nothing another iteration writes (the cache-tile loops of a matmul's
    output, the im2col copy, the depthwise channel loop, the outer loops of
    elementwise nests) with `kiln.parallel`, and only where the whole loop
    does enough work to pay for a fork and join.

    Each such loop at the top level of a function, with constant bounds, no
    results and at least two iterations, becomes a private function
    `<f>_body<N>(captured..., %lo, %hi)` that runs iterations [lo, hi), and
    the loop becomes a call to the external `<f>_region<N>(%par,
    captured..., %n)` when `%par` is not null, and of the body over [0, n)
    when it is. `%par` is an `!llvm.ptr` argument appended to the function
    once (the runtime's kiln_parallel_t, or null). The CPU code generator
    defines each region in LLVM IR: serially, or through the caller's
    dispatcher, which splits [0, n) into disjoint ranges. Every iteration
    computes exactly what it computes serially, so the results do not
    depend on the thread count. Captured constants are cloned into the
    body; a loop that captures anything else but a static memref stays
    serial. A marked loop of fewer than 16 iterations whose body is views,
    index arithmetic and one marked loop of constant bounds is first made
    one loop over the pairs (`affine.delinearize_index` splits the index;
    the views move inside): a product's 3 m cache tiles by 8 weight panels
    are 24 iterations to split, not 3. The marks are removed everywhere.

    A body receives the arena views, globals and arguments it uses, not
    their offsets, so loops that differ only in where their buffers sit (a
    network's repeated blocks) print the same and share one body and one
    region: each distinct loop's code is generated once. Unmarked top-level
    loops likewise become `<f>_loop<N>(captured..., 0, n)`, one function
    per distinct loop, called at each place: the function left behind is
    a list of calls, and LLVM never sees one function of every layer's
    code (its loop passes grow faster than linearly with a function's
    size). A top-level loop that cannot take that form (bounds known only
    at run time, scalar results, scalars or views of run-time size
    captured: the code over sizes computed from data, decision 0031)
    becomes `<f>_loop<N>(captured...)`, which runs the whole loop and
    returns its results; it takes the scalars it uses and the static
    buffer under each view of run-time size, with the view's byte offset,
    and rebuilds the view inside, so such loops at different places in
    the arena share one function too. The CPU pipeline runs
    `convert-linalg-to-loops` first, so padding copies, layout transposes
    and fills are loops here too; the code generator makes bodies and
    loops `noinline`. A captured arena
    view that no other capture overlaps, and a constant global, is
    `llvm.noalias` in the body, which tells LLVM what the constant offsets
    from one arena base told it in place (docs/decisions/0026).

    Before:
    ```mlir
    scf.for %i = %c0 to %c512 step %c64 {
      ... reads %a, writes %subview of %out at %i ...
    } {kiln.parallel}
    ```
    After:
    ```mlir
    func.call @f_region0(%par, %a, %out, %c8) : (!llvm.ptr, memref<...>, memref<...>, index) -> ()
    ...
    func.func private @f_body0(%a: memref<...>, %out: memref<...>, %lo: index, %hi: index) {
      scf.for %i = %lo*64 to %hi*64 step %c64 { ... }
    }
    ```
  }];
  let statistics = [
    Statistic<"numOutlined", "num-outlined", "parallel loops outlined">,
    Statistic<"numShared", "num-shared",
              "serial loops replaced by a call of their function">
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect", "mlir::scf::SCFDialect"
  ];
}

def OutlineKernels : Pass<"kiln-outline-kernels", "mlir::ModuleOp"> {
  let summary = "move each kernel into a function that identical kernels share";
  let description = [{
    Runs on linalg on tensors, after kiln-mark-kernels' probes and before
    the CPU schedules. The ops between two probes of a function are one
    kernel (constants aside). A kernel of structured, tensor and arithmetic
    ops on static tensors, vectors and scalars, with at least one linalg op,
    becomes a private function `<f>.kernel<N>` marked `kiln.kernel_body`:
    its arguments are the values it uses from outside, in order of use
    (weights included), except scalar and splat constants, which it
    rebuilds; its results are the values used after it. The kernel is
    replaced by a call. A kernel whose function prints the same as an
    earlier one's (without locations) calls that one instead, and the call
    carries the pairs of locations (`kiln.kernel_locs`) that give the copy
    kiln-inline-kernels puts back its own ONNX nodes. Kernels that touch
    memrefs, calls or run-time sizes stay in place.

    The schedules (func.func passes) then run once per distinct kernel,
    and on kilnc's threads. Run kiln-schedule-matmul with `prepare-only`
    on the function first: packing weights needs their values, which the
    shared body does not have.
  }];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "kernels moved into functions">,
    Statistic<"numShared", "num-shared",
              "kernels that call an earlier kernel's function">
  ];
}

def InlineKernels : Pass<"kiln-inline-kernels", "mlir::ModuleOp"> {
  let summary = "put a copy of each kernel function back at each of its calls";
  let description = [{
    Undoes kiln-outline-kernels once the schedules have run: each call of a
    `kiln.kernel_body` function is replaced by a copy of the body, with its
    arguments replaced by the call's operands and, where the call has
    `kiln.kernel_locs`, each location of the body replaced by the one of
    the kernel the call stands for. The functions are then erased, and the
    `kiln.contractions_prepared` marks removed.
  }];
}

def MarkKernels : Pass<"kiln-mark-kernels", "mlir::ModuleOp"> {
  let summary = "mark where each kernel starts, for per-kernel profiling";
  let description = [{
    Runs first in the CPU lowering, on the kiln dialect after kiln-fuse.
    In every public function with a body, each top-level op that becomes
    code (a `kiln.fused` kernel, or a core op kiln-fuse left alone; not a
    constant or a reshape) gets a call `func.call @"kiln.kernel_probe"(%i)`
    before it, numbering the kernels in schedule order, and one more call
    with the kernel count ends the last. The calls are opaque to the passes
    that follow, so every op of kernel `i` stays between probe `i` and probe
    `i + 1`. The function gets `kiln.kernel_names` (the ONNX nodes of each
    kernel, comma-separated) and `kiln.kernel_flops` (two per multiply-add
    of its matrix products and convolutions; 0 where it has none).
    kiln-instrument-kernels gives the probes their profiler.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect"];
}

def InstrumentKernels : Pass<"kiln-instrument-kernels", "mlir::ModuleOp"> {
  let summary = "give the kernel probes the caller's profiler";
  let description = [{
    Runs after kiln-outline-parallel-loops. Every public function with
    `kiln.kernel_names` gets one more argument, last, an `!llvm.ptr` (the
    runtime's kiln_profiler_t, or null), and its `kiln.kernel_probe(%i)`
    calls become `<f>_probe(%prof, %i)`. The CPU code generator defines
    `<f>_probe`: nothing when the pointer is null, else one call of the
    profiler's function with the kernel's index.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect"];
}

def SinkAllReduceWaits : Pass<"kiln-sink-all-reduce-waits", "mlir::func::FuncOp"> {
  let summary = "wait for each bucket's all-reduce only where its buffers are next touched";
  let description = [{
    Runs after bufferization, before kiln-plan-memory. Bufferization turns
    a bucket's `kiln.all_reduce` into a start call and a wait call on the
    bucket's buffers, next to each other. This pass moves each wait down
    to just before the first later op that touches any of those buffers
    (or a view of them), usually the optimizer's first read, so that the
    communication overlaps everything computed in between. The wait still
    touches the buffers, so the arena plan keeps them alive until then.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::memref::MemRefDialect"];
}

def HoistConvOutputs : Pass<"kiln-hoist-conv-outputs", "mlir::func::FuncOp"> {
  let summary = "allocate a padded convolution's outputs before its pad copy";
  let description = [{
    CUDA only; runs after bufferization, before kiln-plan-memory. The
    CUDA printer lets cuDNN pad a convolution's input instead of running
    the zero fill and the pad copy the lowering made (decision 0019), so
    cuDNN reads the copy's source at the convolution. The arena plan takes
    live ranges from the op order: after the copy the source's bytes are
    free, and the convolution's output, allocated after it, often takes
    them, which keeps the copy. For each copy into a subview of a fresh
    buffer that a convolution (a generic with reduction loops) reads next,
    this pass moves the allocations of the convolution's output and of the
    elementwise generic that reads it next (its epilogue) above the copy,
    so the plan gives them bytes apart from the source. Only static
    allocations move; the printer still checks every byte range.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def ConnectCollectives : Pass<"kiln-connect-collectives", "mlir::ModuleOp"> {
  let summary = "give the bucket calls the caller's collectives";
  let description = [{
    Runs after kiln-instrument-kernels. A public function that calls
    `kiln.all_reduce_start.<k>` or `kiln.all_reduce_wait.<k>` gets one more
    argument, last, an `!llvm.ptr` (the runtime's kiln_collectives_t, or
    null), and the calls become `<f>_bucket<k>_start(%coll, buffers...)`
    and `<f>_bucket<k>_wait(%coll, buffers...)`. The CPU code generator
    defines those: nothing when the pointer is null (one rank), else one
    call of the collectives' start or wait with the bucket's index and its
    buffers' addresses.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect"];
}

#endif // KILN_CODEGEN_PASSES_TD

//===- Passes.td - graph-level passes on the kiln dialect --*- tablegen -*-===//
//
// Every graph pass is declared here with its documentation; docs/passes.md is
// generated from this file. One pass per file in passes/lib, named like its
// definition; the pipeline that orders them is compiler/lib/Pipeline.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def DeadCodeElimination : Pass<"kiln-dce", "mlir::func::FuncOp"> {
  let summary = "remove ops whose results nothing uses";
  let description = [{
    Erases every side-effect-free op whose results have no uses, walking the
    function backwards (regions, blocks and ops) so that whole dead chains and
    diamonds go in one sweep, including inside nested regions. Values returned from the function and everything they depend on
    are used by definition and always stay.

    Before:
    ```mlir
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %dead = kiln.exp %x : tensor<4xf32>
      %y = kiln.relu %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = kiln.relu %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    ```
  }];
  let statistics = [
    Statistic<"numErased", "num-erased", "ops erased because nothing used them">
  ];
}

def Schedule : Pass<"kiln-schedule", "mlir::func::FuncOp"> {
  let summary = "reorder the graph's ops to lower peak live memory";
  let description = [{
    Chooses a new topological order for the ops of the function's entry
    block, the static schedule that memory planning and code generation then
    follow. Each op is a node whose result tensors take their static size in
    bytes from the op that produces them until their last reader; constants
    and values returned to the caller take none. A greedy list scheduler
    picks, among the ops whose operands are ready, the one that leaves the
    fewest bytes live (frees the most, allocates the least), ties going to
    the op that makes more ops ready (finishing a branch before opening
    another), then to the original order; two such heuristics are
    simulated beside the original order and the lowest peak wins, the
    original order on a tie. A reshape counts as a view of its input (it
    bufferizes to one): it takes no bytes and keeps its input live.
    So a chain, or any graph where no order is better, is left untouched.

    Ops are only reordered within the entry block and moved whole with their
    regions; ops with side effects keep their relative order; the terminator
    stays last. The algorithm is IR-free (passes/lib/Algorithms/Scheduler.cpp).

    Before (both 1 MiB results of the exps are live at once):
    ```mlir
    %a = kiln.exp %x : tensor<262144xf32>
    %b = kiln.exp %y : tensor<262144xf32>
    %ra = kiln.reduce_sum %a ... : tensor<1xf32>
    %rb = kiln.reduce_sum %b ... : tensor<1xf32>
    ```
    After (each big result dies before the next is made):
    ```mlir
    %a = kiln.exp %x : tensor<262144xf32>
    %ra = kiln.reduce_sum %a ... : tensor<1xf32>
    %b = kiln.exp %y : tensor<262144xf32>
    %rb = kiln.reduce_sum %b ... : tensor<1xf32>
    ```
  }];
  let statistics = [
    Statistic<"numMoved", "num-moved", "ops whose position changed">,
    Statistic<"peakBytesBefore", "peak-bytes-before",
              "peak live bytes in the original order">,
    Statistic<"peakBytesAfter", "peak-bytes-after",
              "peak live bytes in the chosen order">
  ];
}

def Rematerialize : Pass<"kiln-rematerialize", "mlir::func::FuncOp"> {
  let summary = "recompute cheap values late instead of keeping them live";
  let description = [{
    Lowers the peak of live bytes of the scheduled function to `budget` by
    computing values a second time right before their late readers instead
    of keeping them live across the peak. Made for training graphs, where
    the backward ops read forward activations long after they were made,
    but it works on any function. Runs on the static schedule (after
    kiln-schedule), with the scheduler's liveness model: a value takes its
    static size from its producer to its last reader; constants, graph
    inputs and returned values take nothing; a reshape is a view.

    Only ops implementing `CostOpInterface` are recomputed: elementwise
    math, comparisons, selects, casts, broadcasts, transposes, slices,
    concatenations and reshapes (ir/lib/KilnCost.cpp); never matmul,
    conv, pooling, reductions, gathers or scatters. While the peak exceeds
    the budget, each round looks at the values made before the first peak
    step, live across it and not read there. A try recomputes one of them:
    its readers after the peak read a copy of its producer placed just
    before the first of them, and an operand of the copy that is dead by
    then is recomputed too (up to `max-depth` producers deep), else kept
    live longer. Since keeping an input live (say a matmul's result) pays
    only when several values are recomputed from it, each try is repeated
    with every other such value the copies can also make without keeping
    anything else live longer. The 32 largest values lead a try each. Every
    try is simulated; the round keeps the one with the lowest peak, then the
    fewest steps at the peak, then the least recompute cost (result elements
    times a per-op weight), then the earliest value, if it improves on the
    first two. The algorithm is IR-free
    (passes/lib/Algorithms/Rematerializer.cpp).

    With `budget=0` the pass lowers the peak as far as recomputation can.
    When a nonzero budget cannot be met, it warns with the peak it reached;
    the function is still valid, only larger than asked. A budget already
    met changes nothing. Copies keep their original's location. Nothing
    after this pass may merge them back (kiln-cse would): the compiler runs
    it after the graph pipeline's fixed point and scheduling.

    Before (`budget=1024`; `%e` stays live until the last op, so three
    512-byte tensors are live at the tanh):
    ```mlir
    %e = kiln.exp %x : tensor<128xf32>
    %r = kiln.reduce_sum %e axes = [0] keepdims : tensor<128xf32> -> tensor<1xf32>
    %a = kiln.mul %x, %r : tensor<128xf32>, tensor<1xf32> -> tensor<128xf32>
    %b = kiln.tanh %a : tensor<128xf32>
    %c = kiln.mul %b, %e : tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>
    ```
    After (`%e` is computed again from the input just before its late
    reader, so at most two are live):
    ```mlir
    %e = kiln.exp %x : tensor<128xf32>
    %r = kiln.reduce_sum %e axes = [0] keepdims : tensor<128xf32> -> tensor<1xf32>
    %a = kiln.mul %x, %r : tensor<128xf32>, tensor<1xf32> -> tensor<128xf32>
    %b = kiln.tanh %a : tensor<128xf32>
    %e2 = kiln.exp %x : tensor<128xf32>
    %c = kiln.mul %b, %e2 : tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>
    ```
  }];
  let options = [
    Option<"budget", "budget", "uint64_t", "0",
           "peak live bytes to reach; 0: as low as recomputation gets it">,
    Option<"maxDepth", "max-depth", "unsigned", "8",
           "longest chain of producers recomputed for one value">,
    Option<"remarks", "remarks", "bool", "false",
           "emit a remark at each recomputed op and one with the peaks">
  ];
  let statistics = [
    Statistic<"numRecomputed", "num-recomputed", "values recomputed">,
    Statistic<"numCopies", "num-copies", "ops added to recompute them">,
    Statistic<"peakBytesBefore", "peak-bytes-before",
              "estimated peak live bytes before">,
    Statistic<"peakBytesAfter", "peak-bytes-after",
              "estimated peak live bytes after">
  ];
}

def CommonSubexpressionElimination : Pass<"kiln-cse", "mlir::func::FuncOp"> {
  let summary = "merge ops that compute the same value";
  let description = [{
    Replaces every side-effect-free op by an earlier op of the same name,
    operands, attributes and result types, keeping the first occurrence in
    program order (so the output does not depend on hashing). Beyond
    upstream `cse`:

    * constants are compared by contents, not by attribute identity: a
      `dense_resource` blob and an inline `dense` value with the same bits
      merge, and so do a splat and a non-splat spelling of one value;
    * commutative ops (`add`, `mul`, `max`, `min`, `and`, `or`, `xor`, and
      `cmp eq`/`ne`) match with their operands in either order.

    An op in a nested region may reuse a value from an enclosing region
    defined before it; values never leak out of a region or across blocks.

    Before:
    ```mlir
    %a = kiln.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %b = kiln.add %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r = kiln.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    ```
    After:
    ```mlir
    %a = kiln.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r = kiln.mul %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    ```
  }];
  let statistics = [
    Statistic<"numMerged", "num-merged", "ops replaced by an equal earlier op">
  ];
}

def FoldConstants : Pass<"kiln-fold-constants", "mlir::func::FuncOp"> {
  let summary = "evaluate ops whose operands are all constants";
  let description = [{
    Replaces every kiln op whose operands are all `kiln.constant` by a
    `kiln.constant` holding its value, computed by the constant evaluator
    (kiln/IR/ConstantEvaluator.h): shape arithmetic, casts, elementwise
    math, comparisons and selects, reshape, transpose, broadcast, concat,
    slice, gather, reductions and argmax/argmin. Floats are computed in
    their element type. Ops the evaluator does not model (matmul, conv,
    pool, arithmetic on the narrow storage types, integer division by
    zero) stay for run time, as does any op whose result would have more
    than `max-elements` elements: folding would duplicate a large weight.
    A transpose or reshape that is the only user of its constant operand is
    folded whatever its size (a Gemm's `transB` weight): the folded value
    replaces the weight, so nothing is stored twice. So is any op whose
    result is no larger than a constant operand only it reads (a
    convolution weight times the scale of a folded BatchNorm), and any
    slice of a constant that only slices read, together no more elements
    than it holds (a filter split into its taps). Operands are visited in
    program order, so a chain folds in one sweep.

    Before:
    ```mlir
    %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
    %p = kiln.reduce_prod %s axes = [0] : tensor<2xi64> -> tensor<i64>
    ```
    After:
    ```mlir
    %p = kiln.constant dense<6> : tensor<i64>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "1 << 20",
           "largest result (in elements) that is folded">
  ];
  let statistics = [
    Statistic<"numFolded", "num-folded", "ops replaced by a constant">,
    Statistic<"numTooLarge", "num-too-large",
              "ops left because their result exceeds max-elements">
  ];
}

def Canonicalize : Pass<"kiln-canonicalize", "mlir::func::FuncOp"> {
  let summary = "simplify kiln ops with their folders and algebraic patterns";
  let description = [{
    Runs the kiln ops' folders (x + -0.0, x * 1, x - 0, x / 1, double
    negation, transpose of transpose with composed permutations, identity
    transpose, reshape of reshape, cast to the same type, one-input concat,
    full slice, empty reduction) and these patterns to a fixed point:

    * `x * 0` -> `0` for integer types only (for floats NaN, infinities and
      -0.0 make it wrong), when no broadcast changes the result type;
    * `x - c` -> `x + (-c)` for a constant `c` that feeds a conv or matmul
      chain, and `(y + c1) * c2` -> `y * c2 + c1 * c2` when `y` comes from a
      conv or matmul and `c1`, `c2` are constants: this moves the affine
      tail of an inference batch normalization (imported as
      `(x - mean) * factor + B`) next to the conv/matmul;
    * `conv(x, W) * c` -> `conv(x, W * c')` for a per-output-channel
      constant `c` (shape `[M, 1, ..., 1]` or broadcastable to it) and a
      constant filter, and `matmul(x, W) * c` -> `matmul(x, W * c)` for a
      per-column constant `c` (`[N]` or `[1, N]`) and a constant `W`;
    * `(y + c1) + c2` -> `y + (c1 + c2)` for constants `c1`, `c2`;
    * `matmul(transpose(a), b)` -> `matmul(a, b) {transpose_lhs}` (and the
      same for `b`) when the transpose swaps the last two dimensions only
      and its input is not a constant (a transposed constant is folded by
      kiln-fold-constants instead, keeping the plain matmul lowering);
    * a dilated convolution loses the outer taps that only read padding
      (its filter sliced, its pads shrunk), and an axis left with one tap
      gets dilation 1;
    * a stride-1 float convolution whose taps read mostly padding (less
      than half of their reads inside the input, at most 32 taps: an
      atrous rate near the map's size, DeepLab's rate 12 over 14x14) is
      computed tap by tap: a 1x1 convolution per tap over the input window
      it reads, zeros around its part of the output (concats), and the
      sum. Each tap's filter slice is folded by kiln-fold-constants.

    Together with kiln-fold-constants these fold batch normalization into
    the preceding conv or gemm: the filter and bias become new constants.
    No pattern changes a result type. Not done: there is no `kiln.rsqrt`,
    so `x / sqrt(y)` stays; the importer drops ONNX Identity, so there is
    no identity op to remove.

    Before:
    ```mlir
    %c = kiln.conv %x, %w ... : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
    %s = kiln.constant dense<2.0> : tensor<4x1x1xf32>
    %y = kiln.mul %c, %s : tensor<1x4x6x6xf32>, tensor<4x1x1xf32> -> tensor<1x4x6x6xf32>
    ```
    After (once kiln-fold-constants evaluated `%w * 2`):
    ```mlir
    %w2 = kiln.constant dense<...> : tensor<4x3x3x3xf32>
    %y = kiln.conv %x, %w2 ... : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
    ```
  }];
  let statistics = [
    Statistic<"numChanged", "num-changed", "functions the patterns changed">
  ];
}

def Simplify : Pass<"kiln-simplify", "mlir::func::FuncOp"> {
  let summary = "run canonicalize, fold-constants, cse and dce to a fixed point";
  let description = [{
    Repeats kiln-canonicalize, kiln-fold-constants, kiln-cse and kiln-dce
    until one round leaves the function unchanged (compared by an
    operation fingerprint), at most `max-iterations` rounds. Each pass
    exposes work for the others: folding a shape computation turns a
    reshape into reshape-of-reshape, merging duplicates makes a pattern's
    operands equal, canonicalization disconnects ops that are then dead.

    Before:
    ```mlir
    %a = kiln.constant dense<2.0> : tensor<4xf32>
    %b = kiln.constant dense<2.0> : tensor<4xf32>
    %c = kiln.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %y = kiln.add %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %z = kiln.add %c, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r = kiln.sub %y, %z : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    ```
    After:
    ```mlir
    %c = kiln.constant dense<4.0> : tensor<4xf32>
    %y = kiln.add %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r = kiln.sub %y, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    ```
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", "10",
           "most rounds of the four passes">,
    Option<"maxElements", "max-elements", "int64_t", "1 << 20",
           "max-elements of kiln-fold-constants">
  ];
  let statistics = [
    Statistic<"numRounds", "num-rounds", "rounds run, the last one unchanged">
  ];
}

def GenerateGradients : Pass<"kiln-generate-gradients", "mlir::func::FuncOp"> {
  let summary = "append the reverse-mode gradient of a scalar loss to a function";
  let description = [{
    Differentiates the function's result named `loss` (its `kiln.name`)
    with respect to the arguments named in `wrt`, and returns each gradient
    as an extra result named `grad.<argument name>`, in `wrt` order. The
    loss must hold one float element (a rank-0 tensor or all dimensions 1);
    its gradient is seeded with 1.0.

    The pass walks the ops backwards from the loss and asks each op on a
    path from a `wrt` argument to the loss for its vector-Jacobian product
    through `GradientOpInterface` (the rules are on the ops, see
    ir/lib/KilnGradients.cpp). A value read by several ops gets the sum of
    their contributions. Integer values, selection conditions, gather indices
    and piecewise-constant ops (floor, sign, ...) carry no gradient; an
    argument the loss does not depend on gets a zero gradient. An op on such
    a path without a rule is an error at its location. Operand gradients the
    loss does not need are left for `kiln-dce` to remove.

    Parameters are function arguments: the importer turns the initializers
    to differentiate into arguments (named like the initializer and marked
    `kiln.parameter`) when `kilnc grad` asks it to. Without `wrt`, the pass
    differentiates with respect to every argument marked `kiln.parameter`.
    Without `loss`, a function with a single result uses that result.

    Before (`--kiln-generate-gradients="loss=loss"`):
    ```mlir
    func.func @f(%x: tensor<3xf32> {kiln.name = "x"},
                 %w: tensor<3xf32> {kiln.name = "w", kiln.parameter})
        -> (tensor<f32> {kiln.name = "loss"}) {
      %p = kiln.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
      %l = kiln.reduce_sum %p axes = [0] : tensor<3xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (and `kiln-dce`):
    ```mlir
    func.func @f(%x: tensor<3xf32> {kiln.name = "x"},
                 %w: tensor<3xf32> {kiln.name = "w", kiln.parameter})
        -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad.w"}) {
      %p = kiln.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
      %l = kiln.reduce_sum %p axes = [0] : tensor<3xf32> -> tensor<f32>
      %seed = kiln.constant dense<1.000000e+00> : tensor<f32>
      %0 = kiln.reshape %seed : tensor<f32> -> tensor<1xf32>
      %1 = kiln.broadcast %0 : tensor<1xf32> -> tensor<3xf32>
      %2 = kiln.mul %1, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
      return %l, %2 : tensor<f32>, tensor<3xf32>
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"loss", "loss", "std::string", "\"\"",
           "name (kiln.name) of the scalar result to differentiate; default: "
           "the only result">,
    ListOption<"wrt", "wrt", "std::string",
               "comma-separated names (kiln.name) of the arguments to "
               "differentiate with respect to; default: the arguments marked "
               "kiln.parameter">,
  ];
  let statistics = [
    Statistic<"numGradientOps", "num-gradient-ops",
              "ops asked for their vector-Jacobian product">
  ];
}

def LowerPrecision : Pass<"kiln-lower-precision", "mlir::func::FuncOp"> {
  let summary = "compute f32 matrix products and convolutions in f16 or bf16";
  let description = [{
    Mixed precision (`kilnc --precision=fp16|bf16`): every `kiln.matmul`
    and `kiln.conv` whose operands and result are f32 gets its operands cast
    to `type` and its result cast back to f32, so the product itself runs in
    the narrow type (tensor cores on a GPU: cuBLASLt and cuDNN accumulate in
    f32 and round the result once) while every other op keeps f32. Constant
    weights fold to narrow constants in the graph pipeline that follows,
    which halves their size in the artifact. Nothing else changes: inputs,
    outputs and their types are the model's.

    Before:
    ```mlir
    %y = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
    ```
    After (type=f16):
    ```mlir
    %0 = kiln.cast %x : tensor<2x8xf32> -> tensor<2x8xf16>
    %1 = kiln.cast %w : tensor<8x4xf32> -> tensor<8x4xf16>
    %2 = kiln.matmul %0, %1 : tensor<2x8xf16>, tensor<8x4xf16> -> tensor<2x4xf16>
    %y = kiln.cast %2 : tensor<2x4xf16> -> tensor<2x4xf32>
    ```
  }];
  let options = [
    Option<"type", "type", "std::string", "\"f16\"",
           "the element type of the products: f16 or bf16">,
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered", "products and convolutions computed in the narrow type">
  ];
}

def Fuse : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "group ops into kiln.fused kernels";
  let description = [{
    Walks the entry block in its scheduled order and puts each op into a
    kernel, asking every op for its class and cost through
    `FusionOpInterface` (ir/include/kiln/IR/KilnFusionInterface.td); the
    pass names no op. An op joins the kernel of the first operand's producer
    that admits it:

    - an elementwise op joins an elementwise or reduction kernel (chains,
      softmax, layer norm), or a contraction kernel when its result has the
      contraction's shape (an epilogue: bias, activation, residual add);
    - a reduction joins an elementwise or reduction kernel;
    - a contraction always starts its own kernel; movement and opaque ops
      never join one.

    Otherwise an elementwise op joins the elementwise kernel of a sibling: an
    op of that kernel reading one of the same operands with the same result
    shape (horizontal fusion: one pass over the shared input).

    Every join is refused when
    - it would make a cycle: some other operand depends on the kernel
      through an op outside it;
    - an operand or result has an unsigned or storage-only element type, or
      no elements (the loop fusion of kiln-lower-to-linalg handles the
      signless types only).

    Which edges inside a kernel become one loop nest is decided when the
    kernel is lowered (kiln-lower-to-linalg), with the cost answer of the
    same interface: a producer that is not cheap to recompute is never
    computed twice (not duplicated for a second consumer, not fused into a
    consumer that reads it with broadcasting); a cheap one is.

    Kernels of two or more ops become `kiln.fused` ops (numbered in order,
    with the ONNX node names of their ops), placed at their last op; ops
    between that read a kernel's results move after it, in order.

    Before:
    ```mlir
    %m = kiln.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %s = kiln.add %m, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
    %r = kiln.relu %s : tensor<4x16xf32>
    ```
    After:
    ```mlir
    %r = kiln.fused 0 contraction (%x, %w, %b) nodes = ["fc", "relu"]
        : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>, %d: tensor<16xf32>):
      %0 = kiln.matmul %a, %c : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
      %1 = kiln.add %0, %d : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
      %2 = kiln.relu %1 : tensor<4x16xf32>
      kiln.yield %2 : tensor<4x16xf32>
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "kiln.fused kernels formed">,
    Statistic<"numFusedOps", "num-fused-ops", "ops placed in a kernel">,
    Statistic<"numSunkPredicates", "num-sunk-predicates",
              "predicates moved to the kernel that reads them">,
  ];
}

def AverageGradients : Pass<"kiln-average-gradients", "mlir::func::FuncOp"> {
  let summary = "average each gradient over the ranks of a data-parallel run";
  let description = [{
    Runs after `kiln-generate-gradients` (and before
    `kiln-apply-optimizer`, so the update reads the averages): each result
    named `grad.<parameter>` becomes the `kiln.all_reduce` of the gradient
    this rank computed, so every rank of `kilnc train --data-parallel`
    applies the same update and keeps the same parameters. With the loss a
    mean over the batch, the average of the ranks' gradients is the
    gradient of the whole batch. `kiln-bucket-all-reduce` later groups the
    ops into buckets.

    Before: `return %loss, %dw : ...` (result 1 named `grad.w`).
    After:
    ```mlir
    %avg = kiln.all_reduce %dw : tensor<8x4xf32>
    return %loss, %avg : ...
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numGradients", "num-gradients", "gradients averaged">
  ];
}

def BucketAllReduce : Pass<"kiln-bucket-all-reduce", "mlir::func::FuncOp"> {
  let summary = "start each gradient's all-reduce early, in buckets";
  let description = [{
    Runs on the final schedule (after `kiln-schedule` and
    rematerialization, before fusion). Each `kiln.all_reduce` moves up to
    just after the op that makes its last operand, so its communication
    starts as soon as the gradient exists and overlaps the rest of the
    backward pass. Then, in schedule order, consecutive all-reduces of one
    element type merge into one op (a bucket) until the bucket holds
    `bucket-bytes` (PyTorch DDP's default is 25 MiB) or an op reads one of
    its results; the merged op stands where its last member stood. Backward
    produces the gradients of the last layers first, so the first buckets
    fill, and start, while the first layers' gradients are still being
    computed. Each bucket becomes one collective call at run time
    (docs/decisions/0024-data-parallel.md).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "uint64_t", "26214400",
           "bytes of gradients per bucket (> 0)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "num-buckets", "buckets formed">
  ];
}

def ApplyOptimizer : Pass<"kiln-apply-optimizer", "mlir::func::FuncOp"> {
  let summary = "append an optimizer update, making a gradient function one training step";
  let description = [{
    Runs after `kiln-generate-gradients` on a function whose parameters are
    arguments marked `kiln.parameter` and whose results include
    `grad.<parameter>` for each. It appends the optimizer's state as
    arguments, builds the update from core elementwise ops, and replaces
    the gradient results by the new value of every state tensor. The
    function then takes (inputs..., parameters..., moments..., step) and
    returns (its other results..., new parameters..., new moments..., new
    step): one call trains one batch. State arguments and results carry
    `kiln.state` = `"parameter"`, `"moment"` or `"step"`; state results
    follow the state arguments' order. The code generator places both in
    one caller-owned state buffer (docs/decisions/0008-training-step.md).

    With `g` the gradient, plus `weight-decay * w` when `weight-decay` > 0
    (L2 regularization added to the gradient):

    * `sgd`: `w -= lr * g`;
    * `momentum`: `v = momentum * v + g; w -= lr * v` (PyTorch's SGD with
      momentum, no dampening; state `optimizer.velocity.<w>`, zero at first);
    * `adam`: `m = beta1 * m + (1 - beta1) * g`,
      `v = beta2 * v + (1 - beta2) * g * g`, then with the new step `t`:
      `w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + epsilon)`
      (PyTorch's Adam; state `optimizer.m.<w>`, `optimizer.v.<w>`).

    Every optimizer keeps `optimizer.step`, an f64 scalar counting the
    steps taken (exact to 2^53), which Adam's bias correction reads. The
    bias corrections are computed in f64 and cast to each parameter's type.

    Before (`--kiln-apply-optimizer="optimizer=sgd lr=0.5"`):
    ```mlir
    func.func @f(%x: tensor<3xf32> {kiln.name = "x"},
                 %w: tensor<3xf32> {kiln.name = "w", kiln.parameter})
        -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad.w"}) {
      ...
      return %loss, %grad : tensor<f32>, tensor<3xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<3xf32> {kiln.name = "x"},
                 %w: tensor<3xf32> {kiln.name = "w", kiln.parameter, kiln.state = "parameter"},
                 %t: tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"})
        -> (tensor<f32> {kiln.name = "loss"},
            tensor<3xf32> {kiln.name = "w", kiln.state = "parameter"},
            tensor<f64> {kiln.name = "optimizer.step", kiln.state = "step"}) {
      ...
      %one = kiln.constant dense<1.0> : tensor<f64>
      %t1 = kiln.add %t, %one : tensor<f64>, tensor<f64> -> tensor<f64>
      %lr = kiln.constant dense<0.5> : tensor<f32>
      %d = kiln.mul %grad, %lr : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
      %w1 = kiln.sub %w, %d : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
      return %loss, %w1, %t1 : tensor<f32>, tensor<3xf32>, tensor<f64>
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, momentum or adam">,
    Option<"lr", "lr", "double", "0.01", "learning rate (> 0)">,
    Option<"momentum", "momentum", "double", "0.9",
           "momentum: velocity decay, in [0, 1)">,
    Option<"beta1", "beta1", "double", "0.9",
           "adam: decay of the first moment, in [0, 1)">,
    Option<"beta2", "beta2", "double", "0.999",
           "adam: decay of the second moment, in [0, 1)">,
    Option<"epsilon", "epsilon", "double", "1e-8",
           "adam: added to the denominator (> 0)">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "L2 penalty added to the gradient as weight-decay * w (>= 0)">,
  ];
  let statistics = [
    Statistic<"numStateTensors", "num-state-tensors",
              "parameters, moments and step counters in the state">
  ];
}

#endif // KILN_PASSES_PASSES_TD

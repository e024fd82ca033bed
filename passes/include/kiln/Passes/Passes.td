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

#endif // KILN_PASSES_PASSES_TD

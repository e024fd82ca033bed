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

#endif // KILN_PASSES_PASSES_TD

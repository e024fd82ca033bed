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

#endif // KILN_PASSES_PASSES_TD

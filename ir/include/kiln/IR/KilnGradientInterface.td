//===- KilnGradientInterface.td - vector-Jacobian products -*- tablegen -*-===//
//
// The op interface through which kiln-generate-gradients differentiates a
// graph: each differentiable core op builds its own vector-Jacobian product
// out of core ops. The rules live in ir/lib/KilnGradients.cpp and are attached
// to the ops as external models when the dialect loads, so the op
// definitions in KilnOps.td stay free of gradient code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNGRADIENTINTERFACE_TD
#define KILN_IR_KILNGRADIENTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Kiln_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op with one result that knows its vector-Jacobian product: given the
    gradient of a scalar loss with respect to its result, it builds the
    gradient with respect to each differentiable operand, as core ops,
    at the builder's insertion point. Broadcasting in the forward op is
    undone in the rule (a `kiln.reduce_sum` over the broadcast axes and a
    `kiln.reshape` to the operand's shape), so every operand gradient has
    exactly its operand's type.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether a gradient flows into operand `index`. False for integer
        indices, selection conditions and piecewise-constant ops (floor,
        sign, ...), whose derivative is zero almost everywhere.
      }], "bool", "isDifferentiableOperand", (ins "unsigned":$index)>,
    InterfaceMethod<[{
        Builds the gradients of the operands from `resultGrad` (the gradient
        of the loss with respect to the op's result, of the result's type).
        Appends one value per operand to `operandGrads`: a value of the
        operand's type, or a null value for an operand without gradient.
        Fails, after emitting an error at the op, when the op's attributes
        put it outside what the rule handles.
      }], "::mlir::LogicalResult", "buildOperandGradients",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$resultGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // KILN_IR_KILNGRADIENTINTERFACE_TD

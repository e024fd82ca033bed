//===- KilnOps.td - core ops of the kiln dialect -----------*- tablegen -*-===//
//
// Each op states its own result type (InferTypeOpInterface), verifies its
// operands with located diagnostics, and folds where that is trivial. Per-op
// behaviour that passes need (fusion class, gradients, cost) will be added as
// op interfaces here, never as switches in the passes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNOPS_TD
#define KILN_IR_KILNOPS_TD

include "kiln/IR/KilnBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// kiln.constant
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a tensor constant (an initializer or folded value)";
  let description = [{
    Holds a tensor value known at compile time. Small values are stored
    inline as `dense<...>`; the importer stores large initializers as
    `dense_resource<...>` blobs so the textual IR stays readable.

    ```mlir
    %w = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, string opDescription, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let summary = "elementwise " # opDescription # " with numpy-style broadcasting";
  let description = [{
    Computes `lhs }] # opDescription # [{ rhs` elementwise. Operand shapes are
    aligned at their trailing dimensions; a dimension of size 1 (or a missing
    leading dimension) is broadcast. Both operands have the same element type.

    ```mlir
    %r = kiln.}] # mnemonic # [{ %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_AddOp : Kiln_BinaryOp<"add", "+", [Commutative]>;
def Kiln_SubOp : Kiln_BinaryOp<"sub", "-">;
def Kiln_MulOp : Kiln_BinaryOp<"mul", "*", [Commutative]>;
def Kiln_DivOp : Kiln_BinaryOp<"div", "/"> {
  let description = [{
    Computes `lhs / rhs` elementwise with numpy-style broadcasting. Integer
    division truncates toward zero (like C and ONNX); dividing an integer by
    zero is undefined behaviour at run time and is never folded.

    ```mlir
    %r = kiln.div %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, string formula, Type operandType,
                   list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                              InferTypeOpInterface])> {
  let summary = "elementwise " # formula;
  let description = [{
    Computes `}] # formula # [{` for every element.

    ```mlir
    %r = kiln.}] # mnemonic # [{ %x : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_NegOp : Kiln_UnaryOp<"neg", "-x", Kiln_NumericTensor> {
  let hasFolder = 1;
}
def Kiln_ReluOp : Kiln_UnaryOp<"relu", "max(x, 0)", Kiln_NumericTensor> {
  let hasFolder = 1;
}
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "e^x", Kiln_FloatTensor>;
def Kiln_LogOp : Kiln_UnaryOp<"log", "ln(x)", Kiln_FloatTensor>;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "tanh(x)", Kiln_FloatTensor>;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "1 / (1 + e^-x)", Kiln_FloatTensor>;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "sqrt(x)", Kiln_FloatTensor>;

//===----------------------------------------------------------------------===//
// kiln.matmul
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product with broadcasting batch dimensions";
  let description = [{
    Multiplies the trailing two dimensions: `[..., M, K] x [..., K, N] ->
    [..., M, N]`. Leading (batch) dimensions broadcast like numpy. Both
    operands have rank 2 or more; the importer reshapes ONNX's 1-D operands.

    ```mlir
    %c = kiln.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x5xf32> -> tensor<8x4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Kiln_ReduceOp<string mnemonic, string combiner, Type elementType>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "reduce with " # combiner # " over the given axes";
  let description = [{
    Reduces `input` with }] # combiner # [{ over `axes`, which are
    non-negative and strictly increasing. With `keepdims` the reduced
    dimensions stay as size 1; otherwise they are removed. Empty `axes`
    reduce nothing (the op folds to its input).

    ```mlir
    %r = kiln.}] # mnemonic # [{ %x axes = [1] keepdims : tensor<2x3xf32> -> tensor<2x1xf32>
    ```
  }];
  let arguments = (ins elementType:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs elementType:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes (`keepdims` $keepdims^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "addition", Kiln_NumericTensor>;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "the arithmetic mean", Kiln_FloatTensor>;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", "maximum", Kiln_NumericTensor>;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", "minimum", Kiln_NumericTensor>;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "multiplication", Kiln_NumericTensor>;

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure]> {
  let summary = "reinterpret a tensor with another shape of equal size";
  let description = [{
    Keeps the elements in row-major order and gives them the result's
    shape, which must have the same number of elements and element type.

    ```mlir
    %r = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permute the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`; `perm` is a
    permutation of `[0, rank)`.

    ```mlir
    %t = kiln.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `perm` `=` $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

#endif // KILN_IR_KILNOPS_TD

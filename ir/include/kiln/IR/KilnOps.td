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
include "mlir/IR/EnumAttr.td"
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

def Kiln_SizesOp : Kiln_Op<"sizes", [Pure]> {
  let summary = "sizes over the symbolic dimensions, as data";
  let description = [{
    The run-time values of size expressions over the function's symbolic
    dimensions (`kiln.symbols`; each a kiln::DimExpr text), as an integer
    tensor of rank 0 (one size) or 1: what an exported graph computes from
    an input's Shape and then uses as data (a mask made by comparing a ramp
    with the sequence length). Sizes that only shape other ops never become
    this op; the importer resolves them.

    ```mlir
    %n = kiln.sizes ["seq"] : tensor<1xi64>
    ```
  }];
  let arguments = (ins ArrayAttr:$sizes);
  let results = (outs Kiln_IndexTensor:$result);
  let assemblyFormat = "$sizes attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, string opDescription, list<Trait> traits = [],
                    Type operandType = Kiln_NumericTensor>
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
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
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


class Kiln_BinaryFnOp<string mnemonic, string formula, list<Trait> traits = [],
                      Type operandType = Kiln_NumericTensor>
    : Kiln_BinaryOp<mnemonic, formula, traits, operandType> {
  let summary = "elementwise " # formula # " with numpy-style broadcasting";
  let description = [{
    Computes `}] # formula # [{` elementwise, broadcasting like numpy.

    ```mlir
    %r = kiln.}] # mnemonic # [{ %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    ```
  }];
}

def Kiln_MaxOp : Kiln_BinaryFnOp<"max", "max(lhs, rhs) (NaN propagates)", [Commutative]>;
def Kiln_MinOp : Kiln_BinaryFnOp<"min", "min(lhs, rhs) (NaN propagates)", [Commutative]>;
def Kiln_PowOp : Kiln_BinaryFnOp<"pow", "lhs ^ rhs">;
def Kiln_RemOp : Kiln_BinaryFnOp<"rem",
    "the remainder of lhs / rhs truncated toward zero (sign of lhs, as C's fmod and %)">;
def Kiln_AndOp : Kiln_BinaryFnOp<"and", "lhs & rhs (logical on i1, bitwise on integers)",
                                 [Commutative], Kiln_BitsTensor>;
def Kiln_OrOp : Kiln_BinaryFnOp<"or", "lhs | rhs (logical on i1, bitwise on integers)",
                                [Commutative], Kiln_BitsTensor>;
def Kiln_XorOp : Kiln_BinaryFnOp<"xor", "lhs ^ rhs (logical on i1, bitwise on integers)",
                                 [Commutative], Kiln_BitsTensor>;

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

def Kiln_CmpPredicate : I64EnumAttr<"CmpPredicate", "comparison predicate", [
    I64EnumAttrCase<"eq", 0>, I64EnumAttrCase<"ne", 1>, I64EnumAttrCase<"lt", 2>,
    I64EnumAttrCase<"le", 3>, I64EnumAttrCase<"gt", 4>, I64EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::kiln";
}

def Kiln_CmpOp : Kiln_Op<"cmp", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with numpy-style broadcasting";
  let description = [{
    Compares `lhs` with `rhs` elementwise and yields i1. Floats compare
    ordered (false when either is NaN) except `ne`, which is true for NaN;
    integers compare signed.

    ```mlir
    %m = kiln.cmp lt, %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_CmpPredicate:$predicate, Kiln_ValueTensor:$lhs,
                       Kiln_ValueTensor:$rhs);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_SelectOp : Kiln_Op<"select", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise choice between two tensors, with broadcasting";
  let description = [{
    Yields `lhs` where `condition` is true and `rhs` elsewhere. The three
    operands broadcast together like numpy.

    ```mlir
    %r = kiln.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$lhs,
                       Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)
    `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
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

def Kiln_FloorOp : Kiln_UnaryOp<"floor", "floor(x)", Kiln_FloatTensor>;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "ceil(x)", Kiln_FloatTensor>;
def Kiln_RoundOp : Kiln_UnaryOp<"round", "x rounded to the nearest integer, ties to even", Kiln_FloatTensor>;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "sin(x)", Kiln_FloatTensor>;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "cos(x)", Kiln_FloatTensor>;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "tan(x)", Kiln_FloatTensor>;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "asin(x)", Kiln_FloatTensor>;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "acos(x)", Kiln_FloatTensor>;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "atan(x)", Kiln_FloatTensor>;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "sinh(x)", Kiln_FloatTensor>;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "cosh(x)", Kiln_FloatTensor>;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "asinh(x)", Kiln_FloatTensor>;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "acosh(x)", Kiln_FloatTensor>;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "atanh(x)", Kiln_FloatTensor>;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "erf(x)", Kiln_FloatTensor>;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "1 / x", Kiln_FloatTensor>;
def Kiln_AbsOp : Kiln_UnaryOp<"abs", "|x|", Kiln_NumericTensor>;
def Kiln_SignOp : Kiln_UnaryOp<"sign", "sign(x): -1, 0 or 1 (NaN stays NaN)", Kiln_NumericTensor>;
def Kiln_NotOp : Kiln_UnaryOp<"not", "not x (logical on i1, bitwise on integers)", Kiln_BitsTensor> {
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// kiln.matmul
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product with broadcasting batch dimensions";
  let description = [{
    Multiplies the trailing two dimensions: `[..., M, K] x [..., K, N] ->
    [..., M, N]`. Leading (batch) dimensions broadcast like numpy. Both
    operands have rank 2 or more; the importer reshapes ONNX's 1-D operands.
    With `transpose_lhs` the left operand is read as `[..., K, M]`, with
    `transpose_rhs` the right one as `[..., N, K]` (its last two dimensions
    swapped), so a transpose feeding the product costs no copy.

    ```mlir
    %c = kiln.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x5xf32> -> tensor<8x4x5xf32>
    %d = kiln.matmul %a, %w transpose_rhs : tensor<8x4x16xf32>, tensor<5x16xf32> -> tensor<8x4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
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

def Kiln_ArgMaxOp : Kiln_Op<"argmax", [Pure, InferTypeOpAdaptor]> {
  let summary = "index of the largest element along an axis";
  let description = [{
    The i64 index of the maximum along `axis`: the first one, or the last
    with `select_last_index`. With `keepdims` the axis stays as size 1.

    ```mlir
    %i = kiln.argmax %x axis = 1 keepdims : tensor<2x3xf32> -> tensor<2x1xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                       UnitAttr:$keepdims, UnitAttr:$select_last_index);
  let results = (outs Kiln_I64Tensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`keepdims` $keepdims^)?
    (`select_last_index` $select_last_index^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Kiln_ArgMinOp : Kiln_Op<"argmin", [Pure, InferTypeOpAdaptor]> {
  let summary = "index of the smallest element along an axis";
  let description = [{
    The i64 index of the minimum along `axis`: the first one, or the last
    with `select_last_index`. With `keepdims` the axis stays as size 1.

    ```mlir
    %i = kiln.argmin %x axis = 0 : tensor<2x3xf32> -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                       UnitAttr:$keepdims, UnitAttr:$select_last_index);
  let results = (outs Kiln_I64Tensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`keepdims` $keepdims^)?
    (`select_last_index` $select_last_index^)? attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Conversions and data movement
//===----------------------------------------------------------------------===//

def Kiln_CastOp : Kiln_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts every element: floats to integers truncate toward zero,
    integers extend with their sign or truncate, anything to i1 is `x != 0`,
    and i1 converts to 0 or 1. The shape does not change.

    To the 8- and 4-bit floats, values round to nearest even. Out of range
    values (and infinities) saturate to the largest finite value when
    `saturate` is true (the default, and always for f4E2M1FN, which has no
    infinity or NaN); otherwise they become infinity where the type has one
    (f8E5M2) and NaN elsewhere. To f8E8M0FNU (powers of two), `round_mode`
    picks `up` (the default), `down` or `nearest`. To the 4- and 2-bit
    integers, the value converts like to a wide integer and then wraps.

    ```mlir
    %i = kiln.cast %x : tensor<4xf32> -> tensor<4xi32>
    %q = kiln.cast %x {saturate = false} : tensor<4xf32> -> tensor<4xf8E4M3FN>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$saturate,
                       DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_BroadcastOp : Kiln_Op<"broadcast", [Pure]> {
  let summary = "numpy-style broadcast to a larger shape";
  let description = [{
    Stretches dimensions of size 1 (and adds leading ones) to the result's
    shape.

    ```mlir
    %b = kiln.broadcast %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "join tensors along an axis";
  let description = [{
    All inputs have the same rank and element type and agree on every
    dimension but `axis`.

    ```mlir
    %c = kiln.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure]> {
  let summary = "strided window of a tensor";
  let description = [{
    `result[i...] = input[starts[d] + i_d * strides[d] ...]`: the result's
    shape gives the window's sizes. Strides are nonzero and may be negative;
    every element read lies inside the input.

    ```mlir
    %s = kiln.slice %x starts = [0, 4] strides = [1, -2] : tensor<2x5xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$strides);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `strides` `=` $strides attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "take slices of data along an axis at run-time indices";
  let description = [{
    `result = data[:axis] ++ indices.shape ++ data[axis+1:]`, reading
    `data` at `indices[j...]` along `axis`. Negative indices count from the
    end; indices still out of range are clamped, so no read ever leaves
    `data`.

    ```mlir
    %g = kiln.gather %data, %idx axis = 0 : tensor<5x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` `=` $axis attr-dict `:` type($data) `,`
    type($indices) `->` type($result)
  }];
}

def Kiln_ScatterReduction : I64EnumAttr<"ScatterReduction",
    "how kiln.scatter combines an update with the element it lands on", [
    I64EnumAttrCase<"none", 0>, I64EnumAttrCase<"add", 1>,
    I64EnumAttrCase<"mul", 2>, I64EnumAttrCase<"max", 3>,
    I64EnumAttrCase<"min", 4>]> {
  let cppNamespace = "::kiln";
}

def Kiln_ScatterOp : Kiln_Op<"scatter", [Pure,
    AllTypesMatch<["data", "result"]>]> {
  let summary = "write updates into a copy of data at run-time positions";
  let description = [{
    The result is `data` with, for `u = 0, 1, ..., n-1` in that order,
    `result[indices[u]] = combine(result[indices[u]], updates[u])`, where
    `combine` is the `reduction`: `none` replaces (so with duplicate indices
    the last update wins, as ONNX specifies), `add`, `mul`, `max` and `min`
    combine. All three operands are 1-D: the importer flattens ONNX's
    ScatterElements and ScatterND into positions of the flattened data.
    A negative index counts from the end; an index still out of range is
    skipped (nothing is written), so no write ever leaves `data`.

    Kept as a core op because no decomposition into the other core ops gets
    duplicate indices right for every reduction and element type.

    ```mlir
    %r = kiln.scatter add %data, %idx, %upd : tensor<8xf32>, tensor<3xi64>, tensor<3xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Kiln_ScatterReduction:$reduction, Kiln_Tensor:$data,
                       Kiln_I64Tensor:$indices, Kiln_Tensor:$updates);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $reduction $data `,` $indices `,` $updates attr-dict `:` type($data) `,`
    type($indices) `,` type($updates) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_TopKOp : Kiln_Op<"topk", [Pure, InferTypeOpAdaptor]> {
  let summary = "the k largest or smallest elements of each row, sorted";
  let description = [{
    For each row of the 2-D `input`, yields the `k` largest elements (the
    `k` smallest with `smallest`) in order, largest (smallest) first, and
    their i64 column indices. Equal values keep their index order: the lower
    index comes first. Rows of other ranks and other axes are reshaped and
    transposed by the importer. With NaN in a row the order of that row is
    unspecified (but every index is in range).

    Kept as a core op: a decomposition into argmax with masking would need
    k full passes over materialized tensors.

    With `k_value` (a one-element i64 tensor known at run time, as ONNX
    TopK's k input) the op chooses that many, clamped to [0, k]: `k` is
    then the bound, and `count` names the computed symbol (decision 0031)
    the op defines as the results' second size.

    ```mlir
    %v, %i = kiln.topk %x k = 2 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
    %w, %j = kiln.topk %x [%k : tensor<1xi64>] k = 4 count = "t.k"
        : tensor<3x4xf32> -> tensor<3x4xf32, #kiln.dims<["3", "t.k"]>>,
           tensor<3x4xi64, #kiln.dims<["3", "t.k"]>>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input,
                       Optional<Kiln_I64Tensor>:$k_value, I64Attr:$k,
                       OptionalAttr<StrAttr>:$count, UnitAttr:$smallest);
  let results = (outs Kiln_NumericTensor:$values, Kiln_I64Tensor:$indices);
  let assemblyFormat = [{
    $input (`[` $k_value^ `:` type($k_value) `]`)? `k` `=` $k
    (`count` `=` $count^)? (`smallest` $smallest^)? attr-dict `:` type($input)
    `->` type($values) `,` type($indices)
  }];
}

def Kiln_NonZeroOp : Kiln_Op<"non_zero", [Pure]> {
  let summary = "the indices of the non-zero elements, a size computed from data";
  let description = [{
    The indices of the elements of `input` that are not zero (NaN counts as
    non-zero), as ONNX NonZero: a `[rank, count]` i64 tensor whose column j
    holds the j-th such element's index, in row-major order. `count` names
    the computed symbol (decision 0031) the op defines: the result's second
    size is that symbol, bounded by the input's element count in its
    function's `kiln.symbols`, and its value is known once the op has run.

    ```mlir
    %i = kiln.non_zero %x count = "nz" : tensor<2x3xf32>
           -> tensor<2x6xi64, #kiln.dims<["2", "nz"]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, StrAttr:$count);
  let results = (outs Kiln_I64Tensor:$result);
  let assemblyFormat = [{
    $input `count` `=` $count attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_NonMaxSuppressionOp : Kiln_Op<"nms", [Pure]> {
  let summary = "greedy non-maximum suppression of boxes, a size computed from data";
  let description = [{
    ONNX NonMaxSuppression: for each batch b and class c, the boxes of
    `boxes` `[B, N, 4]` in order of descending `scores[b, c]` (equal scores:
    the lower index first), skipping those whose score is not above
    `score_threshold` (only with `has_score_threshold`), each kept unless its
    intersection over union with a box already kept for (b, c) is above
    `iou_threshold`, until `max_output` (clamped to [0, N]) are kept. The
    result lists `[b, c, box]` of each kept box, by batch, class and then
    in the order kept; `count` names the computed symbol (decision 0031)
    that is its first size. Boxes are corners `[y1, x1, y2, x2]` (either
    pair first), or `[x_center, y_center, width, height]` with
    `center_point_box`. The three thresholds are one-element tensors.

    ```mlir
    %s = kiln.nms %boxes, %scores, %max, %iou, %score count = "nms.count"
           : tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>,
             tensor<1xf32> -> tensor<6x3xi64, #kiln.dims<["nms.count", "3"]>>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$boxes, Kiln_FloatTensor:$scores,
                       Kiln_I64Tensor:$max_output,
                       Kiln_FloatTensor:$iou_threshold,
                       Kiln_FloatTensor:$score_threshold,
                       StrAttr:$count, UnitAttr:$center_point_box,
                       UnitAttr:$has_score_threshold);
  let results = (outs Kiln_I64Tensor:$selected);
  let assemblyFormat = [{
    $boxes `,` $scores `,` $max_output `,` $iou_threshold `,` $score_threshold
    `count` `=` $count (`center_point_box` $center_point_box^)?
    (`has_score_threshold` $has_score_threshold^)? attr-dict `:`
    type($boxes) `,` type($scores) `,` type($max_output) `,`
    type($iou_threshold) `,` type($score_threshold) `->` type($selected)
  }];
  let hasVerifier = 1;
}

def Kiln_ChooseOp : Kiln_Op<"choose", [Pure]> {
  let summary = "one of two tensors of different sizes, chosen at run time";
  let description = [{
    `then_value` when the one-element `condition` is true, else `else_value`:
    an ONNX If whose condition is known only at run time and whose branches
    give tensors of one rank and element type but different sizes. Each axis
    where the two sizes differ is a computed symbol (decision 0031) named in
    `counts` ("" where they agree), bounded by the larger of the two; the op
    defines it.

    ```mlir
    %r = kiln.choose %c, %a, %b counts = ["if.0"]
           : tensor<i1>, tensor<0xi64>, tensor<90xi64, #kiln.dims<["n"]>>
           -> tensor<90xi64, #kiln.dims<["if.0"]>>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$then_value,
                       Kiln_Tensor:$else_value, StrArrayAttr:$counts);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $then_value `,` $else_value `counts` `=` $counts attr-dict
    `:` type($condition) `,` type($then_value) `,` type($else_value) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_SliceToOp : Kiln_Op<"slice_to", [Pure]> {
  let summary = "a slice of a symbolic axis to a constant end, a size computed at run time";
  let description = [{
    Elements `start` to `end` (step 1) of `axis`, clamped to the axis' size
    as the run finds it: ONNX Slice `x[:200]` of a size computed from data
    (decision 0031). The result's size along `axis` is the computed symbol
    `count`, `max(min(size, end) - start, 0)`, bounded by the smaller of
    `end - start` and the axis' bound; the op defines it.

    ```mlir
    %r = kiln.slice_to %x axis = 0 start = 0 end = 200 count = "s.n"
           : tensor<900xi64, #kiln.dims<["n"]>> -> tensor<200xi64, #kiln.dims<["s.n"]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis, I64Attr:$start,
                       I64Attr:$end, StrAttr:$count);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis `start` `=` $start `end` `=` $end `count` `=`
    $count attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (kept whole: libraries and kernels want them so)
//===----------------------------------------------------------------------===//

def Kiln_ConvOp : Kiln_Op<"conv", [Pure, InferTypeOpAdaptor]> {
  let summary = "grouped, strided, dilated, padded N-d convolution (NC... layout)";
  let description = [{
    `input` is `[N, C, D1..Dk]`, `filter` is `[M, C/group, K1..Kk]`; the
    result is `[N, M, O1..Ok]` with
    `Oi = floor((Di + pad_lo_i + pad_hi_i - dilation_i*(Ki-1) - 1) / stride_i) + 1`.
    `pads` holds the k low pads then the k high pads; padding reads zeros.
    This is cross-correlation, as in ONNX Conv (no kernel flip). Bias is a
    separate `kiln.add`.

    ```mlir
    %y = kiln.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] group = 1
        : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, Kiln_NumericTensor:$filter,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads, I64Attr:$group);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter `strides` `=` $strides `dilations` `=` $dilations
    `pads` `=` $pads `group` `=` $group attr-dict `:` type($input) `,`
    type($filter) `->` type($result)
  }];
}

def Kiln_PoolKind : I64EnumAttr<"PoolKind", "pooling combiner", [
    I64EnumAttrCase<"max", 0>, I64EnumAttrCase<"sum", 1>]> {
  let cppNamespace = "::kiln";
}

def Kiln_PoolOp : Kiln_Op<"pool", [Pure, InferTypeOpAdaptor]> {
  let summary = "max or sum over sliding windows of the spatial dimensions";
  let description = [{
    `input` is `[N, C, D1..Dk]`; each output element combines a window of
    `kernel` elements (spaced by `dilations`, moved by `strides`) with max
    or sum. Padding (`pads`: k low then k high) reads -inf for max and 0
    for sum; average pooling is a sum divided by the window counts, which
    the importer knows at compile time.

    ```mlir
    %y = kiln.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0]
        : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_PoolKind:$kind, Kiln_NumericTensor:$input,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $kind $input `kernel` `=` $kernel `strides` `=` $strides `dilations` `=`
    $dilations `pads` `=` $pads attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Data-parallel training (kilnc train --data-parallel)
//===----------------------------------------------------------------------===//

def Kiln_AllReduceOp : Kiln_Op<"all_reduce",
    [MemoryEffects<[MemRead, MemWrite]>, InferTypeOpAdaptor]> {
  let summary = "the mean of each operand over the ranks of a data-parallel run";
  let description = [{
    Each result is the elementwise mean of its operand over every rank (process)
    of a data-parallel run: the gradients every rank computed on its shard of
    the batch, averaged before the optimizer reads them. With one rank, or
    run without a communicator, each result equals its operand. The operands
    of one op form one bucket: they are reduced with one collective call,
    started where the op stands in the schedule and waited on just before
    the first op that reads a result (docs/decisions/0024-data-parallel.md).
    The op has side effects so that no pass folds, merges or drops it.

    ```mlir
    %gw, %gb = kiln.all_reduce %dw, %db : tensor<8x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_FloatTensor>:$inputs);
  let results = (outs Variadic<Kiln_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
}

//===----------------------------------------------------------------------===//
// Fused kernels (made by kiln-fuse)
//===----------------------------------------------------------------------===//

def Kiln_FusionClass : I64EnumAttr<"FusionClass",
    "how an op's loops relate to its operands' (KilnFusionInterface.td)", [
    I64EnumAttrCase<"elementwise", 0>, I64EnumAttrCase<"reduction", 1>,
    I64EnumAttrCase<"contraction", 2>, I64EnumAttrCase<"movement", 3>,
    I64EnumAttrCase<"opaque", 4>]> {
  let cppNamespace = "::kiln";
}

def Kiln_FusedOp : Kiln_Op<"fused", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects]> {
  let summary = "a group of core ops that code generation emits as one kernel";
  let description = [{
    Made by `kiln-fuse`. The body is an ordinary list of core ops on the
    block arguments (one per operand, of the operand's type), ended by
    `kiln.yield` with the kernel's outputs. `kernel` numbers the kernels of
    a function in order; `kind` is the kernel's class: `elementwise` (a chain
    or siblings of elementwise ops), `reduction` (reductions with their
    elementwise producers and consumers) or `contraction` (a matmul or
    convolution with its elementwise epilogue). `nodes` lists the names of
    the ONNX nodes the ops came from, in order, without repeats.

    ```mlir
    %y = kiln.fused 0 contraction (%x, %w, %b) nodes = ["fc", "relu"]
        : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>, %d: tensor<16xf32>):
      %m = kiln.matmul %a, %c : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
      %s = kiln.add %m, %d : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
      %r = kiln.relu %s : tensor<4x16xf32>
      kiln.yield %r : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$kernel,
                       Kiln_FusionClass:$kind, StrArrayAttr:$nodes);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kernel $kind `(` $inputs `)` `nodes` `=` $nodes attr-dict `:`
    functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def Kiln_YieldOp : Kiln_Op<"yield", [Pure, Terminator,
    HasParent<"FusedOp">]> {
  let summary = "the outputs of a kiln.fused kernel";
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // KILN_IR_KILNOPS_TD

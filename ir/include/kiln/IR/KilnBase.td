//===- KilnBase.td - the kiln dialect and its shared constraints -*- tablegen -*-===//
//
// The kiln dialect is Kiln's small core: the importer decomposes ONNX into
// these ops, and every later stage (graph passes, memory planning, code
// generation) handles only them. Ops work on ranked, statically shaped tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNBASE_TD
#define KILN_IR_KILNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/TensorEncoding.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "the core dataflow ops of the Kiln compiler";
  let description = [{
    A small set of tensor ops that ONNX models are decomposed into. All ops
    are side-effect free and work on ranked tensors with static shapes.
    Binary elementwise ops broadcast like numpy (and ONNX): shapes are aligned
    at the trailing dimension, and a dimension of size 1 stretches to the
    other operand's size.

    Element types: f16, bf16, f32, f64, i1, i8, i16, i32, i64 and the
    unsigned ui8, ui16, ui32, ui64 (integer ops then compare, divide,
    extend and convert as unsigned). The narrow types f8E4M3FN, f8E4M3FNUZ,
    f8E5M2, f8E5M2FNUZ, f8E8M0FNU, f4E2M1FN, i4, ui4, i2 and ui2 are storage
    only: constants, casts and data movement (reshape, transpose, broadcast,
    concat, slice, gather, select) accept them; arithmetic does not.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
}

// Symbolic dimensions (decision 0027): a tensor whose sizes depend on a
// `kilnc --dim NAME=LO..HI` range has the sizes of the range's upper ends in
// its shape, so every static rule (memory plan, costs, folds) sees the
// bound, and this encoding states what each size is.
def Kiln_DimsAttr : AttrDef<Kiln_Dialect, "Dims",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "dims";
  let summary = "the sizes of a tensor over symbolic dimensions";
  let description = [{
    One string per dimension: the size as an expression over the function's
    symbols (`kiln.symbols`), in the canonical text of kiln::DimExpr
    (`batch`, `128*batch`, `floor((seq + 1) / 2)`, `768`). The tensor's
    shape holds each expression's value at the symbols' upper bounds; the
    run-time tensor is dense at the expressions' values for the run-time
    sizes. A tensor whose sizes are all constant has no encoding.

    ```mlir
    tensor<64x784xf32, #kiln.dims<["batch", "784"]>>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$sizes);
  let assemblyFormat = "`<` $sizes `>`";
}

// Element types the core supports.
def Kiln_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def Kiln_Int : AnyTypeOf<[I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Kiln_Value : AnyTypeOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64,
                            UI8, UI16, UI32, UI64]>;
// Storage-only types (kiln::isNarrowType): one byte per element in memory.
def Kiln_Narrow : AnyTypeOf<[F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ,
                             F8E8M0FNU, F4E2M1FN, I<4>, UI<4>, I<2>, UI<2>]>;
def Kiln_Element : AnyTypeOf<[Kiln_Value, Kiln_Narrow]>;
def Kiln_Numeric : AnyTypeOf<[F16, BF16, F32, F64, I8, I16, I32, I64,
                              UI8, UI16, UI32, UI64]>;

def Kiln_Bits : AnyTypeOf<[I1, I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Kiln_Index : AnyTypeOf<[I32, I64]>;

def Kiln_Tensor : StaticShapeTensorOf<[Kiln_Element]>;
def Kiln_ValueTensor : StaticShapeTensorOf<[Kiln_Value]>;
def Kiln_BitsTensor : StaticShapeTensorOf<[Kiln_Bits]>;
def Kiln_BoolTensor : StaticShapeTensorOf<[I1]>;
def Kiln_IndexTensor : StaticShapeTensorOf<[Kiln_Index]>;
def Kiln_I64Tensor : StaticShapeTensorOf<[I64]>;
def Kiln_NumericTensor : StaticShapeTensorOf<[Kiln_Numeric]>;
def Kiln_FloatTensor : StaticShapeTensorOf<[Kiln_Float]>;

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_IR_KILNBASE_TD

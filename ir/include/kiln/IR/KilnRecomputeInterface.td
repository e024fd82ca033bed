//===- KilnRecomputeInterface.td - cheap to compute again --*- tablegen -*-===//
//
// The op interface through which kiln-rematerialize finds the ops whose
// results it may compute a second time instead of keeping them live: only ops
// that implement it are ever recomputed, and its method says what that
// costs. The models live in ir/lib/KilnRecompute.cpp and are attached when
// the dialect loads, so KilnOps.td stays free of this policy.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNRECOMPUTEINTERFACE_TD
#define KILN_IR_KILNRECOMPUTEINTERFACE_TD

include "mlir/IR/OpBase.td"

def Kiln_RecomputeOpInterface : OpInterface<"RecomputeOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    A side-effect-free op whose result is cheap to compute again from its
    operands: one pass over the data with a small, fixed amount of work per
    result element (elementwise math, comparisons, selects, casts,
    broadcasts, transposes, slices, concatenations) or none at all (a
    reshape, which is a view). Running it twice on the same operands gives
    the same bits. Ops whose work grows faster than their result (matmul,
    conv, pooling, reductions) or that are data-dependent gathers and
    scatters do not implement it and are never recomputed.
  }];
  let methods = [
    InterfaceMethod<[{
        The work of computing the op's result once more, in element
        operations: the number of result elements times a per-element
        weight (0 for a view, 1 for arithmetic and data movement, 2 for
        division and square root, 4 for transcendental functions).
      }], "uint64_t", "getRecomputeCost">,
  ];
}

#endif // KILN_IR_KILNRECOMPUTEINTERFACE_TD

//===- KilnCostInterface.td - work per element -------------*- tablegen -*-===//
//
// The one cost model of the graph passes: how much work an op does per
// result element. kiln-fuse asks it whether an elementwise op is cheap
// enough to compute again in every consumer of a kernel; kiln-rematerialize
// asks it what computing a value again costs, and recomputes only ops that
// implement it. The models live in ir/lib/KilnCost.cpp and are attached when
// the dialect loads, so KilnOps.td stays free of this policy.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNCOSTINTERFACE_TD
#define KILN_IR_KILNCOSTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Kiln_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    A side-effect-free op that does a small, fixed amount of work per result
    element and reads each operand element a bounded number of times
    (elementwise math, comparisons, selects, casts, broadcasts, transposes,
    slices, concatenations), or none at all (a reshape, which is a view).
    Running it twice on the same operands gives the same bits. Ops whose
    work grows faster than their result (matmul, conv, pooling,
    reductions) or that are data-dependent gathers and scatters do not
    implement it: they are never recomputed, and never cheap.

    Two questions are answered from it (KilnCostInterface.h):
    `isCheapToRecompute` (kiln-fuse: an elementwise op of work 1 is
    computed again in every consumer rather than stored) and
    `recomputeCost` (kiln-rematerialize: work times result elements).
  }];
  let methods = [
    InterfaceMethod<[{
        The work of one result element, in element operations: 0 for a
        view, 1 for arithmetic and data movement, 2 for division and square
        root, 4 for transcendental functions (a polynomial or a libm call).
      }], "uint64_t", "getWorkPerElement">,
  ];
}

#endif // KILN_IR_KILNCOSTINTERFACE_TD

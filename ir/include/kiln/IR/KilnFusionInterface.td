//===- KilnFusionInterface.td - how ops fuse -------------------*- tablegen -*-===//
//
// The op interface through which kiln-fuse groups ops into kernels: each core
// op states its fusion class (how its loops relate to its operands' and
// result's); whether recomputing it per consumer is cheap is the cost
// interface's answer (KilnCostInterface.td). The answers are
// attached to the ops as external models in ir/lib/KilnFusion.cpp when the
// dialect loads; kiln-fuse asks the interface and never names an op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNFUSIONINTERFACE_TD
#define KILN_IR_KILNFUSIONINTERFACE_TD

include "mlir/IR/OpBase.td"

def Kiln_FusionOpInterface : OpInterface<"FusionOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    How an op takes part in fusion. The class says what kind of loop nest
    the op lowers to:

    - `elementwise`: one parallel loop nest over the result, each element
      computed from the operands' elements at the same (or broadcast)
      position. Fuses into its consumers (recomputed in each one when
      `isCheapToRecompute`, KilnCostInterface.h, says so) and takes
      elementwise producers.
    - `reduction`: parallel loops over the result and reduction loops over
      the reduced axes. Takes elementwise producers; its (smaller) result
      is materialized for its consumers.
    - `contraction`: matmul and convolution. Starts a kernel and takes an
      elementwise epilogue over its result's shape.
    - `movement`: reshape, transpose, slice, concat, gather: data movement
      that a kernel does not take (yet).
    - `opaque`: never fused (scatter, top-k, pooling, constants, ...).

    An op without the interface is opaque.
  }];
  let methods = [
    InterfaceMethod<"The fusion class of this op.",
      "::kiln::FusionClass", "getFusionClass">,
  ];
}

#endif // KILN_IR_KILNFUSIONINTERFACE_TD

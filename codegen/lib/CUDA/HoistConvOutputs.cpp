//===- HoistConvOutputs.cpp - kiln-hoist-conv-outputs ----------------===//
//
// The CUDA printer lets cuDNN pad a convolution's input instead of running
// the lowering's zero fill and pad copy (docs/decisions/0019): cuDNN then
// reads the copy's source at the convolution. The arena plan reads live
// ranges off the op order, so the source's bytes are free after the copy,
// and the convolution's output, allocated after it, often takes them; the
// printer must then keep the copy. This pass moves the allocations of the
// convolution's output and of the elementwise op that follows it (its
// epilogue) above the copy, so the plan keeps them apart from the source.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln {
#define GEN_PASS_DEF_HOISTCONVOUTPUTS
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The allocation under `v` and its views, or null.
memref::AllocOp rootAlloc(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v.getDefiningOp<memref::AllocOp>();
}

/// The first linalg.generic after `op` in its block that reads `buffer` or
/// a view of it, or null when another kind of op touches it first.
linalg::GenericOp firstReader(Operation *op, Value buffer) {
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    if (isa<ViewLikeOpInterface>(next))
      continue;
    bool reads = false;
    next->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (memref::AllocOp root = rootAlloc(v))
          reads |= root.getResult() == buffer;
    });
    if (!reads)
      continue;
    return dyn_cast<linalg::GenericOp>(next);
  }
  return {};
}

struct HoistConvOutputs : kiln::impl::HoistConvOutputsBase<HoistConvOutputs> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    SmallVector<memref::CopyOp> copies(body.getOps<memref::CopyOp>());
    for (memref::CopyOp copy : copies) {
      // A copy into a subview of a fresh buffer, which a convolution (a
      // generic with reductions) reads next.
      auto sub = copy.getTarget().getDefiningOp<memref::SubViewOp>();
      memref::AllocOp padded = sub ? rootAlloc(sub.getSource()) : nullptr;
      if (!padded || padded->getBlock() != &body)
        continue;
      linalg::GenericOp conv = firstReader(copy, padded.getResult());
      if (!conv || conv.getNumReductionLoops() == 0 ||
          conv.getNumDpsInits() != 1)
        continue;
      // Its output, then the elementwise generic reading that output next.
      SmallVector<memref::AllocOp> outputs;
      if (memref::AllocOp out = rootAlloc(conv.getDpsInits()[0])) {
        outputs.push_back(out);
        linalg::GenericOp epilogue = firstReader(conv, out.getResult());
        if (epilogue && epilogue.getNumReductionLoops() == 0 &&
            epilogue.getNumDpsInits() == 1)
          if (memref::AllocOp e = rootAlloc(epilogue.getDpsInits()[0]))
            outputs.push_back(e);
      }
      for (memref::AllocOp alloc : outputs)
        if (alloc->getBlock() == &body && alloc->getNumOperands() == 0 &&
            copy->isBeforeInBlock(alloc))
          alloc->moveBefore(copy);
    }
  }
};

} // namespace

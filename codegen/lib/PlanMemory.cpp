//===- ArenaAllocate.cpp - kiln-arena-allocate ----------------------------===//
//
// Turns the intermediate allocations left after bufferization into views of
// one caller-owned arena, so the compiled function never allocates. The pass
// is gather -> plan -> apply: live ranges are read off the op order (a
// buffer lives from its allocation to the last op touching it or any memref
// made from it), the offsets come from the IR-free packer (ArenaPacker.h),
// and the allocations are rewritten as views.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"
#include "kiln/Passes/ArenaPacker.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_ARENAALLOCATE
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct Buffer {
  memref::AllocOp alloc;
  uint64_t bytes;
  uint64_t alignment; // at least the pass option; more if the alloc asks
  SmallVector<Operation *> deallocs; // of the buffer or any view of it
  unsigned firstUse; // position of the alloc in the block
  unsigned lastUse;  // position of the last op touching it or a view of it
};

struct ArenaAllocate : kiln::impl::ArenaAllocateBase<ArenaAllocate> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("expects a single-block body for arena allocation");
      return signalPassFailure();
    }
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      func.emitOpError("expects a power-of-two alignment, got ")
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    Block &body = func.getBody().front();

    // Allocations inside loops or branches would stay real allocations.
    WalkResult nested = func.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::AllocaOp>(op) && op->getBlock() != &body) {
        op->emitOpError("expects allocations at the top level of the function "
                        "for arena placement");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return signalPassFailure();

    // Position of every top-level op; nested uses count at their ancestor.
    DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;

    SmallVector<Buffer> buffers;
    for (Operation &op : body) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          type.getMemorySpace()) {
        alloc.emitOpError("expects a static shape with identity layout in the "
                          "default memory space, got ")
            << type;
        return signalPassFailure();
      }
      uint64_t eltBytes =
          llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      uint64_t align = std::max<uint64_t>(alignment, alloc.getAlignment().value_or(1));
      if (!llvm::isPowerOf2_64(align)) {
        alloc.emitOpError("expects a power-of-two alignment, got ") << align;
        return signalPassFailure();
      }
      Buffer b{alloc, eltBytes * type.getNumElements(), align, {},
               position[alloc], 0};
      b.lastUse = b.firstUse;
      // Follow views (reshapes, casts) to the last op that touches the data.
      SmallVector<Value> worklist = {alloc.getResult()};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          if (top)
            b.lastUse = std::max(b.lastUse, position[top]);
          if (isa<memref::DeallocOp>(user))
            b.deallocs.push_back(user);
          // Any memref an op makes from the buffer may alias it (views,
          // reshapes, casts): follow all of them, conservatively.
          for (Value result : user->getResults())
            if (isa<BaseMemRefType>(result.getType()))
              worklist.push_back(result);
        }
      }
      buffers.push_back(b);
    }

    std::vector<kiln::PackBuffer> intervals;
    for (const Buffer &b : buffers)
      intervals.push_back({b.bytes, b.alignment, b.firstUse, b.lastUse});
    kiln::PackResult plan = kiln::packArena(intervals);
    uint64_t arenaAlignment = alignment;
    for (const Buffer &b : buffers)
      arenaAlignment = std::max(arenaAlignment, b.alignment);
    uint64_t arenaBytes = llvm::alignTo(plan.arenaBytes, alignment);

    MLIRContext *ctx = &getContext();
    auto arenaType = MemRefType::get({static_cast<int64_t>(arenaBytes)},
                                     IntegerType::get(ctx, 8));
    unsigned argIndex = func.getNumArguments();
    if (failed(func.insertArgument(
            argIndex, arenaType,
            DictionaryAttr::get(ctx, {NamedAttribute(
                                         StringAttr::get(ctx, "kiln.arena"),
                                         UnitAttr::get(ctx))}),
            func.getLoc())))
      return signalPassFailure();
    Value arena = func.getArgument(argIndex);

    OpBuilder builder(ctx);
    for (auto [b, offset] : llvm::zip(buffers, plan.offsets)) {
      builder.setInsertionPoint(b.alloc);
      Location loc = b.alloc.getLoc();
      Value off = arith::ConstantIndexOp::create(builder, loc, offset);
      Value view = memref::ViewOp::create(builder, loc, b.alloc.getType(),
                                          arena, off, ValueRange{});
      for (Operation *dealloc : b.deallocs)
        dealloc->erase();
      b.alloc.replaceAllUsesWith(view);
      b.alloc.erase();
      ++numBuffers;
    }

    Builder attrs(ctx);
    func->setAttr("kiln.arena_bytes", attrs.getI64IntegerAttr(arenaBytes));
    func->setAttr("kiln.arena_alignment", attrs.getI64IntegerAttr(arenaAlignment));
    func->setAttr("kiln.arena_lower_bound_bytes",
                  attrs.getI64IntegerAttr(plan.lowerBoundBytes));
    func->setAttr("kiln.arena_no_reuse_bytes",
                  attrs.getI64IntegerAttr(plan.noReuseBytes));
  }
};

} // namespace

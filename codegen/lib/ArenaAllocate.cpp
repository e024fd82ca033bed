//===- ArenaAllocate.cpp - kiln-arena-allocate ----------------------------===//
//
// Turns the intermediate allocations left after bufferization into views of
// one caller-owned arena, so the compiled function never allocates. The pass
// is gather -> plan -> apply: the plan is a plain function over sizes and
// live ranges (planArena), kept apart from the IR so it can be replaced by a
// reusing planner without touching the rewrite.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

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

struct ArenaPlan {
  SmallVector<uint64_t> offsets;
  uint64_t arenaBytes = 0;
  uint64_t alignment = 1; // the arena base must be aligned to this
  uint64_t lowerBoundBytes = 0;
};

/// Bump allocation (each buffer its own aligned range) and the live-set lower
/// bound over the op order.
ArenaPlan planArena(ArrayRef<Buffer> buffers, uint64_t alignment,
                    unsigned numPositions) {
  ArenaPlan plan;
  plan.alignment = alignment;
  for (const Buffer &b : buffers) {
    plan.alignment = std::max(plan.alignment, b.alignment);
    plan.arenaBytes = llvm::alignTo(plan.arenaBytes, b.alignment);
    plan.offsets.push_back(plan.arenaBytes);
    plan.arenaBytes += b.bytes;
  }
  plan.arenaBytes = llvm::alignTo(plan.arenaBytes, alignment);
  SmallVector<uint64_t> live(numPositions + 1, 0);
  for (const Buffer &b : buffers)
    for (unsigned p = b.firstUse; p <= b.lastUse; ++p)
      live[p] += b.bytes;
  for (uint64_t l : live)
    plan.lowerBoundBytes = std::max(plan.lowerBoundBytes, l);
  return plan;
}

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
          if (auto view = dyn_cast<ViewLikeOpInterface>(user))
            if (view.getViewSource() == v)
              llvm::append_range(worklist, user->getResults());
        }
      }
      buffers.push_back(b);
    }

    ArenaPlan plan = planArena(buffers, alignment, body.getOperations().size());

    MLIRContext *ctx = &getContext();
    auto arenaType = MemRefType::get({static_cast<int64_t>(plan.arenaBytes)},
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
    func->setAttr("kiln.arena_bytes", attrs.getI64IntegerAttr(plan.arenaBytes));
    func->setAttr("kiln.arena_alignment", attrs.getI64IntegerAttr(plan.alignment));
    func->setAttr("kiln.arena_lower_bound_bytes",
                  attrs.getI64IntegerAttr(plan.lowerBoundBytes));
  }
};

} // namespace

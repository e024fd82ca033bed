//===- PlanMemory.cpp - kiln-plan-memory ----------------------------------===//
//
// Turns the intermediate allocations left after bufferization into views of
// one caller-owned arena, so the compiled function never allocates. The pass
// is gather -> plan -> apply: live ranges are read off the op order, which
// is the static schedule (a buffer lives from its allocation to the last op
// touching it or any memref made from it); an elementwise op whose input
// buffer dies there writes its output over that input (in-place groups);
// the offsets come from the IR-free packer (ArenaPacker.h), and the
// allocations are rewritten as views. The plan itself is a MemoryPlan
// value, delivered to the caller's sink (how the backends and
// `kilnc --emit=memory-plan` get it) and written on the function as
// attributes for readers of printed IR.
//
//===----------------------------------------------------------------------===//

#include "RunTimeSizes.h"

#include "kiln/Codegen/MemoryPlan.h"
#include "kiln/Codegen/Passes.h"
#include "kiln/Passes/ArenaPacker.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/MathExtras.h"

#include <map>

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORY
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct Buffer {
  memref::AllocOp alloc;
  uint64_t bytes;
  uint64_t alignment; // at least the pass option; more if the alloc asks
  SmallVector<Operation *> deallocs; // of the buffer or any view of it
  unsigned firstUse;                 // position of the alloc in the block
  unsigned lastUse; // position of the last op touching it or a view of it
  // Top-level ops that touch the data (not the alloc, views or deallocs).
  std::optional<unsigned> firstAccess, lastAccess;
  DenseSet<Value> memrefs;           // the buffer and every memref made from it
  unsigned group;                    // the in-place group (union-find parent)
  std::optional<unsigned> inPlaceOf; // the buffer whose storage it took
};

/// Union-find root.
unsigned groupOf(SmallVectorImpl<Buffer> &buffers, unsigned i) {
  while (buffers[i].group != i)
    i = buffers[i].group = buffers[buffers[i].group].group;
  return i;
}

/// The ONNX node name carried in a location, or "".
std::string nodeName(Location loc) {
  std::string name;
  loc->walk([&](Location l) {
    if (auto n = dyn_cast<NameLoc>(l)) {
      name = n.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

struct PlanMemory : kiln::impl::PlanMemoryBase<PlanMemory> {
  using Base::Base;

  /// Receives each function's plan (createPlanMemoryPass); may be null.
  kiln::MemoryPlanSink *sink = nullptr;

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
      if (isa<memref::AllocOp, memref::AllocaOp>(op) &&
          op->getBlock() != &body) {
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
    // Each buffer's bytes as an expression over the symbols, for the arena
    // a run at given sizes needs (kiln.arena_terms).
    SmallVector<kiln::DimExpr> bytesAt;
    bool symbolic = false;
    for (Operation &op : body) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      if (!type.getLayout().isIdentity() || type.getMemorySpace()) {
        alloc.emitOpError("expects an identity layout in the default memory "
                          "space, got ")
            << type;
        return signalPassFailure();
      }
      // A dynamic size (decision 0027) takes its slot at its upper bound,
      // so offsets and the arena size stay constants.
      uint64_t numElements = 1;
      Type elt = type.getElementType();
      if (!elt.isIntOrFloat()) {
        // The arena's offsets are in bytes of sized elements (an index's
        // width is the target's).
        alloc.emitOpError("expects integer or float elements, got ") << type;
        return signalPassFailure();
      }
      uint64_t eltBytes = llvm::divideCeil(elt.getIntOrFloatBitWidth(), 8);
      kiln::DimExpr bytes = kiln::DimExpr::constant(eltBytes);
      auto dynamicSize = alloc.getDynamicSizes().begin();
      for (int64_t dim : type.getShape()) {
        if (!ShapedType::isDynamic(dim)) {
          numElements *= dim;
          bytes = bytes * kiln::DimExpr::constant(dim);
          continue;
        }
        Value size = *dynamicSize++;
        std::optional<int64_t> bound = kiln::sizeUpperBound(size);
        std::optional<kiln::DimExpr> expr = kiln::sizeExpr(size);
        if (!bound || *bound < 0 || !expr) {
          alloc.emitOpError("expects each dynamic size to be computed from "
                            "the symbols' arguments, whose ranges bound it");
          return signalPassFailure();
        }
        numElements *= *bound;
        bytes = bytes * *expr;
        symbolic = true;
      }
      bytesAt.push_back(bytes);
      uint64_t align =
          std::max<uint64_t>(alignment, alloc.getAlignment().value_or(1));
      if (!llvm::isPowerOf2_64(align)) {
        alloc.emitOpError("expects a power-of-two alignment, got ") << align;
        return signalPassFailure();
      }
      Buffer b{alloc,
               eltBytes * numElements,
               align,
               {},
               position[alloc],
               0,
               {},
               {},
               {},
               0,
               {}};
      b.lastUse = b.firstUse;
      b.group = buffers.size();
      b.memrefs.insert(alloc.getResult());
      // Follow views (reshapes, casts) to the last op that touches the data.
      SmallVector<Value> worklist = {alloc.getResult()};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          if (top)
            b.lastUse = std::max(b.lastUse, position[top]);
          bool isDealloc = isa<memref::DeallocOp>(user);
          if (isDealloc)
            b.deallocs.push_back(user);
          bool makesMemref = false;
          // Any memref an op makes from the buffer may alias it (views,
          // reshapes, casts): follow all of them, conservatively.
          for (Value result : user->getResults())
            if (isa<BaseMemRefType>(result.getType())) {
              makesMemref = true;
              if (b.memrefs.insert(result).second)
                worklist.push_back(result);
            }
          bool pureView = makesMemref && isa<ViewLikeOpInterface>(user) &&
                          user->getBlock() == &body;
          if (top && !isDealloc && !pureView) {
            unsigned p = position[top];
            b.firstAccess = std::min(b.firstAccess.value_or(p), p);
            b.lastAccess = std::max(b.lastAccess.value_or(p), p);
          }
        }
      }
      buffers.push_back(b);
    }

    if (inPlace)
      formInPlaceGroups(body, position, buffers);

    // One packing interval per in-place group, spanning its members.
    SmallVector<unsigned> slotOf(buffers.size());
    std::vector<kiln::PackBuffer> intervals;
    for (auto [i, b] : llvm::enumerate(buffers)) {
      if (groupOf(buffers, i) != i)
        continue;
      slotOf[i] = intervals.size();
      intervals.push_back({b.bytes, b.alignment, b.firstUse, b.lastUse});
    }
    for (auto [i, b] : llvm::enumerate(buffers)) {
      unsigned root = groupOf(buffers, i);
      if (root == i)
        continue;
      slotOf[i] = slotOf[root];
      kiln::PackBuffer &slot = intervals[slotOf[i]];
      slot.size = std::max<uint64_t>(slot.size, b.bytes);
      slot.alignment = std::max<uint64_t>(slot.alignment, b.alignment);
      slot.first = std::min(slot.first, b.firstUse);
      slot.last = std::max(slot.last, b.lastUse);
      ++numInPlace;
    }
    kiln::PackResult plan = kiln::packArena(intervals, alignment);
    // Without reuse means without in-place reuse too: every buffer alone.
    plan.noReuseBytes = 0;
    for (const Buffer &b : buffers)
      plan.noReuseBytes += llvm::alignTo(b.bytes, alignment);
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
            DictionaryAttr::get(
                ctx, {NamedAttribute(StringAttr::get(ctx, "kiln.arena"),
                                     UnitAttr::get(ctx))}),
            func.getLoc())))
      return signalPassFailure();
    Value arena = func.getArgument(argIndex);

    OpBuilder builder(ctx);
    // The plan as data, before the allocations go: one entry per buffer,
    // live ranges counted in compute steps (ops other than allocations,
    // views, constants and deallocations).
    SmallVector<unsigned> stepAt(position.size() + 1);
    unsigned step = 0;
    for (auto [i, op] : llvm::enumerate(body)) {
      stepAt[i] = step;
      bool bookkeeping = isa<memref::AllocOp, memref::DeallocOp,
                             arith::ConstantOp, ViewLikeOpInterface>(op) ||
                         op.hasTrait<OpTrait::IsTerminator>();
      if (!bookkeeping)
        ++step;
    }
    unsigned numSteps = std::max(step, 1u);
    auto clampStep = [&](unsigned pos) {
      return std::min(stepAt[std::min<size_t>(pos, stepAt.size() - 1)],
                      numSteps - 1);
    };
    kiln::MemoryPlan result;
    result.arenaBytes = arenaBytes;
    result.arenaAlignment = arenaAlignment;
    result.lowerBoundBytes = plan.lowerBoundBytes;
    result.noReuseBytes = plan.noReuseBytes;
    result.steps = numSteps;
    result.peakStep = clampStep(plan.peakStep);
    for (auto [i, b] : llvm::enumerate(buffers)) {
      kiln::PlannedBuffer entry;
      entry.name = nodeName(b.alloc.getLoc());
      entry.offset = plan.offsets[slotOf[i]];
      entry.size = b.bytes;
      entry.first = clampStep(b.firstUse);
      entry.last = clampStep(b.lastUse);
      entry.inPlaceOf = b.inPlaceOf ? static_cast<int64_t>(*b.inPlaceOf) : -1;
      result.buffers.push_back(std::move(entry));
    }
    if (symbolic)
      result.arenaTerms = arenaTerms(bytesAt, plan.offsets, slotOf);
    recordAttributes(func, result);

    for (auto [i, b] : llvm::enumerate(buffers)) {
      uint64_t offset = plan.offsets[slotOf[i]];
      builder.setInsertionPoint(b.alloc);
      Location loc = b.alloc.getLoc();
      Value off = arith::ConstantIndexOp::create(builder, loc, offset);
      Value view =
          memref::ViewOp::create(builder, loc, b.alloc.getType(), arena, off,
                                 b.alloc.getDynamicSizes());
      for (Operation *dealloc : b.deallocs)
        dealloc->erase();
      b.alloc.replaceAllUsesWith(view);
      b.alloc.erase();
      ++numBuffers;
    }

    arenaBytesStat = arenaBytes;
    lowerBoundBytesStat = plan.lowerBoundBytes;
    noReuseBytesStat = plan.noReuseBytes;
    if (sink)
      sink->record(func.getSymName(), std::move(result));
  }

  /// The plan as attributes on the function, for readers of printed IR:
  /// `kiln.memory_plan` (steps, peak and buffers) and the arena's sizes.
  static void recordAttributes(func::FuncOp func, const kiln::MemoryPlan &p) {
    Builder attrs(func.getContext());
    SmallVector<Attribute> planEntries;
    for (const kiln::PlannedBuffer &b : p.buffers) {
      SmallVector<NamedAttribute> entry = {
          attrs.getNamedAttr("name", attrs.getStringAttr(b.name)),
          attrs.getNamedAttr("offset", attrs.getI64IntegerAttr(b.offset)),
          attrs.getNamedAttr("size", attrs.getI64IntegerAttr(b.size)),
          attrs.getNamedAttr("first", attrs.getI64IntegerAttr(b.first)),
          attrs.getNamedAttr("last", attrs.getI64IntegerAttr(b.last))};
      if (b.inPlaceOf >= 0)
        entry.push_back(attrs.getNamedAttr(
            "in_place_of", attrs.getI64IntegerAttr(b.inPlaceOf)));
      planEntries.push_back(attrs.getDictionaryAttr(entry));
    }
    func->setAttr(
        "kiln.memory_plan",
        attrs.getDictionaryAttr(
            {attrs.getNamedAttr("steps", attrs.getI64IntegerAttr(p.steps)),
             attrs.getNamedAttr("peak_step",
                                attrs.getI64IntegerAttr(p.peakStep)),
             attrs.getNamedAttr("buffers", attrs.getArrayAttr(planEntries))}));
    func->setAttr("kiln.arena_bytes", attrs.getI64IntegerAttr(p.arenaBytes));
    func->setAttr("kiln.arena_alignment",
                  attrs.getI64IntegerAttr(p.arenaAlignment));
    func->setAttr("kiln.arena_lower_bound_bytes",
                  attrs.getI64IntegerAttr(p.lowerBoundBytes));
    func->setAttr("kiln.arena_no_reuse_bytes",
                  attrs.getI64IntegerAttr(p.noReuseBytes));
    if (!p.arenaTerms.empty()) {
      SmallVector<Attribute> terms;
      for (const std::string &t : p.arenaTerms)
        terms.push_back(attrs.getStringAttr(t));
      func->setAttr("kiln.arena_terms", attrs.getArrayAttr(terms));
    }
  }

  /// The bytes of the arena a run at given sizes reaches, as expressions
  /// whose largest value is that size (decision 0027, step 4): the end of
  /// every buffer whose size is symbolic, at its planned offset, and the
  /// farthest end of the others. Terms of the same symbolic part keep the
  /// largest offset.
  static std::vector<std::string> arenaTerms(ArrayRef<kiln::DimExpr> bytesAt,
                                             ArrayRef<uint64_t> offsets,
                                             ArrayRef<unsigned> slotOf) {
    std::map<std::string, std::pair<kiln::DimExpr, int64_t>> terms;
    int64_t staticEnd = 0;
    for (auto [i, bytes] : llvm::enumerate(bytesAt)) {
      auto offset = static_cast<int64_t>(offsets[slotOf[i]]);
      if (std::optional<int64_t> known = bytes.getConstant()) {
        staticEnd = std::max(staticEnd, offset + *known);
        continue;
      }
      auto [it, inserted] =
          terms.try_emplace(bytes.str(), std::make_pair(bytes, offset));
      if (!inserted)
        it->second.second = std::max(it->second.second, offset);
    }
    std::vector<std::string> texts = {kiln::DimExpr::constant(staticEnd).str()};
    for (auto &[text, term] : terms)
      texts.push_back(
          (term.first + kiln::DimExpr::constant(term.second)).str());
    return texts;
  }

  /// Lets the output of an elementwise op take the storage of an input that
  /// dies there. Legal, at buffer level, when the op is a top-level linalg
  /// op with only parallel loops and one output whose payload never reads
  /// the output's old value; the input and the output are whole
  /// allocations (the input possibly through contiguous reshapes) of the
  /// same type read and written through the same
  /// permutation map (so each output element is computed from the input
  /// element at the same address, and is written after that element is
  /// read); this op is the last access of the input's group and the first
  /// of the output; and no other operand of the op aliases the input.
  /// Function arguments are never allocations, so inputs of the graph and
  /// the caller's output buffers are never taken.
  void formInPlaceGroups(Block &body, DenseMap<Operation *, unsigned> &position,
                         SmallVectorImpl<Buffer> &buffers) {
    DenseMap<Value, unsigned> bufferOfAlloc;
    for (auto [i, b] : llvm::enumerate(buffers))
      bufferOfAlloc[b.alloc.getResult()] = i;
    // The group's last data access, maintained as groups merge.
    SmallVector<std::optional<unsigned>> groupLastAccess;
    for (const Buffer &b : buffers)
      groupLastAccess.push_back(b.lastAccess);
    for (Operation &op : body) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
      if (!linalgOp || !linalgOp.hasPureBufferSemantics() ||
          linalgOp.getNumDpsInits() != 1 ||
          linalgOp.getNumParallelLoops() != linalgOp.getNumLoops())
        continue;
      OpOperand *init = linalgOp.getDpsInitOperand(0);
      auto outIt = bufferOfAlloc.find(init->get());
      if (outIt == bufferOfAlloc.end() ||
          linalgOp.payloadUsesValueFromOperand(init))
        continue;
      unsigned out = outIt->second;
      unsigned pos = position[&op];
      AffineMap outMap = linalgOp.getMatchingIndexingMap(init);
      if (buffers[out].firstAccess != pos || !outMap.isPermutation() ||
          groupOf(buffers, out) != out)
        continue;
      for (OpOperand *input : linalgOp.getDpsInputOperands()) {
        // The input may be a contiguous reshape of the allocation (a
        // matmul written through split panels, read back collapsed): the
        // same elements at the same addresses.
        Value root = input->get();
        while (true) {
          Operation *def = root.getDefiningOp();
          if (!isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp>(
                  def) ||
              !cast<MemRefType>(root.getType()).getLayout().isIdentity())
            break;
          root = def->getOperand(0);
        }
        auto inIt = bufferOfAlloc.find(root);
        if (inIt == bufferOfAlloc.end())
          continue;
        unsigned in = inIt->second, group = groupOf(buffers, in);
        if (group == out || input->get().getType() != init->get().getType() ||
            linalgOp.getMatchingIndexingMap(input) != outMap ||
            groupLastAccess[group] != pos)
          continue;
        // Any other operand reading the input's storage would see it
        // overwritten; the whole group is checked, views included.
        bool aliased = false;
        for (OpOperand &other : op.getOpOperands()) {
          if (&other == input)
            continue;
          for (auto [j, b] : llvm::enumerate(buffers))
            if (groupOf(buffers, j) == group && b.memrefs.contains(other.get()))
              aliased = true;
        }
        if (aliased)
          continue;
        buffers[out].group = group;
        buffers[out].inPlaceOf = in;
        groupLastAccess[group] = buffers[out].lastAccess;
        break;
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> kiln::createPlanMemoryPass(int64_t alignment,
                                                 MemoryPlanSink *sink) {
  PlanMemoryOptions options;
  options.alignment = alignment;
  auto pass = std::make_unique<PlanMemory>(options);
  pass->sink = sink;
  return pass;
}

//===- OutlineParallelLoops.cpp - kiln-outline-parallel-loops -------------===//
//
// Moves each top-level loop the schedules marked kiln.parallel into its own
// function over an index range, and leaves in its place a call to a region
// placeholder that the CPU code generator defines in LLVM IR: serially, or
// through the runtime's dispatcher (docs/decisions/0012-threads.md). It
// runs on buffers after arena planning, so the loop's captures are static
// memrefs (arguments or arena views) and a few constants, and outlining
// changes neither the memory plan nor the arithmetic.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPS
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Whether `type` reaches the body as one bare pointer: a memref of static
/// shape, strides and offset (what convert-func-to-llvm's bare-pointer
/// calling convention accepts).
static bool isBarePointerMemref(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  return ShapedType::isStatic(offset) && llvm::all_of(strides, [](int64_t s) {
           return ShapedType::isStatic(s);
         });
}

/// Values the body clones instead of receiving: constants and globals.
static bool isClonable(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         (def->hasTrait<OpTrait::ConstantLike>() ||
          isa<memref::GetGlobalOp>(def));
}

/// The memref `v` is a view of: follows view ops whose other operands are
/// constants up to a value that is not such a view (a function argument,
/// usually the arena), appending the ops on the way to `chain`. The body
/// rebuilds the views from their root, so LLVM still sees that two arena
/// views at different constant offsets are disjoint, and what alignment
/// they have, as it does in the kernel itself.
static Value viewRoot(Value v, SmallVectorImpl<Operation *> &chain) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<memref::ViewOp, memref::SubViewOp, memref::CollapseShapeOp,
             memref::ExpandShapeOp, memref::ReinterpretCastOp, memref::CastOp>(
            def))
      break;
    Value source = def->getOperand(0);
    if (!llvm::all_of(def->getOperands().drop_front(), isClonable) ||
        !isa<MemRefType>(source.getType()))
      break;
    chain.push_back(def);
    v = source;
  }
  return v;
}

struct OutlineParallelLoops
    : kiln::impl::OutlineParallelLoopsBase<OutlineParallelLoops> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      SmallVector<scf::ForOp> loops;
      for (Operation &op : func.getBody().front())
        if (auto loop = dyn_cast<scf::ForOp>(op);
            loop && loop->hasAttr(kiln::kParallelAttr))
          loops.push_back(loop);
      Value context;
      Operation *insertAfter = func;
      unsigned next = 0;
      for (scf::ForOp loop : loops)
        if (succeeded(outline(func, loop, next, context, insertAfter)))
          ++next, ++numOutlined;
    }
    // Nested and unused marks mean nothing past this point.
    module.walk([](scf::ForOp loop) { loop->removeAttr(kiln::kParallelAttr); });
  }

  LogicalResult outline(func::FuncOp func, scf::ForOp loop, unsigned index,
                        Value &context, Operation *&insertAfter) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (loop.getNumResults() != 0 || !lb || !ub || !step || *step <= 0)
      return failure();
    int64_t trips = *ub > *lb ? (*ub - *lb + *step - 1) / *step : 0;
    if (trips < 2)
      return failure();

    SetVector<Value> used;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    // Captured: the roots of the memrefs used; cloned: constants and the
    // view ops from the roots, in their order in the function.
    SetVector<Value> captured;
    SetVector<Operation *> cloned;
    for (Value v : used) {
      if (isClonable(v)) {
        cloned.insert(v.getDefiningOp());
        continue;
      }
      if (!isBarePointerMemref(v.getType()))
        return failure();
      SmallVector<Operation *> chain;
      Value root = viewRoot(v, chain);
      if (!isBarePointerMemref(root.getType())) {
        chain.clear();
        root = v;
      }
      captured.insert(root);
      for (Operation *op : chain) {
        cloned.insert(op);
        for (Value operand : op->getOperands().drop_front())
          cloned.insert(operand.getDefiningOp());
      }
    }
    SmallVector<Operation *> clones = cloned.takeVector();
    llvm::sort(clones, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });

    MLIRContext *ctx = func.getContext();
    Location loc = loop.getLoc();
    Type indexTy = IndexType::get(ctx);
    std::string base = func.getSymName().str();
    std::string bodyName =
        base + kiln::kParallelBodySuffix.str() + std::to_string(index);
    std::string regionName =
        base + kiln::kParallelRegionSuffix.str() + std::to_string(index);
    auto module = func->getParentOfType<ModuleOp>();
    if (module.lookupSymbol(bodyName) || module.lookupSymbol(regionName))
      return loop.emitOpError("cannot outline: symbol '")
             << bodyName << "' or '" << regionName << "' already exists";

    // body(captured..., lo, hi): iterations [lo, hi) of the loop.
    SmallVector<Type> bodyArgs;
    for (Value v : captured)
      bodyArgs.push_back(v.getType());
    bodyArgs.append({indexTy, indexTy});
    OpBuilder b(ctx);
    b.setInsertionPointAfter(insertAfter);
    auto body =
        func::FuncOp::create(b, loc, bodyName, b.getFunctionType(bodyArgs, {}));
    body.setPrivate();
    Block *entry = body.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(captured, entry->getArguments()))
      map.map(v, arg);
    for (Operation *op : clones)
      b.clone(*op, map);
    Value lo = entry->getArgument(captured.size());
    Value hi = entry->getArgument(captured.size() + 1);
    Value stepValue = arith::ConstantIndexOp::create(b, loc, *step);
    Value lbValue = arith::ConstantIndexOp::create(b, loc, *lb);
    auto first = [&](Value i) {
      return arith::AddIOp::create(b, loc, lbValue,
                                   arith::MulIOp::create(b, loc, i, stepValue));
    };
    Value newLb = first(lo), newUb = first(hi);
    auto copy = cast<scf::ForOp>(b.clone(*loop, map));
    // The bounds were operands from the function, not the region.
    copy.setLowerBound(newLb);
    copy.setUpperBound(newUb);
    copy.setStep(stepValue);
    copy->removeAttr(kiln::kParallelAttr);
    func::ReturnOp::create(b, loc);
    insertAfter = body;

    // region(par, captured..., n): defined by the code generator.
    if (!context) {
      unsigned at = func.getNumArguments();
      if (failed(func.insertArgument(at, LLVM::LLVMPointerType::get(ctx),
                                     DictionaryAttr::get(ctx), loc)))
        return failure();
      context = func.getArgument(at);
    }
    SmallVector<Type> regionArgs = {context.getType()};
    for (Value v : captured)
      regionArgs.push_back(v.getType());
    regionArgs.push_back(indexTy);
    b.setInsertionPointAfter(insertAfter);
    auto region = func::FuncOp::create(b, loc, regionName,
                                       b.getFunctionType(regionArgs, {}));
    region.setPrivate();
    insertAfter = region;

    // Without a dispatcher the loop runs in place, exactly as before: the
    // serial code keeps everything LLVM knows about it in the function.
    b.setInsertionPoint(loop);
    Value null = LLVM::ZeroOp::create(b, loc, context.getType());
    Value serial =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, context, null);
    auto branch = scf::IfOp::create(b, loc, serial, /*withElseRegion=*/true);
    loop->moveBefore(branch.thenBlock()->getTerminator());
    loop->removeAttr(kiln::kParallelAttr);
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    SmallVector<Value> operands = {context};
    operands.append(captured.begin(), captured.end());
    operands.push_back(arith::ConstantIndexOp::create(b, loc, trips));
    func::CallOp::create(b, loc, region, operands);
    return success();
  }
};

} // namespace

//===- OutlineParallelLoops.cpp - kiln-outline-parallel-loops -------------===//
//
// Moves each top-level loop the schedules marked kiln.parallel into its own
// function over an index range, and leaves in its place a call to a region
// placeholder that the CPU code generator defines in LLVM IR: serially, or
// through the runtime's dispatcher (docs/decisions/0012-threads.md). The
// other top-level loops become functions too, called in place. Identical
// loops share one function (docs/decisions/0026). It
// runs on buffers after arena planning, so the loop's captures are static
// memrefs (arguments or arena views) and a few constants, and outlining
// changes neither the memory plan nor the arithmetic.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"
#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringMap.h"

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

/// Values the body clones instead of receiving: constants.
static bool isClonable(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         def->hasTrait<OpTrait::ConstantLike>();
}

/// What a body receives for one memref it uses, and what it rebuilds.
struct Capture {
  /// The value passed: a view of the arena, a global or a root.
  Value value;
  /// View ops between `value` and the use, cloned into the body.
  SmallVector<Operation *> chain;
};

/// The capture for memref `v`: follows view ops whose other operands are
/// constants towards their source, and stops at the first `memref.view` of
/// a buffer (an arena view at a constant offset), at a global, or at a
/// value that is not such a view (a function argument). Passing the arena
/// view itself rather than the arena and an offset is what lets two loops
/// that differ only in where their buffers sit share one body.
static Capture captureOf(Value v) {
  SmallVector<Operation *> chain;
  while (Operation *def = v.getDefiningOp()) {
    if (isa<memref::ViewOp, memref::GetGlobalOp>(def))
      break;
    if (!isa<memref::SubViewOp, memref::CollapseShapeOp, memref::ExpandShapeOp,
             memref::ReinterpretCastOp, memref::CastOp>(def))
      break;
    Value source = def->getOperand(0);
    if (!llvm::all_of(def->getOperands().drop_front(), isClonable) ||
        !isBarePointerMemref(source.getType()))
      break;
    chain.push_back(def);
    v = source;
  }
  return {v, chain};
}

/// The byte range [first, last) of arena `root` that `v` covers, when `v`
/// is a `memref.view` of it at a constant offset.
static std::optional<std::pair<int64_t, int64_t>> viewBytes(Value v,
                                                            Value &root) {
  auto view = v.getDefiningOp<memref::ViewOp>();
  if (!view || !view.getSizes().empty())
    return std::nullopt;
  std::optional<int64_t> offset = getConstantIntValue(view.getByteShift());
  auto type = cast<MemRefType>(v.getType());
  if (!offset || !type.hasStaticShape() ||
      !type.getElementType().isIntOrFloat())
    return std::nullopt;
  root = view.getSource();
  int64_t bits = type.getNumElements() * type.getElementTypeBitWidth();
  return std::make_pair(*offset, *offset + (bits + 7) / 8);
}

/// Whether `v` is a global that is never written.
static bool isConstantGlobal(Value v, SymbolTableCollection &symbols) {
  auto get = v.getDefiningOp<memref::GetGlobalOp>();
  if (!get)
    return false;
  auto global =
      symbols.lookupNearestSymbolFrom<memref::GlobalOp>(get, get.getNameAttr());
  return global && global.getConstant();
}

/// Which caller buffer a function argument of a planned entry (one with
/// `kiln.arena_bytes`) is. The ABI keeps the caller's buffers apart: an
/// output overlaps no input, no other output and not the arena, an input
/// does not overlap the arena, and the state overlaps nothing
/// (docs/runtime-api.md). Inputs may overlap each other, but the code never
/// writes them, and `noalias` only speaks of memory that is written. A
/// state tensor comes twice, as the argument it is read from and the one
/// the step writes it to (kiln.state, updated in place): both are one
/// buffer, named by the state's name. Null outside a planned entry.
static Attribute callerBuffer(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return {};
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func || arg.getOwner() != &func.getBody().front() ||
      !func->hasAttr("kiln.arena_bytes"))
    return {};
  MLIRContext *ctx = func.getContext();
  unsigned i = arg.getArgNumber();
  if (func.getArgAttr(i, kiln::kStateAttr))
    if (auto name = func.getArgAttrOfType<StringAttr>(i, kiln::kNameAttr))
      return StringAttr::get(ctx, "state:" + name.getValue());
  return IntegerAttr::get(IndexType::get(ctx), i);
}

/// The captures that no other capture can touch: constant globals (never
/// written); arena views whose bytes no other view of the same arena
/// overlaps; and views or whole buffers of the caller (arguments of a
/// planned entry, the arena among them) that every other capture is a
/// view of another caller buffer, or a constant global. Their body
/// arguments are `llvm.noalias`, which tells LLVM what the constant offsets
/// from one arena base told it before outlining, and what the ABI says of
/// the caller's buffers.
static SmallVector<bool> provablyDisjoint(ArrayRef<Value> captured,
                                          SymbolTableCollection &symbols) {
  SmallVector<bool> constant, disjoint(captured.size(), false);
  SmallVector<Value> roots(captured.size());
  SmallVector<std::optional<std::pair<int64_t, int64_t>>> bytes;
  SmallVector<Attribute> buffers;
  for (auto [i, v] : llvm::enumerate(captured)) {
    constant.push_back(isConstantGlobal(v, symbols));
    bytes.push_back(viewBytes(v, roots[i]));
    buffers.push_back(callerBuffer(bytes.back() ? roots[i] : v));
  }
  for (size_t i = 0; i < captured.size(); ++i) {
    if (constant[i]) {
      disjoint[i] = true;
      continue;
    }
    bool ok = true;
    for (size_t j = 0; j < captured.size() && ok; ++j) {
      if (j == i || constant[j])
        continue;
      if (buffers[i] && buffers[j] && buffers[i] != buffers[j])
        continue;
      ok = bytes[i] && bytes[j] && roots[j] == roots[i] &&
           (bytes[j]->second <= bytes[i]->first ||
            bytes[i]->second <= bytes[j]->first);
    }
    disjoint[i] = ok;
  }
  return disjoint;
}

/// A top-level loop built into a function over [lo, hi) of its iterations,
/// or (`whole`) into a function that runs the loop as it is, not yet in the
/// module.
struct Candidate {
  scf::ForOp loop;
  func::FuncOp body;
  SmallVector<Value> captured;
  int64_t trips = 0;
  /// The body runs the whole loop, bounds included, and returns its
  /// results: body(captured...) (a loop over sizes computed at run time).
  bool whole = false;
  /// The body's text without its name: equal keys, equal code.
  std::string key;
};

/// Whether `type` is a scalar a body can take or return by value.
static bool isScalar(Type type) {
  return isa<IndexType, IntegerType, FloatType>(type);
}

/// The view ops from a memref of run-time shape back to the static memref
/// it views (an arena view at a run-time size, a window of it), source
/// last, and the static memref; failure when the chain ends anywhere else
/// or a view op takes other than scalars.
static FailureOr<Capture> dynamicCaptureOf(Value v) {
  SmallVector<Operation *> chain;
  while (!isBarePointerMemref(v.getType())) {
    Operation *def = v.getDefiningOp();
    if (!def ||
        !isa<memref::ViewOp, memref::SubViewOp, memref::CollapseShapeOp,
             memref::ExpandShapeOp, memref::ReinterpretCastOp, memref::CastOp>(
            def))
      return failure();
    if (!llvm::all_of(def->getOperands().drop_front(), [](Value operand) {
          return isScalar(operand.getType());
        }))
      return failure();
    chain.push_back(def);
    v = def->getOperand(0);
  }
  return Capture{v, chain};
}

/// The body of `loop` from its captures and the constants and views it
/// clones: over [lo, hi) of its `trips` iterations (constant bounds), or,
/// `whole`, the loop as it is, returning its results.
static Candidate
finishBody(scf::ForOp loop, SetVector<Value> &captured,
           SetVector<Operation *> &cloned, int64_t trips, bool whole,
           SymbolTableCollection &symbols,
           ArrayRef<std::pair<Operation *, unsigned>> passed = {}) {
  SmallVector<Operation *> clones = cloned.takeVector();
  llvm::sort(clones,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

  MLIRContext *ctx = loop.getContext();
  Location loc = loop.getLoc();
  Type indexTy = IndexType::get(ctx);
  SmallVector<Type> bodyArgs;
  for (Value v : captured)
    bodyArgs.push_back(v.getType());
  if (!whole)
    bodyArgs.append({indexTy, indexTy});
  OpBuilder b(ctx);
  auto body = func::FuncOp::create(
      b, loc, "body",
      b.getFunctionType(bodyArgs, whole ? TypeRange(loop.getResultTypes())
                                        : TypeRange()));
  body.setPrivate();
  for (auto [i, alone] :
       llvm::enumerate(provablyDisjoint(captured.getArrayRef(), symbols)))
    if (alone)
      body.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                      UnitAttr::get(ctx));
  Block *entry = body.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(captured, entry->getArguments()))
    map.map(v, arg);
  for (Operation *op : clones) {
    Operation *copy = b.clone(*op, map);
    // Operands that are passed even where they are constants (which other
    // ops in the body get as constants).
    for (auto [user, index] : passed)
      if (user == op) {
        ArrayRef<Value> all = captured.getArrayRef();
        size_t at = llvm::find(all, op->getOperand(index)) - all.begin();
        copy->setOperand(index, entry->getArgument(at));
      }
  }
  if (whole) {
    auto copy = cast<scf::ForOp>(b.clone(*loop, map));
    copy->removeAttr(kiln::kParallelAttr);
    func::ReturnOp::create(b, loc, copy.getResults());
  } else {
    Value lo = entry->getArgument(captured.size());
    Value hi = entry->getArgument(captured.size() + 1);
    int64_t lb = *getConstantIntValue(loop.getLowerBound());
    int64_t step = *getConstantIntValue(loop.getStep());
    Value stepValue = arith::ConstantIndexOp::create(b, loc, step);
    Value lbValue = arith::ConstantIndexOp::create(b, loc, lb);
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
  }

  Candidate candidate;
  candidate.loop = loop;
  candidate.body = body;
  candidate.captured = captured.takeVector();
  candidate.trips = trips;
  candidate.whole = whole;
  llvm::raw_string_ostream os(candidate.key);
  body->print(os, OpPrintingFlags().useLocalScope());
  return candidate;
}

/// The trip count of a loop with constant bounds and step.
static std::optional<int64_t> constantTrips(scf::ForOp loop) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return *ub > *lb ? (*ub - *lb + *step - 1) / *step : 0;
}

/// A marked loop of fewer than `kFewTrips` iterations whose body is view
/// and index arithmetic and one marked loop becomes one loop over both
/// index spaces (the outer index the quotient, the inner the remainder),
/// so that the dispatcher splits pairs: the 3 m cache tiles of a 196-row
/// product went 2 to one thread and 1 to the other, while its 3 x 8
/// (m tile, panel) pairs split 12 and 12. The pure ops move into the
/// inner loop (constants in front of the outer one), which computes the
/// same views per pair. Repeats while the nest allows; returns the loop
/// that is left.
static scf::ForOp collapseFewTrips(scf::ForOp outer) {
  constexpr int64_t kFewTrips = 16;
  while (true) {
    std::optional<int64_t> outerTrips = constantTrips(outer);
    if (!outerTrips || *outerTrips >= kFewTrips || outer.getNumResults())
      return outer;
    scf::ForOp inner;
    for (Operation &op : outer.getBody()->without_terminator()) {
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && !inner) {
        inner = loop;
        continue;
      }
      if (inner || op.getNumRegions() || !isMemoryEffectFree(&op))
        return outer;
    }
    if (!inner || !inner->hasAttr(kiln::kParallelAttr) ||
        inner.getNumResults() || !constantTrips(inner))
      return outer;
    SmallVector<Operation *> prelude;
    for (Operation &op : outer.getBody()->without_terminator())
      if (&op != inner.getOperation())
        prelude.push_back(&op);
    for (Operation *op : prelude)
      if (op->hasTrait<OpTrait::ConstantLike>())
        op->moveBefore(outer);
    for (Operation *op : llvm::reverse(prelude))
      if (!op->hasTrait<OpTrait::ConstantLike>())
        op->moveBefore(&inner.getBody()->front());
    IRRewriter rewriter(outer.getContext());
    SmallVector<scf::ForOp> nest = {outer, inner};
    // The nest is replaced: [0, outer x inner) by one, a new loop that
    // keeps the outer one's attributes.
    if (failed(coalesceLoops(rewriter, nest)))
      return outer;
    outer = nest.front();
  }
}

/// The function that runs iterations [lo, hi) of `loop` from the captured
/// memrefs, or failure when the loop cannot be outlined: results, bounds
/// that are not constants, fewer than `minTrips` iterations, or a capture
/// other than a static memref or a constant.
static FailureOr<Candidate> buildBody(scf::ForOp loop, int64_t minTrips,
                                      SymbolTableCollection &symbols) {
  std::optional<int64_t> trips = constantTrips(loop);
  if (loop.getNumResults() != 0 || !trips || *trips < minTrips)
    return failure();

  SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  // Captured: arena views, globals and roots of the memrefs used; cloned:
  // constants and the view ops below them, in their order in the function.
  SetVector<Value> captured;
  SetVector<Operation *> cloned;
  for (Value v : used) {
    if (isClonable(v)) {
      cloned.insert(v.getDefiningOp());
      continue;
    }
    if (!isBarePointerMemref(v.getType()))
      return failure();
    Capture capture = captureOf(v);
    if (!isBarePointerMemref(capture.value.getType()))
      capture = {v, {}};
    captured.insert(capture.value);
    for (Operation *op : capture.chain) {
      cloned.insert(op);
      for (Value operand : op->getOperands().drop_front())
        cloned.insert(operand.getDefiningOp());
    }
  }
  return finishBody(loop, captured, cloned, *trips, /*whole=*/false, symbols);
}

/// The function that runs all of serial `loop` as it is, from the static
/// memrefs under its memrefs of run-time shape and the scalars it uses
/// (its bounds, the sizes computed at run time), and returns its scalar
/// results; failure when it uses or returns anything else. Loops over sizes
/// computed from data (decision 0031) are such loops: in place, the entry
/// function would hold every one of them, and SCF-to-CF and LLVM's loop
/// passes grow faster than linearly with a function's size.
static FailureOr<Candidate> buildWholeBody(scf::ForOp loop,
                                           SymbolTableCollection &symbols) {
  if (!llvm::all_of(loop.getResultTypes(), isScalar))
    return failure();
  SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  used.insert(loop->getOperands().begin(), loop->getOperands().end());
  SetVector<Value> captured;
  SetVector<Operation *> cloned;
  SmallVector<std::pair<Operation *, unsigned>> passed;
  auto take = [&](Value v) {
    if (isClonable(v))
      cloned.insert(v.getDefiningOp());
    else
      captured.insert(v);
  };
  for (Value v : used) {
    if (isClonable(v) || isScalar(v.getType())) {
      take(v);
      continue;
    }
    FailureOr<Capture> capture = dynamicCaptureOf(v);
    if (failed(capture))
      return failure();
    if (capture->chain.empty()) {
      // A static memref: as a loop with static bounds takes it.
      Capture view = captureOf(v);
      if (!isBarePointerMemref(view.value.getType()))
        view = {v, {}};
      capture = view;
    }
    captured.insert(capture->value);
    for (Operation *op : capture->chain) {
      cloned.insert(op);
      // A view's byte offset is passed, not cloned: loops that differ only
      // in where their buffers sit in the arena then share one function.
      auto view = dyn_cast<memref::ViewOp>(op);
      for (OpOperand &operand : op->getOpOperands().drop_front())
        if (view && operand.get() == view.getByteShift()) {
          captured.insert(operand.get());
          passed.push_back({op, operand.getOperandNumber()});
        } else {
          take(operand.get());
        }
    }
  }
  return finishBody(loop, captured, cloned, /*trips=*/0, /*whole=*/true,
                    symbols, passed);
}
/// The function a group of identical loops shares, and for parallel loops
/// its region.
struct Outlined {
  func::FuncOp body;
  func::FuncOp region;
};

struct OutlineParallelLoops
    : kiln::impl::OutlineParallelLoopsBase<OutlineParallelLoops> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (!func.isExternal() && func.getBody().hasOneBlock())
        if (failed(outlineLoops(func, symbols)))
          return signalPassFailure();
    // Nested and unused marks mean nothing past this point.
    module.walk([](scf::ForOp loop) { loop->removeAttr(kiln::kParallelAttr); });
  }

  LogicalResult outlineLoops(func::FuncOp func,
                             SymbolTableCollection &symbols) {
    SmallVector<Candidate> parallel, serial;
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      auto loop = dyn_cast<scf::ForOp>(op);
      if (!loop)
        continue;
      bool marked = loop->hasAttr(kiln::kParallelAttr);
      if (marked)
        loop = collapseFewTrips(loop);
      FailureOr<Candidate> candidate = buildBody(loop, marked ? 2 : 1, symbols);
      if (succeeded(candidate)) {
        (marked ? parallel : serial).push_back(std::move(*candidate));
        continue;
      }
      candidate = buildWholeBody(loop, symbols);
      if (succeeded(candidate))
        serial.push_back(std::move(*candidate));
    }

    MLIRContext *ctx = func.getContext();
    auto module = func->getParentOfType<ModuleOp>();
    Operation *insertAfter = func;
    std::string base = func.getSymName().str();
    auto place = [&](func::FuncOp fn, const std::string &name) {
      fn.setSymName(name);
      module.getBody()->getOperations().insertAfter(
          Block::iterator(insertAfter), fn);
      insertAfter = fn;
    };
    auto taken = [&](const std::string &name) {
      return module.lookupSymbol(name) != nullptr;
    };
    // On an error, the bodies not yet placed in the module are erased.
    auto fail = [&](scf::ForOp loop, const std::string &names) {
      for (Candidate &c : llvm::concat<Candidate>(parallel, serial))
        if (c.body && !c.body->getParentOp())
          c.body.erase();
      return loop.emitOpError("cannot outline: symbol ")
             << names << " already exists";
    };

    // Parallel loops: each distinct body gets a region the code generator
    // defines; identical loops (a block repeated at the same shapes) share
    // both.
    Value context;
    llvm::StringMap<Outlined> bodies;
    unsigned next = 0;
    for (Candidate &c : parallel) {
      auto [it, isNew] = bodies.try_emplace(c.key);
      if (isNew) {
        std::string bodyName =
            base + kiln::kParallelBodySuffix.str() + std::to_string(next);
        std::string regionName =
            base + kiln::kParallelRegionSuffix.str() + std::to_string(next);
        if (taken(bodyName) || taken(regionName))
          return fail(c.loop, "'" + bodyName + "' or '" + regionName + "'");
        ++next;
        place(c.body, bodyName);
        // region(par, captured..., n): defined by the code generator.
        SmallVector<Type> regionArgs = {LLVM::LLVMPointerType::get(ctx)};
        for (Value v : c.captured)
          regionArgs.push_back(v.getType());
        regionArgs.push_back(IndexType::get(ctx));
        OpBuilder b(ctx);
        auto region = func::FuncOp::create(b, c.loop.getLoc(), "region",
                                           b.getFunctionType(regionArgs, {}));
        region.setPrivate();
        place(region, regionName);
        it->second = {c.body, region};
      } else {
        c.body.erase();
        c.body = nullptr;
      }
      if (!context) {
        unsigned at = func.getNumArguments();
        if (failed(func.insertArgument(at, LLVM::LLVMPointerType::get(ctx),
                                       DictionaryAttr::get(ctx),
                                       func.getLoc())))
          return failure();
        context = func.getArgument(at);
      }
      callParallel(c, it->second, context);
      ++numOutlined;
    }

    // Serial loops: one function per distinct loop, called at each place.
    // A loop seen once is outlined too: kept in place, every layer's code
    // would end up in one function, and LLVM's loop passes (rotation,
    // dependence analysis) grow faster than linearly with a function's
    // size: DenseNet-121's kernel spent 21 s in LLVM -O3, 8 s outlined.
    llvm::StringMap<func::FuncOp> shared;
    unsigned nextShared = 0;
    for (Candidate &c : serial) {
      auto [it, isNew] = shared.try_emplace(c.key);
      if (isNew) {
        std::string name =
            base + kiln::kSharedLoopSuffix.str() + std::to_string(nextShared++);
        if (taken(name))
          return fail(c.loop, "'" + name + "'");
        place(c.body, name);
        it->second = c.body;
      } else {
        c.body.erase();
        c.body = nullptr;
      }
      OpBuilder b(c.loop);
      auto call = func::CallOp::create(b, c.loop.getLoc(), it->second,
                                       bodyOperands(b, c));
      c.loop.replaceAllUsesWith(call.getResults());
      c.loop.erase();
      ++numShared;
    }
    return success();
  }

  /// body(captured..., 0, trips): every iteration, on this thread; a
  /// whole loop's body(captured...).
  static SmallVector<Value> bodyOperands(OpBuilder &b, Candidate &c) {
    Location loc = c.loop.getLoc();
    SmallVector<Value> operands(c.captured);
    if (c.whole)
      return operands;
    operands.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    operands.push_back(arith::ConstantIndexOp::create(b, loc, c.trips));
    return operands;
  }

  /// Without a dispatcher the body runs over all iterations in place; with
  /// one, the region splits them. One body serves both, so the loop's code
  /// is generated once.
  static void callParallel(Candidate &c, const Outlined &outlined,
                           Value context) {
    Location loc = c.loop.getLoc();
    OpBuilder b(c.loop);
    Value null = LLVM::ZeroOp::create(b, loc, context.getType());
    Value serial =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, context, null);
    auto branch = scf::IfOp::create(b, loc, serial, /*withElseRegion=*/true);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    func::CallOp::create(b, loc, outlined.body, bodyOperands(b, c));
    // region(par, captured..., trips): the dispatcher splits the iterations.
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    SmallVector<Value> operands = {context};
    operands.append(c.captured.begin(), c.captured.end());
    operands.push_back(arith::ConstantIndexOp::create(b, loc, c.trips));
    func::CallOp::create(b, loc, outlined.region, operands);
    c.loop.erase();
  }
};

} // namespace

//===- FuseKernels.cpp - loop fusion inside kiln.fused kernels ------------===//
//
// kiln-fuse decides which ops form a kernel; this file makes each kernel as
// few loop nests as possible once its ops are linalg ops, with upstream
// elementwise fusion (linalg::fuseElementwiseOps) restricted to producer and
// consumer in the same kernel. The cost rule, with the answer each op gave
// through FusionOpInterface before conversion:
//   - a producer cheap to recompute that feeds several consumers is cloned,
//     one copy per consumer, so each copy fuses and nothing is stored;
//   - an expensive producer is never computed twice: with several
//     consumers, the first fusion keeps its result as an extra output of the
//     fused nest (upstream's preserved results), which the others read;
//   - a producer read with broadcasting (the consumer visits each of its
//     elements several times) fuses only if it is cheap.
// Reductions and contractions are never fused into their consumers (their
// loops are not all parallel); their results are the kernel's only
// materialized intermediates besides the preserved ones. Last, sibling nests
// over the same loops that share an input merge into one multi-output nest
// (horizontal fusion).
//
//===----------------------------------------------------------------------===//

#include "FuseKernels.h"
#include "kiln/Codegen/Passes.h"

#include "kiln/IR/KilnCostInterface.h"
#include "kiln/IR/KilnFusionInterface.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kiln;

static constexpr llvm::StringLiteral kKernelAttr = "kiln.kernel";
static constexpr llvm::StringLiteral kCheapAttr = "kiln.cheap";

/// Moves `body` (a kiln.fused region) before `anchor`, its arguments
/// replaced by `inputs`; returns the values its kiln.yield yielded.
static SmallVector<Value> inlineBody(RewriterBase &rewriter, Region &body,
                                     ValueRange inputs, Operation *anchor) {
  Block &block = body.front();
  auto yield = cast<YieldOp>(block.getTerminator());
  SmallVector<Value> values(yield.getValues());
  rewriter.eraseOp(yield);
  rewriter.inlineBlockBefore(&block, anchor, inputs);
  return values;
}

static constexpr llvm::StringLiteral kKernelLocKey = "kiln.kernel";

Location kiln::withKernel(Location loc, int64_t kernel) {
  MLIRContext *ctx = loc->getContext();
  Builder b(ctx);
  auto metadata = b.getDictionaryAttr(
      b.getNamedAttr(kKernelLocKey, b.getI64IntegerAttr(kernel)));
  return FusedLoc::get(ctx, {loc}, metadata);
}

/// Whether `loc` is a kernel mark of withKernel.
static bool isKernelMark(FusedLoc loc) {
  auto metadata = dyn_cast_if_present<DictionaryAttr>(loc.getMetadata());
  return metadata && metadata.getAs<IntegerAttr>(kKernelLocKey);
}

Location kiln::withoutKernel(Location loc) {
  auto fused = dyn_cast<FusedLoc>(loc);
  if (!fused)
    return loc;
  SmallVector<Location> inner;
  for (Location l : fused.getLocations())
    inner.push_back(withoutKernel(l));
  // The builder that takes the locations first simplifies: a single
  // location without metadata is that location.
  return FusedLoc::get(inner,
                       isKernelMark(fused) ? Attribute() : fused.getMetadata(),
                       loc->getContext());
}

std::optional<int64_t> kiln::kernelOf(Location loc) {
  std::optional<int64_t> kernel;
  loc->walk([&](Location l) {
    auto fused = dyn_cast<FusedLoc>(l);
    if (!fused || !isKernelMark(fused))
      return WalkResult::advance();
    kernel = cast<DictionaryAttr>(fused.getMetadata())
                 .getAs<IntegerAttr>(kKernelLocKey)
                 .getInt();
    return WalkResult::interrupt();
  });
  return kernel;
}

bool kiln::sameKernel(Operation *root, Operation *epilogue) {
  std::optional<int64_t> kernel = kernelOf(root->getLoc());
  return !kernel || kernel == kernelOf(epilogue->getLoc());
}

void kiln::openKernels(func::FuncOp func, const TypeConverter &converter,
                       llvm::DenseSet<Operation *> &cheapOps) {
  SmallVector<FusedOp> kernels;
  func.walk([&](FusedOp op) { kernels.push_back(op); });
  IRRewriter rewriter(func.getContext());
  for (FusedOp fused : kernels) {
    bool typesKept = converter.isLegal(fused->getResultTypes()) &&
                     converter.isLegal(fused->getOperandTypes());
    fused.getBody().walk([&](Operation *op) {
      typesKept &= converter.isLegal(op->getResultTypes());
    });
    rewriter.setInsertionPoint(fused);
    // kiln-fuse's decision travels with the ops' locations.
    int64_t kernel = fused.getKernel();
    fused.getBody().walk(
        [&](Operation *op) { op->setLoc(withKernel(op->getLoc(), kernel)); });
    if (!typesKept) {
      SmallVector<Value> values =
          inlineBody(rewriter, fused.getBody(), fused.getInputs(), fused);
      rewriter.replaceOp(fused, values);
      continue;
    }
    for (Operation &op : fused.getBody().front())
      if (isCheapToRecompute(&op))
        cheapOps.insert(&op);
    auto region = scf::ExecuteRegionOp::create(rewriter, fused.getLoc(),
                                               fused.getResultTypes());
    region->setAttr(kKernelAttr, fused.getKernelAttr());
    Block *block = rewriter.createBlock(&region.getRegion());
    // A placeholder terminator to inline before.
    auto yield = scf::YieldOp::create(rewriter, fused.getLoc());
    SmallVector<Value> values =
        inlineBody(rewriter, fused.getBody(), fused.getInputs(), yield);
    rewriter.setInsertionPointToEnd(block);
    scf::YieldOp::create(rewriter, fused.getLoc(), values);
    rewriter.eraseOp(yield);
    rewriter.replaceOp(fused, region.getResults());
  }
}

void CheapOpListener::notifyOperationReplaced(Operation *op,
                                              ValueRange replacement) {
  if (!cheapOps.contains(op))
    return;
  for (Value v : replacement)
    if (auto generic = v.getDefiningOp<linalg::GenericOp>())
      generic->setAttr(kCheapAttr, UnitAttr::get(generic.getContext()));
}

/// Whether the loop fusion may fuse the producer of `operand` into its
/// owner: both in the same kernel region, and the cost rule.
static bool mayFuse(OpOperand &operand) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand.getOwner());
  auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
  if (!consumer || !producer ||
      producer->getParentOp() != consumer->getParentOp() ||
      !consumer->getParentOp()->hasAttr(kKernelAttr))
    return false;
  if (!linalg::areElementwiseOpsFusable(&operand))
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(&operand);
  bool broadcast = !map.isPermutation();
  if (producer->hasAttr(kCheapAttr))
    return true;
  // An expensive producer is computed once: its other readers must come
  // after the consumer, so they can read the fused nest's copy.
  for (Operation *user : producer->getUsers())
    if (user != consumer.getOperation() &&
        (user->getBlock() != consumer->getBlock() ||
         user->isBeforeInBlock(consumer)))
      return false;
  return !broadcast;
}

/// One copy of each cheap multi-use producer per consumer that may fuse it.
static void duplicateCheapProducers(RewriterBase &rewriter, Block &block) {
  SmallVector<linalg::GenericOp> producers;
  for (Operation &op : block)
    if (auto generic = dyn_cast<linalg::GenericOp>(&op);
        generic && generic->hasAttr(kCheapAttr) &&
        generic->getNumResults() == 1 && !generic->getResult(0).hasOneUse())
      producers.push_back(generic);
  for (linalg::GenericOp producer : producers) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : producer->getResult(0).getUses())
      if (mayFuse(use))
        uses.push_back(&use);
    // Uses in op order, so the clones come out in a deterministic order.
    llvm::sort(uses, [](OpOperand *a, OpOperand *b) {
      if (a->getOwner() != b->getOwner())
        return a->getOwner()->isBeforeInBlock(b->getOwner());
      return a->getOperandNumber() < b->getOperandNumber();
    });
    // One copy per consumer op (mul(d, d) reads one copy twice).
    Operation *owner = nullptr;
    Operation *copy = nullptr;
    for (OpOperand *use : uses) {
      if (use->getOwner() != owner) {
        owner = use->getOwner();
        rewriter.setInsertionPoint(owner);
        copy = rewriter.clone(*producer);
      }
      rewriter.modifyOpInPlace(owner, [&] { use->set(copy->getResult(0)); });
    }
    if (producer->use_empty())
      rewriter.eraseOp(producer);
  }
}

/// Fuses producer into consumer along one allowed edge of `block`; false
/// when none is left.
static bool fuseOne(RewriterBase &rewriter, Block &block) {
  for (Operation &op : block) {
    auto consumer = dyn_cast<linalg::GenericOp>(&op);
    if (!consumer)
      continue;
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      if (!mayFuse(*operand))
        continue;
      Operation *producer = operand->get().getDefiningOp();
      rewriter.setInsertionPoint(consumer);
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused))
        continue;
      // The fused nest computes what the producer did, as cheaply: it keeps
      // the mark only if both halves had it.
      if (consumer->hasAttr(kCheapAttr) && producer->hasAttr(kCheapAttr))
        fused->fusedOp->setAttr(kCheapAttr, rewriter.getUnitAttr());
      else
        fused->fusedOp->removeAttr(kCheapAttr);
      // Other readers of the producer read the fused nest's copy of its
      // result, so it is computed once; the fused nest itself may still
      // read the producer (mul(d, d) fuses one operand at a time).
      Operation *fusedOp = fused->fusedOp;
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          return user != producer && user != fusedOp &&
                 user->getBlock() == fusedOp->getBlock() &&
                 fusedOp->isBeforeInBlock(user);
        });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return true;
    }
  }
  return false;
}

/// A nest that horizontal fusion may merge: all loops parallel, every
/// output written at the loop indices.
static bool isMergeable(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity())
      return false;
  return true;
}

/// Merges two sibling nests of `block` (the same loops, a shared input,
/// neither reading the other) into one nest with the outputs of both, so the
/// shared input is read once; false when no pair is left.
static bool mergeSiblings(RewriterBase &rewriter, Block &block) {
  SmallVector<linalg::GenericOp> nests;
  for (Operation &op : block)
    if (auto generic = dyn_cast<linalg::GenericOp>(&op);
        generic && isMergeable(generic))
      nests.push_back(generic);
  for (size_t i = 0; i < nests.size(); ++i)
    for (linalg::GenericOp b : ArrayRef(nests).drop_front(i + 1)) {
      // Not a structured binding: lambdas below capture it (C++17).
      linalg::GenericOp a = nests[i];
      if (a.getStaticLoopRanges() != b.getStaticLoopRanges())
        continue;
      bool shares = llvm::any_of(a.getDpsInputs(), [&](Value v) {
        return llvm::is_contained(b.getDpsInputs(), v);
      });
      // The merged nest sits at b: every reader of a must come after b
      // (so b does not read a, directly or not).
      bool readersAfter = llvm::all_of(a->getUsers(), [&](Operation *user) {
        return user->getBlock() == &block && b->isBeforeInBlock(user);
      });
      if (!shares || !readersAfter)
        continue;
      SmallVector<Value> inputs(a.getDpsInputs()), inits(a.getDpsInits());
      llvm::append_range(inputs, b.getDpsInputs());
      llvm::append_range(inits, b.getDpsInits());
      SmallVector<AffineMap> maps;
      for (OpOperand *in : a.getDpsInputOperands())
        maps.push_back(a.getMatchingIndexingMap(in));
      for (OpOperand *in : b.getDpsInputOperands())
        maps.push_back(b.getMatchingIndexingMap(in));
      for (OpOperand &init : a.getDpsInitsMutable())
        maps.push_back(a.getMatchingIndexingMap(&init));
      for (OpOperand &init : b.getDpsInitsMutable())
        maps.push_back(b.getMatchingIndexingMap(&init));
      SmallVector<Type> types(a->getResultTypes());
      llvm::append_range(types, b->getResultTypes());
      unsigned ai = a.getNumDpsInputs(), ao = a.getNumDpsInits();
      unsigned bi = b.getNumDpsInputs();
      rewriter.setInsertionPoint(b);
      auto merged = linalg::GenericOp::create(
          rewriter, b.getLoc(), types, inputs, inits, maps,
          a.getIteratorTypesArray(),
          [&](OpBuilder &nb, Location loc, ValueRange args) {
            IRMapping map;
            Block &ab = a.getRegion().front(), &bb = b.getRegion().front();
            for (unsigned k = 0; k < ai; ++k)
              map.map(ab.getArgument(k), args[k]);
            for (unsigned k = 0; k < ao; ++k)
              map.map(ab.getArgument(ai + k), args[ai + bi + k]);
            for (unsigned k = 0; k < bi; ++k)
              map.map(bb.getArgument(k), args[ai + k]);
            for (unsigned k = 0; k < b.getNumDpsInits(); ++k)
              map.map(bb.getArgument(bi + k), args[ai + bi + ao + k]);
            SmallVector<Value> yielded;
            for (Block *body : {&ab, &bb}) {
              for (Operation &op : body->without_terminator())
                nb.clone(op, map);
              for (Value v : body->getTerminator()->getOperands())
                yielded.push_back(map.lookupOrDefault(v));
            }
            linalg::YieldOp::create(nb, loc, yielded);
          });
      // a's result count is read before replaceOp erases a.
      unsigned numA = a->getNumResults();
      rewriter.replaceOp(a, merged.getResults().take_front(numA));
      rewriter.replaceOp(b, merged.getResults().drop_front(numA));
      return true;
    }
  return false;
}

LogicalResult kiln::fuseAndCloseKernels(func::FuncOp func) {
  SmallVector<scf::ExecuteRegionOp> regions;
  func.walk([&](scf::ExecuteRegionOp op) {
    if (op->hasAttr(kKernelAttr))
      regions.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (scf::ExecuteRegionOp region : regions) {
    Block &block = region.getRegion().front();
    duplicateCheapProducers(rewriter, block);
    while (fuseOne(rewriter, block)) {
    }
    while (mergeSiblings(rewriter, block)) {
    }
    block.walk([](linalg::GenericOp op) { op->removeAttr(kCheapAttr); });
    auto yield = cast<scf::YieldOp>(block.getTerminator());
    SmallVector<Value> values(yield.getOperands());
    rewriter.eraseOp(yield);
    rewriter.inlineBlockBefore(&block, region);
    rewriter.replaceOp(region, values);
  }
  return success();
}

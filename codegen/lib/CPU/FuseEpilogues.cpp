//===- FuseEpilogues.cpp - elementwise epilogues onto contractions --------===//
//
// A convolution reaches its bias and activation through reshapes: the
// schedule computes it as a matmul over [N, G, Mg, P] (P the flattened
// output positions) while the epilogue runs over [N, M, H, W]. Index spaces
// that differ this way are related by their common refinement: the
// coarsest list of sizes ("atoms") that both shapes are groups of, found
// from the strides of the two row-major layouts. An epilogue operand
// indexed by whole output dims (the conv's own result, a residual of the
// same shape, a per-channel bias) is re-indexed through the atoms onto the
// matmul's dims; one indexed by part of a matmul dim (a per-row operand,
// when the matmul has flattened the rows) is not, and the epilogue stays
// where it is.
//
//===----------------------------------------------------------------------===//

#include "FuseEpilogues.h"
#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SmallBitVector.h"

#include <set>

using namespace mlir;

namespace {

/// The common refinement of two static shapes with the same number of
/// elements: the atom sizes, most significant first, and for each dim of
/// either shape the atoms it spans, [first, end) (empty for a unit dim).
struct Refinement {
  SmallVector<int64_t> atoms;
  SmallVector<std::pair<int64_t, int64_t>> a, b;
};

std::optional<Refinement> refine(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  // Every stride of either layout is a cut of the linear index.
  std::set<int64_t> cutSet;
  auto addCuts = [&](ArrayRef<int64_t> shape) {
    int64_t stride = 1;
    for (int64_t size : llvm::reverse(shape)) {
      cutSet.insert(stride);
      stride *= size;
    }
    cutSet.insert(stride);
    return stride;
  };
  if (addCuts(a) != addCuts(b))
    return std::nullopt;
  SmallVector<int64_t> cuts(cutSet.begin(), cutSet.end()); // ascending
  int64_t n = cuts.size();
  Refinement r;
  for (int64_t t = n - 1; t > 0; --t) {
    // 6 x 4 against 4 x 6: cuts 1, 4, 6, 24 and no atom between 4 and 6.
    if (cuts[t] % cuts[t - 1])
      return std::nullopt;
    r.atoms.push_back(cuts[t] / cuts[t - 1]);
  }
  auto position = [&](int64_t cut) {
    return static_cast<int64_t>(llvm::lower_bound(cuts, cut) - cuts.begin());
  };
  // Atom i lies between cuts n-2-i and n-1-i; a dim between cuts lo and hi
  // spans atoms n-1-hi .. n-2-lo.
  auto spans = [&](ArrayRef<int64_t> shape,
                   SmallVector<std::pair<int64_t, int64_t>> &out) {
    out.resize(shape.size());
    int64_t stride = 1;
    for (int64_t i = shape.size() - 1; i >= 0; --i) {
      int64_t lo = position(stride), hi = position(stride * shape[i]);
      out[i] = {n - 1 - hi, n - 1 - lo};
      stride *= shape[i];
    }
  };
  spans(a, r.a);
  spans(b, r.b);
  return r;
}

/// One step of an epilogue input towards the contraction's index space:
/// expanded into atoms, then collapsed into the other shape's dims, and
/// read with `map`. Reassociations of single dims mean no reshape.
struct ReshapePlan {
  SmallVector<ReassociationIndices> expand, collapse;
  SmallVector<int64_t> expandedShape, collapsedShape;
  AffineMap map;
};

bool isTrivial(ArrayRef<ReassociationIndices> groups) {
  return llvm::all_of(
      groups, [](const ReassociationIndices &g) { return g.size() == 1; });
}

/// Two index spaces related by a reshape: `from` (the epilogue's side) and
/// `to` (the contraction's side), and their common refinement.
struct Reshape {
  Refinement r;
  SmallVector<int64_t> owner; // the `to` dim of each atom
  SmallVector<int64_t> to;

  static std::optional<Reshape> get(ArrayRef<int64_t> to,
                                    ArrayRef<int64_t> from) {
    std::optional<Refinement> r = refine(to, from);
    if (!r)
      return std::nullopt;
    Reshape reshape{*r, SmallVector<int64_t>(r->atoms.size()),
                    llvm::to_vector(to)};
    for (auto [dim, span] : llvm::enumerate(r->a))
      for (int64_t atom = span.first; atom < span.second; ++atom)
        reshape.owner[atom] = dim;
    return reshape;
  }

  /// Plans an operand of `shape` read with `map` over the `from` dims onto
  /// the `to` dims; fails when an operand dim would cover part of a `to`
  /// dim.
  std::optional<ReshapePlan> plan(ArrayRef<int64_t> shape,
                                  AffineMap map) const {
    MLIRContext *ctx = map.getContext();
    ReshapePlan plan;
    // Each operand dim: the atoms of the dim it follows, or a unit.
    SmallVector<int64_t> atomOf; // -1: a unit dim
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      ReassociationIndices group;
      if (auto dim = dyn_cast<AffineDimExpr>(e)) {
        auto [first, end] = r.b[dim.getPosition()];
        for (int64_t atom = first; atom < end; ++atom) {
          group.push_back(atomOf.size());
          atomOf.push_back(atom);
          plan.expandedShape.push_back(r.atoms[atom]);
        }
      } else if (!isa<AffineConstantExpr>(e) ||
                 cast<AffineConstantExpr>(e).getValue() != 0 || shape[j] != 1) {
        return std::nullopt;
      }
      if (group.empty()) {
        group.push_back(atomOf.size());
        atomOf.push_back(-1);
        plan.expandedShape.push_back(1);
      }
      plan.expand.push_back(group);
    }
    // Runs of atoms that make up whole `to` dims, in order.
    SmallVector<AffineExpr> results;
    for (size_t i = 0; i < atomOf.size();) {
      ReassociationIndices group;
      if (atomOf[i] < 0) {
        group.push_back(i++);
        results.push_back(getAffineConstantExpr(0, ctx));
        plan.collapsedShape.push_back(1);
      } else {
        int64_t dim = owner[atomOf[i]];
        auto [first, end] = r.a[dim];
        for (int64_t atom = first; atom < end; ++atom, ++i) {
          if (i >= atomOf.size() || atomOf[i] != atom)
            return std::nullopt;
          group.push_back(i);
        }
        results.push_back(getAffineDimExpr(dim, ctx));
        plan.collapsedShape.push_back(to[dim]);
      }
      plan.collapse.push_back(group);
    }
    plan.map = AffineMap::get(to.size(), 0, results, ctx);
    return plan;
  }
};

Value applyPlan(RewriterBase &rewriter, Location loc, Value v,
                const ReshapePlan &plan) {
  Type f32 = rewriter.getF32Type();
  if (!isTrivial(plan.expand))
    v = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(plan.expandedShape, f32), v,
        plan.expand);
  if (!isTrivial(plan.collapse))
    v = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get(plan.collapsedShape, f32), v,
        plan.collapse);
  return v;
}

/// A slice that keeps the start of every dim (offsets 0, strides 1): the
/// dims it shortens, or nothing for any other slice.
std::optional<llvm::SmallBitVector> prefixSlice(tensor::ExtractSliceOp slice) {
  if (!slice.hasZeroOffset() || !slice.hasUnitStride() ||
      slice.getSourceType().getRank() != slice.getResultType().getRank() ||
      !slice.getSourceType().hasStaticShape())
    return std::nullopt;
  llvm::SmallBitVector shortened(slice.getResultType().getRank());
  for (unsigned i = 0; i < shortened.size(); ++i)
    shortened[i] = slice.getSourceType().getDimSize(i) !=
                   slice.getResultType().getDimSize(i);
  return shortened;
}

} // namespace

FailureOr<linalg::GenericOp>
kiln::moveEpilogueOntoContraction(RewriterBase &rewriter, linalg::LinalgOp mm) {
  if (mm->getNumResults() != 1)
    return failure();
  // The result through reshapes used once (and at most one slice that
  // keeps the start of each dim: the valid columns of shifted rows), to
  // the epilogue.
  Value value = mm->getResult(0);
  SmallVector<Operation *> chain;
  tensor::ExtractSliceOp slice;
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    auto userSlice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) &&
        (!userSlice || slice))
      break;
    if (userSlice)
      slice = userSlice;
    chain.push_back(user);
    value = user->getResult(0);
  }
  if (value.use_empty())
    return failure();
  auto epi = dyn_cast<linalg::GenericOp>(*value.getUsers().begin());
  if (!epi || llvm::any_of(value.getUsers(),
                           [&](Operation *user) { return user != epi; }))
    return failure();
  // kiln-fuse decided which ops are this contraction's epilogue.
  if (!kiln::sameKernel(mm, epi))
    return failure();
  if (!epi.hasPureTensorSemantics() || epi.hasDynamicShape() ||
      epi.getNumDpsInits() != 1 || epi.getNumLoops() == 0 ||
      epi.getNumParallelLoops() != epi.getNumLoops() ||
      !epi.getRegion().front().getOps<linalg::IndexOp>().empty())
    return failure();
  // The result may also be the epilogue's output, updated in place (an
  // epilogue moved onto a convolution before it was cut into row blocks).
  OpOperand *init = epi.getDpsInitOperand(0);
  bool inPlace = init->get() == value;
  if (!epi.getMatchingIndexingMap(init).isIdentity() ||
      (!inPlace && !epi.getMatchingBlockArgument(init).use_empty()))
    return failure();
  for (Value v : epi->getOperands())
    if (!getElementTypeOrSelf(v.getType()).isF32())
      return failure();

  // The index spaces from the epilogue's to the contraction's: one
  // reshape, or a reshape to the slice's result and one from its source.
  auto mmTy = cast<RankedTensorType>(mm->getResult(0).getType());
  auto epiTy = cast<RankedTensorType>(epi.getResult(0).getType());
  SmallVector<Reshape, 2> steps;
  llvm::SmallBitVector shortened;
  if (slice) {
    std::optional<llvm::SmallBitVector> dims = prefixSlice(slice);
    std::optional<Reshape> near =
        Reshape::get(slice.getResultType().getShape(), epiTy.getShape());
    std::optional<Reshape> far =
        Reshape::get(mmTy.getShape(), slice.getSourceType().getShape());
    if (!dims || !near || !far)
      return failure();
    shortened = *dims;
    steps = {*near, *far};
  } else {
    std::optional<Reshape> only =
        Reshape::get(mmTy.getShape(), epiTy.getShape());
    if (!only)
      return failure();
    steps = {*only};
  }

  // Each other input: its reshapes and its map over the contraction's
  // dims. Past the slice, it may not read along a shortened dim: the
  // epilogue computes the cut-off elements too.
  struct Input {
    OpOperand *operand;
    SmallVector<ReshapePlan, 2> plans;
    AffineMap map;
  };
  SmallVector<Input, 4> inputs;
  for (OpOperand *in : epi.getDpsInputOperands()) {
    AffineMap map = epi.getMatchingIndexingMap(in);
    Input input{in, {}, map};
    if (in->get() == value) {
      if (!map.isIdentity())
        return failure();
      inputs.push_back(input); // the contraction's result: no map
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(in->get().getType());
    if (!type) { // a scalar, the same for every element
      input.map = AffineMap::get(mmTy.getRank(), 0, {}, epi.getContext());
      inputs.push_back(input);
      continue;
    }
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return failure();
    SmallVector<int64_t> shape = llvm::to_vector(type.getShape());
    for (auto [i, step] : llvm::enumerate(steps)) {
      if (i == 1)
        for (unsigned dim : shortened.set_bits())
          if (map.isFunctionOfDim(dim))
            return failure();
      std::optional<ReshapePlan> plan = step.plan(shape, map);
      if (!plan)
        return failure();
      shape = plan->collapsedShape;
      map = plan->map;
      input.plans.push_back(std::move(*plan));
    }
    input.map = map;
    inputs.push_back(std::move(input));
  }

  // The new epilogue: the other inputs reshaped, the contraction's result
  // as the output, updated in place. It goes right after the contraction
  // when its other inputs exist there: a contraction and an epilogue that
  // kiln-fuse left as separate kernels (a reshape between them) then run
  // in the contraction's kernel, so a per-kernel profile gives the time to
  // the product and its flops instead of to the epilogue.
  Location loc = epi.getLoc();
  bool atProduct = mm->getBlock() == epi->getBlock();
  for (Input &input : inputs) {
    Value v = input.operand->get();
    if (v == value)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v))
      atProduct &= arg.getOwner()->getParentOp()->isAncestor(mm);
    else
      atProduct &= v.getDefiningOp()->getBlock() == mm->getBlock() &&
                   v.getDefiningOp()->isBeforeInBlock(mm);
  }
  if (atProduct)
    rewriter.setInsertionPointAfter(mm);
  else
    rewriter.setInsertionPoint(epi);
  Type f32 = rewriter.getF32Type();
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (Input &input : inputs) {
    if (input.operand->get() == value)
      continue;
    Value v = input.operand->get();
    for (const ReshapePlan &plan : input.plans)
      v = applyPlan(rewriter, loc, v, plan);
    operands.push_back(v);
    maps.push_back(input.map);
  }
  unsigned rank = mmTy.getRank();
  maps.push_back(rewriter.getMultiDimIdentityMap(rank));
  auto fused = linalg::GenericOp::create(
      rewriter, loc, TypeRange{mmTy}, operands, ValueRange{mm->getResult(0)},
      maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
  Block &oldBody = epi.getRegion().front();
  Block *body = rewriter.createBlock(
      &fused.getRegion(), {}, SmallVector<Type>(operands.size() + 1, f32),
      SmallVector<Location>(operands.size() + 1, loc));
  Value acc = body->getArguments().back();
  SmallVector<Value> replacements;
  unsigned next = 0;
  for (Input &input : inputs)
    replacements.push_back(
        input.operand->get() == value ? acc : body->getArgument(next++));
  replacements.push_back(acc); // the old output: unused, or the result
  rewriter.mergeBlocks(&oldBody, body, replacements);

  // Back to the epilogue's shape through the same reshapes and slice.
  rewriter.setInsertionPointAfter(fused);
  IRMapping mapping;
  mapping.map(mm->getResult(0), fused.getResult(0));
  Value result = fused.getResult(0);
  for (Operation *op : chain)
    result = rewriter.clone(*op, mapping)->getResult(0);
  rewriter.replaceOp(epi, result);
  for (Operation *op : llvm::reverse(chain))
    rewriter.eraseOp(op);
  return fused;
}

bool kiln::canEmitEpilogueRow(linalg::GenericOp epi, unsigned vectorDim) {
  for (OpOperand *in : epi.getDpsInputOperands()) {
    AffineMap map = epi.getMatchingIndexingMap(in);
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      if (map.getResult(i).isFunctionOfDim(vectorDim) &&
          (i + 1 != map.getNumResults() ||
           map.getResult(i) != getAffineDimExpr(vectorDim, epi.getContext())))
        return false;
  }
  for (Operation &op : epi.getRegion().front().without_terminator()) {
    if (isa<arith::ConstantOp>(op) && op.getResult(0).getType().isF32())
      continue;
    if (!op.hasTrait<OpTrait::Elementwise>() || op.getNumRegions() != 0 ||
        !isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
        !llvm::all_of(op.getResultTypes(),
                      [](Type t) { return t.isF32() || t.isInteger(1); }))
      return false;
  }
  return true;
}

Value kiln::emitEpilogueRow(OpBuilder &b, Location loc, linalg::GenericOp epi,
                            Value acc, ValueRange ivs, unsigned vectorDim) {
  auto vecTy = cast<VectorType>(acc.getType());
  Type f32 = b.getF32Type();
  auto splat = [&](Value scalar) -> Value {
    return vector::BroadcastOp::create(b, loc, vecTy.clone(scalar.getType()),
                                       scalar);
  };
  Block &body = epi.getRegion().front();
  IRMapping mapping;
  for (OpOperand *in : epi.getDpsInputOperands()) {
    BlockArgument arg = epi.getMatchingBlockArgument(in);
    Value value = in->get();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type) {
      mapping.map(arg, splat(value));
      continue;
    }
    AffineMap map = epi.getMatchingIndexingMap(in);
    SmallVector<Value> indices;
    bool alongRow = false;
    for (AffineExpr e : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(e)) {
        indices.push_back(ivs[dim.getPosition()]);
        alongRow |= dim.getPosition() == vectorDim;
      } else {
        indices.push_back(arith::ConstantIndexOp::create(b, loc, 0));
      }
    }
    if (alongRow) {
      Value padding = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
      mapping.map(arg,
                  vector::TransferReadOp::create(
                      b, loc, VectorType::get(vecTy.getShape(), f32), value,
                      indices, padding, SmallVector<bool>(1, true)));
    } else {
      mapping.map(arg,
                  splat(tensor::ExtractOp::create(b, loc, value, indices)));
    }
  }
  mapping.map(epi.getMatchingBlockArgument(epi.getDpsInitOperand(0)), acc);
  for (Operation &op : body.without_terminator()) {
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      mapping.map(cst.getResult(), splat(b.clone(op)->getResult(0)));
      continue;
    }
    SmallVector<Value> operands;
    for (Value v : op.getOperands()) {
      Value mapped = mapping.lookupOrNull(v);
      // A scalar from outside the body (a constant), the same per lane.
      operands.push_back(mapped ? mapped : splat(v));
    }
    SmallVector<Type> types;
    for (Type t : op.getResultTypes())
      types.push_back(vecTy.clone(t));
    Operation *vectorOp = b.create(loc, op.getName().getIdentifier(), operands,
                                   types, op.getAttrs());
    mapping.map(op.getResults(), vectorOp->getResults());
  }
  return mapping.lookup(body.getTerminator()->getOperand(0));
}

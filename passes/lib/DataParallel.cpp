//===- DataParallel.cpp - kiln-average-gradients, kiln-bucket-all-reduce --===//
//
// Data-parallel training (kilnc train --data-parallel): every rank runs the
// same step on its shard of the batch, and the gradients are averaged over
// the ranks before the optimizer reads them. kiln-average-gradients says
// which values are averaged (one kiln.all_reduce per gradient);
// kiln-bucket-all-reduce decides when, on the final schedule: as early as
// each gradient exists, in buckets that become one collective call each
// (docs/decisions/0024-data-parallel.md).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

namespace kiln {
#define GEN_PASS_DEF_AVERAGEGRADIENTS
#define GEN_PASS_DEF_BUCKETALLREDUCE
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct AverageGradients : kiln::impl::AverageGradientsBase<AverageGradients> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock())
      return func.emitError("expects a body of one block"), signalPassFailure();
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (!ret)
      return func.emitError("expects the body to end in func.return"),
             signalPassFailure();
    OpBuilder b(ret);
    unsigned found = 0;
    for (unsigned r = 0; r < func.getNumResults(); ++r) {
      auto name = func.getResultAttrOfType<StringAttr>(r, kNameAttr);
      if (!name || !name.getValue().starts_with("grad."))
        continue;
      ++found;
      Value grad = ret.getOperand(r);
      auto type = cast<RankedTensorType>(grad.getType());
      Type elt = type.getElementType();
      if (!elt.isF32() && !elt.isF64())
        return func.emitError("data-parallel training expects f32 or f64 "
                              "gradients, found ")
                   << elt << " for '" << name.getValue() << "'",
               signalPassFailure();
      if (!type.hasStaticShape())
        return func.emitError("data-parallel training expects gradients of "
                              "static shape, found ")
                   << type << " for '" << name.getValue() << "'",
               signalPassFailure();
      Location loc = NameLoc::get(
          b.getStringAttr("all_reduce." + name.getValue().drop_front(5)),
          grad.getLoc());
      auto avg = AllReduceOp::create(b, loc, ValueRange{grad});
      ret.setOperand(r, avg.getResult(0));
    }
    if (found == 0)
      return func.emitError("expects results named 'grad.<parameter>' to "
                            "average (run kiln-generate-gradients first), "
                            "found none"),
             signalPassFailure();
    numGradients += found;
  }
};

struct BucketAllReduce : kiln::impl::BucketAllReduceBase<BucketAllReduce> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (bucketBytes == 0)
      return func.emitError("expects bucket-bytes > 0"), signalPassFailure();
    if (!func.getBody().hasOneBlock())
      return func.emitError("expects a body of one block"), signalPassFailure();
    Block &body = func.getBody().front();

    // Each all-reduce right after the op that makes its last operand.
    for (AllReduceOp op : llvm::to_vector(body.getOps<AllReduceOp>())) {
      Operation *last = nullptr;
      for (Value v : op.getInputs())
        if (Operation *def = v.getDefiningOp();
            def && def->getBlock() == &body &&
            (!last || last->isBeforeInBlock(def)))
          last = def;
      if (last)
        op->moveAfter(last);
      else
        op->moveBefore(&body.front());
    }

    // Then buckets, in schedule order.
    OpBuilder b(func.getContext());
    SmallVector<AllReduceOp> pending;
    llvm::DenseSet<Value> pendingResults;
    Type pendingType;
    uint64_t pendingBytes = 0;
    int64_t index = 0;
    auto flush = [&] {
      if (pending.empty())
        return;
      b.setInsertionPointAfter(pending.back());
      SmallVector<Value> inputs;
      for (AllReduceOp op : pending)
        llvm::append_range(inputs, op.getInputs());
      Location loc = NameLoc::get(
          b.getStringAttr("all_reduce.bucket" + std::to_string(index)),
          pending.back().getLoc());
      auto merged = AllReduceOp::create(b, loc, inputs);
      merged->setAttr(kBucketAttr, b.getI64IntegerAttr(index++));
      unsigned next = 0;
      for (AllReduceOp op : pending) {
        unsigned n = op.getNumResults();
        op->replaceAllUsesWith(merged.getResults().slice(next, n));
        next += n;
        op->erase();
      }
      pending.clear();
      pendingResults.clear();
      pendingBytes = 0;
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto ar = dyn_cast<AllReduceOp>(op)) {
        Type elt = getElementTypeOrSelf(ar.getInputs().front().getType());
        bool uniform = llvm::all_of(ar.getInputs().getTypes(), [&](Type t) {
          return getElementTypeOrSelf(t) == elt;
        });
        if (!pending.empty() && (!uniform || elt != pendingType))
          flush();
        pending.push_back(ar);
        pendingType = uniform ? elt : Type();
        for (Value v : ar.getResults()) {
          pendingResults.insert(v);
          pendingBytes += kiln::tensorBytes(v.getType());
        }
        if (!uniform || pendingBytes >= bucketBytes)
          flush();
        continue;
      }
      // A reader of a pending result closes the bucket before it.
      bool reads = false;
      op.walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          reads |= pendingResults.contains(v);
      });
      if (reads)
        flush();
    }
    flush();
    numBuckets += index;
  }
};

} // namespace

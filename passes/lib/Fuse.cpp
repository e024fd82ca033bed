//===- Fuse.cpp - kiln-fuse -----------------------------------------------===//
//
// Groups the ops of the scheduled entry block into kernels and wraps each
// kernel of two or more ops in a kiln.fused op. Greedy and in block order:
// each op joins the kernel of the first producer (else sibling) that admits
// it, so the result depends only on the IR, never on pointer order. Every op
// answers for itself through FusionOpInterface (its class); this file
// only knows the rules between classes. Which edges of a kernel become one
// loop nest is the lowering's decision (kiln-lower-to-linalg).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnFusionInterface.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/NodeNames.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FUSE
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Types the kernel lowering handles: static, non-empty tensors of signless
/// (or float) element types that arithmetic accepts.
bool isFusibleType(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || !rt.hasStaticShape() || rt.getNumElements() == 0)
    return false;
  Type elt = rt.getElementType();
  return !isNarrowType(elt) && !elt.isUnsignedInteger();
}

bool isFusible(Operation *op) {
  FusionClass c = getFusionClass(op);
  if (c == FusionClass::movement || c == FusionClass::opaque)
    return false;
  if (op->getNumRegions() != 0 || op->getNumResults() != 1)
    return false;
  return llvm::all_of(op->getOperandTypes(), isFusibleType) &&
         llvm::all_of(op->getResultTypes(), isFusibleType);
}

struct Kernel {
  FusionClass kind;
  SmallVector<Operation *> ops; // in block order
};

struct Fuse : kiln::impl::FuseBase<Fuse> {
  Block *body = nullptr;
  SmallVector<Kernel> kernels;
  DenseMap<Operation *, int> kernelOf;

  int kernelOfValue(Value v) const {
    Operation *def = v.getDefiningOp();
    auto it = def ? kernelOf.find(def) : kernelOf.end();
    return it == kernelOf.end() ? -1 : it->second;
  }

  /// Whether `op` may join kernel `k`: the class rules, then no cycle (no
  /// operand from outside the kernel may depend on it).
  bool canJoin(Operation *op, int k) const {
    const Kernel &kernel = kernels[k];
    FusionClass c = getFusionClass(op);
    if (c == FusionClass::contraction)
      return false;
    if (kernel.kind == FusionClass::contraction) {
      // An epilogue: elementwise over the contraction's result shape.
      if (c != FusionClass::elementwise)
        return false;
      auto root =
          cast<RankedTensorType>(kernel.ops.front()->getResult(0).getType());
      auto mine = cast<RankedTensorType>(op->getResult(0).getType());
      if (root.getShape() != mine.getShape() ||
          root.getEncoding() != mine.getEncoding())
        return false;
    }
    return !makesCycle(op, k);
  }

  /// Whether `op` joining kernel `k` would close a cycle in the graph whose
  /// nodes are the kernels (each one op once materialized) and the loose
  /// ops: whether some operand from outside `k` is reachable from `k`.
  /// Reaching any member of a kernel reaches all of it.
  bool makesCycle(Operation *op, int k) const {
    llvm::SmallPtrSet<Operation *, 8> targets;
    llvm::SmallDenseSet<int, 8> targetKernels;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body)
        continue;
      int j = kernelOfValue(v);
      if (j == k)
        continue;
      if (j >= 0)
        targetKernels.insert(j);
      else
        targets.insert(def);
    }
    if (targets.empty() && targetKernels.empty())
      return false;
    llvm::SmallPtrSet<Operation *, 32> visited;
    llvm::SmallDenseSet<int, 8> visitedKernels = {k};
    SmallVector<Operation *> stack(kernels[k].ops.begin(),
                                   kernels[k].ops.end());
    while (!stack.empty()) {
      Operation *x = stack.pop_back_val();
      for (Operation *user : x->getUsers()) {
        user = body->findAncestorOpInBlock(*user);
        if (!user || user == op || user->hasTrait<OpTrait::IsTerminator>() ||
            !visited.insert(user).second)
          continue;
        if (targets.contains(user))
          return true;
        auto it = kernelOf.find(user);
        if (it != kernelOf.end()) {
          if (targetKernels.contains(it->second))
            return true;
          if (visitedKernels.insert(it->second).second)
            stack.append(kernels[it->second].ops.begin(),
                         kernels[it->second].ops.end());
        }
        stack.push_back(user);
      }
    }
    return false;
  }

  /// The kernel `op` joins, or -1.
  int chooseKernel(Operation *op,
                   const DenseMap<Operation *, unsigned> &position) {
    // A producer's kernel (vertical fusion), first operand first.
    for (Value v : op->getOperands()) {
      int k = kernelOfValue(v);
      if (k >= 0 && canJoin(op, k))
        return k;
    }
    // A sibling's kernel (horizontal fusion): an elementwise kernel with an
    // elementwise op of the same result shape reading one of our operands.
    if (getFusionClass(op) != FusionClass::elementwise)
      return -1;
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Operation *best = nullptr;
    for (Value v : op->getOperands())
      for (Operation *user : v.getUsers()) {
        auto it = kernelOf.find(user);
        if (user == op || it == kernelOf.end() || !position.count(user) ||
            position.lookup(user) > position.lookup(op))
          continue;
        if (kernels[it->second].kind != FusionClass::elementwise ||
            getFusionClass(user) != FusionClass::elementwise ||
            cast<RankedTensorType>(user->getResult(0).getType()).getShape() !=
                type.getShape() ||
            cast<RankedTensorType>(user->getResult(0).getType())
                    .getEncoding() != type.getEncoding() ||
            !canJoin(op, it->second))
          continue;
        if (!best || position.lookup(user) < position.lookup(best))
          best = user;
      }
    return best ? kernelOf.lookup(best) : -1;
  }

  /// A predicate (an elementwise op with an i1 result, a ReLU's backward
  /// mask) that joined its operands' kernel but is read only by another
  /// kernel would make its kernel store a tensor of i1 and the reader load
  /// it back. When its operands leave their kernels anyway (or come from
  /// outside), it moves to the kernel of its readers instead and is
  /// computed there from the operands: nothing is stored, and the kernels
  /// on both sides keep f32 inputs and outputs only.
  void sinkPredicates() {
    auto kernelOfOp = [&](Operation *op) {
      auto it = kernelOf.find(body->findAncestorOpInBlock(*op));
      return it == kernelOf.end() ? -1 : it->second;
    };
    for (Operation &op : body->without_terminator()) {
      int k = kernelOfOp(&op);
      if (k < 0 || op.getNumResults() != 1 ||
          getFusionClass(&op) != FusionClass::elementwise ||
          !getElementTypeOrSelf(op.getResult(0).getType()).isInteger(1))
        continue;
      // Every reader in one other kernel.
      int target = -1;
      bool oneReader = !op.use_empty();
      for (Operation *user : op.getUsers()) {
        int j = kernelOfOp(user);
        if (j < 0 || j == k || (target >= 0 && j != target))
          oneReader = false;
        target = j;
      }
      if (!oneReader)
        continue;
      // Every operand from outside the kernel, or one the kernel yields
      // for some other reader.
      bool operandsLeave = llvm::all_of(op.getOperands(), [&](Value v) {
        return kernelOfValue(v) != k ||
               llvm::any_of(v.getUsers(), [&](Operation *user) {
                 return user != &op && kernelOfOp(user) != k;
               });
      });
      if (!operandsLeave)
        continue;
      kernelOf.erase(&op);
      llvm::erase(kernels[k].ops, &op);
      if (canJoin(&op, target)) {
        assign(&op, target);
        ++numSunkPredicates;
      } else {
        assign(&op, k);
      }
    }
  }

  void assign(Operation *op, int k) {
    if (k < 0)
      return;
    kernelOf[op] = k;
    kernels[k].ops.push_back(op);
    if (getFusionClass(op) == FusionClass::reduction &&
        kernels[k].kind == FusionClass::elementwise)
      kernels[k].kind = FusionClass::reduction;
  }

  /// Replaces the ops of `kernel` with one kiln.fused op at the last of them.
  void materialize(Kernel kernel, int64_t id) {
    // Materializing an earlier kernel may have moved some of these ops
    // after others (those that read it); take them in today's order.
    llvm::sort(kernel.ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    llvm::SmallPtrSet<Operation *, 16> members(kernel.ops.begin(),
                                               kernel.ops.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    llvm::SetVector<StringRef> names;
    SmallVector<Location> locs;
    for (Operation *op : kernel.ops) {
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !members.contains(def))
          inputs.insert(v);
      }
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          outputs.push_back(r);
      collectNodeNames(op->getLoc(), names);
      locs.push_back(op->getLoc());
    }

    // Ops between the first and last member that read the kernel (directly
    // or not) must follow it; nothing the kernel reads depends on it.
    Operation *last = kernel.ops.back();
    llvm::SmallPtrSet<Operation *, 16> tainted(members.begin(), members.end());
    SmallVector<Operation *> toMove;
    for (Operation *o = kernel.ops.front()->getNextNode(); o != last;
         o = o->getNextNode()) {
      if (members.contains(o))
        continue;
      bool reads = false;
      o->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (Operation *def = v.getDefiningOp(); def && tainted.contains(def))
            reads = true;
      });
      if (reads) {
        tainted.insert(o);
        toMove.push_back(o);
      }
    }

    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointAfter(last);
    SmallVector<Type> resultTypes;
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    SmallVector<Attribute> nodeAttrs;
    for (StringRef name : names)
      nodeAttrs.push_back(b.getStringAttr(name));
    auto fused = FusedOp::create(b, FusedLoc::get(ctx, locs), resultTypes,
                                 inputs.getArrayRef(), b.getI64IntegerAttr(id),
                                 FusionClassAttr::get(ctx, kernel.kind),
                                 b.getArrayAttr(nodeAttrs));
    SmallVector<Type> inputTypes;
    SmallVector<Location> inputLocs;
    for (Value v : inputs) {
      inputTypes.push_back(v.getType());
      inputLocs.push_back(v.getLoc());
    }
    Block *block = b.createBlock(&fused.getBody(), {}, inputTypes, inputLocs);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(inputs, block->getArguments()))
      map.map(v, arg);
    for (Operation *op : kernel.ops)
      b.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    YieldOp::create(b, fused.getLoc(), yielded);

    for (auto [v, r] : llvm::zip(outputs, fused.getResults()))
      v.replaceUsesWithIf(
          r, [&](OpOperand &use) { return !members.contains(use.getOwner()); });
    for (Operation *op : llvm::reverse(kernel.ops))
      op->erase();
    Operation *anchor = fused;
    for (Operation *o : toMove) {
      o->moveAfter(anchor);
      anchor = o;
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    body = &func.getBody().front();
    kernels.clear();
    kernelOf.clear();

    DenseMap<Operation *, unsigned> position;
    for (Operation &op : *body)
      position[&op] = position.size();
    for (Operation &op : body->without_terminator()) {
      int k = -1;
      if (isFusible(&op)) {
        k = chooseKernel(&op, position);
        if (k < 0) {
          k = kernels.size();
          FusionClass c = getFusionClass(&op);
          kernels.push_back({c, {}});
        }
      }
      assign(&op, k);
    }
    sinkPredicates();

    int64_t id = 0;
    for (const Kernel &kernel : kernels) {
      if (kernel.ops.size() < 2)
        continue;
      numFusedOps += kernel.ops.size();
      materialize(kernel, id++);
    }
    numKernels += id;
  }
};

} // namespace

//===- OutlineKernels.cpp - kiln-outline-kernels, kiln-inline-kernels -----===//
//
// Schedules each distinct kernel once (docs/decisions/0030-schedule-each-
// kernel-once.md). The CPU schedules (kiln-schedule-matmul,
// kiln-vectorize-elementwise) cost time in proportion to the IR they tile
// and rewrite, and a network repeats its kernels: ResNet-50's 16 bottleneck
// blocks have 5 distinct shapes, a transformer's layers are all alike.
// kiln-outline-kernels moves each kernel (the ops between two of
// kiln-mark-kernels' probes) of the entry function into a private function
// of its captured values, and kernels that print the same share one; the
// schedules then run once per distinct function, and kiln-inline-kernels
// puts a copy of each scheduled body back in place of every call, before
// bufferization, so storage planning sees one function as before.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/FoldUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace kiln {
#define GEN_PASS_DEF_OUTLINEKERNELS
#define GEN_PASS_DEF_INLINEKERNELS
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// On a call of an outlined kernel: pairs (location in the shared body,
/// location of the same op at this call's kernel), flattened, so that the
/// copy put back here names this kernel's ONNX nodes, not the first one's.
constexpr llvm::StringLiteral kKernelLocsAttr = "kiln.kernel_locs";

bool isProbe(Operation &op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee() == kiln::kKernelProbe;
}

/// A type a kernel function can take or return, or its ops compute: a
/// tensor of static shape, a vector, a scalar.
bool isPlainType(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.hasStaticShape();
  return isa<VectorType, IndexType, IntegerType, FloatType>(type);
}

/// Whether `op` and everything inside it only compute values: ops of the
/// structured, tensor and arithmetic dialects on plain types. Calls, memrefs
/// (a training step's collectives), run-time sizes (kilnc --dim) and ops of
/// other dialects stay where they are.
bool isPureCompute(Operation *root) {
  static constexpr llvm::StringLiteral kDialects[] = {
      "affine", "arith", "linalg", "math", "scf", "tensor", "ub", "vector"};
  WalkResult walk = root->walk([](Operation *op) {
    Dialect *dialect = op->getDialect();
    if (!dialect || !llvm::is_contained(kDialects, dialect->getNamespace()))
      return WalkResult::interrupt();
    for (Type type : op->getOperandTypes())
      if (!isPlainType(type))
        return WalkResult::interrupt();
    for (Type type : op->getResultTypes())
      if (!isPlainType(type))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// A captured constant the body rebuilds rather than receives: scalars and
/// splats, which the schedules fold (a fill's value, a padding). Weights
/// and other non-splat tensors are arguments, so kernels that differ only
/// in their weights share a body.
bool isClonedConstant(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumOperands() != 0 || def->getNumRegions() != 0 ||
      !def->hasTrait<OpTrait::ConstantLike>())
    return false;
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return false;
  auto elements = dyn_cast<ElementsAttr>(attr);
  return !elements || elements.isSplat();
}

/// One kernel of the entry function, outlined.
struct Kernel {
  func::FuncOp body;
  SmallVector<Value> arguments;
  SmallVector<Value> results;
  std::string key;
};

/// Builds the function for `ops` (a kernel, in order) without placing it in
/// the module, and returns null when the kernel is not pure computation.
std::optional<Kernel> buildKernel(ArrayRef<Operation *> ops, Location loc) {
  llvm::SmallPtrSet<Operation *, 32> inKernel(ops.begin(), ops.end());
  auto isInside = [&](Operation *op) {
    for (; op; op = op->getParentOp())
      if (inKernel.contains(op))
        return true;
    return false;
  };
  llvm::SetVector<Value> arguments, cloned;
  for (Operation *op : ops) {
    if (!isPureCompute(op))
      return std::nullopt;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def ? isInside(def)
                : isInside(operand.getParentBlock()->getParentOp()))
          continue;
        (isClonedConstant(operand) ? cloned : arguments).insert(operand);
      }
    });
  }
  for (Value v : arguments)
    if (!isPlainType(v.getType()))
      return std::nullopt;
  SmallVector<Value> results;
  for (Operation *op : ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !isInside(user); }))
        results.push_back(result);

  MLIRContext *ctx = loc.getContext();
  OpBuilder b(ctx);
  auto type = b.getFunctionType(ValueRange(arguments.getArrayRef()).getTypes(),
                                ValueRange(results).getTypes());
  auto fn = func::FuncOp::create(b, loc, "kernel", type);
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [value, arg] : llvm::zip(arguments, entry->getArguments()))
    map.map(value, arg);
  for (Value value : cloned)
    map.map(value, b.clone(*value.getDefiningOp())->getResult(0));
  for (Operation *op : ops)
    b.clone(*op, map);
  SmallVector<Value> returned;
  for (Value result : results)
    returned.push_back(map.lookup(result));
  func::ReturnOp::create(b, loc, returned);

  Kernel kernel;
  kernel.body = fn;
  kernel.arguments = arguments.takeVector();
  kernel.results = std::move(results);
  // Printing is exact (shapes, attributes, the constants rebuilt inside),
  // so two kernels that print the same compute the same function of their
  // arguments. Locations are left out: they name the ONNX nodes.
  llvm::raw_string_ostream os(kernel.key);
  fn.print(os, OpPrintingFlags().useLocalScope());
  return kernel;
}

/// Pairs each location in `from`'s ops with the location of the same op in
/// `to` (two bodies that print the same walk in the same order).
ArrayAttr locationPairs(func::FuncOp from, func::FuncOp to) {
  SmallVector<Location> a, b;
  from.walk([&](Operation *op) { a.push_back(op->getLoc()); });
  to.walk([&](Operation *op) { b.push_back(op->getLoc()); });
  SmallVector<Attribute> pairs;
  llvm::SmallDenseSet<Attribute> seen;
  for (auto [x, y] : llvm::zip(a, b))
    if (x != y && seen.insert(x).second) {
      pairs.push_back(x);
      pairs.push_back(y);
    }
  return ArrayAttr::get(from.getContext(), pairs);
}

struct OutlineKernels : kiln::impl::OutlineKernelsBase<OutlineKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!func.isExternal() && func.getBody().hasOneBlock() &&
          func->hasAttr(kiln::kKernelNamesAttr))
        outline(func);
  }

  void outline(func::FuncOp func) {
    ModuleOp module = getOperation();
    // The kernels: the ops between two probes, constants aside (any kernel
    // may use them).
    SmallVector<SmallVector<Operation *>> kernels(1);
    for (Operation &op : func.getBody().front()) {
      if (isProbe(op)) {
        kernels.emplace_back();
        continue;
      }
      if (!op.hasTrait<OpTrait::IsTerminator>() &&
          !op.hasTrait<OpTrait::ConstantLike>())
        kernels.back().push_back(&op);
    }

    llvm::StringMap<func::FuncOp> bodies;
    Operation *insertAfter = func;
    int64_t next = 0;
    for (ArrayRef<Operation *> ops : kernels) {
      // A kernel without a structured op has nothing to schedule.
      if (llvm::none_of(ops, [](Operation *op) {
            return op->getDialect() &&
                   op->getDialect()->getNamespace() == "linalg";
          }))
        continue;
      std::optional<Kernel> kernel = buildKernel(ops, ops.front()->getLoc());
      if (!kernel)
        continue;
      func::FuncOp callee;
      ArrayAttr locs;
      auto [it, inserted] = bodies.try_emplace(kernel->key, kernel->body);
      ++numKernels;
      if (inserted) {
        std::string name;
        do {
          name = (func.getSymName() + ".kernel" + Twine(next++)).str();
        } while (module.lookupSymbol(name));
        kernel->body.setSymName(name);
        kernel->body->setAttr(kiln::kKernelBodyAttr,
                              UnitAttr::get(&getContext()));
        // What was done to the whole function holds for its kernels.
        if (Attribute prepared = func->getAttr(kiln::kContractionsPreparedAttr))
          kernel->body->setAttr(kiln::kContractionsPreparedAttr, prepared);
        module.getBody()->getOperations().insertAfter(
            Block::iterator(insertAfter), kernel->body);
        insertAfter = kernel->body;
        callee = kernel->body;
      } else {
        ++numShared;
        callee = it->second;
        locs = locationPairs(callee, kernel->body);
        kernel->body.erase();
      }
      OpBuilder b(ops.back()->getNextNode());
      auto call = func::CallOp::create(b, ops.front()->getLoc(), callee,
                                       kernel->arguments);
      if (locs && !locs.empty())
        call->setAttr(kKernelLocsAttr, locs);
      llvm::SmallPtrSet<Operation *, 32> inKernel(ops.begin(), ops.end());
      for (auto [result, replacement] :
           llvm::zip(kernel->results, call.getResults()))
        result.replaceUsesWithIf(replacement, [&](OpOperand &use) {
          Operation *owner = use.getOwner();
          while (owner->getParentOp() != func)
            owner = owner->getParentOp();
          return !inKernel.contains(owner);
        });
      for (Operation *op : llvm::reverse(ops))
        op->dropAllUses();
      for (Operation *op : llvm::reverse(ops))
        op->erase();
    }
  }
};

struct InlineKernels : kiln::impl::InlineKernelsBase<InlineKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
          callee && callee->hasAttr(kiln::kKernelBodyAttr))
        calls.push_back(call);
    });
    // Each copy would bring its own constants (the schedules' indices and
    // splats, which the folder hoisted to the body's entry): one of each,
    // at the caller's entry, as canonicalization would have left them.
    OperationFolder folder(&getContext());
    llvm::SmallPtrSet<Operation *, 8> callers;
    for (func::CallOp call : calls)
      if (callers.insert(call->getParentOp()).second)
        for (Operation &op :
             llvm::make_early_inc_range(call->getParentRegion()->front()))
          if (op.hasTrait<OpTrait::ConstantLike>() && op.getNumOperands() == 0)
            folder.insertKnownConstant(&op);
    for (func::CallOp call : calls) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      DenseMap<Attribute, Attribute> renamed;
      if (auto locs = call->getAttrOfType<ArrayAttr>(kKernelLocsAttr))
        for (size_t i = 0; i + 1 < locs.size(); i += 2)
          renamed[locs[i]] = locs[i + 1];
      AttrTypeReplacer locations;
      locations.addReplacement(
          [&](LocationAttr loc) -> std::optional<Attribute> {
            auto it = renamed.find(loc);
            if (it == renamed.end())
              return std::nullopt;
            return it->second;
          });
      IRMapping map;
      Block &body = callee.getBody().front();
      map.map(body.getArguments(), call.getOperands());
      OpBuilder b(call);
      Block *entry = &call->getParentRegion()->front();
      for (Operation &op : body.without_terminator()) {
        Attribute value;
        if (op.hasTrait<OpTrait::ConstantLike>() && op.getNumResults() == 1 &&
            matchPattern(op.getResult(0), m_Constant(&value)))
          if (Value constant = folder.getOrCreateConstant(
                  entry, op.getDialect(), value, op.getResult(0).getType())) {
            map.map(op.getResult(0), constant);
            continue;
          }
        Operation *copy = b.clone(op, map);
        if (!renamed.empty())
          copy->walk([&](Operation *inner) {
            inner->setLoc(cast<Location>(locations.replace(
                cast<LocationAttr>(Attribute(inner->getLoc())))));
          });
      }
      for (auto [result, returned] :
           llvm::zip(call.getResults(), body.getTerminator()->getOperands()))
        result.replaceAllUsesWith(map.lookupOrDefault(returned));
      call.erase();
    }
    for (func::FuncOp fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn->hasAttr(kiln::kKernelBodyAttr))
        fn.erase();
      else
        fn->removeAttr(kiln::kContractionsPreparedAttr);
    }
  }
};

} // namespace

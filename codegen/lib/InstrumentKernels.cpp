//===- InstrumentKernels.cpp - kiln-mark-kernels, kiln-instrument-kernels -===//
//
// Per-kernel profiling of CPU artifacts (kiln_model_run_profiled). The
// kernels are kiln-fuse's: kiln-mark-kernels numbers them on the kiln
// dialect, where they are still whole ops, by putting an opaque call
// between each two; the lowering keeps every op between the calls it was
// between. Once the function has its final signature (after arena planning
// and outlining), kiln-instrument-kernels appends the profiler argument and
// passes it to the calls. An artifact run without a profiler pays one
// compare and branch per kernel.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/NodeNames.h"

#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_MARKKERNELS
#define GEN_PASS_DEF_INSTRUMENTKERNELS
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

int64_t numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

/// Two flops per multiply-add of a matrix product or convolution in `op`
/// (itself or, for a kernel, its body); everything else is not counted.
int64_t countFlops(Operation *op) {
  int64_t flops = 0;
  op->walk([&](Operation *inner) {
    if (auto mm = dyn_cast<kiln::MatMulOp>(inner)) {
      auto lhs = cast<ShapedType>(mm.getLhs().getType());
      if (!lhs.hasStaticShape() || lhs.getRank() < 2)
        return;
      int64_t k =
          lhs.getDimSize(lhs.getRank() - (mm.getTransposeLhs() ? 2 : 1));
      flops += 2 * numElements(mm.getResult().getType()) * k;
    } else if (auto conv = dyn_cast<kiln::ConvOp>(inner)) {
      auto filter = cast<ShapedType>(conv.getFilter().getType());
      if (!filter.hasStaticShape() || filter.getRank() < 1 ||
          filter.getDimSize(0) == 0)
        return;
      // Each output element takes C/group * kernel-window products.
      int64_t window = filter.getNumElements() / filter.getDimSize(0);
      flops += 2 * numElements(conv.getResult().getType()) * window;
    }
  });
  return flops;
}

/// Whether a top-level op of the entry function becomes code of its own.
bool isKernel(Operation &op) {
  if (op.hasTrait<OpTrait::IsTerminator>() ||
      op.hasTrait<OpTrait::ConstantLike>())
    return false;
  if (isa<kiln::FusedOp>(op))
    return true;
  return op.getDialect() && op.getDialect()->getNamespace() == "kiln" &&
         !isa<kiln::ConstantOp, kiln::ReshapeOp>(op);
}

struct MarkKernels : kiln::impl::MarkKernelsBase<MarkKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    Type i32 = b.getI32Type();
    func::FuncOp probe;
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || func.isPrivate() ||
          !func.getBody().hasOneBlock())
        continue;
      SmallVector<Operation *> kernels;
      for (Operation &op : func.getBody().front())
        if (isKernel(op))
          kernels.push_back(&op);
      if (!probe) {
        if (module.lookupSymbol(kiln::kKernelProbe)) {
          module.emitError("symbol '")
              << kiln::kKernelProbe << "' already exists";
          return signalPassFailure();
        }
        b.setInsertionPointToStart(module.getBody());
        probe = func::FuncOp::create(b, module.getLoc(), kiln::kKernelProbe,
                                     b.getFunctionType({i32}, {}));
        probe.setPrivate();
      }
      SmallVector<Attribute> names;
      SmallVector<int64_t> flops;
      auto call = [&](Location loc, int64_t index) {
        Value i = arith::ConstantIntOp::create(b, loc, i32, index);
        func::CallOp::create(b, loc, probe, ValueRange{i});
      };
      for (auto [index, op] : llvm::enumerate(kernels)) {
        llvm::SetVector<StringRef> nodes;
        if (auto fused = dyn_cast<kiln::FusedOp>(op)) {
          for (Attribute name : fused.getNodes())
            nodes.insert(cast<StringAttr>(name).getValue());
        } else {
          kiln::collectNodeNames(op->getLoc(), nodes);
        }
        std::string name = llvm::join(nodes, ",");
        if (name.empty())
          name = op->getName().stripDialect().str();
        names.push_back(b.getStringAttr(name));
        flops.push_back(countFlops(op));
        b.setInsertionPoint(op);
        call(op->getLoc(), static_cast<int64_t>(index));
      }
      b.setInsertionPoint(func.getBody().front().getTerminator());
      call(func.getLoc(), static_cast<int64_t>(kernels.size()));
      func->setAttr(kiln::kKernelNamesAttr, b.getArrayAttr(names));
      func->setAttr(kiln::kKernelFlopsAttr, b.getDenseI64ArrayAttr(flops));
    }
  }
};

struct InstrumentKernels
    : kiln::impl::InstrumentKernelsBase<InstrumentKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    OpBuilder b(ctx);
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || !func->hasAttr(kiln::kKernelNamesAttr))
        continue;
      unsigned at = func.getNumArguments();
      if (failed(func.insertArgument(at, ptr, DictionaryAttr::get(ctx),
                                     func.getLoc())))
        return signalPassFailure();
      Value profiler = func.getArgument(at);
      std::string name = (func.getSymName() + kiln::kKernelProbeSuffix).str();
      if (module.lookupSymbol(name)) {
        func.emitError("symbol '") << name << "' already exists";
        return signalPassFailure();
      }
      b.setInsertionPointAfter(func);
      auto probe = func::FuncOp::create(
          b, func.getLoc(), name, b.getFunctionType({ptr, b.getI32Type()}, {}));
      probe.setPrivate();
      SmallVector<func::CallOp> calls;
      func.walk([&](func::CallOp call) {
        if (call.getCallee() == kiln::kKernelProbe)
          calls.push_back(call);
      });
      for (func::CallOp call : calls) {
        b.setInsertionPoint(call);
        func::CallOp::create(b, call.getLoc(), probe,
                             ValueRange{profiler, call.getOperand(0)});
        call.erase();
      }
    }
    // The marker is gone once every call has its profiler.
    if (auto marker = module.lookupSymbol<func::FuncOp>(kiln::kKernelProbe))
      if (marker.symbolKnownUseEmpty(module))
        marker.erase();
  }
};

} // namespace

//===- AllReduce.cpp - kiln.all_reduce from tensors to calls --------------===//
//
// A data-parallel step's buckets (kiln.all_reduce, kiln-bucket-all-reduce)
// on their way to the runtime's collectives: bufferization makes each a
// start call and a wait call on the bucket's buffers, in place (each result
// is its operand's buffer); kiln-sink-all-reduce-waits moves each wait down
// to where the buffers are next touched; kiln-connect-collectives gives the
// calls the caller's kiln_collectives_t, which the code generator's
// definitions hand the buffers' addresses (docs/decisions/0024-...).
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseSet.h"

namespace kiln {
#define GEN_PASS_DEF_SINKALLREDUCEWAITS
#define GEN_PASS_DEF_CONNECTCOLLECTIVES
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace mlir::bufferization;

namespace {

/// The private declaration `name(types...)` in `module`, made on first use.
FailureOr<func::FuncOp> declare(OpBuilder &b, ModuleOp module, StringRef name,
                                TypeRange types, Location loc) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
    if (TypeRange(existing.getFunctionType().getInputs()) != types)
      return emitError(loc, "internal error: '")
                 << name << "' declared with other types",
             failure();
    return existing;
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto decl = func::FuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  decl.setPrivate();
  return decl;
}

/// Each result is its operand, reduced in place: the op reads and writes
/// every operand's buffer.
struct AllReduceBufferization
    : BufferizableOpInterface::ExternalModel<AllReduceBufferization,
                                             kiln::AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    return {{op->getResult(operand.getOperandNumber()),
             BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto bucket = op->getAttrOfType<IntegerAttr>(kiln::kBucketAttr);
    if (!bucket)
      return op->emitOpError("expects '")
             << kiln::kBucketAttr
             << "' (run kiln-bucket-all-reduce before lowering)";
    SmallVector<Value> buffers;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      auto type = cast<MemRefType>(buffer->getType());
      if (!type.getLayout().isIdentity() || !type.hasStaticShape())
        return op->emitOpError("internal error: expects dense static "
                               "buffers, found ")
               << type;
      buffers.push_back(*buffer);
    }
    auto module = op->getParentOfType<ModuleOp>();
    std::string index = std::to_string(bucket.getInt());
    TypeRange types = ValueRange(buffers).getTypes();
    auto start =
        declare(rewriter, module, (kiln::kAllReduceStart + index).str(), types,
                op->getLoc());
    auto wait = declare(rewriter, module, (kiln::kAllReduceWait + index).str(),
                        types, op->getLoc());
    if (failed(start) || failed(wait))
      return failure();
    func::CallOp::create(rewriter, op->getLoc(), *start, buffers);
    func::CallOp::create(rewriter, op->getLoc(), *wait, buffers);
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }
};

bool isBucketCall(func::CallOp call, StringRef prefix) {
  return call.getCallee().starts_with(prefix);
}

struct SinkAllReduceWaits
    : kiln::impl::SinkAllReduceWaitsBase<SinkAllReduceWaits> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    SmallVector<func::CallOp> waits;
    for (auto call : body.getOps<func::CallOp>())
      if (isBucketCall(call, kiln::kAllReduceWait))
        waits.push_back(call);
    for (func::CallOp wait : waits) {
      // The buffers: the allocations (or arguments) under every operand,
      // and every view made of them.
      llvm::DenseSet<Value> touched;
      SmallVector<Value> work;
      for (Value v : wait.getOperands()) {
        while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
          v = view.getViewSource();
        work.push_back(v);
      }
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (!touched.insert(v).second)
          continue;
        for (Operation *user : v.getUsers())
          if (auto view = dyn_cast<ViewLikeOpInterface>(user);
              view && view.getViewSource() == v)
            for (Value r : user->getResults())
              work.push_back(r);
      }
      auto touches = [&](Operation &op) {
        bool found = false;
        op.walk([&](Operation *inner) {
          for (Value v : inner->getOperands())
            found |= touched.contains(v);
        });
        return found;
      };
      Operation *stop = wait->getNextNode();
      while (stop && !stop->hasTrait<OpTrait::IsTerminator>() &&
             !touches(*stop))
        stop = stop->getNextNode();
      if (stop && stop != wait->getNextNode())
        wait->moveBefore(stop);
    }
  }
};

struct ConnectCollectives
    : kiln::impl::ConnectCollectivesBase<ConnectCollectives> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    OpBuilder b(ctx);
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || func.isPrivate())
        continue;
      SmallVector<func::CallOp> calls;
      func.walk([&](func::CallOp call) {
        if (isBucketCall(call, kiln::kAllReduceStart) ||
            isBucketCall(call, kiln::kAllReduceWait))
          calls.push_back(call);
      });
      if (calls.empty())
        continue;
      unsigned at = func.getNumArguments();
      if (failed(func.insertArgument(at, ptr, DictionaryAttr::get(ctx),
                                     func.getLoc())))
        return signalPassFailure();
      Value collectives = func.getArgument(at);
      for (func::CallOp call : calls) {
        bool start = isBucketCall(call, kiln::kAllReduceStart);
        StringRef index = call.getCallee().drop_front(
            (start ? kiln::kAllReduceStart : kiln::kAllReduceWait).size());
        std::string name = (func.getSymName() + kiln::kBucketSuffix + index +
                            (start ? "_start" : "_wait"))
                               .str();
        SmallVector<Type> types = {ptr};
        llvm::append_range(types, call.getOperandTypes());
        b.setInsertionPointAfter(func);
        auto callee = declare(b, module, name, types, call.getLoc());
        if (failed(callee))
          return signalPassFailure();
        SmallVector<Value> args = {collectives};
        llvm::append_range(args, call.getOperands());
        b.setInsertionPoint(call);
        func::CallOp::create(b, call.getLoc(), *callee, args);
        call.erase();
      }
    }
    // The markers are gone once every call has its collectives.
    for (func::FuncOp decl : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (decl.isExternal() &&
          (decl.getSymName().starts_with(kiln::kAllReduceStart) ||
           decl.getSymName().starts_with(kiln::kAllReduceWait)) &&
          decl.symbolKnownUseEmpty(module))
        decl.erase();
  }
};

} // namespace

void kiln::registerAllReduceBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, kiln::KilnDialect *) {
    kiln::AllReduceOp::attachInterface<AllReduceBufferization>(*ctx);
  });
}

//===- CpuCodegen.cpp - kiln dialect to an x86-64 object ------------------===//
//
// Lowering: kiln -> linalg on tensors -> one-shot bufferization with
// destination-passing outputs -> arena planning -> loops -> LLVM dialect, all
// with upstream passes except the two kiln ones. Then translation to LLVM IR,
// where the exported entry points (<name>_run, <name>_artifact) are written
// with IRBuilder around the internal kernel, and object emission with the
// TargetMachine. Memory is the caller's: after the arena pass no allocation
// is left, and buildArtifactModule refuses code that calls anything but
// libm and mem*.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CpuCodegen.h"
#include "MatmulSchedule.h"
#include "kiln/Codegen/MemoryPlan.h"
#include "kiln/Codegen/Passes.h"
#include "kiln/Codegen/Pipelines.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char **environ;

using namespace mlir;
using namespace kiln;

void kiln::registerCodegenDialects(DialectRegistry &registry) {
  registry.insert<KilnDialect>();
  registerSliceSubsets(registry);
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerAllReduceBufferization(registry);
}

/// The entry function `funcName` of `module`, its signature read into
/// `info`; fails, located, without one.
static FailureOr<func::FuncOp>
entryFunction(ModuleOp module, StringRef funcName, ArtifactInfo &info) {
  auto func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func)
    return module.emitError("expects an entry function '") << funcName << "'";
  if (failed(collectSignature(func, info)))
    return failure();
  return func;
}

/// Runs the pipeline `build` makes for this target on `module` and takes
/// the arena plan of `funcName` (its name while planned) into `info`.
static LogicalResult runPlanningPipeline(
    ModuleOp module, StringRef funcName, ArtifactInfo &info,
    const CpuCodegenOptions &options,
    LogicalResult (*build)(OpPassManager &, const CpuLoweringOptions &,
                           MemoryPlanSink *)) {
  // The matmul register tile depends on the target's vector registers.
  auto lowering = cpuLoweringOptionsFor(options);
  if (!lowering)
    return module.emitError(llvm::toString(lowering.takeError()));
  PassManager pm(module.getContext(), "builtin.module");
  MemoryPlanSink plans;
  if (failed(build(pm, *lowering, &plans)))
    return module.emitError(
        "internal error: the lowering pipeline does not parse");
  if (options.configurePassManager)
    options.configurePassManager(pm);
  // Once after the stage even where the caller turned the verifier off
  // between passes (kilnc without --verify-each).
  if (failed(pm.run(module)) || failed(verify(module)))
    return failure();
  const MemoryPlan *plan = plans.lookup(funcName);
  if (!plan)
    return module.emitError("internal error: no memory plan for '")
           << funcName << "'";
  recordMemoryPlan(*plan, info);
  return success();
}

LogicalResult kiln::lowerToLLVMDialect(ModuleOp module, StringRef funcName,
                                       ArtifactInfo &info,
                                       const CpuCodegenOptions &options) {
  FailureOr<func::FuncOp> entry = entryFunction(module, funcName, info);
  if (failed(entry))
    return failure();
  func::FuncOp func = *entry;
  std::string kernelName = info.name + "_kernel";
  if (module.lookupSymbol(kernelName))
    return module.emitError("symbol '") << kernelName << "' already exists";
  func.setSymName(kernelName);

  // A data-parallel step's buckets, which the descriptor lists for the
  // runtime's collectives.
  if (failed(collectBuckets(func, info)))
    return failure();

  if (failed(runPlanningPipeline(module, kernelName, info, options,
                                 &buildCpuLoweringPipeline)))
    return failure();
  auto kernel = module.lookupSymbol<LLVM::LLVMFuncOp>(kernelName);
  if (!kernel)
    return module.emitError("internal error: lowering lost '")
           << kernelName << "'";
  if (auto names = kernel->getAttrOfType<ArrayAttr>(kKernelNamesAttr))
    for (auto name : names.getAsRange<StringAttr>())
      info.kernelNames.push_back(name.str());
  if (auto flops = kernel->getAttrOfType<DenseI64ArrayAttr>(kKernelFlopsAttr))
    for (int64_t f : flops.asArrayRef())
      info.kernelFlops.push_back(static_cast<uint64_t>(f));
  if (info.kernelNames.empty() ||
      info.kernelFlops.size() != info.kernelNames.size())
    info.kernelNames.clear(), info.kernelFlops.clear();
  if (auto inPlace =
          kernel->getAttrOfType<DenseI64ArrayAttr>(kStateInPlaceAttr))
    for (int64_t k : inPlace.asArrayRef()) {
      if (k < 0 || static_cast<size_t>(k) >= info.state.size())
        return kernel.emitError("internal error: state tensor ")
               << k << " updated in place, of " << info.state.size();
      info.state[k].inPlace = true;
    }
  // Anything not in the LLVM dialect now would be dropped or rejected by the
  // translation; say which op instead.
  WalkResult leftover = module.walk([](Operation *op) {
    if (isa<ModuleOp>(op) || isa<LLVM::LLVMDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError("was not lowered to the LLVM dialect");
    return WalkResult::interrupt();
  });
  if (leftover.wasInterrupted())
    return failure();
  // kiln.* attributes were for the passes; the translation need not see them.
  auto isKilnAttr = [](NamedAttribute attr) {
    return attr.getName().strref().starts_with("kiln.");
  };
  module.walk([&](Operation *op) {
    for (NamedAttribute attr : llvm::to_vector(op->getDiscardableAttrs()))
      if (isKilnAttr(attr))
        op->removeDiscardableAttr(attr.getName());
    if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        for (NamedAttribute attr : fn.getArgAttrs(i))
          if (isKilnAttr(attr))
            fn.removeArgAttr(i, attr.getName());
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        for (NamedAttribute attr : fn.getResultAttrs(i))
          if (isKilnAttr(attr))
            fn.removeResultAttr(i, attr.getName());
    }
  });
  return success();
}

LogicalResult kiln::planCpuArena(ModuleOp module, StringRef funcName,
                                 ArtifactInfo &info,
                                 const CpuCodegenOptions &options) {
  if (failed(entryFunction(module, funcName, info)))
    return failure();
  return runPlanningPipeline(module, funcName, info, options,
                             &buildCpuPlanningPipeline);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
kiln::createCpuTargetMachine(const CpuCodegenOptions &options) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for " + triple.str() + ": " +
                                   error);
  std::string cpu = options.cpu, features = options.features;
  if (cpu == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures hostFeatures;
    for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
      hostFeatures.AddFeature(feature, enabled);
    std::string host = hostFeatures.getString();
    features = features.empty() ? host : host + "," + features;
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, cpu, ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    return llvm::createStringError("unknown CPU '" + cpu + "' for " +
                                   triple.str());
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return llvm::createStringError("cannot create a target machine for " +
                                   triple.str());
  return tm;
}

/// Runs LLVM's -O2 module pipeline for the target. The MLIR side has tiled,
/// vectorized and unrolled every kernel already; -O3's additions (non-trivial
/// loop unswitching, more inlining, argument promotion) found nothing
/// measurable there and cost half of this stage: ResNet-50 4.2 s -> 2.0 s
/// with the same latency within noise (docs/decisions/0026, step 4). For
/// the same reason LLVM's own (partial and runtime) loop unrolling is off:
/// it unrolled the register-tile loops again, which code generation then
/// paid for, and the kernels ran no faster (decision 0021's update of
/// 2026-11-30: ResNet-18 6.3 s -> 5.0 s, ResNet-50 12.3 s -> 10.1 s).
static void optimize(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // LLVM's pass timers (`kilnc --time-passes`) and nothing else: the
  // standard instrumentations read their own flags, all off by default.
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::StandardInstrumentations instrumentations(module.getContext(),
                                                  /*DebugLogging=*/false);
  instrumentations.registerCallbacks(callbacks, &mam);
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  llvm::PassBuilder pb(&tm, tuning, std::nullopt, &callbacks);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  // Loops that MLIR generated for different shapes often optimize to the
  // same machine-independent code (DenseNet-121: 1,104 functions, 519
  // distinct); code generation then runs once for each. Before -O2 they
  // still differ, so this goes last.
  passes.addPass(llvm::MergeFunctionsPass());
  passes.run(module, mam);
}

/// Carries bfloat values that cross a select, a block boundary or a vector
/// lane as i16.
/// The bf16 conversions are integer code already (arith-expand), but x86
/// without native bf16 conversions (no AVX512-BF16: Zen 3, most desktop
/// CPUs) holds a bfloat SSA value in a float register, and turning it back
/// into bits for a store calls libgcc's __truncsfbf2, which artifacts may
/// not. A select, phi or store of the bits needs no conversion. Runs after -O2,
/// whose InstCombine would fold the casts back into bfloat selects.
static void bfloatSelectsAndPhisAsBits(llvm::Module &m) {
  auto isBfloat = [](llvm::Type *t) {
    return t->getScalarType()->isBFloatTy();
  };
  auto bitsOf = [](llvm::Type *t) {
    return t->getWithNewType(llvm::Type::getInt16Ty(t->getContext()));
  };
  for (llvm::Function &f : m) {
    llvm::SmallVector<llvm::Instruction *> work;
    for (llvm::Instruction &inst : llvm::instructions(f))
      if ((isa<llvm::SelectInst, llvm::PHINode, llvm::ExtractElementInst>(
              inst)) &&
          isBfloat(inst.getType()))
        work.push_back(&inst);
    for (llvm::Instruction *inst : work) {
      llvm::Type *bits = bitsOf(inst->getType());
      llvm::Value *replacement;
      if (auto *extract = dyn_cast<llvm::ExtractElementInst>(inst)) {
        // An element of a vector the vectorizers made (a store of each
        // lane), taken as bits.
        llvm::IRBuilder<> b(extract);
        llvm::Value *vector =
            b.CreateBitCast(extract->getVectorOperand(),
                            bitsOf(extract->getVectorOperand()->getType()));
        llvm::Value *lane = b.CreateExtractElement(
            vector, extract->getIndexOperand(), extract->getName() + ".bits");
        replacement = b.CreateBitCast(lane, inst->getType());
      } else if (auto *select = dyn_cast<llvm::SelectInst>(inst)) {
        llvm::IRBuilder<> b(select);
        llvm::Value *t = b.CreateBitCast(select->getTrueValue(), bits);
        llvm::Value *e = b.CreateBitCast(select->getFalseValue(), bits);
        llvm::Value *picked = b.CreateSelect(select->getCondition(), t, e,
                                             select->getName() + ".bits");
        replacement = b.CreateBitCast(picked, inst->getType());
      } else {
        auto *phi = cast<llvm::PHINode>(inst);
        llvm::IRBuilder<> b(phi);
        llvm::PHINode *bitsPhi = b.CreatePHI(bits, phi->getNumIncomingValues(),
                                             phi->getName() + ".bits");
        for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) {
          llvm::BasicBlock *from = phi->getIncomingBlock(i);
          llvm::IRBuilder<> at(from->getTerminator());
          bitsPhi->addIncoming(at.CreateBitCast(phi->getIncomingValue(i), bits),
                               from);
        }
        b.SetInsertPoint(phi->getParent()->getFirstInsertionPt());
        replacement = b.CreateBitCast(bitsPhi, phi->getType());
      }
      inst->replaceAllUsesWith(replacement);
      inst->eraseFromParent();
    }
    // Bits cast to bfloat and back (what the rewrites above leave between
    // them) are the bits: no bfloat value may stay live across blocks.
    llvm::SmallVector<llvm::BitCastInst *> casts;
    for (llvm::Instruction &inst : llvm::instructions(f))
      if (auto *cast = dyn_cast<llvm::BitCastInst>(&inst))
        casts.push_back(cast);
    for (llvm::BitCastInst *back : casts) {
      auto *there = dyn_cast<llvm::BitCastInst>(back->getOperand(0));
      if (there && isBfloat(there->getDestTy()) &&
          there->getSrcTy() == back->getDestTy())
        back->replaceAllUsesWith(there->getOperand(0));
    }
    // Unused casts, users before their operands.
    for (llvm::BitCastInst *cast : llvm::reverse(casts))
      if (cast->use_empty())
        cast->eraseFromParent();
    // A store of bits made in another block would hold them as a bfloat
    // in between: store the bits.
    for (llvm::Instruction &inst : llvm::instructions(f)) {
      auto *store = dyn_cast<llvm::StoreInst>(&inst);
      if (!store || !isBfloat(store->getValueOperand()->getType()))
        continue;
      auto *cast = dyn_cast<llvm::BitCastInst>(store->getValueOperand());
      if (cast && cast->getSrcTy() == bitsOf(cast->getDestTy()))
        store->setOperand(0, cast->getOperand(0));
    }
  }
}

/// Functions the generated code may call: libm and the mem* builtins LLVM
/// itself introduces. Anything else (malloc, MLIR runtime helpers) means a
/// lowering went wrong.
static bool isAllowedExternal(StringRef name) {
  static const llvm::StringSet<> allowed = [] {
    llvm::StringSet<> set = {"memcpy", "memmove", "memset",
                             // f16/bf16 conversions on CPUs without F16C
                             "__extendhfsf2", "__truncsfhf2", "__truncdfhf2"};
    for (const char *fn :
         {"exp",      "exp2",      "expm1", "log",   "log2",      "log10",
          "log1p",    "pow",       "sqrt",  "cbrt",  "tanh",      "sin",
          "cos",      "tan",       "asin",  "acos",  "atan",      "atan2",
          "sinh",     "cosh",      "asinh", "acosh", "atanh",     "erf",
          "erfc",     "floor",     "ceil",  "round", "roundeven", "trunc",
          "rint",     "nearbyint", "fmod",  "fmax",  "fmin",      "fabs",
          "copysign", "fma"}) {
      set.insert(fn);
      set.insert(std::string(fn) + "f");
    }
    return set;
  }();
  return allowed.contains(name);
}

/// Keeps the functions kiln-outline-parallel-loops made out of line: each
/// `<kernel>_body<N>` and `<kernel>_loop<N>` exists so that its code is
/// generated once, for all its callers (the kernel, regions, trampolines).
/// LLVM's inliner would otherwise copy a body back into each caller, two or
/// three copies of the hottest loops. They are also internal: not part of
/// the object's interface.
static void keepOutlinedLoops(llvm::Module &m, StringRef kernelName) {
  for (StringRef suffix : {kiln::kParallelBodySuffix, kiln::kSharedLoopSuffix})
    for (unsigned index = 0;; ++index) {
      llvm::Function *fn =
          m.getFunction((kernelName + suffix + std::to_string(index)).str());
      if (!fn || fn->isDeclaration())
        break;
      fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      fn->addFnAttr(llvm::Attribute::NoInline);
    }
}

/// Defines the `<kernel>_region<N>(par, captured..., n)` that
/// kiln-outline-parallel-loops declared, around its `<kernel>_body<N>(
/// captured..., lo, hi)`. `par` is a kiln_parallel_t (kiln/runtime.h),
/// never null: with a dispatcher, the captured pointers go into an array on the
/// stack and the dispatcher calls the trampoline over disjoint ranges of
/// [0, n) on its threads; without one, the body runs over [0, n) here. The
/// generated code thus calls no threading library: the caller lends its
/// threads through a function pointer.
static LogicalResult defineParallelRegions(llvm::Module &m,
                                           StringRef kernelName) {
  llvm::LLVMContext &context = m.getContext();
  llvm::IRBuilder<> b(context);
  llvm::PointerType *ptr = b.getPtrTy();
  llvm::Type *i64 = b.getInt64Ty();
  // void (*parallel_for)(void *ctx, void (*body)(void *, int64_t, int64_t),
  //                      void *data, int64_t n)
  auto *dispatchTy =
      llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, ptr, i64}, false);
  auto *trampolineTy =
      llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64}, false);
  for (unsigned index = 0;; ++index) {
    std::string suffix = std::to_string(index);
    llvm::Function *region =
        m.getFunction((kernelName + kParallelRegionSuffix + suffix).str());
    if (!region)
      return success();
    llvm::Function *body =
        m.getFunction((kernelName + kParallelBodySuffix + suffix).str());
    if (!body || !region->isDeclaration() || body->isDeclaration())
      return failure();
    // region(par, captured..., n); body(captured..., lo, hi).
    size_t numCaptured = body->arg_size() - 2;
    if (region->arg_size() != numCaptured + 2 ||
        !region->getReturnType()->isVoidTy() ||
        !body->getReturnType()->isVoidTy())
      return failure();
    for (size_t i = 0; i < numCaptured; ++i)
      if (body->getArg(i)->getType() != ptr ||
          region->getArg(i + 1)->getType() != ptr)
        return failure();
    if (body->getArg(numCaptured)->getType() != i64 ||
        region->getArg(numCaptured + 1)->getType() != i64)
      return failure();
    region->setLinkage(llvm::GlobalValue::InternalLinkage);

    // trampoline(data, lo, hi): the body with its pointers from data.
    llvm::Function *trampoline =
        llvm::Function::Create(trampolineTy, llvm::GlobalValue::InternalLinkage,
                               (kernelName + "_trampoline" + suffix).str(), &m);
    {
      b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", trampoline));
      SmallVector<llvm::Value *> args;
      for (size_t i = 0; i < numCaptured; ++i)
        args.push_back(b.CreateLoad(
            ptr, b.CreateConstInBoundsGEP1_64(ptr, trampoline->getArg(0), i)));
      args.push_back(trampoline->getArg(1));
      args.push_back(trampoline->getArg(2));
      b.CreateCall(body, args);
      b.CreateRetVoid();
    }

    // The kernel calls a region only with a kiln_parallel_t (a null one
    // runs the loop in place); its parallel_for may still be null.
    auto *entry = llvm::BasicBlock::Create(context, "entry", region);
    auto *parallel = llvm::BasicBlock::Create(context, "parallel", region);
    auto *serial = llvm::BasicBlock::Create(context, "serial", region);
    llvm::Value *par = region->getArg(0);
    llvm::Value *n = region->getArg(numCaptured + 1);
    b.SetInsertPoint(entry);
    llvm::Value *data =
        numCaptured
            ? b.CreateAlloca(llvm::ArrayType::get(ptr, numCaptured))
            : static_cast<llvm::Value *>(llvm::ConstantPointerNull::get(ptr));
    llvm::Value *dispatch = b.CreateLoad(ptr, par);
    b.CreateCondBr(b.CreateIsNull(dispatch), serial, parallel);
    b.SetInsertPoint(parallel);
    for (size_t i = 0; i < numCaptured; ++i)
      b.CreateStore(region->getArg(i + 1),
                    b.CreateConstInBoundsGEP1_64(ptr, data, i));
    llvm::Value *ctx =
        b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, par, 1));
    b.CreateCall(dispatchTy, dispatch, {ctx, trampoline, data, n});
    b.CreateRetVoid();
    b.SetInsertPoint(serial);
    SmallVector<llvm::Value *> args;
    for (size_t i = 0; i < numCaptured; ++i)
      args.push_back(region->getArg(i + 1));
    args.push_back(b.getInt64(0));
    args.push_back(n);
    b.CreateCall(body, args);
    b.CreateRetVoid();
  }
}

/// Gives the declared hook `fn(hooks, ...)` its body: nothing when `hooks`
/// (its first argument, a struct of function pointers and a context, as in
/// kiln/runtime.h) is null, else `hooks->field[callee](hooks->field[ctx],
/// args(b)...)`, the arguments made in the calling block by `args`.
static void defineHook(
    llvm::Function *fn, unsigned callee, unsigned ctx, llvm::FunctionType *type,
    llvm::function_ref<SmallVector<llvm::Value *>(llvm::IRBuilder<> &)> args) {
  llvm::LLVMContext &context = fn->getContext();
  llvm::IRBuilder<> b(context);
  llvm::PointerType *ptr = b.getPtrTy();
  fn->setLinkage(llvm::GlobalValue::InternalLinkage);
  auto *entry = llvm::BasicBlock::Create(context, "entry", fn);
  auto *call = llvm::BasicBlock::Create(context, "call", fn);
  auto *done = llvm::BasicBlock::Create(context, "done", fn);
  llvm::Value *hooks = fn->getArg(0);
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateIsNull(hooks), done, call);
  b.SetInsertPoint(call);
  SmallVector<llvm::Value *> values = {
      b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, hooks, ctx))};
  llvm::append_range(values, args(b));
  llvm::Value *target =
      b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, hooks, callee));
  b.CreateCall(type, target, values);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

/// Defines the `<kernel>_probe(prof, i32 kernel)` that kiln-instrument-kernels
/// declared: nothing when `prof` (a kiln_profiler_t, kiln/runtime.h) is
/// null, else `prof->kernel_start(prof->ctx, kernel)`.
static LogicalResult defineKernelProbe(llvm::Module &m, StringRef kernelName) {
  llvm::Function *probe =
      m.getFunction((kernelName + kKernelProbeSuffix).str());
  if (!probe)
    return success(); // no kernels
  if (!probe->isDeclaration() || probe->arg_size() != 2 ||
      !probe->getReturnType()->isVoidTy())
    return failure();
  llvm::IRBuilder<> b(m.getContext());
  auto *type = llvm::FunctionType::get(b.getVoidTy(),
                                       {b.getPtrTy(), b.getInt32Ty()}, false);
  defineHook(probe, /*callee=*/0, /*ctx=*/1, type, [&](llvm::IRBuilder<> &) {
    return SmallVector<llvm::Value *>{probe->getArg(1)};
  });
  return success();
}

/// Defines the `<kernel>_bucket<k>_start(coll, buffers...)` and `_wait`
/// that kiln-connect-collectives declared: nothing when `coll` (a
/// kiln_collectives_t, kiln/runtime.h) is null, else
/// `coll->start(coll->ctx, k, addresses)` (or wait), the buffers' addresses
/// in an array on the stack.
static LogicalResult defineBucketCalls(llvm::Module &m, StringRef kernelName,
                                       size_t numBuckets) {
  llvm::IRBuilder<> b(m.getContext());
  llvm::PointerType *ptr = b.getPtrTy();
  auto *type =
      llvm::FunctionType::get(b.getVoidTy(), {ptr, b.getInt32Ty(), ptr}, false);
  for (size_t k = 0; k < numBuckets; ++k)
    for (auto [suffix, field] : {std::pair<StringRef, unsigned>{"_start", 0},
                                 std::pair<StringRef, unsigned>{"_wait", 1}}) {
      std::string name =
          (kernelName + kBucketSuffix + std::to_string(k) + suffix).str();
      llvm::Function *fn = m.getFunction(name);
      if (!fn)
        continue; // a bucket the lowering dropped (nothing reads it)
      if (!fn->isDeclaration() || fn->arg_size() < 2 ||
          !fn->getReturnType()->isVoidTy())
        return failure();
      defineHook(fn, field, /*ctx=*/3, type, [&](llvm::IRBuilder<> &call) {
        unsigned n = fn->arg_size() - 1;
        llvm::Value *array = call.CreateAlloca(ptr, call.getInt32(n));
        for (unsigned i = 0; i < n; ++i)
          call.CreateStore(fn->getArg(i + 1),
                           call.CreateConstInBoundsGEP1_64(ptr, array, i));
        return SmallVector<llvm::Value *>{call.getInt32(k), array};
      });
    }
  return success();
}

/// Gives every global with an array value (weights, folded constants) one
/// flat array type, of bytes where its elements are whole bytes.
/// - Translation builds a nested array type's value as one uniqued LLVM
///   constant per innermost row: for ResNet-50's weights, millions of small
///   constants and 1.2 GB, where a flat array is one constant over the same
///   bytes.
/// - The object writer emits a float array one element at a time (an APFloat
///   and a streamer call each: 1.4 s for ResNet-50's 25M weights), and a byte
///   array as one block.
/// Users only take the global's address (opaque pointers, their own GEP
/// types) and LLVM folds a load from bytes as well as from floats, so the
/// object's bytes stay the same; a resource-backed value keeps its blob,
/// uncopied.
static void flattenConstantGlobals(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  for (auto global : module.getOps<LLVM::GlobalOp>()) {
    auto array = dyn_cast<LLVM::LLVMArrayType>(global.getType());
    auto value = dyn_cast_or_null<ElementsAttr>(global.getValueOrNull());
    if (!array || !value)
      continue;
    auto shaped = cast<ShapedType>(value.getType());
    if (!shaped.hasStaticShape())
      continue;
    Type element = array;
    while (auto inner = dyn_cast<LLVM::LLVMArrayType>(element))
      element = inner.getElementType();
    int64_t count = shaped.getNumElements();
    // Bit widths are asked of integers and floats only (not complex).
    unsigned bits = shaped.getElementType().isIntOrFloat()
                        ? shaped.getElementTypeBitWidth()
                        : 0;
    auto dense = dyn_cast<DenseElementsAttr>(value);
    auto resource = dyn_cast<DenseResourceElementsAttr>(value);
    // Bytes: elements of whole bytes, not already bytes, not a splat (whose
    // raw data is one element).
    if (bits % 8 == 0 && bits > 8 &&
        (resource || (dense && !dense.isSplat()))) {
      int64_t bytes = count * (bits / 8);
      auto byteType = RankedTensorType::get({bytes}, IntegerType::get(ctx, 8));
      Attribute raw;
      if (resource) {
        AsmResourceBlob *blob = resource.getRawHandle().getBlob();
        if (blob && static_cast<int64_t>(blob->getData().size()) == bytes)
          raw =
              DenseResourceElementsAttr::get(byteType, resource.getRawHandle());
      } else {
        raw = DenseElementsAttr::getFromRawBuffer(byteType, dense.getRawData());
      }
      if (raw) {
        global.setGlobalType(
            LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), bytes));
        global.setValueAttr(raw);
        continue;
      }
    }
    if (shaped.getRank() < 2 ||
        !isa<LLVM::LLVMArrayType>(array.getElementType()))
      continue;
    auto flatShape = RankedTensorType::get({count}, shaped.getElementType());
    Attribute flat;
    if (resource)
      flat = DenseResourceElementsAttr::get(flatShape, resource.getRawHandle());
    else if (dense)
      flat = dense.reshape(flatShape);
    if (!flat)
      continue;
    global.setGlobalType(LLVM::LLVMArrayType::get(element, count));
    global.setValueAttr(flat);
  }
}

/// The smallest constant global detachConstantGlobals takes out: smaller
/// ones cost little to copy, and LLVM may still fold loads from them.
constexpr uint64_t kDetachBytes = 4096;

/// Turns the constant byte arrays of flattenConstantGlobals of kDetachBytes
/// or more (a blob's, or a dense attribute's, which the context holds) into
/// external declarations, and lists them in `detached` under their MLIR
/// symbol names (renamed once translated).
static void detachConstantGlobals(ModuleOp module, DetachedData &detached) {
  for (auto global : module.getOps<LLVM::GlobalOp>()) {
    auto array = dyn_cast<LLVM::LLVMArrayType>(global.getType());
    Attribute value = global.getValueOrNull();
    if (!global.getConstant() || !array ||
        !array.getElementType().isInteger(8) ||
        array.getNumElements() < kDetachBytes)
      continue;
    ArrayRef<char> data;
    std::string blobKey;
    if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value)) {
      if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
        data = blob->getData();
      blobKey = resource.getRawHandle().getKey().str();
    } else if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value)) {
      if (!dense.isSplat())
        data = dense.getRawData();
    }
    if (data.size() != array.getNumElements())
      continue;
    // LLVM aligns a global of more than 16 bytes without an alignment of
    // its own to 16 (DataLayout::getPreferredAlign).
    uint64_t alignment =
        std::max<uint64_t>(global.getAlignment().value_or(1), 16);
    detached.globals.push_back({global.getSymName().str(),
                                StringRef(data.data(), data.size()), alignment,
                                std::move(blobKey)});
    global.removeValueAttr();
    global.setLinkage(LLVM::Linkage::External);
  }
}

void kiln::restoreDetachedData(llvm::Module &module, const DetachedData &data) {
  for (const DetachedData::Global &detached : data.globals) {
    llvm::GlobalVariable *g = module.getNamedGlobal(detached.name);
    if (!g || g->hasInitializer())
      continue;
    g->setInitializer(llvm::ConstantDataArray::getRaw(
        detached.bytes, detached.bytes.size(),
        llvm::Type::getInt8Ty(module.getContext())));
    g->setLinkage(llvm::GlobalValue::PrivateLinkage);
    g->setVisibility(llvm::GlobalValue::DefaultVisibility);
  }
}

FailureOr<std::unique_ptr<llvm::Module>> kiln::buildArtifactModule(
    ModuleOp module, const ArtifactInfo &info, llvm::TargetMachine &tm,
    llvm::LLVMContext &llvmContext, llvm::function_ref<void()> translated,
    DetachedData *detached) {
  flattenConstantGlobals(module);
  if (detached)
    detachConstantGlobals(module, *detached);
  std::unique_ptr<llvm::Module> m =
      translateModuleToLLVMIR(module, llvmContext, info.name);
  if (!m)
    return module.emitError("translation to LLVM IR failed"), failure();
  // The detached globals' symbols are named after the artifact (two
  // artifacts in one program cannot collide) and hidden, as the split
  // object's other shared symbols.
  if (detached)
    for (auto [index, global] : llvm::enumerate(detached->globals)) {
      llvm::GlobalVariable *g = m->getNamedGlobal(global.name);
      if (!g || g->hasInitializer())
        return module.emitError("internal error: detached global '")
                   << global.name << "' is missing",
               failure();
      g->setName(info.name + ".d" + llvm::Twine(index));
      g->setVisibility(llvm::GlobalValue::HiddenVisibility);
      g->setDSOLocal(true);
      g->setAlignment(llvm::Align(global.alignment));
      global.name = g->getName().str();
    }
  m->setSourceFileName(info.name);
  m->setTargetTriple(tm.getTargetTriple());
  m->setDataLayout(tm.createDataLayout());

  llvm::Function *kernel = m->getFunction(info.name + "_kernel");
  size_t numInputs = info.inputs.size(), numOutputs = info.outputs.size();
  size_t numState = info.state.size();
  size_t numBuffers = numInputs + numOutputs;
  bool hasState = numState > 0;
  // The kernel: inputs, old state, outputs, new state, arena, the
  // kiln_parallel_t when it has parallel regions, the profiler, and the
  // kiln_collectives_t of a data-parallel step.
  bool hasBuckets = !info.buckets.empty();
  // A model with symbolic dimensions takes their sizes first, then, when
  // some are computed from data, where to write those (RunTimeSizes).
  size_t numSymbols = info.symbols.size();
  size_t numComputed = llvm::count_if(
      info.symbols, [](const DimSymbol &s) { return s.computed; });
  size_t numInputSymbols = numSymbols - numComputed;
  size_t kernelArgs = numInputSymbols + (numComputed > 0 ? 1 : 0) + numBuffers +
                      2 * numState + 2 + (hasBuckets ? 1 : 0);
  if (!kernel || (kernel->arg_size() != kernelArgs &&
                  kernel->arg_size() != kernelArgs + 1))
    return module.emitError("internal error: unexpected kernel signature"),
           failure();
  bool hasRegions = kernel->arg_size() == kernelArgs + 1;
  kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  keepOutlinedLoops(*m, info.name + "_kernel");
  if (failed(defineParallelRegions(*m, info.name + "_kernel")))
    return module.emitError("internal error: unexpected parallel region "
                            "signature"),
           failure();
  if (failed(defineKernelProbe(*m, info.name + "_kernel")))
    return module.emitError("internal error: unexpected kernel probe "
                            "signature"),
           failure();
  if (failed(defineBucketCalls(*m, info.name + "_kernel", info.buckets.size())))
    return module.emitError("internal error: unexpected bucket call "
                            "signature"),
           failure();

  llvm::IRBuilder<> b(llvmContext);
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  llvm::PointerType *ptr = b.getPtrTy();
  // Whether `p` is not a multiple of `alignment` (a power of two).
  auto misalignedPtr = [&](llvm::Value *p, uint64_t alignment) {
    llvm::Value *bits = b.CreatePtrToInt(p, i64);
    llvm::Value *low = b.CreateAnd(bits, b.getInt64(alignment - 1));
    return b.CreateICmpNE(low, b.getInt64(0));
  };

  // kiln_status_t <name>_run_impl(T *in..., T *out..., [void *state,]
  // void *arena, const kiln_parallel_t *par, const kiln_profiler_t *prof,
  // const kiln_collectives_t *coll, const int64_t *dims): every entry
  // point's checks and call of the kernel. A null dims runs a model with
  // symbolic dimensions at their upper bounds.
  size_t numParams = numBuffers + (hasState ? 2 : 1);
  SmallVector<llvm::Type *> params(numParams + 4, ptr);
  llvm::Function *run = llvm::Function::Create(
      llvm::FunctionType::get(i32, params, false),
      llvm::GlobalValue::InternalLinkage, info.name + "_run_impl", m.get());
  {
    auto *entry = llvm::BasicBlock::Create(llvmContext, "entry", run);
    auto *bad = llvm::BasicBlock::Create(llvmContext, "invalid_argument", run);
    auto *good = llvm::BasicBlock::Create(llvmContext, "run", run);
    b.SetInsertPoint(entry);
    llvm::Value *invalid = b.getFalse();
    for (unsigned i = 0; i < numBuffers; ++i)
      invalid = b.CreateOr(invalid, b.CreateIsNull(run->getArg(i)));
    llvm::Value *state = hasState ? run->getArg(numBuffers) : nullptr;
    llvm::Value *arena = run->getArg(numBuffers + (hasState ? 1 : 0));
    if (hasState) {
      llvm::Value *isNull = b.CreateIsNull(state);
      llvm::Value *misaligned = misalignedPtr(state, info.stateAlignment);
      invalid = b.CreateOr(invalid, b.CreateOr(isNull, misaligned));
    }
    if (info.arenaBytes > 0) {
      llvm::Value *misaligned = misalignedPtr(arena, info.arenaAlignment);
      invalid =
          b.CreateOr(invalid, b.CreateOr(b.CreateIsNull(arena), misaligned));
    }
    // The symbols' sizes: the caller's, or the upper bounds; each in its
    // range.
    SmallVector<llvm::Value *> sizes;
    if (numSymbols > 0) {
      SmallVector<int64_t> his;
      for (const DimSymbol &sym : info.symbols)
        his.push_back(sym.hi);
      auto *bounds = new llvm::GlobalVariable(
          *m, llvm::ArrayType::get(i64, numSymbols), /*isConstant=*/true,
          llvm::GlobalValue::PrivateLinkage,
          llvm::ConstantDataArray::get(llvmContext, his),
          info.name + "_dim_bounds");
      llvm::Value *dims = run->getArg(numParams + 3);
      llvm::Value *from = b.CreateSelect(b.CreateIsNull(dims), bounds, dims);
      for (auto [i, sym] : llvm::enumerate(info.symbols)) {
        if (sym.computed)
          continue;
        llvm::Value *size =
            b.CreateLoad(i64, b.CreateConstInBoundsGEP1_64(i64, from, i));
        invalid = b.CreateOr(
            invalid, b.CreateOr(b.CreateICmpSLT(size, b.getInt64(sym.lo)),
                                b.CreateICmpSGT(size, b.getInt64(sym.hi))));
        sizes.push_back(size);
      }
      // The computed sizes go to the caller's entries after the others, or
      // nowhere it can see without dims.
      if (numComputed > 0) {
        // (Still in the entry block: a static alloca.)
        llvm::Value *local = b.CreateAlloca(
            llvm::ArrayType::get(i64, numComputed), nullptr, "computed");
        sizes.push_back(b.CreateSelect(
            b.CreateIsNull(dims), local,
            b.CreateConstInBoundsGEP1_64(i64, dims, numInputSymbols)));
      }
    }
    b.CreateCondBr(invalid, bad, good);
    b.SetInsertPoint(bad);
    b.CreateRet(b.getInt32(1)); // KILN_STATUS_INVALID_ARGUMENT
    b.SetInsertPoint(good);
    SmallVector<llvm::Value *> args(sizes);
    for (unsigned i = 0; i < numInputs; ++i)
      args.push_back(run->getArg(i));
    for (const StateTensor &t : info.state)
      args.push_back(
          b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), state, t.offset));
    for (unsigned i = 0; i < numOutputs; ++i)
      args.push_back(run->getArg(numInputs + i));
    llvm::Value *scratch = nullptr;
    if (hasState) {
      scratch = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), arena,
                                             info.stateScratchOffset);
      // A tensor updated in place gets the state buffer as its new value
      // too (the kernel no longer writes that argument).
      for (const StateTensor &t : info.state)
        args.push_back(b.CreateConstInBoundsGEP1_64(
            b.getInt8Ty(), t.inPlace ? state : scratch, t.offset));
    }
    args.push_back(arena);
    if (hasRegions)
      args.push_back(run->getArg(numParams));
    args.push_back(run->getArg(numParams + 1));
    if (hasBuckets)
      args.push_back(run->getArg(numParams + 2));
    b.CreateCall(kernel, args);
    // A failed collective fails the step before the new state replaces the
    // old: the caller's state stays as it was.
    if (hasBuckets) {
      llvm::Value *coll = run->getArg(numParams + 2);
      auto *check = llvm::BasicBlock::Create(llvmContext, "finish", run);
      auto *failed =
          llvm::BasicBlock::Create(llvmContext, "collective_failed", run);
      auto *commit = llvm::BasicBlock::Create(llvmContext, "commit", run);
      b.CreateCondBr(b.CreateIsNull(coll), commit, check);
      b.SetInsertPoint(check);
      llvm::Value *finish =
          b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, coll, 2));
      llvm::Value *ctx =
          b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, coll, 3));
      llvm::Value *status = b.CreateCall(
          llvm::FunctionType::get(i32, {ptr}, false), finish, {ctx});
      b.CreateCondBr(b.CreateICmpNE(status, b.getInt32(0)), failed, commit);
      b.SetInsertPoint(failed);
      b.CreateRet(status);
      b.SetInsertPoint(commit);
    }
    // The new state, laid out like the state buffer, replaces it: whole
    // when nothing was updated in place, else each run of tensors that
    // were not.
    if (hasState) {
      size_t k = 0, numState = info.state.size();
      while (k < numState) {
        if (info.state[k].inPlace) {
          ++k;
          continue;
        }
        size_t last = k;
        while (last + 1 < numState && !info.state[last + 1].inPlace)
          ++last;
        uint64_t begin = info.state[k].offset;
        uint64_t end =
            last + 1 < numState ? info.state[last + 1].offset : info.stateBytes;
        llvm::Align align =
            llvm::commonAlignment(llvm::Align(info.stateAlignment), begin);
        b.CreateMemCpy(
            b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), state, begin), align,
            b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), scratch, begin), align,
            end - begin);
        k = last + 1;
      }
    }
    b.CreateRet(b.getInt32(0));
  }

  // The typed entry point runs on the calling thread only, at the upper
  // bounds; <name>_run_dims(dims, ...) at the caller's sizes.
  llvm::Function *typed = llvm::Function::Create(
      llvm::FunctionType::get(i32, ArrayRef(params).drop_back(4), false),
      llvm::GlobalValue::ExternalLinkage, info.name + "_run", m.get());
  {
    b.SetInsertPoint(llvm::BasicBlock::Create(llvmContext, "entry", typed));
    SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : typed->args())
      args.push_back(&arg);
    args.append(4, llvm::ConstantPointerNull::get(ptr));
    b.CreateRet(b.CreateCall(run, args));
  }
  if (numSymbols > 0) {
    SmallVector<llvm::Type *> withDims = {ptr};
    llvm::append_range(withDims, ArrayRef(params).drop_back(4));
    llvm::Function *typedDims = llvm::Function::Create(
        llvm::FunctionType::get(i32, withDims, false),
        llvm::GlobalValue::ExternalLinkage, info.name + "_run_dims", m.get());
    auto *entry = llvm::BasicBlock::Create(llvmContext, "entry", typedDims);
    auto *bad =
        llvm::BasicBlock::Create(llvmContext, "invalid_argument", typedDims);
    auto *good = llvm::BasicBlock::Create(llvmContext, "run", typedDims);
    b.SetInsertPoint(entry);
    // Null dims is an error here, not the bounds.
    b.CreateCondBr(b.CreateIsNull(typedDims->getArg(0)), bad, good);
    b.SetInsertPoint(bad);
    b.CreateRet(b.getInt32(1)); // KILN_STATUS_INVALID_ARGUMENT
    b.SetInsertPoint(good);
    SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : llvm::drop_begin(typedDims->args()))
      args.push_back(&arg);
    args.append(3, llvm::ConstantPointerNull::get(ptr));
    args.push_back(typedDims->getArg(0));
    b.CreateRet(b.CreateCall(run, args));
  }

  // kiln_status_t run_packed(void *const *buffers, void *arena),
  // run_packed_parallel(buffers, arena, const kiln_parallel_t *par) and
  // run_packed_profiled(buffers, arena, par, const kiln_profiler_t *prof):
  // buffers holds the inputs, the outputs and, for a training step, the
  // state.
  // The buffers a packed entry's array holds (a null array refused like a
  // null buffer) and its arena: run_impl's first arguments.
  auto loadPacked = [&](llvm::Function *packed) {
    unsigned numPacked = numBuffers + (hasState ? 1 : 0);
    if (numPacked > 0) {
      auto *bad =
          llvm::BasicBlock::Create(llvmContext, "invalid_argument", packed);
      auto *good = llvm::BasicBlock::Create(llvmContext, "load", packed);
      b.CreateCondBr(b.CreateIsNull(packed->getArg(0)), bad, good);
      b.SetInsertPoint(bad);
      b.CreateRet(b.getInt32(1)); // KILN_STATUS_INVALID_ARGUMENT
      b.SetInsertPoint(good);
    }
    SmallVector<llvm::Value *> args;
    for (unsigned i = 0; i < numPacked; ++i)
      args.push_back(b.CreateLoad(
          ptr, b.CreateConstInBoundsGEP1_64(ptr, packed->getArg(0), i)));
    args.push_back(packed->getArg(1));
    return args;
  };
  auto emitPacked = [&](StringRef suffix, bool parallel, bool profiled) {
    SmallVector<llvm::Type *> packedParams = {ptr, ptr};
    if (parallel)
      packedParams.push_back(ptr);
    if (profiled)
      packedParams.push_back(ptr);
    llvm::Function *packed = llvm::Function::Create(
        llvm::FunctionType::get(i32, packedParams, false),
        llvm::GlobalValue::InternalLinkage, info.name + suffix, m.get());
    b.SetInsertPoint(llvm::BasicBlock::Create(llvmContext, "entry", packed));
    SmallVector<llvm::Value *> args = loadPacked(packed);
    args.push_back(parallel ? static_cast<llvm::Value *>(packed->getArg(2))
                            : llvm::ConstantPointerNull::get(ptr));
    args.push_back(profiled ? static_cast<llvm::Value *>(packed->getArg(3))
                            : llvm::ConstantPointerNull::get(ptr));
    args.append(2, llvm::ConstantPointerNull::get(ptr));
    b.CreateRet(b.CreateCall(run, args));
    return packed;
  };
  // run_packed_hooks(buffers, arena, const kiln_run_hooks_t *hooks): the
  // hooks' fields that its struct_size covers, null for the rest.
  auto emitHooks = [&] {
    llvm::Function *packed = llvm::Function::Create(
        llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false),
        llvm::GlobalValue::InternalLinkage, info.name + "_run_packed_hooks",
        m.get());
    llvm::Value *hooks = packed->getArg(2);
    auto *entry = llvm::BasicBlock::Create(llvmContext, "entry", packed);
    auto *read = llvm::BasicBlock::Create(llvmContext, "read_hooks", packed);
    auto *run_ = llvm::BasicBlock::Create(llvmContext, "run", packed);
    b.SetInsertPoint(entry);
    b.CreateCondBr(b.CreateIsNull(hooks), run_, read);
    b.SetInsertPoint(read);
    llvm::Value *size = b.CreateLoad(i64, hooks);
    // Field i (a pointer after the 8-byte size) when the size covers it:
    // parallel, profiler, collectives and (ABI 8) dims.
    SmallVector<llvm::Value *> fields;
    for (unsigned i = 0; i < 4; ++i) {
      llvm::Value *field = b.CreateLoad(
          ptr, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), hooks, 8 + 8 * i));
      llvm::Value *covered = b.CreateICmpUGE(size, b.getInt64(16 + 8 * i));
      fields.push_back(
          b.CreateSelect(covered, field, llvm::ConstantPointerNull::get(ptr)));
    }
    b.CreateBr(run_);
    b.SetInsertPoint(run_);
    SmallVector<llvm::Value *> hookValues;
    for (llvm::Value *field : fields) {
      llvm::PHINode *phi = b.CreatePHI(ptr, 2);
      phi->addIncoming(llvm::ConstantPointerNull::get(ptr), entry);
      phi->addIncoming(field, read);
      hookValues.push_back(phi);
    }
    SmallVector<llvm::Value *> args = loadPacked(packed);
    llvm::append_range(args, hookValues);
    b.CreateRet(b.CreateCall(run, args));
    return packed;
  };
  llvm::Function *packed = emitPacked("_run_packed", false, false);
  llvm::Function *packedParallel =
      emitPacked("_run_packed_parallel", true, false);
  llvm::Function *packedProfiled =
      emitPacked("_run_packed_profiled", true, true);

  llvm::Function *initState = emitInitState(*m, info);

  // The descriptor and the kiln_artifact_t that points at it.
  llvm::Function *packedHooks = emitHooks();
  emitArtifactAccessor(*m, info.name, buildDescriptor(info), packed, initState,
                       packedParallel, packedProfiled, packedHooks);

  std::string verifyErrors;
  llvm::raw_string_ostream verifyStream(verifyErrors);
  if (llvm::verifyModule(*m, &verifyStream))
    return module.emitError("internal error: invalid LLVM IR: ")
               << verifyErrors,
           failure();

  if (translated)
    translated();
  optimize(*m, tm);
  bfloatSelectsAndPhisAsBits(*m);
  llvm::StringMap<llvm::StringRef> declared;
  if (detached) {
    // -O2 drops the declarations nothing uses; the object leaves them out.
    llvm::erase_if(detached->globals, [&](const DetachedData::Global &global) {
      return !m->getNamedGlobal(global.name);
    });
    for (const DetachedData::Global &global : detached->globals)
      declared[global.name] = global.bytes;
  }
  attachDataChecksum(*m, info.name, &declared);

  for (llvm::Function &f : *m)
    if (f.isDeclaration() && !f.isIntrinsic() &&
        !isAllowedExternal(f.getName()))
      return module.emitError("generated code calls '")
                 << f.getName()
                 << "', but artifacts may only call libm and mem* functions",
             failure();
  return m;
}

std::unique_ptr<llvm::Module>
kiln::buildSharedEntryModule(const ArtifactInfo &info, llvm::TargetMachine &tm,
                             llvm::LLVMContext &llvmContext) {
  auto m = std::make_unique<llvm::Module>(info.name + "_shared", llvmContext);
  m->setTargetTriple(tm.getTargetTriple());
  m->setDataLayout(tm.createDataLayout());
  llvm::IRBuilder<> b(llvmContext);
  auto *fnTy = llvm::FunctionType::get(b.getPtrTy(), false);
  llvm::Function *target =
      llvm::Function::Create(fnTy, llvm::GlobalValue::ExternalLinkage,
                             info.name + "_artifact", m.get());
  llvm::Function *entry = llvm::Function::Create(
      fnTy, llvm::GlobalValue::ExternalLinkage, "kiln_artifact_v1", m.get());
  b.SetInsertPoint(llvm::BasicBlock::Create(llvmContext, "entry", entry));
  b.CreateRet(b.CreateCall(target));
  return m;
}

namespace {
/// An unbuffered raw_pwrite_stream that appends to a std::string: the object
/// is built where it is returned, not in a buffer copied out afterwards (for
/// a model with 500 MB of weights, two copies and a doubling buffer were
/// most of code generation's peak memory).
class StringPwriteStream : public llvm::raw_pwrite_stream {
public:
  explicit StringPwriteStream(std::string &out)
      : llvm::raw_pwrite_stream(/*Unbuffered=*/true), out(out) {}

private:
  void write_impl(const char *ptr, size_t size) override {
    out.append(ptr, size);
  }
  void pwrite_impl(const char *ptr, size_t size, uint64_t offset) override {
    std::memcpy(out.data() + offset, ptr, size);
  }
  uint64_t current_pos() const override { return out.size(); }
  std::string &out;
};

/// About how large the object of `module` will be: its global data plus a
/// few bytes per instruction, so the string is allocated once.
size_t estimateObjectBytes(const llvm::Module &module) {
  const llvm::DataLayout &layout = module.getDataLayout();
  uint64_t bytes = 1 << 16;
  for (const llvm::GlobalVariable &g : module.globals())
    if (g.hasInitializer())
      bytes += layout.getTypeAllocSize(g.getValueType()) + 16;
  for (const llvm::Function &f : module)
    bytes += 16 * uint64_t(f.getInstructionCount());
  return size_t(bytes + bytes / 16);
}
} // namespace

/// The IR check in buildArtifactModule cannot see calls the code generator
/// itself introduces (soft-float helpers, for one): the object is checked
/// too.
static llvm::Error checkObjectCalls(llvm::MemoryBufferRef object,
                                    const llvm::Module &module) {
  auto file = llvm::object::ObjectFile::createObjectFile(object);
  if (!file)
    return file.takeError();
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto flags = symbol.getFlags();
    if (!flags)
      return flags.takeError();
    if (!(*flags & llvm::object::SymbolRef::SF_Undefined))
      continue;
    auto name = symbol.getName();
    if (!name)
      return name.takeError();
    if (!name->empty() && !isAllowedExternal(*name) &&
        !module.getFunction(*name) && !module.getNamedGlobal(*name))
      return llvm::createStringError(
          "internal error: the object file needs '" + name->str() +
          "', but artifacts may only call libm and mem* functions");
  }
  return llvm::Error::success();
}

/// Runs the code generator on `module`, writing the object to `os`.
static llvm::Error generateObject(llvm::Module &module, llvm::TargetMachine &tm,
                                  llvm::raw_pwrite_stream &os) {
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(module);
  return llvm::Error::success();
}

/// One part per this many LLVM instructions, up to kMaxParts; a module with
/// code for fewer than two parts is generated whole, since the threads, the
/// bitcode round trip and the join would cost more than they save (after
/// -O2 the bench MLP has about 2,000 instructions, its transformer block
/// 6,600, ResNet-18 22,000, ResNet-50 33,000).
static constexpr uint64_t kInstructionsPerPart = 4000;
/// A module with code for one part but this much detached data or more
/// still has the data added to its object rather than translated, which
/// spares LLVM's two copies of it and a third at the peak (the blobs and
/// LLVM's constants at once).
static constexpr uint64_t kOnePartDataBytes = 1 << 20;
static constexpr uint64_t kMaxParts = 8;

std::vector<std::vector<llvm::Function *>>
kiln::partitionForCodegen(llvm::Module &module) {
  llvm::SmallVector<std::pair<uint64_t, llvm::Function *>> functions;
  uint64_t total = 0;
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    uint64_t size = f.getInstructionCount();
    functions.push_back({size, &f});
    total += size;
  }
  uint64_t parts = std::min(kMaxParts, total / kInstructionsPerPart);
  if (parts < 2)
    return {};
  // Heaviest first, each into the lightest part so far (the first of
  // equals): a fixed deal for a given module.
  std::stable_sort(
      functions.begin(), functions.end(),
      [](const auto &a, const auto &b) { return a.first > b.first; });
  std::vector<std::vector<llvm::Function *>> result(parts);
  std::vector<uint64_t> load(parts, 0);
  for (auto [size, f] : functions) {
    size_t lightest = std::min_element(load.begin(), load.end()) - load.begin();
    result[lightest].push_back(f);
    load[lightest] += size;
  }
  return result;
}

namespace {
/// A new scratch file, removed when this goes out of scope or, like the
/// driver's temporaries (OutputSet), when the compile is interrupted.
struct ScratchFile {
  llvm::SmallString<128> path;
  std::error_code create(llvm::StringRef prefix) {
    int fd;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(prefix, "o", fd, path))
      return ec;
    llvm::sys::RemoveFileOnSignal(path);
    return llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  }
  ~ScratchFile() {
    if (path.empty())
      return;
    llvm::sys::fs::remove(path);
    llvm::sys::DontRemoveFileOnSignal(path);
  }
};
} // namespace

/// Generates `module`'s object in memory and checks its calls.
static llvm::Expected<std::string>
generateCheckedObject(llvm::Module &module, llvm::TargetMachine &tm) {
  std::string object;
  object.reserve(estimateObjectBytes(module));
  StringPwriteStream os(object);
  if (llvm::Error err = generateObject(module, tm, os))
    return err;
  if (llvm::Error err = checkObjectCalls(
          llvm::MemoryBufferRef(object, module.getName()), module))
    return err;
  return object;
}

/// Generates `module`'s object into the file `path` and checks its calls.
static llvm::Error generateObjectFile(llvm::Module &module,
                                      llvm::TargetMachine &tm,
                                      llvm::StringRef path) {
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return llvm::errorCodeToError(ec);
    if (llvm::Error err = generateObject(module, tm, os))
      return err;
    os.close();
    if (os.has_error()) {
      ec = os.error();
      // Reported here; LLVM would otherwise abort on it.
      os.clear_error();
      return llvm::errorCodeToError(ec);
    }
  }
  auto object = llvm::MemoryBuffer::getFile(path);
  if (!object)
    return llvm::errorCodeToError(object.getError());
  return checkObjectCalls((*object)->getMemBufferRef(), module);
}

llvm::SmallVector<llvm::StringRef>
kiln::linkerDriverFlags(llvm::StringRef linker) {
  // Measured in decision 0028: the object is mostly weights, which GNU ld
  // copies slowly.
  if (linker == "cc" && llvm::sys::findProgramByName("ld.lld"))
    return {"-fuse-ld=lld"};
  return {};
}

namespace {
/// The process group of the linker driver now running, or 0.
std::atomic<pid_t> linkerGroup{0};
/// Set while posix_spawn runs, before linkerGroup is known.
std::atomic<bool> spawningLinker{false};
/// The driver's wait status when the handler below reaped it, else -1.
std::atomic<int> reapedStatus{-1};
/// The handlers runLinkerDriver replaced while the driver runs.
constexpr int kForwardedSignals[] = {SIGHUP, SIGINT, SIGTERM};
struct sigaction replacedHandlers[std::size(kForwardedSignals)];
} // namespace

/// Passes `sig` to the linker's process group, reaps it, then runs the
/// handler that was there before (LLVM's: remove the temporaries, die).
/// Only async-signal-safe calls.
static void forwardToLinker(int sig, siginfo_t *info, void *context) {
  int saved = errno;
  // A signal between the driver's start and linkerGroup's store (another
  // thread; the spawning one blocks these signals) waits for the group, up
  // to 1 s: the driver may already be running and must not outlive us.
  for (int ms = 0; ms < 1000 && spawningLinker.load() && !linkerGroup.load();
       ++ms) {
    struct timespec millisecond = {0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
  if (pid_t group = linkerGroup.load()) {
#ifdef __linux__
    // The driver's children (collect2, ld) outlive it when it dies first;
    // as their subreaper this process can wait for them too.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    kill(-group, sig);
    // Up to 5 s for the group to exit, then SIGKILL and 1 s more.
    for (int ms = 0; ms < 6000; ++ms) {
      if (ms == 5000)
        kill(-group, SIGKILL);
      int status;
      pid_t reaped = waitpid(-group, &status, WNOHANG);
      if (reaped < 0 && errno != EINTR)
        break; // ECHILD: none of the group is left.
      if (reaped == group)
        reapedStatus.store(status);
      if (reaped > 0)
        continue;
      struct timespec millisecond = {0, 1000000};
      nanosleep(&millisecond, nullptr);
    }
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 0);
#endif
  }
  size_t i = std::find(std::begin(kForwardedSignals),
                       std::end(kForwardedSignals), sig) -
             std::begin(kForwardedSignals);
  const struct sigaction &previous = replacedHandlers[i];
  errno = saved;
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

int kiln::runLinkerDriver(llvm::StringRef program,
                          llvm::ArrayRef<llvm::StringRef> args,
                          std::string &message) {
  // One driver at a time: the handlers and the group are process-wide.
  static std::mutex running;
  std::lock_guard<std::mutex> lock(running);

  std::string path = program.str();
  std::vector<std::string> strings;
  for (llvm::StringRef arg : args)
    strings.push_back(arg.str());
  std::vector<char *> argv;
  for (std::string &arg : strings)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);

  struct sigaction forward = {};
  forward.sa_sigaction = forwardToLinker;
  forward.sa_flags = SA_SIGINFO;
  sigfillset(&forward.sa_mask);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    sigaction(kForwardedSignals[i], &forward, &replacedHandlers[i]);

  // The forwarded signals wait on this thread until the group is known, so
  // that none is handled between the driver's start and the store below
  // (the child's mask is set by the attributes).
  sigset_t forwarded, previousMask;
  sigemptyset(&forwarded);
  for (int sig : kForwardedSignals)
    sigaddset(&forwarded, sig);
  pthread_sigmask(SIG_BLOCK, &forwarded, &previousMask);
  reapedStatus.store(-1);
  spawningLinker.store(true);
  pid_t pid;
  int error = posix_spawn(&pid, path.c_str(), nullptr, &attributes, argv.data(),
                          environ);
  posix_spawnattr_destroy(&attributes);
  if (!error)
    linkerGroup.store(pid);
  spawningLinker.store(false);
  pthread_sigmask(SIG_SETMASK, &previousMask, nullptr);
  int status = 0;
  if (!error) {
    while (waitpid(pid, &status, 0) < 0) {
      if (errno == EINTR)
        continue;
      // A handler that returned (a host process's own SIGINT handler,
      // after forwardToLinker) may have reaped the driver already.
      status = reapedStatus.load();
      if (status == -1)
        error = errno;
      break;
    }
    linkerGroup.store(0);
  }
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
    sigaction(kForwardedSignals[i], &replacedHandlers[i], nullptr);

  if (error) {
    message = "cannot run '" + path + "': " + std::strerror(error);
    return -1;
  }
  if (WIFSIGNALED(status)) {
    message = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

/// The object of `module` in the parts partitionForCodegen deals, joined by
/// `split.linker -r`, with the detached data added (writeObjectWithData)
/// into `path`. False when the module is to be generated whole instead (no
/// linker, or code for fewer than two parts and less than kOnePartDataBytes of
/// detached data); `module` is untouched then.
static llvm::Expected<bool> emitSplitObject(llvm::Module &module,
                                            llvm::TargetMachine &tm,
                                            llvm::StringRef path,
                                            const SplitCodegenOptions &split) {
  auto linker = llvm::sys::findProgramByName(split.linker);
  if (!linker)
    return false;
  std::vector<std::vector<llvm::Function *>> parts =
      partitionForCodegen(module);
  uint64_t detachedBytes = 0;
  if (split.detached)
    for (const DetachedData::Global &global : split.detached->globals)
      detachedBytes += global.bytes.size();
  if (parts.empty() && detachedBytes < kOnePartDataBytes)
    return false;
  bool hasDetached = split.detached && !split.detached->globals.empty();

  // Code for one part: its object, the data added; no linker runs.
  if (parts.empty()) {
    auto code = generateCheckedObject(module, tm);
    if (!code)
      return code.takeError();
    if (llvm::Error err = writeObjectWithData(*code, *split.detached, path))
      return err;
    return true;
  }

  // Every part reaches the others' functions and the data by symbol:
  // local symbols become hidden globals, named after the artifact.
  unsigned renamed = 0;
  for (llvm::GlobalValue &value : module.global_values()) {
    if (!value.hasLocalLinkage() || value.isDeclaration())
      continue;
    if (!value.hasName() ||
        !value.getName().starts_with(split.symbolPrefix + "_"))
      value.setName(split.symbolPrefix + ".l" + llvm::Twine(renamed++));
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }

  // Each part as bitcode, for a context of its own; the module keeps the
  // data and declarations of the functions.
  llvm::DenseMap<const llvm::GlobalValue *, size_t> partOf;
  for (auto [index, functions] : llvm::enumerate(parts))
    for (llvm::Function *f : functions)
      partOf[f] = index;
  std::vector<llvm::SmallVector<char, 0>> bitcode(parts.size());
  for (size_t index = 0; index < parts.size(); ++index) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          auto it = partOf.find(value);
          return it != partOf.end() && it->second == index;
        });
    llvm::raw_svector_ostream os(bitcode[index]);
    llvm::WriteBitcodeToFile(*part, os);
  }
  for (auto &functions : parts)
    for (llvm::Function *f : functions) {
      f->deleteBody();
      f->setVisibility(llvm::GlobalValue::HiddenVisibility);
    }

  // The module's data and declarations (file 0) and the parts (1..), each
  // straight to its file, on up to `jobs` threads.
  size_t count = parts.size() + 1;
  std::vector<ScratchFile> files(count);
  for (ScratchFile &file : files)
    if (std::error_code ec = file.create("kilnc-part"))
      return llvm::errorCodeToError(ec);
  std::vector<std::string> errors(files.size());
  auto generatePart = [&](size_t index, llvm::TargetMachine &machine) {
    llvm::LLVMContext context;
    llvm::SmallVector<char, 0> code = std::move(bitcode[index - 1]);
    auto part = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(llvm::StringRef(code.data(), code.size()),
                              module.getName()),
        context);
    if (!part) {
      errors[index] = llvm::toString(part.takeError());
      return;
    }
    if (llvm::Error err =
            generateObjectFile(**part, machine, files[index].path))
      errors[index] = llvm::toString(std::move(err));
  };
  // The module's data and declarations on the calling thread, then
  // whichever parts the other threads have not taken. A thread makes one
  // target machine, for its first part, and reuses it for the others (the
  // calling thread uses the module's).
  std::atomic<size_t> next{1};
  auto generateParts = [&](llvm::TargetMachine *machine) {
    std::unique_ptr<llvm::TargetMachine> owned;
    for (size_t index = next++; index < count; index = next++) {
      if (!machine) {
        auto made = createCpuTargetMachine(split.target);
        if (!made) {
          errors[index] = llvm::toString(made.takeError());
          continue;
        }
        owned = std::move(*made);
        machine = owned.get();
      }
      generatePart(index, *machine);
    }
  };
  unsigned threads =
      llvm::hardware_concurrency(split.jobs).compute_thread_count();
  std::optional<llvm::DefaultThreadPool> pool;
  if (threads > 1 && count > 1) {
    pool.emplace(llvm::hardware_concurrency(threads - 1));
    for (unsigned worker = 1; worker < threads; ++worker)
      pool->async([&] { generateParts(nullptr); });
  }
  if (llvm::Error err = generateObjectFile(module, tm, files[0].path))
    errors[0] = llvm::toString(std::move(err));
  generateParts(&tm);
  if (pool)
    pool->wait();
  for (const std::string &error : errors)
    if (!error.empty())
      return llvm::createStringError(error);

  // The code alone goes through the linker; the data is added after.
  ScratchFile joined;
  if (hasDetached)
    if (std::error_code ec = joined.create("kilnc-code"))
      return llvm::errorCodeToError(ec);
  llvm::StringRef joinedPath = hasDetached ? joined.path.str() : path;
  llvm::SmallVector<llvm::StringRef> args = {*linker, "-r", "-nostdlib", "-o",
                                             joinedPath};
  llvm::append_range(args, kiln::linkerDriverFlags(split.linker));
  for (const ScratchFile &file : files)
    args.push_back(file.path);
  std::string message;
  if (kiln::runLinkerDriver(*linker, args, message) != 0)
    return llvm::createStringError(
        "joining the object's " + std::to_string(files.size()) +
        " parts with '" + split.linker + " -r' failed" +
        (message.empty() ? "" : ": ") + message);
  if (hasDetached) {
    auto code = llvm::MemoryBuffer::getFile(joined.path);
    if (!code)
      return llvm::errorCodeToError(code.getError());
    if (llvm::Error err =
            writeObjectWithData((*code)->getBuffer(), *split.detached, path))
      return err;
  }
  return true;
}

llvm::Expected<std::string> kiln::emitObject(llvm::Module &module,
                                             llvm::TargetMachine &tm,
                                             const SplitCodegenOptions *split) {
  if (split) {
    ScratchFile joined;
    if (std::error_code ec = joined.create("kilnc-object"))
      return llvm::errorCodeToError(ec);
    auto done = emitSplitObject(module, tm, joined.path, *split);
    if (!done)
      return done.takeError();
    if (*done) {
      auto object = llvm::MemoryBuffer::getFile(joined.path);
      if (!object)
        return llvm::errorCodeToError(object.getError());
      return (*object)->getBuffer().str();
    }
    if (split->detached)
      restoreDetachedData(module, *split->detached);
  }
  return generateCheckedObject(module, tm);
}

llvm::Error kiln::emitObjectFile(llvm::Module &module, llvm::TargetMachine &tm,
                                 llvm::StringRef path,
                                 const SplitCodegenOptions *split) {
  if (split) {
    auto done = emitSplitObject(module, tm, path, *split);
    if (!done)
      return done.takeError();
    if (*done)
      return llvm::Error::success();
    if (split->detached)
      restoreDetachedData(module, *split->detached);
  }
  return generateObjectFile(module, tm, path);
}

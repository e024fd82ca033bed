//===- CudaCodegen.cpp - kiln dialect to CUDA C kernels and steps ---------===//
//
// Lowering shares the CPU path up to the memory plan (kiln -> linalg on
// tensors -> one-shot bufferization with out-params -> kiln-plan-memory), then
// generalizes every named linalg op so that each top-level op is a
// linalg.generic on memrefs. A direct printer (docs/decisions/0011) turns
// each into one CUDA C kernel: the parallel loops become a grid-stride loop
// over their flattened index, reduction loops run inside each thread, and the
// payload is printed statement by statement. Top-level loops that are not
// linalg (scatter, top-k) become single-thread kernels. Every memref is traced
// to its root (an input, an output, the arena or a constant) with a static
// offset and strides, so kernels take plain base pointers and the step list
// is fixed at compile time. Over symbolic dimensions the kernels also take
// the run-time sizes as int64_t parameters, and the sizes, strides and
// offsets that depend on them are C expressions of those (decision 0027,
// step 7); the launches stay sized for the upper bounds.
//
// The printer's parts are in files by job (CudaPrinter.h lists them); this
// file walks the function, holds the prelude (CudaPrelude.cuh, embedded at
// build time) and runs the lowering.
//
//===----------------------------------------------------------------------===//

#include "CudaPrinter.h"

#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Codegen/MemoryPlan.h"
#include "kiln/Codegen/Passes.h"
#include "kiln/Codegen/Pipelines.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace kiln;
using namespace kiln::cuda;

namespace kiln::cuda {

/// Ops that print no kernel: views, constants and sizes are resolved where
/// a kernel uses them (a size from the run-time sizes, kilnc --dim
/// NAME=LO..HI, and arithmetic on it, computed again in each kernel that
/// reads it).
bool isResolvedAtUse(Operation &op) {
  if (isa<arith::ConstantOp, memref::ViewOp, memref::SubViewOp,
          memref::ExpandShapeOp, memref::CollapseShapeOp,
          memref::ReinterpretCastOp, memref::CastOp, memref::GetGlobalOp>(op))
    return true;
  if (isa<memref::DimOp>(op))
    return true;
  // Arithmetic at the top level computes on the sizes: printed where a
  // kernel reads it (CudaPrinter::name).
  return isa<arith::ArithDialect>(op.getDialect()) && op.getNumResults() == 1;
}

linalg::GenericOp nextGeneric(Operation *op) {
  for (op = op->getNextNode(); op && isResolvedAtUse(*op);
       op = op->getNextNode())
    ;
  return dyn_cast_or_null<linalg::GenericOp>(op);
}

/// Whether every loop range and buffer of `op` is static: the library
/// steps (cuBLASLt, cuDNN) are made for fixed shapes.
bool isStaticGeneric(linalg::GenericOp op) {
  if (!op)
    return true;
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (type && (!type.hasStaticShape() ||
                 failed(type.getStridesAndOffset(strides, offset)) ||
                 offset == ShapedType::kDynamic ||
                 llvm::is_contained(strides, ShapedType::kDynamic)))
      return false;
  }
  return true;
}

LogicalResult CudaPrinter::run() {
  DenseSet<Operation *> fused;
  findPadFolds();
  for (Operation &op : func.getBody().front().without_terminator()) {
    names.clear();
    params.clear();
    nextValue = 0;
    if (fused.contains(&op))
      continue; // printed as the epilogue of the kernel before
    if (foldedPads.contains(&op))
      continue; // a convolution's padding, which cuDNN applies
    if (isResolvedAtUse(op)) {
      // Arithmetic is printed where a kernel uses it: it must be printable.
      if (isa<arith::ArithDialect>(op.getDialect()) &&
          !isa<arith::ConstantOp>(op) && name(op.getResult(0)).empty())
        return op.emitOpError("cuda: no CUDA C form for this op yet");
      continue; // addresses, literals and sizes
    }
    if (isa<memref::AllocOp, memref::AllocaOp>(op))
      return op.emitOpError(
          "cuda: an allocation is left after memory planning");
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!generic.hasPureBufferSemantics())
        return op.emitOpError("cuda: expects a bufferized linalg.generic");
      // A fill followed by the reduction or matmul that accumulates into
      // it is one kernel: the fill's value starts the accumulator.
      linalg::GenericOp consumer = nextGeneric(&op);
      std::string value = fillValue(generic);
      if (consumer && !value.empty() &&
          startsFromFill(consumer, generic.getDpsInits()[0])) {
        fill = {generic.getDpsInits()[0], value,
                matchPattern(fillConstant(generic), m_PosZeroFloat())};
        continue;
      }
      // The elementwise generic after a reduction or contraction that alone
      // reads its result runs in its kernel (bias, activation, mean), or in
      // cuBLASLt's epilogue.
      epilogue = consumer && isEpilogue(generic, consumer)
                     ? consumer
                     : linalg::GenericOp();
      // Over symbolic dimensions, products and convolutions are kernels.
      bool library = isStaticGeneric(generic) && isStaticGeneric(consumer);
      bool conv = library && emitConv(generic, consumer);
      if (!conv && padFolds.contains(generic))
        return op.emitOpError("cuda: internal error: the convolution whose "
                              "padding cuDNN was to apply is not a cuDNN "
                              "step");
      if (!(library && emitGemm(generic)) && !conv &&
          failed(printGeneric(generic)))
        return failure();
      fill = {Value(), "", false};
      if (epilogue)
        fused.insert(epilogue);
      epilogue = {};
      continue;
    }
    // A data-parallel bucket's start or wait: a step of the runtime's
    // collectives on the bucket's tensors.
    if (auto call = dyn_cast<func::CallOp>(op)) {
      StringRef callee = call.getCallee();
      bool start = callee.starts_with(kAllReduceStart);
      if (start || callee.starts_with(kAllReduceWait)) {
        uint32_t bucket = 0;
        if (callee.drop_front((start ? kAllReduceStart : kAllReduceWait).size())
                .getAsInteger(10, bucket))
          return op.emitOpError("cuda: expects a bucket index in '")
                 << callee << "'";
        CudaStep step;
        step.collective = static_cast<uint32_t>(program.collectives.size());
        for (Value buffer : call.getOperands()) {
          FailureOr<BufferRef> ref = resolve(buffer, &op);
          if (failed(ref))
            return failure();
          step.args.push_back(argOf(*ref));
        }
        program.collectives.push_back({bucket, !start});
        program.steps.push_back(std::move(step));
        continue;
      }
    }
    if (isa<scf::ForOp, scf::IfOp, memref::StoreOp>(op)) {
      if (failed(printSerial(&op)))
        return failure();
      continue;
    }
    return op.emitOpError("cuda: no CUDA C form for this op yet");
  }
  return success();
}

} // namespace kiln::cuda

/// Helpers every kernel may use. NVRTC compiles without any header, so the
/// fixed-width types are declared here. The #else branches let a host C++
/// compiler build the same source (with a small shim for the CUDA built-ins)
/// so tests can run the kernels on the CPU.
static const char kPrelude[] =
#include "kiln/Codegen/CudaPrelude.inc"
    ;

std::string kiln::describeCudaSteps(const CudaProgram &program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto arg = [&](const CudaArg &a) {
    os << (a.space == CudaSpace::Constants ? "kiln_constants"
                                           : paramName(a.space, a.index));
    if (a.space != CudaSpace::Dim)
      os << "+" << a.offset;
  };
  static const char *const epilogues[] = {"none", "bias", "relu", "bias+relu"};
  os << "\n// The steps, in order (kernel<<<grid, block>>>(base+offset, ...),\n"
        "// or cuBLASLt in its column-major terms):\n";
  for (auto [i, step] : llvm::enumerate(program.steps)) {
    os << "// " << i << ": ";
    if (step.collective) {
      const CudaCollective &c = program.collectives[*step.collective];
      os << "nccl all-reduce (mean) bucket " << c.bucket
         << (c.wait ? " wait" : " start on the side stream") << ":";
      for (const CudaArg &a : step.args) {
        os << " ";
        arg(a);
      }
      os << "\n";
      continue;
    }
    if (step.conv) {
      const CudaConv &c = program.convs[*step.conv];
      os << "cudnn conv "
         << (c.dtype == 1   ? "f32"
             : c.dtype == 2 ? "f16"
                            : "bf16")
         << (c.tf32 ? " tf32" : "") << " x=[" << c.n << "," << c.c << "," << c.h
         << "," << c.w << "] w=[" << c.k << "," << c.c / c.groups << "," << c.r
         << "," << c.s << "] y=[" << c.n << "," << c.k << "," << c.p << ","
         << c.q << "] stride=" << c.strideH << "," << c.strideW
         << " dilation=" << c.dilationH << "," << c.dilationW;
      if (c.padH != 0 || c.padW != 0)
        os << " pad=" << c.padH << "," << c.padW;
      os << " groups=" << c.groups << " epilogue="
         << (c.residual ? "bias+residual+relu" : epilogues[c.epilogue])
         << " x=";
      arg(step.args[0]);
      os << " w=";
      arg(step.args[1]);
      os << " y=";
      arg(step.args[2]);
      os << " workspace=";
      arg(step.args[3]);
      if (step.args.size() > 4) {
        os << " bias=";
        arg(step.args[4]);
      }
      if (step.args.size() > 5) {
        os << " residual=";
        arg(step.args[5]);
      }
      os << "\n";
      continue;
    }
    if (step.gemm) {
      const CudaGemm &g = program.gemms[*step.gemm];
      auto name = [](uint8_t t) {
        return t == 1 ? "f32" : t == 2 ? "f16" : "bf16";
      };
      os << "cublasLt " << name(g.dtype);
      if (g.dDtype != g.dtype)
        os << "->" << name(g.dDtype);
      os << (g.tf32 ? " tf32" : "") << " m=" << g.m << " n=" << g.n
         << " k=" << g.k << " batch=" << g.batch << " A=";
      arg(step.args[0]);
      os << (g.transA ? "^T" : "") << " lda=" << g.lda << " B=";
      arg(step.args[1]);
      os << (g.transB ? "^T" : "") << " ldb=" << g.ldb << " D=";
      arg(step.args[2]);
      os << " ldd=" << g.ldd;
      if (g.batch > 1)
        os << " strides=" << g.strideA << "," << g.strideB << "," << g.strideD;
      os << (g.accumulate ? " beta=1" : " beta=0")
         << " epilogue=" << epilogues[g.epilogue];
      if (step.args.size() > 4) {
        os << " bias=";
        arg(step.args[4]);
      }
      os << " workspace=";
      arg(step.args[3]);
      os << "\n";
      continue;
    }
    os << program.kernels[step.kernel].name << "<<<" << step.grid << ", "
       << step.block << ">>>(";
    for (auto [j, a] : llvm::enumerate(step.args)) {
      os << (j ? ", " : "");
      arg(a);
    }
    os << ")\n";
  }
  return text;
}

LogicalResult kiln::lowerToCuda(ModuleOp module, StringRef funcName,
                                ArtifactInfo &info, CudaProgram &program,
                                const CudaCodegenOptions &options) {
  if (!isValidGpuArch(options.gpuArch))
    return module.emitError("expects a GPU architecture sm_75 or newer "
                            "written sm_<major><minor>, found '")
           << options.gpuArch << "'";
  auto func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func)
    return module.emitError("expects an entry function '") << funcName << "'";
  if (failed(collectSignature(func, info)) ||
      failed(collectBuckets(func, info)))
    return failure();

  PassManager pm(module.getContext(), "builtin.module");
  MemoryPlanSink plans;
  if (failed(buildCudaLoweringPipeline(pm, options.arenaAlignment, &plans)))
    return module.emitError("internal error: the CUDA pipeline does not parse");
  if (options.configurePassManager)
    options.configurePassManager(pm);
  if (failed(pm.run(module)) || failed(verify(module)))
    return failure();
  func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func)
    return module.emitError("internal error: lowering lost '")
           << funcName << "'";
  const MemoryPlan *plan = plans.lookup(funcName);
  if (!plan)
    return module.emitError("internal error: no memory plan for '")
           << funcName << "'";
  // A training step's new state goes past the planned buffers; its last
  // step copies it over the state buffer, so no kernel reads a parameter
  // another has already updated.
  recordMemoryPlan(*plan, info);
  info.triple = "cuda";
  info.cpu = "";

  program.gpuArch = options.gpuArch;
  program.moreGpuArchs = options.moreGpuArchs;
  program.source = kPrelude;
  program.kernels.clear();
  program.steps.clear();
  program.constants.clear();
  program.gemms.clear();
  program.convs.clear();
  program.collectives.clear();
  program.ioAlignment = 0;
  CudaPrinter printer(func, info, program, options);
  // The prelude's lines come first; the printer counts from after them.
  if (failed(printer.run()))
    return failure();
  if (!info.state.empty()) {
    // The new state over the old, 8 bytes a thread (the state's size and
    // offsets are multiples of its alignment, 64).
    uint64_t words = info.stateBytes / 8;
    std::string text =
        "// the new state (arena + " + std::to_string(info.stateScratchOffset) +
        ") over the state buffer\n"
        "extern \"C\" __global__ void __launch_bounds__(" +
        std::to_string(kBlock) +
        ") kiln_state_copy(char *__restrict__ state, char *__restrict__ arena) "
        "{\n"
        "  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t "
        "< " +
        std::to_string(words) +
        "; t += (int64_t)gridDim.x * blockDim.x)\n"
        "    ((uint64_t *)state)[t] = ((const uint64_t *)arena)[t];\n"
        "}\n\n";
    unsigned first = 1 + llvm::count(program.source, '\n');
    unsigned lines = llvm::count(text, '\n');
    program.source += text;
    CudaStep copy;
    copy.kernel = program.kernels.size();
    copy.block = kBlock;
    copy.grid = static_cast<uint32_t>(
        std::clamp<uint64_t>(llvm::divideCeil(words, kBlock), 1, 4096));
    copy.args = {CudaArg{CudaSpace::State, 0, 0},
                 CudaArg{CudaSpace::Arena, 0, info.stateScratchOffset}};
    program.kernels.push_back(
        {"kiln_state_copy", func.getLoc(), first, first + lines - 1, false});
    program.steps.push_back(copy);
  }
  if (!program.gemms.empty() || !program.convs.empty()) {
    // One workspace after the planned buffers, for every library step (they
    // run one after another on the stream).
    uint64_t at = llvm::alignTo(info.arenaBytes, options.arenaAlignment);
    for (CudaStep &step : program.steps)
      if (step.gemm || step.conv)
        step.args[3].offset = at;
    info.arenaBytes = at + options.libraryWorkspaceBytes;
    info.arenaLowerBoundBytes += options.libraryWorkspaceBytes;
    // The workspace lies past the planned buffers: a run at any sizes
    // reaches its end.
    if (!info.arenaTerms.empty())
      info.arenaTerms = {std::to_string(info.arenaBytes)};
    info.arenaAlignment = std::max<uint64_t>(info.arenaAlignment, 256);
  }
  if (!program.constants.empty()) {
    // Declared after the kernels: their line ranges stay as counted, and a
    // __device__ array may be used before its definition only if declared,
    // so the declaration goes into the prelude's place instead.
    std::string decl =
        "__device__ __align__(256) unsigned char kiln_constants[" +
        std::to_string(program.constants.size()) + "];\n";
    program.source.insert(sizeof(kPrelude) - 1, decl);
    for (CudaKernel &k : program.kernels) {
      ++k.firstLine;
      ++k.lastLine;
    }
  }
  return success();
}

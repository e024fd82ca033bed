//===- Compiler.cpp - the compiler driver library -------------------------===//
//
// The path of one kilnc invocation, stage by stage, stopping early when a
// stage is asked for with --emit. Outputs are collected in an OutputSet that
// renames temporaries into place only after the last step succeeded, so a
// failed compile leaves no file behind.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "MemoryBudget.h"

#include "kiln/Codegen/CpuCodegen.h"
#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Codegen/MemoryPlanView.h"
#include "kiln/Compiler/OnnxImporter.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/IR/ConstantBlobs.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"

#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <optional>

using namespace mlir;
using namespace kiln;

void kiln::registerCompilerDialects(DialectRegistry &registry) {
  registerCodegenDialects(registry);
}

std::string kiln::addDimOption(StringRef spec, CompileOptions &options) {
  auto [name, size] = spec.split('=');
  if (options.dims.count(name.str()) || options.dimRanges.count(name.str()))
    return ("--dim " + name + " is given twice").str();
  if (size.contains("..")) {
    auto [loText, hiText] = size.split("..");
    int64_t lo = 0, hi = 0;
    if (name.empty() || loText.getAsInteger(10, lo) ||
        hiText.getAsInteger(10, hi) || lo < 1 || hi < lo)
      return ("--dim expects NAME=LO..HI with sizes 1 <= LO <= HI, found '" +
              spec + "'")
          .str();
    // A range of one size is that size.
    if (lo == hi)
      options.dims.emplace(name.str(), lo);
    else
      options.dimRanges.emplace(name.str(), std::make_pair(lo, hi));
    return "";
  }
  int64_t n = 0;
  if (name.empty() || size.getAsInteger(10, n) || n < 0)
    return ("--dim expects NAME=N with a size N >= 0, found '" + spec + "'")
        .str();
  options.dims.emplace(name.str(), n);
  return "";
}

std::string kiln::formatDiagnostic(Diagnostic &diag) {
  std::string file, node;
  diag.getLocation()->walk([&](Location loc) {
    if (auto name = dyn_cast<NameLoc>(loc); name && node.empty())
      node = name.getName().str();
    if (auto flc = dyn_cast<FileLineColLoc>(loc); flc && file.empty())
      file = flc.getFilename().str();
    return WalkResult::advance();
  });
  std::string out;
  llvm::raw_string_ostream os(out);
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  if (!file.empty())
    os << file << ": ";
  std::string message = diag.str();
  if (!node.empty())
    os << "node '" << node << "'"
       << (llvm::StringRef(message).starts_with("(") ? " " : ": ");
  os << message;
  return out;
}

namespace {

/// Files written under temporary names, renamed together by commit();
/// anything not committed is removed.
class OutputSet {
public:
  ~OutputSet() {
    for (auto &f : files)
      if (!f.temp.empty()) {
        llvm::sys::fs::remove(f.temp);
        llvm::sys::DontRemoveFileOnSignal(f.temp);
      }
  }

  /// Writes `contents` to a temporary beside `path`; returns its name. A
  /// `path` that exists and is no regular file (/dev/stdout, a pipe) is
  /// written directly: renaming over it would replace it.
  FailureOr<std::string> add(MLIRContext &ctx, llvm::StringRef path,
                             llvm::StringRef contents) {
    llvm::sys::fs::file_status st;
    bool special = !llvm::sys::fs::status(path, st) &&
                   llvm::sys::fs::exists(st) &&
                   !llvm::sys::fs::is_regular_file(st);
    FailureOr<std::string> temp =
        special ? FailureOr<std::string>(path.str()) : reserve(ctx, path);
    if (failed(temp))
      return failure();
    std::error_code ec;
    llvm::raw_fd_ostream os(*temp, ec);
    if (!ec) {
      os << contents;
      os.close();
      ec = os.error();
      // The error is reported here; LLVM would otherwise abort on it.
      os.clear_error();
    }
    if (ec) {
      emitError(UnknownLoc::get(&ctx))
          << "cannot write '" << path << "': " << ec.message();
      return failure();
    }
    return *temp;
  }

  /// A temporary name beside `path` that commit() will rename to `path`.
  FailureOr<std::string> reserve(MLIRContext &ctx, llvm::StringRef path) {
    llvm::SmallString<256> model(path);
    model += ".tmp-%%%%%%%%";
    int fd;
    llvm::SmallString<256> temp;
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, temp)) {
      emitError(UnknownLoc::get(&ctx))
          << "cannot create '" << path << "': " << ec.message();
      return failure();
    }
    llvm::sys::fs::closeFile(fd);
    files.push_back({temp.str().str(), path.str(), true});
    // An interrupted compile (SIGINT, SIGTERM) leaves no temporary behind.
    llvm::sys::RemoveFileOnSignal(temp);
    return temp.str().str();
  }

  /// A temporary that is removed, never renamed.
  FailureOr<std::string> scratch(MLIRContext &ctx, llvm::StringRef path,
                                 llvm::StringRef contents) {
    auto temp = add(ctx, path, contents);
    if (succeeded(temp))
      files.back().keep = false;
    return temp;
  }

  LogicalResult commit(MLIRContext &ctx) {
    for (auto &f : files) {
      if (!f.keep)
        continue;
      if (std::error_code ec = llvm::sys::fs::rename(f.temp, f.path)) {
        emitError(UnknownLoc::get(&ctx))
            << "cannot rename '" << f.temp << "' to '" << f.path
            << "': " << ec.message();
        return failure();
      }
      llvm::sys::DontRemoveFileOnSignal(f.temp);
      f.temp.clear();
    }
    return success();
  }

private:
  struct File {
    std::string temp, path;
    bool keep;
  };
  std::vector<File> files;
};

/// Prints a stage. On a terminal-bound stream large constants and weight
/// blobs are elided for reading; written to a file (-o), the IR is complete
/// and parses back.
std::string printOp(Operation *op, bool elide, bool locations) {
  std::string s;
  llvm::raw_string_ostream os(s);
  OpPrintingFlags flags;
  if (elide)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  op->print(os, flags);
  os << "\n";
  return s;
}

/// `--emit=fused`: one paragraph per kiln.fused kernel (id, class, its ops
/// in order, the ONNX nodes they came from, its operand and result types),
/// after a line counting the ops the kernels took.
std::string describeKernels(ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  module.walk([&](func::FuncOp func) {
    int64_t kernels = 0, fusedOps = 0, ops = 0;
    func.walk([&](Operation *op) {
      if (isa<FusedOp>(op)) {
        ++kernels;
        return;
      }
      if (op->getDialect() && op->getDialect()->getNamespace() == "kiln" &&
          !isa<YieldOp, ConstantOp>(op)) {
        ++ops;
        if (isa<FusedOp>(op->getParentOp()))
          ++fusedOps;
      }
    });
    os << "// @" << func.getSymName() << ": " << kernels << " kernels hold "
       << fusedOps << " of " << ops << " ops\n";
    // In kernel order (a kernel sits at its last op, so the block order
    // can differ).
    SmallVector<FusedOp> kernelOps;
    func.walk([&](FusedOp fused) { kernelOps.push_back(fused); });
    llvm::stable_sort(kernelOps, [](FusedOp a, FusedOp b) {
      return a.getKernel() < b.getKernel();
    });
    for (FusedOp fused : kernelOps) {
      os << "kernel " << fused.getKernel() << " "
         << stringifyFusionClass(fused.getKind()) << "\n  ops:";
      for (Operation &op : fused.getBody().front().without_terminator())
        os << " " << op.getName().stripDialect();
      os << "\n  nodes:";
      for (Attribute name : fused.getNodes())
        os << " " << cast<StringAttr>(name).getValue();
      os << "\n  inputs:";
      llvm::interleave(
          fused.getInputs().getTypes(), os, [&](Type t) { os << " " << t; },
          ",");
      os << "\n  outputs:";
      llvm::interleave(
          fused.getResultTypes(), os, [&](Type t) { os << " " << t; }, ",");
      os << "\n";
    }
  });
  return s;
}

} // namespace

/// The C identifier prefix for this compile.
static std::string modelName(const CompileOptions &options) {
  if (!options.name.empty())
    return sanitizeIdentifier(options.name);
  llvm::StringRef base = options.output.empty()
                             ? llvm::sys::path::stem(options.inputPath)
                             : llvm::sys::path::filename(options.output);
  if (options.emit != EmitKind::Artifact && !options.output.empty())
    base = llvm::sys::path::stem(options.output);
  return sanitizeIdentifier(base.empty() ? "model" : base);
}

namespace {
/// What the stages produced, up to where they stopped.
struct StageOutput {
  std::string text; ///< the printed stage, for text stages
  ArtifactInfo info;
  std::optional<CudaProgram> cuda; ///< --target=cuda
  std::string object;
  /// Set by the caller: the file the CPU object is written to instead of
  /// `object`.
  std::string objectFile;
  std::unique_ptr<llvm::TargetMachine> tm;
};
} // namespace

/// Runs import, the graph pipeline and code generation, stopping after
/// `stopAt` (a text stage, EmitKind::Obj, or EmitKind::Artifact = Obj).
// Sizes a hostile model can claim but no machine can hold. One tensor may
// take at most 2^48 bytes (beyond that, byte counts and arena offsets near
// the 64-bit limit and overflow); the constants embedded in the object file
// at most 2 GiB in all, the most the small code model addresses. Each is
// refused before any stage tries to materialize it.
static constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 48;
static constexpr uint64_t kMaxConstantBytes = (uint64_t(1) << 31) - 1;

/// Bytes of a static tensor as the artifact stores it (narrow and boolean
/// types take a byte per element), or nullopt past kMaxTensorBytes.
static std::optional<uint64_t> storedBytes(RankedTensorType type) {
  Type elt = type.getElementType();
  uint64_t bytes =
      elt.isIntOrFloat()
          ? std::max<uint64_t>(1, (elt.getIntOrFloatBitWidth() + 7) / 8)
          : 8;
  for (int64_t dim : type.getShape()) {
    if (dim < 0)
      continue; // dynamic dims are refused elsewhere
    if (dim != 0 && bytes > kMaxTensorBytes / uint64_t(dim))
      return std::nullopt;
    bytes *= uint64_t(dim);
  }
  return bytes;
}

static LogicalResult checkTensorSizes(ModuleOp module) {
  WalkResult walk = module.walk([&](Operation *op) {
    SmallVector<Value> values(op->getResults());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        llvm::append_range(values, block.getArguments());
    for (Value v : values) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (type && !storedBytes(type)) {
        InFlightDiagnostic diag = op->emitError();
        if (auto arg = dyn_cast<BlockArgument>(v))
          diag << "input #" << arg.getArgNumber() << ": ";
        diag << "a " << type << " takes more than 2^48 bytes; kiln refuses "
             << "tensors that large";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  uint64_t constantBytes = 0;
  Operation *largest = nullptr;
  uint64_t largestBytes = 0;
  module.walk([&](Operation *op) {
    if (!op->hasTrait<OpTrait::ConstantLike>() || op->getNumResults() != 1)
      return;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type)
      return;
    uint64_t bytes = *storedBytes(type);
    constantBytes += bytes;
    if (bytes > largestBytes) {
      largestBytes = bytes;
      largest = op;
    }
  });
  if (constantBytes > kMaxConstantBytes)
    return largest->emitError()
           << "the model's constants take " << constantBytes
           << " bytes, more than the " << kMaxConstantBytes
           << " an object file can embed (the largest, " << largestBytes
           << " bytes, is made here)";
  return success();
}

/// Tells the caller (options.onStage) that a stage starts.
static void beginStage(const CompileOptions &options, llvm::StringRef stage) {
  if (options.onStage)
    options.onStage(stage);
}

/// The CUDA half of runStages, after the graph pipeline: CUDA C kernels and
/// steps, NVRTC, and a host object holding the descriptor.
static LogicalResult runCudaStages(ModuleOp module,
                                   const CompileOptions &options,
                                   ArrayRef<std::string> gpuArchs,
                                   EmitKind stopAt, bool elide,
                                   StageOutput &result) {
  Location fileLoc =
      FileLineColLoc::get(module.getContext(), options.inputPath, 0, 0);
  CudaCodegenOptions cg;
  cg.gpuArch = gpuArchs.front();
  cg.moreGpuArchs.assign(gpuArchs.begin() + 1, gpuArchs.end());
  cg.cublasLt = options.cublasLt;
  cg.cudnn = options.cudnn;
  cg.tf32 = options.tf32;
  if (options.libraryWorkspaceMiB)
    cg.libraryWorkspaceBytes = options.libraryWorkspaceMiB << 20;
  cg.configurePassManager = options.configurePassManager;
  result.info.name = modelName(options);
  CudaProgram &program = result.cuda.emplace();
  beginStage(options, "CUDA lowering");
  if (failed(lowerToCuda(module, "main", result.info, program, cg)))
    return failure();
  if (stopAt == EmitKind::Lowered) {
    result.text = printOp(module, elide, options.printLocations);
    return success();
  }
  if (stopAt == EmitKind::Cuda) {
    result.text = program.source + describeCudaSteps(program);
    return success();
  }
  if (stopAt == EmitKind::CudaHost) {
    result.text = hostEmulationSource(program);
    return success();
  }
  if (stopAt == EmitKind::Header) {
    result.text = emitHeader(result.info, &program);
    return success();
  }
  beginStage(options, "NVRTC");
  if (failed(compileCudaProgram(module, program)))
    return failure();
  // The host object holds only data and one accessor: a generic CPU keeps
  // it the same on every build machine.
  CpuCodegenOptions host;
  host.cpu = "generic";
  auto tm = createCpuTargetMachine(host);
  if (!tm)
    return emitError(fileLoc) << llvm::toString(tm.takeError());
  result.tm = std::move(*tm);
  llvm::LLVMContext llvmContext;
  beginStage(options, "host object");
  std::unique_ptr<llvm::Module> llvmModule =
      buildCudaArtifactModule(result.info, program, *result.tm, llvmContext);
  auto object = emitObject(*llvmModule, *result.tm);
  if (!object)
    return emitError(fileLoc) << llvm::toString(object.takeError());
  result.object = std::move(*object);
  return success();
}

/// Frees the blobs made by this compile that `root` no longer reads (all
/// of them for a null `root`; kiln/IR/ConstantBlobs.h), and hands the
/// memory back to the system: glibc keeps freed blocks below its mmap
/// threshold, which it raises to the size of the last large block freed.
static void releaseBlobs(MLIRContext &context, Operation *root,
                         const llvm::StringSet<> &callerBlobs) {
  if (releaseUnusedBlobs(&context, root, callerBlobs) == 0)
    return;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/// The first op that computes a size from data (decision 0031) and the
/// symbol it defines, or nothing: the CUDA target has no device-side count.
static std::optional<std::pair<Operation *, StringRef>>
firstComputedSize(ModuleOp module) {
  std::optional<std::pair<Operation *, StringRef>> found;
  module->walk([&](Operation *op) {
    SmallVector<StringRef> names = computedSizesOf(op);
    if (names.empty())
      return WalkResult::advance();
    found = {op, names.front()};
    return WalkResult::interrupt();
  });
  return found;
}

static LogicalResult runStages(MLIRContext &context,
                               const CompileOptions &options, EmitKind stopAt,
                               bool elide, StageOutput &result) {
  Location fileLoc = FileLineColLoc::get(&context, options.inputPath, 0, 0);
  if (options.target != "cpu" && options.target != "cuda")
    return emitError(fileLoc) << "target '" << options.target
                              << "' is not supported (expected cpu or cuda)";
  bool isCuda = options.target == "cuda";
  std::vector<std::string> gpuArchs;
  std::string badArch;
  if (isCuda && !parseGpuArchs(options.gpuArch, gpuArchs, badArch))
    return emitError(fileLoc) << "--gpu-arch: expected sm_<major><minor> of "
                                 "sm_75 or newer (or a comma-separated list "
                                 "of them), found '"
                              << badArch << "'";
  if (isCuda && (stopAt == EmitKind::LLVM || stopAt == EmitKind::MemoryPlan))
    return emitError(fileLoc)
           << "--emit=" << (stopAt == EmitKind::LLVM ? "llvm" : "memory-plan")
           << " is not available for --target=cuda "
              "(expected import, graph, fused, lowered, "
              "cuda, cuda-host, header or obj)";
  if (!isCuda && stopAt == EmitKind::Cuda)
    return emitError(fileLoc) << "--emit=cuda needs --target=cuda";
  if (!isCuda && stopAt == EmitKind::CudaHost)
    return emitError(fileLoc) << "--emit=cuda-host needs --target=cuda";
  if (options.dataParallel && !options.gradients)
    return emitError(fileLoc)
           << "--data-parallel applies to 'kilnc grad' and 'kilnc train' only";
  if (options.dataParallel && options.bucketBytes == 0)
    return emitError(fileLoc) << "--bucket-bytes: expected a size > 0";
  // A .mlir file holds the kiln dialect already (a module with @main), for
  // testing a stage without an ONNX front end.
  // For gradients, the initializers to differentiate are imported as inputs.
  // Blobs that exist before the import belong to the caller's other
  // modules; those made here are freed once nothing reads them (each form
  // a weight takes would otherwise stay until the context goes).
  llvm::StringSet<> callerBlobs = resourceBlobNames(&context);
  beginStage(options, "import");
  ImportOptions importOptions;
  importOptions.dims = options.dims;
  importOptions.dimRanges = options.dimRanges;
  if (options.gradients) {
    importOptions.parameters = options.gradWrt;
    importOptions.allFloatParameters = options.gradWrt.empty();
    importOptions.parameterInitialValues = options.training;
  }
  OwningOpRef<ModuleOp> module =
      llvm::StringRef(options.inputPath).ends_with(".mlir")
          ? parseSourceFile<ModuleOp>(options.inputPath, &context)
          : importOnnxFile(context, options.inputPath, importOptions);
  if (!module || failed(verify(*module)) || failed(checkTensorSizes(*module)))
    return failure();
  if (stopAt == EmitKind::Import) {
    result.text = printOp(*module, elide, options.printLocations);
    return success();
  }

  beginStage(options, "graph passes");
  PassManager graphPM(&context, "builtin.module");
  GraphStageOptions stage;
  stage.gradients = options.gradients;
  stage.loss = options.gradLoss;
  stage.wrt = options.gradWrt;
  if (options.training)
    stage.optimizer = options.optimizer;
  stage.precision = options.precision;
  stage.dataParallel = options.dataParallel;
  buildGraphStage(graphPM, stage);
  if (options.configurePassManager)
    options.configurePassManager(graphPM);
  if (failed(graphPM.run(*module)) || failed(verify(*module)) ||
      failed(checkTensorSizes(*module)))
    return failure();
  CpuCodegenOptions cg;
  cg.cpu = options.cpu;
  cg.features = options.features;
  cg.configurePassManager = options.configurePassManager;
  bool fuse = options.fuse;
  // Both targets rematerialize for a budget and lower kiln.fused kernels.
  if (options.memoryBudget) {
    beginStage(options, "memory budget");
    if (failed(fitMemoryBudget(*module, options, modelName(options), cg,
                               gpuArchs, fileLoc, fuse)))
      return failure();
  }
  if (options.dataParallel) {
    PassManager bucketPM(&context, "builtin.module");
    buildBucketPipeline(bucketPM, options.bucketBytes);
    if (options.configurePassManager)
      options.configurePassManager(bucketPM);
    if (failed(bucketPM.run(*module)) || failed(verify(*module)))
      return failure();
  }
  if (fuse) {
    beginStage(options, "fusion");
    PassManager fusePM(&context, "builtin.module");
    buildFusionPipeline(fusePM);
    if (options.configurePassManager)
      options.configurePassManager(fusePM);
    if (failed(fusePM.run(*module)) || failed(verify(*module)))
      return failure();
  }
  if (stopAt == EmitKind::Graph) {
    result.text = printOp(*module, elide, options.printLocations);
    return success();
  }
  if (stopAt == EmitKind::Fused) {
    result.text = describeKernels(*module);
    return success();
  }
  if (isCuda) {
    // Sizes computed from data (decision 0031) need a device-side count.
    if (std::optional<std::pair<Operation *, StringRef>> computed =
            firstComputedSize(*module))
      return computed->first->emitError()
             << "a size computed from data ('" << computed->second
             << "') is not supported on the CUDA target yet; compile for the "
                "CPU";
    return runCudaStages(*module, options, gpuArchs, stopAt, elide, result);
  }

  result.info.name = modelName(options);
  releaseBlobs(context, *module, callerBlobs);
  beginStage(options, "lowering");
  if (failed(lowerToLLVMDialect(*module, "main", result.info, cg)))
    return failure();
  // The weights' forms before lowering rewrote them (filters transposed,
  // then packed) are garbage now.
  releaseBlobs(context, *module, callerBlobs);
  if (stopAt == EmitKind::Lowered) {
    result.text = printOp(*module, elide, options.printLocations);
    return success();
  }
  if (stopAt == EmitKind::MemoryPlan) {
    llvm::StringRef ext = llvm::sys::path::extension(options.output);
    result.text = ext == ".svg"    ? memoryPlanSvg(result.info)
                  : ext == ".html" ? memoryPlanHtml(result.info)
                                   : memoryPlanJson(result.info);
    return success();
  }

  auto tm = createCpuTargetMachine(cg);
  if (!tm)
    return emitError(fileLoc) << llvm::toString(tm.takeError());
  result.tm = std::move(*tm);
  result.info.triple = result.tm->getTargetTriple().str();
  result.info.cpu = result.tm->getTargetCPU().str();
  if (stopAt == EmitKind::Header) {
    result.text = emitHeader(result.info);
    return success();
  }

  beginStage(options, "LLVM IR and -O2");
  llvm::LLVMContext llvmContext;
  // The weights go from their blobs straight into an object of their own
  // when the object is generated in parts (the linker that joins them is
  // checked there; without it the module takes them back). --emit=llvm
  // shows them in the module.
  DetachedData detached;
  bool detach =
      stopAt != EmitKind::LLVM && canDetachData(result.tm->getTargetTriple());
  // Once translated, LLVM holds the code and the weights it was not spared:
  // the module's body and other blobs go before -O2 and the object.
  auto llvmModule = buildArtifactModule(
      *module, result.info, *result.tm, llvmContext,
      [&] {
        module->getBody()->clear();
        llvm::StringSet<> keep = callerBlobs;
        for (const DetachedData::Global &global : detached.globals)
          if (!global.blob.empty())
            keep.insert(global.blob);
        releaseBlobs(context, nullptr, keep);
      },
      detach ? &detached : nullptr);
  // The detached weights' blobs are read until the object is written; a
  // caller's context (the Python package compiles many models in one)
  // does not keep them after this compile.
  llvm::scope_exit releaseDetached([&] {
    if (!detached.globals.empty())
      releaseBlobs(context, nullptr, callerBlobs);
  });
  if (failed(llvmModule))
    return failure();
  if (stopAt == EmitKind::LLVM) {
    llvm::raw_string_ostream os(result.text);
    (*llvmModule)->print(os, nullptr);
    return success();
  }
  beginStage(options, "code generation");
  SplitCodegenOptions split;
  split.jobs = options.jobs;
  split.linker = options.linker;
  split.target = cg;
  split.symbolPrefix = result.info.name;
  split.detached = &detached;
  if (!result.objectFile.empty()) {
    llvm::Error err =
        emitObjectFile(**llvmModule, *result.tm, result.objectFile, &split);
    if (!err)
      return success();
    // Named as the user knows it, not by its temporary name.
    std::string message;
    llvm::handleAllErrors(
        std::move(err),
        [&](const llvm::ECError &io) {
          message = "cannot write '" + options.output +
                    ".o': " + io.convertToErrorCode().message();
        },
        [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
    return emitError(fileLoc) << message;
  }
  auto object = emitObject(**llvmModule, *result.tm, &split);
  if (!object)
    return emitError(fileLoc) << llvm::toString(object.takeError());
  result.object = std::move(*object);
  return success();
}

FailureOr<CompiledObject> kiln::compileToObject(MLIRContext &context,
                                                const CompileOptions &options) {
  StageOutput result;
  if (failed(runStages(context, options, EmitKind::Obj, false, result)))
    return failure();
  CompiledObject compiled{std::move(result.info), std::move(result.object),
                          std::nullopt};
  compiled.cuda = std::move(result.cuda);
  return compiled;
}

LogicalResult kiln::compileModel(MLIRContext &context,
                                 const CompileOptions &options,
                                 llvm::raw_ostream &out, CompiledObject *keep) {
  Location fileLoc = FileLineColLoc::get(&context, options.inputPath, 0, 0);
  if (options.emit == EmitKind::Artifact && options.output.empty())
    return emitError(fileLoc) << "no output prefix: pass -o PREFIX, or "
                                 "--emit=STAGE to print a stage";
  if (options.emit == EmitKind::Obj && options.output.empty())
    return emitError(fileLoc) << "--emit=obj needs -o FILE";

  // The folder the files go to must exist before any work is done: a
  // large model would otherwise compile for minutes and then fail.
  if (!options.output.empty()) {
    llvm::SmallString<256> folder(options.output);
    llvm::sys::path::remove_filename(folder);
    if (folder.empty())
      folder = ".";
    if (!llvm::sys::fs::is_directory(folder))
      return emitError(fileLoc) << "cannot write '" << options.output
                                << "': the folder '" << folder
                                << (llvm::sys::fs::exists(folder)
                                        ? "' is a file, not a folder"
                                        : "' does not exist (create it first)");
    if (llvm::sys::fs::access(folder, llvm::sys::fs::AccessMode::Write))
      return emitError(fileLoc)
             << "cannot write '" << options.output << "': the folder '"
             << folder << "' is not writable";
  }

  OutputSet outputs;
  StageOutput result;
  // A CPU artifact's object goes straight to its file: in memory it would
  // be a third copy of the weights, beside LLVM's constants and the object
  // writer's sections. Reserved first, it is still renamed first.
  bool objectToFile =
      options.emit == EmitKind::Artifact && options.target == "cpu" && !keep;
  if (objectToFile) {
    auto temp = outputs.reserve(context, options.output + ".o");
    if (failed(temp))
      return failure();
    result.objectFile = *temp;
  }
  if (failed(runStages(context, options, options.emit, options.output.empty(),
                       result)))
    return failure();
  if (options.emit != EmitKind::Artifact) {
    // One stage: to the -o file if given, else to `out`.
    const std::string &text =
        options.emit == EmitKind::Obj ? result.object : result.text;
    if (options.output.empty()) {
      out << text;
      return success();
    }
    if (failed(outputs.add(context, options.output, text)))
      return failure();
    return outputs.commit(context);
  }

  const ArtifactInfo &info = result.info;
  llvm::TargetMachine *tm = result.tm.get();
  std::string *object = &result.object;
  // The artifact: PREFIX.h, PREFIX.o and, with --shared, PREFIX.so.
  const std::string &prefix = options.output;
  const CudaProgram *cuda = result.cuda ? &*result.cuda : nullptr;
  beginStage(options, "writing outputs");
  // Renamed into place in the order added: the object, the library, the
  // header last, so a header present means its object and library are
  // there (and PREFIX_artifact_matches_header() tells at run time).
  auto objectPath = objectToFile ? FailureOr<std::string>(result.objectFile)
                                 : outputs.add(context, prefix + ".o", *object);
  if (failed(objectPath))
    return failure();
  if (options.shared) {
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> entry =
        buildSharedEntryModule(info, *tm, llvmContext);
    auto entryObject = emitObject(*entry, *tm);
    if (!entryObject)
      return emitError(fileLoc) << llvm::toString(entryObject.takeError());
    auto entryPath =
        outputs.scratch(context, prefix + ".entry.o", *entryObject);
    auto soPath = outputs.reserve(context, prefix + ".so");
    if (failed(entryPath) || failed(soPath))
      return failure();
    beginStage(options, "linking");
    auto linker = llvm::sys::findProgramByName(options.linker);
    if (!linker)
      return emitError(fileLoc)
             << "cannot find the linker driver '" << options.linker
             << "' needed for --shared (set it with --linker)";
    llvm::SmallVector<llvm::StringRef> args = {
        *linker, "-shared", "-o", *soPath, *objectPath, *entryPath, "-lm"};
    llvm::append_range(args, linkerDriverFlags(options.linker));
    std::string message;
    int rc = runLinkerDriver(*linker, args, message);
    if (rc != 0)
      return emitError(fileLoc)
             << "linking '" << prefix << ".so' with " << options.linker
             << " failed" << (message.empty() ? "" : ": ") << message;
    // The code's checksum, now that the linker has placed it (ABI 6).
    if (llvm::Error err = sealSharedLibrary(*soPath, info.name))
      return emitError(fileLoc) << llvm::toString(std::move(err));
  }
  if (failed(outputs.add(context, prefix + ".h", emitHeader(info, cuda))) ||
      failed(outputs.commit(context)))
    return failure();
  if (keep) {
    keep->info = result.info;
    keep->object = result.object;
    keep->cuda = result.cuda;
  }
  return success();
}

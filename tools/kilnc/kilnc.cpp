//===- kilnc.cpp - the Kiln compiler driver -------------------------------===//
//
// Command-line front end of compileModel: parses flags, prints diagnostics in
// Kiln's format ("error: <file>: node '<name>' (<OpType>, opset N): ...") and
// exits 1 on any failure, leaving no output file behind.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

using namespace llvm;

static cl::OptionCategory kilncCategory("kilnc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::cat(kilncCategory));
static cl::opt<std::string>
    output("o", cl::value_desc("path"),
           cl::desc("artifact prefix (writes PREFIX.h and PREFIX.o); with "
                    "--emit, the file to write the stage to"),
           cl::cat(kilncCategory));
static cl::opt<std::string>
    target("target", cl::init("cpu"), cl::value_desc("cpu|cuda"),
           cl::desc("what to generate code for (default: cpu)"),
           cl::cat(kilncCategory));
static cl::opt<std::string>
    gpuArch("gpu-arch", cl::init("sm_90"), cl::value_desc("sm_XY[,sm_XY...]"),
            cl::desc("--target=cuda: the GPU architectures to compile cubins "
                     "for; GPUs newer than the lowest run its PTX (default: "
                     "sm_90)"),
            cl::cat(kilncCategory));
static cl::opt<bool> noCublasLt(
    "no-cublaslt",
    cl::desc("--target=cuda: compile matrix products as kernels instead of "
             "cuBLASLt calls"),
    cl::cat(kilncCategory));
static cl::opt<std::string> precision(
    "precision", cl::init("fp32"), cl::value_desc("fp32|fp16|bf16"),
    cl::desc("compute f32 matrix products and convolutions in fp16 or bf16 "
             "(f32 accumulation; tensor cores on a GPU); everything else "
             "stays f32 (default: fp32, the model's types)"),
    cl::cat(kilncCategory));
static cl::opt<bool> noCudnn(
    "no-cudnn",
    cl::desc("--target=cuda: compile convolutions as kernels instead of cuDNN "
             "calls"),
    cl::cat(kilncCategory));
static cl::opt<bool>
    tf32("tf32",
         cl::desc("--target=cuda: let cuBLASLt and cuDNN compute f32 matrix "
                  "products and convolutions with TF32 tensor cores (10-bit "
                  "mantissa inputs)"),
         cl::cat(kilncCategory));
static cl::list<std::string>
    dims("dim", cl::value_desc("NAME=N|NAME=LO..HI"),
         cl::desc("pin the symbolic dimension NAME (an ONNX dim_param of the "
                  "graph's inputs and outputs) to the size N, or keep it "
                  "symbolic over the sizes LO to HI: one CPU artifact runs "
                  "any size in the range (docs/cli.md lists the ops); "
                  "repeatable"),
         cl::cat(kilncCategory));
static cl::opt<unsigned> libraryWorkspace(
    "library-workspace", cl::init(4), cl::value_desc("MiB"),
    cl::desc("--target=cuda: the workspace cuBLASLt and cuDNN get at the end "
             "of the device arena, 1 to 1024 MiB (default 4); cuDNN's faster "
             "convolution algorithms at large batches need more"),
    cl::cat(kilncCategory));
static cl::opt<std::string>
    cpu("cpu", cl::init("host"), cl::value_desc("name"),
        cl::desc("LLVM CPU to tune and select instructions for, e.g. "
                 "x86-64-v3 (default: host, the machine compiling)"),
        cl::cat(kilncCategory));
static cl::opt<std::string> features("features", cl::value_desc("+f1,-f2"),
                                     cl::desc("extra LLVM target features"),
                                     cl::cat(kilncCategory));
static cl::opt<std::string>
    name("name", cl::value_desc("identifier"),
         cl::desc("prefix of the exported C symbols (default: from -o)"),
         cl::cat(kilncCategory));
static cl::opt<bool>
    shared("shared", cl::desc("also link PREFIX.so, loadable by kiln-run"),
           cl::cat(kilncCategory));
static cl::opt<std::string>
    linker("linker", cl::init("cc"), cl::value_desc("program"),
           cl::desc("C compiler driver used to link --shared and to join an "
                    "object generated in parts (default: cc, with "
                    "-fuse-ld=lld where ld.lld is installed)"),
           cl::cat(kilncCategory));
static cl::opt<unsigned>
    jobs("j", cl::Prefix, cl::init(0), cl::value_desc("N"),
         cl::desc("threads for the compile (default: one per core this "
                  "process may run on); the artifact is the same bytes at any "
                  "count"),
         cl::cat(kilncCategory));
static cl::alias jobsLong("jobs", cl::desc("alias for -j"), cl::aliasopt(jobs),
                          cl::NotHidden);
static cl::opt<kiln::EmitKind> emit(
    "emit", cl::init(kiln::EmitKind::Artifact),
    cl::desc("print one stage instead of writing the artifact"),
    cl::values(
        clEnumValN(kiln::EmitKind::Import, "import",
                   "kiln dialect as imported"),
        clEnumValN(kiln::EmitKind::Graph, "graph",
                   "kiln dialect after the graph passes"),
        clEnumValN(kiln::EmitKind::Fused, "fused",
                   "the fused kernels: ops and ONNX nodes of each"),
        clEnumValN(kiln::EmitKind::Lowered, "lowered",
                   "LLVM dialect after lowering"),
        clEnumValN(kiln::EmitKind::LLVM, "llvm",
                   "optimized LLVM IR with the entry points"),
        clEnumValN(kiln::EmitKind::Header, "header", "the generated C header"),
        clEnumValN(kiln::EmitKind::Cuda, "cuda",
                   "--target=cuda: the CUDA C of the kernels"),
        clEnumValN(kiln::EmitKind::CudaHost, "cuda-host",
                   "--target=cuda: the kernels as host C++, to run them "
                   "without a GPU (tools/gpu-pack/README.md)"),
        clEnumValN(kiln::EmitKind::MemoryPlan, "memory-plan",
                   "the arena plan: JSON, or a timeline picture when -o "
                   "ends in .svg or .html"),
        clEnumValN(kiln::EmitKind::Obj, "obj", "the object file (needs -o)")),
    cl::cat(kilncCategory));
static cl::opt<std::string>
    loss("loss", cl::value_desc("output"),
         cl::desc("kilnc grad: the scalar output to differentiate (default: "
                  "the only output)"),
         cl::cat(kilncCategory));
static cl::list<std::string>
    wrt("wrt", cl::CommaSeparated, cl::value_desc("name,..."),
        cl::desc("kilnc grad: the initializers (or inputs) to differentiate "
                 "with respect to (default: every float initializer)"),
        cl::cat(kilncCategory));
static cl::opt<std::string> memoryBudget(
    "memory-budget", cl::value_desc("bytes"),
    cl::desc("recompute cheap values so that the arena fits this many bytes "
             "where it can (suffix K, M or G for powers of 1024); warns "
             "where it cannot"),
    cl::cat(kilncCategory));
static cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("run the MLIR verifier after every pass, not only after each "
             "stage: slower (ResNet-50: about 10%), for finding the pass "
             "that broke the IR; KILN_VERIFY_EACH=1 does the same, and the "
             "tests set it"),
    cl::cat(kilncCategory));
static cl::opt<bool>
    noFuse("no-fuse",
           cl::desc("compile every op as its own loop nest (no kiln-fuse)"),
           cl::cat(kilncCategory));
static cl::opt<std::string>
    optimizer("optimizer", cl::init("sgd"), cl::value_desc("sgd|momentum|adam"),
              cl::desc("kilnc train: the update rule (default: sgd)"),
              cl::cat(kilncCategory));
static cl::opt<double>
    lr("lr", cl::init(0.01), cl::value_desc("rate"),
       cl::desc("kilnc train: learning rate (default: 0.01)"),
       cl::cat(kilncCategory));
static cl::opt<double>
    momentum("momentum", cl::init(0.9), cl::value_desc("mu"),
             cl::desc("kilnc train --optimizer=momentum: velocity decay "
                      "(default: 0.9)"),
             cl::cat(kilncCategory));
static cl::opt<double>
    beta1("beta1", cl::init(0.9), cl::value_desc("b1"),
          cl::desc("kilnc train --optimizer=adam: first-moment decay "
                   "(default: 0.9)"),
          cl::cat(kilncCategory));
static cl::opt<double>
    beta2("beta2", cl::init(0.999), cl::value_desc("b2"),
          cl::desc("kilnc train --optimizer=adam: second-moment decay "
                   "(default: 0.999)"),
          cl::cat(kilncCategory));
static cl::opt<double>
    epsilon("epsilon", cl::init(1e-8), cl::value_desc("eps"),
            cl::desc("kilnc train --optimizer=adam: added to the denominator "
                     "(default: 1e-8)"),
            cl::cat(kilncCategory));
static cl::opt<double>
    weightDecay("weight-decay", cl::init(0.0), cl::value_desc("lambda"),
                cl::desc("kilnc train: L2 penalty added to the gradient as "
                         "lambda * w (default: 0)"),
                cl::cat(kilncCategory));
static cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("kilnc grad/train: average the gradients over the ranks of an "
             "MPI run (mpirun -np R), in buckets whose all-reduces overlap "
             "the rest of the backward pass (docs/cli.md)"),
    cl::cat(kilncCategory));
static cl::opt<std::string>
    bucketBytes("bucket-bytes", cl::value_desc("bytes"),
                cl::desc("kilnc grad/train --data-parallel: gradient bytes per "
                         "all-reduce bucket (suffix K, M or G; default: 25M)"),
                cl::cat(kilncCategory));
static cl::opt<bool> printLocations(
    "print-locations",
    cl::desc("with --emit=import, graph or lowered: print each op's location "
             "(its ONNX node), so that kiln-opt, reading the file, sees what "
             "kilnc saw (kernel node lists come from locations)"),
    cl::cat(kilncCategory));
static cl::opt<bool> timeStages(
    "time-stages",
    cl::desc("print each stage's wall time and the peak resident memory "
             "during it (to standard error): import, graph passes, fusion, "
             "lowering, LLVM IR and -O2, code generation, writing, linking"),
    cl::cat(kilncCategory));
enum class ProgressMode { Auto, Always, Never };
static cl::opt<ProgressMode> progress(
    "progress", cl::init(ProgressMode::Auto),
    cl::desc("stage progress lines on standard error"),
    cl::values(
        clEnumValN(ProgressMode::Auto, "auto",
                   "on a terminal, once a compile has run 1.5 s (default)"),
        clEnumValN(ProgressMode::Always, "always", "every stage, anywhere"),
        clEnumValN(ProgressMode::Never, "never", "none")),
    cl::cat(kilncCategory));
static cl::opt<bool> printIRAfterAll("print-ir-after-all",
                                     cl::desc("print the IR after every pass"),
                                     cl::cat(kilncCategory));

/// Peak resident memory, from /proc/self/status (VmHWM), in bytes; 0 where
/// unknown.
static uint64_t peakResidentBytes() {
  auto status = llvm::MemoryBuffer::getFileAsStream("/proc/self/status");
  if (!status)
    return 0;
  for (StringRef line : llvm::split((*status)->getBuffer(), '\n'))
    if (line.consume_front("VmHWM:")) {
      uint64_t kib = 0;
      line.trim().split(' ').first.getAsInteger(10, kib);
      return kib << 10;
    }
  return 0;
}

/// Resets the peak to the current resident size (Linux's clear_refs "5"),
/// so the next reading is the peak of what happens after; false where that
/// is not allowed.
static bool resetPeakResident() {
  std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
  if (!f)
    return false;
  bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

/// The stages of one compile as CompileOptions::onStage reports them: their
/// wall times and peaks for --time-stages, and progress lines. On a
/// terminal (--progress=auto) a watcher thread prints the stage that is
/// running once the compile has taken 1.5 s, then each later stage.
class StageClock {
public:
  using Clock = std::chrono::steady_clock;

  StageClock(bool measure, ProgressMode mode)
      : measure(measure), mode(mode), start(Clock::now()) {
    if (mode == ProgressMode::Auto &&
        llvm::sys::Process::StandardErrIsDisplayed())
      watcher = std::thread([this] { watch(); });
  }
  ~StageClock() { stopWatching(); }

  void begin(StringRef stage) {
    auto now = Clock::now();
    closeStage(now);
    {
      std::lock_guard<std::mutex> lock(mutex);
      stages.push_back({stage.str(), now, now, 0});
      ++generation;
    }
    if (measure)
      peakResets = resetPeakResident() && peakResets;
    if (mode == ProgressMode::Always)
      printProgress(stage, now);
  }

  /// Ends the last stage; prints the --time-stages table.
  void finish(StringRef input) {
    auto now = Clock::now();
    closeStage(now);
    stopWatching();
    if (shown)
      errs() << "kilnc: done in " << llvm::format("%.1f", seconds(start, now))
             << " s\n";
    if (!measure || stages.empty())
      return;
    errs() << "kilnc: stages of " << input
           << " (wall time; peak resident memory "
           << (peakResets ? "during the stage" : "so far") << ")\n";
    for (const Stage &st : stages)
      errs() << llvm::format("  %-26s %8.2f s %8llu MB\n", st.name.c_str(),
                             seconds(st.begin, st.end),
                             (unsigned long long)(st.peakBytes >> 20));
    uint64_t peak = 0;
    for (const Stage &st : stages)
      peak = std::max(peak, st.peakBytes);
    errs() << llvm::format("  %-26s %8.2f s %8llu MB\n", "total",
                           seconds(start, now),
                           (unsigned long long)(peak >> 20));
  }

private:
  struct Stage {
    std::string name;
    Clock::time_point begin, end;
    uint64_t peakBytes;
  };

  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }

  void closeStage(Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mutex);
    if (stages.empty() || stages.back().peakBytes)
      return;
    stages.back().end = now;
    stages.back().peakBytes = std::max<uint64_t>(peakResidentBytes(), 1);
  }

public:
  /// Held while anything is written to standard error, so that a progress
  /// line never splits a diagnostic.
  std::mutex output;

private:
  void printProgress(StringRef stage, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(output);
    errs() << "kilnc: " << stage << " (at "
           << llvm::format("%.1f", seconds(start, now)) << " s)\n";
    shown = true;
  }

  void watch() {
    uint64_t printed = 0;
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      wake.wait_for(lock, std::chrono::milliseconds(100));
      auto now = Clock::now();
      if (stopping || seconds(start, now) < 1.5 || generation == printed ||
          stages.empty())
        continue;
      printed = generation;
      std::string name = stages.back().name;
      lock.unlock();
      printProgress(name, now);
      lock.lock();
    }
  }

  void stopWatching() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (watcher.joinable())
      watcher.join();
  }

  bool measure;
  ProgressMode mode;
  Clock::time_point start;
  std::vector<Stage> stages;
  uint64_t generation = 0;
  bool peakResets = true;
  std::atomic<bool> shown{false};
  bool stopping = false;
  std::mutex mutex;
  std::condition_variable wake;
  std::thread watcher;
};

/// Parses --memory-budget: a positive decimal number of bytes, optionally
/// followed by K, M or G (times 1024, 1024^2, 1024^3).
static std::optional<uint64_t> parseBytes(StringRef text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (toUpper(text.back())) {
    case 'K':
      scale = uint64_t(1) << 10;
      break;
    case 'M':
      scale = uint64_t(1) << 20;
      break;
    case 'G':
      scale = uint64_t(1) << 30;
      break;
    default:
      break;
    }
    if (scale != 1)
      text = text.drop_back();
  }
  uint64_t value;
  if (text.empty() || !llvm::all_of(text, isDigit) ||
      text.getAsInteger(10, value) || value == 0 ||
      value > std::numeric_limits<uint64_t>::max() / scale)
    return std::nullopt;
  return value * scale;
}

/// SIGPIPE: a reader of kilnc's output went away (`kilnc ... --time-passes
/// 2>&1 | head -1`). The compile dies of it as before, but its temporaries
/// go first, as on SIGINT. InitLLVM asks for a pipe handler, yet LLVM 22
/// registers its handlers before it sets one, and none is installed.
static void removeTemporariesOnPipe(int sig) {
  llvm::sys::RunInterruptHandlers();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  struct sigaction pipe = {};
  pipe.sa_handler = removeTemporariesOnPipe;
  ::sigaction(SIGPIPE, &pipe, nullptr);
  // LLVM already owns -time-passes (it sets llvm::TimePassesIsEnabled); show
  // it with kilnc's options and use it for the MLIR pass managers too.
  if (cl::Option *opt = cl::getRegisteredOptions().lookup("time-passes")) {
    opt->addCategory(kilncCategory);
    opt->setDescription("report the time each pass takes");
  }
  cl::HideUnrelatedOptions(kilncCategory);
  // `kilnc grad MODEL ...` compiles the model's gradients, `kilnc train
  // MODEL ...` one optimizer step; the subcommand is taken off before the
  // ordinary flags are parsed.
  std::vector<char *> args(argv, argv + argc);
  bool training = args.size() > 1 && StringRef(args[1]) == "train";
  bool gradients =
      training || (args.size() > 1 && StringRef(args[1]) == "grad");
  if (gradients)
    args.erase(args.begin() + 1);
  cl::ParseCommandLineOptions(
      int(args.size()), args.data(),
      "kilnc: compile an ONNX model to native code\n\n"
      "  kilnc model.onnx -o build/model          # build/model.h + "
      "build/model.o\n"
      "  kilnc model.onnx -o build/model --shared # also build/model.so\n"
      "  kilnc model.onnx --emit=graph            # print a stage\n"
      "  kilnc grad model.onnx --loss=loss -o build/model_grad\n"
      "        # inputs: the model's inputs and its float initializers;\n"
      "        # outputs: the model's outputs and grad.<initializer>\n"
      "  kilnc train model.onnx --loss=loss --optimizer=adam --lr=1e-3 \\\n"
      "        -o build/model_train --shared\n"
      "        # one training step: parameters and moments in a state "
      "buffer\n");

  mlir::DialectRegistry registry;
  kiln::registerCompilerDialects(registry);
  // -j bounds MLIR's threads too (the passes nested in each function). The
  // pool outlives the context.
  std::optional<llvm::DefaultThreadPool> mlirThreads;
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  unsigned threads = llvm::hardware_concurrency(jobs).compute_thread_count();
  if (threads > 1) {
    mlirThreads.emplace(llvm::hardware_concurrency(threads));
    context.setThreadPool(*mlirThreads);
  }

  StageClock clock(timeStages, progress);
  bool failed = false;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    std::lock_guard<std::mutex> lock(clock.output);
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
      failed = true;
    errs() << kiln::formatDiagnostic(diag) << "\n";
    for (mlir::Diagnostic &note : diag.getNotes())
      errs() << kiln::formatDiagnostic(note) << "\n";
    return mlir::success();
  });

  kiln::CompileOptions options;
  options.inputPath = inputPath;
  options.output = output;
  options.name = name;
  options.target = target;
  options.cpu = cpu;
  options.gpuArch = gpuArch;
  options.features = features;
  options.shared = shared;
  options.emit = emit;
  options.linker = linker;
  options.jobs = jobs;
  options.fuse = !noFuse;
  options.printLocations = printLocations;
  options.cublasLt = !noCublasLt;
  options.cudnn = !noCudnn;
  if (precision != "fp32" && precision != "fp16" && precision != "bf16") {
    errs() << "error: --precision: expected fp32, fp16 or bf16, found '"
           << precision << "'\n";
    return 1;
  }
  options.precision = precision;
  options.tf32 = tf32;
  if (libraryWorkspace < 1 || libraryWorkspace > 1024) {
    errs() << "error: --library-workspace: expected 1 to 1024 (MiB), found "
           << libraryWorkspace << "\n";
    return 1;
  }
  options.libraryWorkspaceMiB = libraryWorkspace;
  for (const std::string &d : dims)
    if (std::string error = kiln::addDimOption(d, options); !error.empty()) {
      errs() << "error: " << error << "\n";
      return 1;
    }
  for (cl::Option *opt :
       {static_cast<cl::Option *>(&gpuArch),
        static_cast<cl::Option *>(&noCublasLt),
        static_cast<cl::Option *>(&noCudnn), static_cast<cl::Option *>(&tf32),
        static_cast<cl::Option *>(&libraryWorkspace)})
    if (target != "cuda" && opt->getNumOccurrences() > 0) {
      errs() << "error: --" << opt->ArgStr
             << " only applies to --target=cuda\n";
      return 1;
    }
  options.gradients = gradients;
  options.gradLoss = loss;
  options.gradWrt.assign(wrt.begin(), wrt.end());
  if (memoryBudget.getNumOccurrences()) {
    options.memoryBudget = parseBytes(memoryBudget);
    if (!options.memoryBudget) {
      errs() << "error: --memory-budget expects a positive number of bytes, "
                "optionally with a K, M or G suffix, found '"
             << memoryBudget << "'\n";
      return 1;
    }
  }
  if ((dataParallel || bucketBytes.getNumOccurrences()) && !gradients) {
    errs() << "error: --" << (dataParallel ? "data-parallel" : "bucket-bytes")
           << " only applies to 'kilnc grad' and 'kilnc train'\n";
    return 1;
  }
  if (bucketBytes.getNumOccurrences() && !dataParallel) {
    errs() << "error: --bucket-bytes only applies with --data-parallel\n";
    return 1;
  }
  options.dataParallel = dataParallel;
  if (bucketBytes.getNumOccurrences()) {
    std::optional<uint64_t> bytes = parseBytes(bucketBytes);
    if (!bytes) {
      errs() << "error: --bucket-bytes expects a positive number of bytes, "
                "optionally with a K, M or G suffix, found '"
             << bucketBytes << "'\n";
      return 1;
    }
    options.bucketBytes = *bytes;
  }
  if (!gradients && (!loss.empty() || !wrt.empty())) {
    errs() << "error: --loss and --wrt only apply to 'kilnc grad' and "
              "'kilnc train'\n";
    return 1;
  }
  options.training = training;
  options.optimizer.optimizer = optimizer;
  options.optimizer.lr = lr;
  options.optimizer.momentum = momentum;
  options.optimizer.beta1 = beta1;
  options.optimizer.beta2 = beta2;
  options.optimizer.epsilon = epsilon;
  options.optimizer.weightDecay = weightDecay;
  for (cl::Option *opt :
       {static_cast<cl::Option *>(&optimizer), static_cast<cl::Option *>(&lr),
        static_cast<cl::Option *>(&momentum), static_cast<cl::Option *>(&beta1),
        static_cast<cl::Option *>(&beta2), static_cast<cl::Option *>(&epsilon),
        static_cast<cl::Option *>(&weightDecay)})
    if (!training && opt->getNumOccurrences() > 0) {
      errs() << "error: --" << opt->ArgStr
             << " only applies to 'kilnc train'\n";
      return 1;
    }
  // The library verifies once after each stage; after every pass only on
  // request (docs/decisions/0028-verify-per-stage.md).
  std::optional<std::string> verifyEnv =
      llvm::sys::Process::GetEnv("KILN_VERIFY_EACH");
  bool verifyEachPass =
      verifyEach || (verifyEnv && !verifyEnv->empty() && *verifyEnv != "0");
  options.configurePassManager = [verifyEachPass](mlir::PassManager &pm) {
    pm.enableVerifier(verifyEachPass);
    if (printIRAfterAll) {
      pm.getContext()->disableMultithreading();
      pm.enableIRPrinting([](mlir::Pass *, mlir::Operation *) { return false; },
                          [](mlir::Pass *, mlir::Operation *) { return true; },
                          /*printModuleScope=*/true,
                          /*printAfterOnlyOnChange=*/false);
    }
    if (llvm::TimePassesIsEnabled)
      pm.enableTiming();
  };

  options.onStage = [&](StringRef stage) { clock.begin(stage); };
  bool ok =
      mlir::succeeded(kiln::compileModel(context, options, outs())) && !failed;
  clock.finish(inputPath);
  // A stage printed to a full disk or a closed pipe is an error, not
  // LLVM's abort at exit.
  outs().flush();
  if (outs().has_error()) {
    errs() << "error: cannot write to standard output: "
           << outs().error().message() << "\n";
    outs().clear_error();
    return 1;
  }
  return ok ? 0 : 1;
}

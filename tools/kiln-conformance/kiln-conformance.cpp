//===- kiln-conformance.cpp - the ONNX backend test suite runner ----------===//
//
// Runs every test of the ONNX backend test data (node/, simple/,
// pytorch-operator/, pytorch-converted/): compiles model.onnx in process
// (import, graph passes, CPU codegen to an object), loads the object with
// LLVM's ORC JIT, runs every test_data_set through the runtime API and
// compares outputs with ONNX's tolerances (rtol 1e-3, atol 1e-7).
//
// With --target=cuda every model is compiled for the GPU (CUDA C, NVRTC,
// the artifact in memory). Where kiln_runtime_cuda finds a GPU the test data
// runs on it through device buffers (tools/common/CudaDevice.h) and the same
// comparison; without one a test that compiles is reported "compiled" with
// the reason it did not run, and --expect accepts that, so CI without a GPU
// still checks that every kernel of every listed model compiles. With
// --require-gpu it does not: there a test must run.
//
// A test folder may hold ranges.txt, one `NAME=LO..HI` (or `NAME=N`) a
// line: kilnc's --dim for its model, whose data sets may then differ in
// their sizes; each runs at the sizes its inputs give (decision 0027). And
// tolerance.txt, `RTOL ATOL`: looser tolerances for its outputs (a
// model's own tests, whose references come from ONNX Runtime rather than
// from ONNX's exact data); --pack copies it for kiln-pack-run.
//
// Each test runs in a forked child, N at a time: a crash or a hang is that
// test's result (crash / timeout), never the runner's, and never a pass. The
// parent writes docs/conformance.md and checks an expectations file so that
// coverage only goes up.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/OnnxImporter.h"
#include "kiln/Compiler/TensorData.h"
#include "kiln/Passes/DimExpr.h"
#include "kiln/runtime.h"

#include "EmulatedLibraries.h"
#include "ImageHash.h"
#ifdef KILN_CONFORMANCE_CUDA
#include "CudaDevice.h"
#include "kiln/runtime_cuda.h"
#endif

#include "onnx_subset.pb.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <poll.h>
#include <set>
#include <signal.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

using namespace llvm;

static cl::OptionCategory category("kiln-conformance options");
static cl::opt<std::string> suiteDir("suite", cl::desc("the ONNX backend test data folder"), cl::value_desc("DIR"),
                                     cl::init("../shared/onnx-backend-tests"), cl::cat(category));
static cl::opt<std::string> filter("filter",
                                   cl::desc("only tests whose id (e.g. "
                                            "node/test_add) matches REGEX"),
                                   cl::value_desc("REGEX"), cl::cat(category));
static cl::opt<unsigned> jobs("j", cl::desc("tests run at once (default 2)"), cl::init(2), cl::cat(category));
static cl::opt<unsigned> timeoutSeconds("timeout", cl::desc("seconds one test may take (default 60)"), cl::init(60),
                                        cl::cat(category));
static cl::opt<std::string> report("report", cl::desc("write the Markdown report here"), cl::value_desc("FILE"),
                                   cl::cat(category));
static cl::opt<std::string> supportedOps("supported-ops",
                                         cl::desc("write the Markdown table of supported ONNX ops here"),
                                         cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string> expect("expect", cl::desc("fail if a test listed in FILE (one id a line) does not pass"),
                                   cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string> writeExpect("write-expect", cl::desc("write the ids of the passing tests to FILE"),
                                        cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string> target("target", cl::desc("cpu (default) or cuda"), cl::init("cpu"),
                                   cl::value_desc("cpu|cuda"), cl::cat(category));
static cl::opt<std::string> gpuArch("gpu-arch", cl::desc("--target=cuda: the cubin's architecture"), cl::init("sm_90"),
                                    cl::value_desc("sm_XY"), cl::cat(category));
static cl::opt<bool> emulateGpu("emulate-gpu",
                                cl::desc("--target=cuda: build the CUDA C with the host C++ compiler and "
                                         "run every kernel on the CPU, one thread after another"),
                                cl::cat(category));
static cl::opt<unsigned> emulateMaxBlock("emulate-max-block",
                                         cl::desc("--emulate-gpu: run kernels whose threads synchronize (block "
                                                  "reductions) with at most this many threads a block (a power of "
                                                  "two; default 16). Their code is the same for any block size, and "
                                                  "each thread of such a block is a host thread"),
                                         cl::init(16), cl::value_desc("N"));
static cl::opt<bool> noCublasLt("no-cublaslt",
                                cl::desc("--target=cuda: compile matrix products as kernels, not cuBLASLt calls"),
                                cl::cat(category));
static cl::opt<bool> noCudnn("no-cudnn", cl::desc("--target=cuda: compile convolutions as kernels, not cuDNN calls"),
                             cl::cat(category));
static cl::opt<std::string> precision("precision", cl::init("fp32"), cl::value_desc("fp32|fp16|bf16"),
                                      cl::desc("compile with kilnc --precision (compare with --rtol/--atol "
                                               "fitting the narrow type)"),
                                      cl::cat(category));
static cl::opt<double> rtolOption("rtol", cl::init(1e-3), cl::desc("relative tolerance (default: ONNX's 1e-3)"),
                                  cl::cat(category));
static cl::opt<double> atolOption("atol", cl::init(1e-7), cl::desc("absolute tolerance (default: ONNX's 1e-7)"),
                                  cl::cat(category));
static cl::opt<bool> requireGpu("require-gpu",
                                cl::desc("--target=cuda: exit 77 (skipped) when no CUDA device is present"),
                                cl::cat(category));
static cl::opt<std::string> packDir("pack",
                                    cl::desc("--target=cuda: instead of running the tests, write each one's "
                                             "artifact (--shared), its data sets as raw tensors and its "
                                             "kernels' host emulation source into DIR, and DIR/manifest.txt "
                                             "(the GPU pack, tools/gpu-pack)"),
                                    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string> folders("folders",
                                    cl::desc("the suite's folders to read, comma-separated (default: node, "
                                             "simple, pytorch-operator, pytorch-converted)"),
                                    cl::value_desc("LIST"), cl::cat(category));
static cl::opt<std::string> onlyList("only", cl::desc("only the tests listed in FILE (one id a line)"),
                                     cl::value_desc("FILE"), cl::cat(category));
static cl::opt<bool> verbose("v", cl::desc("print every test's result"), cl::cat(category));

namespace {

const char *const kFolders[] = {"node", "simple", "pytorch-operator", "pytorch-converted"};

struct Result {
  std::string id;
  std::string status; // pass, fail, unsupported, error, crash, timeout,
                      // compiled (cuda without a GPU)
  std::string op;     // the first node's op type
  std::string message;
  std::string opset;   // the model's default-domain opset
  std::string kilnOps; // kiln ops after import, sorted, space-separated
};

//===----------------------------------------------------------------------===//
// The child: one test
//===----------------------------------------------------------------------===//

kiln_dtype_t fromOnnxType(int t) { return static_cast<kiln_dtype_t>(kiln::kilnDTypeOfOnnx(t)); }

double element(kiln_dtype_t t, const char *p, size_t i) { return kiln::elementAsDouble(t, p, i); }

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The first node's op type and the default-domain opset, for grouping; ""
/// when the model does not parse.
std::pair<std::string, std::string> modelFacts(StringRef modelPath) {
  auto buffer = MemoryBuffer::getFile(modelPath);
  kiln::onnx::ModelProto model;
  if (!buffer || !model.ParseFromArray((*buffer)->getBufferStart(), (*buffer)->getBufferSize()) ||
      model.graph().node_size() == 0)
    return {"", ""};
  std::string opset;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = std::to_string(o.version());
  const auto &node = model.graph().node(0);
  if (node.domain().empty() || node.domain() == "ai.onnx")
    return {node.op_type(), opset};
  // Another domain's op: named with its domain, at that domain's opset.
  for (const auto &o : model.opset_import())
    if (o.domain() == node.domain())
      opset = std::to_string(o.version());
  return {node.domain() + "." + node.op_type(), opset};
}

/// The kiln ops an imported model is made of (before the graph passes).
std::string kilnOpsOf(mlir::MLIRContext &context, StringRef modelPath) {
  mlir::OwningOpRef<mlir::ModuleOp> module = kiln::importOnnxFile(context, modelPath);
  if (!module)
    return "";
  std::set<std::string> names;
  module->walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "kiln")
      names.insert(op->getName().getStringRef().str());
  });
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : " ") + n;
  return out;
}

/// The kernels of `program` built for the host; launch[k] runs kernel k's
/// whole grid with its arguments.
struct HostKernels {
  void *library = nullptr;
  std::vector<void (*)(char **, unsigned, unsigned)> launch;
  unsigned char *constants = nullptr;
};

Expected<HostKernels> buildHostKernels(const kiln::CudaProgram &program) {
  SmallString<128> dir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("kiln-emulate", dir))
    return createStringError(ec, "cannot create a temporary folder");
  std::string src = (dir + "/kernels.cpp").str(), lib = (dir + "/kernels.so").str();
  {
    std::error_code ec;
    raw_fd_ostream os(src, ec);
    if (ec)
      return createStringError(ec, "cannot write " + src);
    os << kiln::hostEmulationSource(program, emulateMaxBlock);
  }
  auto cxx = sys::findProgramByName("c++");
  if (!cxx)
    return createStringError(cxx.getError(), "no host C++ compiler (c++)");
  // kiln_vec reads through a struct of the elements (vectorized kernels).
  SmallVector<StringRef> args = {*cxx,       "-std=c++17",           "-O1", "-fPIC", "-shared", "-w",
                                 "-pthread", "-fno-strict-aliasing", src,   "-o",    lib};
  std::string message;
  if (sys::ExecuteAndWait(*cxx, args, std::nullopt, {}, 0, 0, &message) != 0)
    return createStringError(inconvertibleErrorCode(), "the host C++ compiler rejected the CUDA C " + message);
  HostKernels h;
  h.library = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  sys::fs::remove(src);
  sys::fs::remove(lib);
  sys::fs::remove(dir);
  if (!h.library)
    return createStringError(inconvertibleErrorCode(), "dlopen failed");
  for (const kiln::CudaKernel &k : program.kernels) {
    void *fn = dlsym(h.library, ("kiln_launch_" + k.name).c_str());
    if (!fn)
      return createStringError(inconvertibleErrorCode(), "no launcher for " + k.name);
    h.launch.push_back(reinterpret_cast<void (*)(char **, unsigned, unsigned)>(fn));
  }
  if (!program.constants.empty()) {
    auto get = reinterpret_cast<unsigned char *(*)(size_t *)>(dlsym(h.library, "kiln_emulated_constants"));
    if (!get)
      return createStringError(inconvertibleErrorCode(), "no kiln_constants");
    size_t bytes = 0;
    h.constants = get(&bytes);
    memcpy(h.constants, program.constants.data(), program.constants.size());
  }
  return h;
}

/// A compiler context for one test that keeps the first error as the
/// test's message, and the compile options every test shares.
struct TestCompiler {
  mlir::DialectRegistry registry;
  mlir::MLIRContext context;
  std::string diagnostics;
  kiln::CompileOptions options;

  explicit TestCompiler(const std::string &modelPath) : context(mlir::MLIRContext::Threading::DISABLED) {
    kiln::registerCompilerDialects(registry);
    context.appendDialectRegistry(registry);
    context.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && diagnostics.empty())
        diagnostics = kiln::formatDiagnostic(d);
      return mlir::success();
    });
    options.inputPath = modelPath;
    options.name = "model";
    options.target = target;
    options.gpuArch = gpuArch;
    options.cublasLt = !noCublasLt;
    options.cudnn = !noCudnn;
    options.precision = precision;
  }
  std::string error() const { return diagnostics.empty() ? "compilation failed without a message" : diagnostics; }
};

/// The test folder's tolerance.txt (`RTOL ATOL`), each no tighter than the
/// command line's.
std::pair<double, double> tolerances(const std::string &dir) {
  double rtol = rtolOption, atol = atolOption;
  if (auto buffer = MemoryBuffer::getFile(dir + "/tolerance.txt", /*IsText=*/true)) {
    auto [r, a] = (*buffer)->getBuffer().trim().split(' ');
    double rv = 0, av = 0;
    if (!r.getAsDouble(rv) && !a.trim().getAsDouble(av)) {
      rtol = std::max(rtol, rv);
      atol = std::max(atol, av);
    }
  }
  return {rtol, atol};
}

/// The test folder's ranges.txt into `options`, each line as kilnc's --dim
/// takes it; no file: none. False with `error` set for a line it refuses.
bool readRanges(const std::string &dir, kiln::CompileOptions &options, std::string &error) {
  auto buffer = MemoryBuffer::getFile(dir + "/ranges.txt", /*IsText=*/true);
  if (!buffer)
    return true;
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, false);
  for (StringRef line : lines)
    if (std::string why = kiln::addDimOption(line.trim(), options); !why.empty()) {
      error = "ranges.txt: " + why;
      return false;
    }
  return true;
}

/// Compiles and runs one test; returns its result (status and message).
Result runTest(const std::string &id, const std::string &dir) {
  Result r{id, "", "", "", "", ""};
  std::string modelPath = dir + "/model.onnx";
  std::tie(r.op, r.opset) = modelFacts(modelPath);

  TestCompiler tc(modelPath);
  std::string rangeError;
  if (!readRanges(dir, tc.options, rangeError)) {
    r.status = "error";
    r.message = rangeError;
    return r;
  }
  if (!supportedOps.empty())
    r.kilnOps = kilnOpsOf(tc.context, modelPath);
  tc.diagnostics.clear();
  auto compiled = kiln::compileToObject(tc.context, tc.options);
  if (failed(compiled)) {
    r.status = "unsupported";
    r.message = tc.error();
    return r;
  }

  auto fail = [&](const std::string &status, const Twine &message) {
    r.status = status;
    r.message = message.str();
    return r;
  };
  auto jit = orc::LLJITBuilder().create();
  // A CUDA artifact's object holds data only; the JIT loads it the same way.
  if (!jit)
    return fail("error", "cannot create the JIT: " + toString(jit.takeError()));
  auto &dylib = (*jit)->getMainJITDylib();
  auto generator = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!generator)
    return fail("error", toString(generator.takeError()));
  dylib.addGenerator(std::move(*generator));
  if (Error e = (*jit)->addObjectFile(MemoryBuffer::getMemBufferCopy(compiled->object, "model.o")))
    return fail("error", "cannot load the object: " + toString(std::move(e)));
  auto symbol = (*jit)->lookup("model_artifact");
  if (!symbol)
    return fail("error", "no model_artifact: " + toString(symbol.takeError()));
  auto getArtifact = symbol->toPtr<const kiln_artifact_t *(*)()>();
  kiln_model_t *model = nullptr;
  if (kiln_model_open(getArtifact(), &model) != KILN_STATUS_OK)
    return fail("error", Twine("kiln_model_open: ") + kiln_last_error());
  bool onGpu = target == "cuda" && !emulateGpu;
  HostKernels host;
  if (target == "cuda" && emulateGpu) {
    auto built = buildHostKernels(*compiled->cuda);
    if (!built)
      return fail("error", "emulation: " + toString(built.takeError()));
    host = *built;
  }
#ifdef KILN_CONFORMANCE_CUDA
  kiln_cuda_model_t *gpuModel = nullptr;
  // Only a missing GPU or driver (unavailable) leaves a test "compiled";
  // an artifact the CUDA runtime refuses is an error.
  kiln_status_t gpuStatus = onGpu ? kiln_cuda_model_open(getArtifact(), 0, &gpuModel) : KILN_STATUS_OK;
  if (gpuStatus != KILN_STATUS_OK)
    return fail(gpuStatus == KILN_STATUS_UNAVAILABLE ? "compiled" : "error",
                Twine(compiled->cuda->kernels.size()) + " kernels compiled with NVRTC; not run: " + kiln_last_error());
#else
  if (onGpu)
    return fail("compiled", Twine(compiled->cuda->kernels.size()) + " kernels compiled with NVRTC; not run: this "
                                                                    "runner was built without the CUDA runtime");
#endif

  size_t numIn = kiln_model_num_inputs(model), numOut = kiln_model_num_outputs(model);
  std::vector<char> arenaStorage(kiln_model_arena_bytes(model) + 64);
  void *arena = arenaStorage.data() + ((64 - reinterpret_cast<uintptr_t>(arenaStorage.data()) % 64) % 64);

  std::vector<std::string> sets;
  std::error_code ec;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (StringRef(sys::path::filename(it->path())).starts_with("test_data_set_"))
      sets.push_back(it->path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty())
    return fail("error", "no test_data_set folder");

  auto load = [&](const std::string &path, kiln::TensorBytes &t) -> bool {
    auto buffer = MemoryBuffer::getFile(path, false, false);
    std::string error;
    if (!buffer) {
      fail("error", "cannot read " + path);
      return false;
    }
    if (!kiln::parseTensorFile((*buffer)->getBuffer(), t, error)) {
      fail("error", sys::path::filename(path) + ": " + error);
      return false;
    }
    return true;
  };

  size_t numDims = kiln_model_num_dims(model);
  auto [rtol, atol] = tolerances(dir);
  for (const std::string &set : sets) {
    std::vector<kiln::TensorBytes> in(numIn), expected(numOut);
    std::vector<kiln_tensor_t> inViews, outViews;
    std::vector<std::string> outData(numOut);
    for (size_t i = 0; i < numIn; ++i) {
      if (!load(set + "/input_" + std::to_string(i) + ".pb", in[i]))
        return r;
      inViews.push_back({fromOnnxType(in[i].dataType), in[i].dims.size(), in[i].dims.data(), in[i].data.data()});
    }
    // Over ranges: the sizes of this set's inputs, and the outputs' shapes
    // at them.
    std::vector<int64_t> dims(numDims);
    if (numDims > 0 && kiln_model_dims_of_inputs(model, inViews.data(), numIn, dims.data()) != KILN_STATUS_OK)
      return fail("fail", Twine(sys::path::filename(set)) + ": " + kiln_last_error());
    std::vector<std::vector<int64_t>> outShapes(numOut);
    for (size_t i = 0; i < numOut; ++i) {
      if (!load(set + "/output_" + std::to_string(i) + ".pb", expected[i]))
        return r;
      kiln_tensor_info_t info;
      kiln_model_output_info(model, i, &info);
      outShapes[i].assign(info.shape, info.shape + info.rank);
      if (numDims > 0)
        kiln_model_output_shape(model, i, dims.data(), outShapes[i].data());
      size_t bytes = kiln_dtype_size(info.dtype);
      for (int64_t d : outShapes[i])
        bytes *= size_t(d);
      outData[i].assign(bytes, '\0');
      outViews.push_back({info.dtype, info.rank, outShapes[i].data(), outData[i].data()});
    }
    if (host.library) {
      // The steps in order, every thread of each launch one after another,
      // on host buffers laid out as the device's would be.
      std::vector<char> arenaBytes(kiln_model_arena_bytes(model) + 256);
      char *hostArena = arenaBytes.data() + ((256 - reinterpret_cast<uintptr_t>(arenaBytes.data()) % 256) % 256);
      for (const kiln::CudaStep &step : compiled->cuda->steps) {
        std::vector<char *> args;
        for (const kiln::CudaArg &a : step.args) {
          if (a.space == kiln::CudaSpace::Dim) { // a size, by value
            args.push_back(reinterpret_cast<char *>(static_cast<intptr_t>(dims[a.index])));
            continue;
          }
          char *base = a.space == kiln::CudaSpace::Input       ? in[a.index].data.data()
                       : a.space == kiln::CudaSpace::Output    ? outData[a.index].data()
                       : a.space == kiln::CudaSpace::Constants ? (char *)host.constants
                                                               : hostArena;
          args.push_back(base + a.offset);
        }
        if (step.gemm) {
          kiln::runGemmOnHost(compiled->cuda->gemms[*step.gemm], args.data());
          continue;
        }
        if (step.conv) {
          kiln::runConvOnHost(compiled->cuda->convs[*step.conv], args.data());
          continue;
        }
        host.launch[step.kernel](args.data(), step.grid, step.block);
      }
    } else if (!onGpu && kiln_model_run(model, inViews.data(), numIn, outViews.data(), numOut, arena,
                                        kiln_model_arena_bytes(model)) != KILN_STATUS_OK)
      return fail("fail", Twine(sys::path::filename(set)) + ": " + kiln_last_error());
#ifdef KILN_CONFORMANCE_CUDA
    if (onGpu) {
      // Device copies of every buffer, one run on a stream of its own, and
      // the outputs back; the comparison below is the CPU target's. The
      // device is opened here, in the test's child: CUDA does not survive a
      // fork, so the parent never opens one.
      std::string error;
      std::unique_ptr<kiln::CudaDevice> device = kiln::CudaDevice::open(0, error);
      std::vector<void *> dIn, dOut;
      void *dArena = nullptr;
      bool ok = device != nullptr;
      for (size_t i = 0; i < numIn && ok; ++i) {
        dIn.push_back(device->allocate(in[i].data.size(), error));
        ok = dIn.back() && device->toDevice(dIn.back(), in[i].data.data(), in[i].data.size(), error);
      }
      for (size_t i = 0; i < numOut && ok; ++i) {
        dOut.push_back(device->allocate(outData[i].size(), error));
        ok = dOut.back() != nullptr;
      }
      size_t arenaBytes = kiln_cuda_model_arena_bytes(gpuModel);
      if (ok && arenaBytes) {
        dArena = device->allocate(arenaBytes, error);
        ok = dArena != nullptr;
      }
      if (!ok)
        return fail("error", "cuda: " + error);
      if (kiln_cuda_model_run_dims(gpuModel, dIn.data(), numIn, dOut.data(), numOut, dArena, nullptr,
                                   numDims ? dims.data() : nullptr, device->stream()) != KILN_STATUS_OK)
        return fail("fail", Twine(sys::path::filename(set)) + ": " + kiln_last_error());
      ok = device->synchronize(error);
      for (size_t i = 0; i < numOut && ok; ++i)
        ok = device->toHost(outData[i].data(), dOut[i], outData[i].size(), error);
      if (!ok)
        return fail("fail", Twine(sys::path::filename(set)) + ": cuda: " + error);
    }
#endif
    // Sizes the run computed from data (decision 0031): the outputs are
    // their leading bytes, at the shapes the run's dims give.
    bool computed = false;
    for (size_t d = 0; d < numDims; ++d) {
      kiln_dim_info_t dim{};
      computed |= kiln_model_dim_info(model, d, &dim) == KILN_STATUS_OK && dim.computed;
    }
    if (computed && !onGpu && !host.library) {
      kiln_model_last_dims(model, dims.data());
      for (size_t i = 0; i < numOut; ++i) {
        kiln_model_output_shape(model, i, dims.data(), outShapes[i].data());
        size_t bytes = kiln_dtype_size(outViews[i].dtype);
        for (int64_t d : outShapes[i])
          bytes *= size_t(d);
        outData[i].resize(bytes);
      }
    }
    for (size_t i = 0; i < numOut; ++i) {
      kiln_tensor_info_t info;
      kiln_model_output_info(model, i, &info);
      const kiln::TensorBytes &want = expected[i];
      std::string where = sys::path::filename(set).str() + " output " + std::to_string(i) + " '" + info.name + "'";
      if (fromOnnxType(want.dataType) != info.dtype)
        return fail("fail", where + ": computes " + kiln_dtype_name(info.dtype) + ", expected " +
                                kiln::onnxTypeName(want.dataType));
      if (want.dims != outShapes[i])
        return fail("fail",
                    where + ": computes shape " + shapeText(outShapes[i]) + ", expected " + shapeText(want.dims));
      size_t bad = 0, firstBad = 0, numElements = outData[i].size() / kiln_dtype_size(info.dtype);
      double worst = 0;
      for (size_t k = 0; k < numElements; ++k) {
        double a = element(info.dtype, outData[i].data(), k);
        double b = element(info.dtype, want.data.data(), k);
        if ((std::isnan(a) && std::isnan(b)) || a == b)
          continue;
        double diff = std::fabs(a - b);
        if (!(diff <= atol + rtol * std::fabs(b))) {
          if (!bad++)
            firstBad = k;
          worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
        }
      }
      if (bad) {
        char worstText[32];
        snprintf(worstText, sizeof worstText, "%.3g", worst);
        return fail("fail", where + ": " + Twine(bad) + " of " + Twine(numElements) + " elements differ (first at " +
                                Twine(firstBad) + ", max abs error " + worstText + ")");
      }
    }
  }
  kiln_model_close(model);
#ifdef KILN_CONFORMANCE_CUDA
  kiln_cuda_model_close(gpuModel);
#endif
  r.status = "pass";
  return r;
}

/// --pack: compiles one test into DIR/<id>/model.so, writes its data sets
/// as raw tensors (DIR/<id>/<k>/in<i>.bin, out<i>.bin) and its kernels' host
/// emulation source (DIR/emulate-src/<cubin hash>.cpp); status "packed".
Result packTest(const std::string &id, const std::string &dir) {
  Result r{id, "", "", "", "", ""};
  std::string modelPath = dir + "/model.onnx";
  std::tie(r.op, r.opset) = modelFacts(modelPath);
  auto fail = [&](const std::string &status, const Twine &message) {
    r.status = status;
    r.message = message.str();
    return r;
  };
  SmallString<256> out(packDir.getValue());
  sys::path::append(out, id);
  if (std::error_code ec = sys::fs::create_directories(out))
    return fail("error", "cannot create " + out + ": " + ec.message());

  TestCompiler tc(modelPath);
  std::string rangeError;
  if (!readRanges(dir, tc.options, rangeError))
    return fail("error", rangeError);
  tc.options.output = (out + "/model").str();
  tc.options.shared = true;
  kiln::CompiledObject compiled;
  if (failed(kiln::compileModel(tc.context, tc.options, nulls(), &compiled)))
    return fail("unsupported", tc.error());
  // The runner needs the shared object alone.
  sys::fs::remove(out + "/model.h");
  sys::fs::remove(out + "/model.o");

  SmallString<256> emulate(packDir.getValue());
  sys::path::append(emulate, "emulate-src");
  sys::fs::create_directories(emulate);
  char hash[32];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)kiln_image_hash(compiled.cuda->cubin.data()));
  {
    // Tests whose kernels compile to the same cubin share one file (their
    // sources differ only in comments); written under a name of this
    // process's and renamed, so a reader never sees half of one.
    std::string final = (emulate + "/" + hash + ".cpp").str();
    std::string temp = final + "." + std::to_string(getpid());
    std::error_code ec;
    {
      raw_fd_ostream os(temp, ec);
      if (ec)
        return fail("error", "cannot write the emulation source: " + ec.message());
      os << kiln::hostEmulationSource(*compiled.cuda, emulateMaxBlock);
    }
    if ((ec = sys::fs::rename(temp, final)))
      return fail("error", "cannot write the emulation source: " + ec.message());
  }

  std::vector<std::string> sets;
  std::error_code ec;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (StringRef(sys::path::filename(it->path())).starts_with("test_data_set_"))
      sets.push_back(it->path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty())
    return fail("error", "no test_data_set folder");
  const kiln::ArtifactInfo &info = compiled.info;
  for (size_t k = 0; k < sets.size(); ++k) {
    std::string setOut = (out + "/" + std::to_string(k)).str();
    sys::fs::create_directories(setOut);
    // Over ranges: the sizes of the symbols, from the input axes that are
    // one symbol each, and every tensor's shape at them.
    std::map<std::string, int64_t> sizes;
    auto shapeOf = [&](const kiln::TensorSignature &sig) {
      std::vector<int64_t> shape = sig.shape;
      for (size_t a = 0; a < sig.dims.size() && a < shape.size(); ++a)
        if (std::optional<kiln::DimExpr> e = kiln::DimExpr::parse(sig.dims[a]))
          if (std::optional<int64_t> v = e->evaluate(sizes))
            shape[a] = *v;
      return shape;
    };
    for (size_t i = 0; i < info.inputs.size() && !info.symbols.empty(); ++i) {
      auto buffer = MemoryBuffer::getFile(sets[k] + "/input_" + std::to_string(i) + ".pb", false, false);
      kiln::TensorBytes t;
      std::string error;
      if (!buffer || !kiln::parseTensorFile((*buffer)->getBuffer(), t, error))
        continue; // copy() below reports it
      const kiln::TensorSignature &sig = info.inputs[i];
      for (size_t a = 0; a < sig.dims.size() && a < t.dims.size(); ++a)
        if (std::optional<kiln::DimExpr> e = kiln::DimExpr::parse(sig.dims[a]);
            e && e->symbols().size() == 1 && *e == kiln::DimExpr::symbol(e->symbols()[0]))
          sizes[e->symbols()[0]] = t.dims[a];
    }
    if (!info.symbols.empty()) {
      // The sizes, in the symbols' order, for kiln-pack-run.
      std::string text;
      for (const kiln::DimSymbol &s : info.symbols) {
        if (!sizes.count(s.name))
          return fail("fail", sys::path::filename(sets[k]) + ": no input gives the size of '" + s.name + "'");
        text += (text.empty() ? "" : " ") + std::to_string(sizes[s.name]);
      }
      std::error_code ec;
      raw_fd_ostream os(setOut + "/dims.txt", ec);
      if (ec)
        return fail("error", "cannot write " + setOut + "/dims.txt");
      os << text << "\n";
    }
    auto copy = [&](const std::string &from, const std::string &to, const kiln::TensorSignature &sig) -> bool {
      auto buffer = MemoryBuffer::getFile(from, false, false);
      kiln::TensorBytes t;
      std::string error;
      if (!buffer || !kiln::parseTensorFile((*buffer)->getBuffer(), t, error)) {
        fail("error", "cannot read " + from + (error.empty() ? "" : ": " + error));
        return false;
      }
      std::vector<int64_t> shape = shapeOf(sig);
      size_t bytes = sig.sizeBytes;
      if (!sig.dims.empty()) {
        bytes = kiln_dtype_size(kiln_dtype_t(sig.dtype));
        for (int64_t d : shape)
          bytes *= size_t(d);
      }
      if (fromOnnxType(t.dataType) != sig.dtype || t.dims != shape || t.data.size() != bytes) {
        fail("fail", sys::path::filename(sets[k]) + ": '" + sig.name + "' is " + kiln::onnxTypeName(t.dataType) + " " +
                         shapeText(t.dims) + " in the test data, " + kiln_dtype_name(kiln_dtype_t(sig.dtype)) + " " +
                         shapeText(shape) + " in the model");
        return false;
      }
      std::error_code ec;
      raw_fd_ostream os(to, ec);
      if (ec) {
        fail("error", "cannot write " + to);
        return false;
      }
      os << t.data;
      return true;
    };
    for (size_t i = 0; i < info.inputs.size(); ++i)
      if (!copy(sets[k] + "/input_" + std::to_string(i) + ".pb", setOut + "/in" + std::to_string(i) + ".bin",
                info.inputs[i]))
        return r;
    for (size_t i = 0; i < info.outputs.size(); ++i)
      if (!copy(sets[k] + "/output_" + std::to_string(i) + ".pb", setOut + "/out" + std::to_string(i) + ".bin",
                info.outputs[i]))
        return r;
  }
  if (sys::fs::exists(dir + "/tolerance.txt") &&
      sys::fs::copy_file(dir + "/tolerance.txt", (out + "/tolerance.txt").str()))
    return fail("error", "cannot copy " + dir + "/tolerance.txt");
  r.status = "packed";
  return r;
}

//===----------------------------------------------------------------------===//
// The parent: scheduling, report, expectations
//===----------------------------------------------------------------------===//

/// One line on the pipe: status \t op \t message (tabs/newlines flattened).
std::string encode(const Result &r) {
  auto clean = [](std::string s) {
    for (char &c : s)
      if (c == '\t' || c == '\n' || c == '\r')
        c = ' ';
    return s;
  };
  return r.status + "\t" + clean(r.op) + "\t" + r.opset + "\t" + r.kilnOps + "\t" + clean(r.message) + "\n";
}

struct Running {
  pid_t pid;
  int fd;
  size_t index;
  std::chrono::steady_clock::time_point start;
  std::string output;
};

void finish(Running &job, Result &r, int waitStatus, bool timedOut) {
  SmallVector<StringRef, 5> parts;
  StringRef(job.output).rtrim("\n").split(parts, '\t', 4);
  if (timedOut) {
    r.status = "timeout";
    r.message = "killed after " + std::to_string(timeoutSeconds) + " s";
  } else if (parts.size() == 5 && WIFEXITED(waitStatus) && WEXITSTATUS(waitStatus) == 0) {
    r.status = parts[0].str();
    r.op = parts[1].str();
    r.opset = parts[2].str();
    r.kilnOps = parts[3].str();
    r.message = parts[4].str();
  } else {
    r.status = "crash";
    r.message = WIFSIGNALED(waitStatus) ? std::string("killed by signal ") + strsignal(WTERMSIG(waitStatus))
                                        : "exited with status " + std::to_string(WEXITSTATUS(waitStatus));
    if (parts.size() >= 2)
      r.op = parts[1].str();
  }
}

/// Whether device 0 opens, asked in a child: a parent that opened a device
/// could not use CUDA in the children it forks for the tests.
bool gpuPresent() {
#ifdef KILN_CONFORMANCE_CUDA
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    std::string error;
    _exit(kiln::CudaDevice::open(0, error) ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
#else
  return false;
#endif
}

void runAll(std::vector<Result> &results, const std::vector<std::string> &dirs) {
  std::vector<Running> running;
  size_t next = 0, done = 0;
  while (done < results.size()) {
    while (next < results.size() && running.size() < std::max(1u, jobs.getValue())) {
      int fds[2];
      if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
      }
      fflush(nullptr);
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        Result r = packDir.empty() ? runTest(results[next].id, dirs[next]) : packTest(results[next].id, dirs[next]);
        std::string line = encode(r);
        ssize_t ignored = write(fds[1], line.data(), line.size());
        (void)ignored;
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next, std::chrono::steady_clock::now(), ""});
      ++next;
    }
    std::vector<pollfd> polls;
    for (Running &j : running)
      polls.push_back({j.fd, POLLIN, 0});
    poll(polls.data(), polls.size(), 200);
    for (size_t i = 0; i < running.size();) {
      Running &j = running[i];
      char buf[4096];
      bool closed = false;
      if (polls[i].revents & (POLLIN | POLLHUP)) {
        ssize_t n = read(j.fd, buf, sizeof buf);
        if (n > 0)
          j.output.append(buf, n);
        else
          closed = true;
      }
      bool timedOut = std::chrono::steady_clock::now() - j.start > std::chrono::seconds(timeoutSeconds);
      if (!closed && !timedOut) {
        ++i;
        continue;
      }
      if (timedOut && !closed)
        kill(j.pid, SIGKILL);
      int status = 0;
      waitpid(j.pid, &status, 0);
      close(j.fd);
      Result &r = results[j.index];
      finish(j, r, status, timedOut && !closed);
      if (verbose)
        outs() << r.status << " " << r.id << (r.message.empty() ? "" : ": ") << r.message << "\n";
      ++done;
      running.erase(running.begin() + i);
      polls.erase(polls.begin() + i);
    }
  }
}

std::string markdownEscape(StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '`')
      out += "'";
    else
      out += c;
  }
  return out.size() > 200 ? out.substr(0, 197) + "..." : out;
}

void writeReport(const std::vector<Result> &results) {
  std::error_code ec;
  raw_fd_ostream os(report, ec);
  if (ec) {
    errs() << "kiln-conformance: cannot write " << report << ": " << ec.message() << "\n";
    exit(2);
  }
  std::map<std::string, std::map<std::string, int>> byFolder;
  for (const Result &r : results)
    byFolder[StringRef(r.id).split('/').first.str()][r.status]++;
  const char *statuses[] = {"pass", "fail", "unsupported", "error", "crash", "timeout"};
  os << "<!-- Generated by kiln-conformance --report; do not edit. -->\n"
     << "# ONNX conformance (CPU)\n\n"
     << "The ONNX backend test data (ONNX 1.23), compiled with kilnc's CPU "
        "target and compared with rtol "
     << rtolOption << ", atol " << atolOption << ". `make conformance` regenerates this file.\n\n"
     << "| folder | tests | pass | fail | unsupported | error | crash | timeout |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  std::map<std::string, int> total;
  for (auto &[folder, counts] : byFolder) {
    int n = 0;
    for (auto &[s, c] : counts)
      n += c, total[s] += c;
    os << "| " << folder << " | " << n;
    for (const char *s : statuses)
      os << " | " << counts[s];
    os << " |\n";
  }
  os << "| **all** | " << results.size();
  for (const char *s : statuses)
    os << " | " << total[s];
  os << " |\n\n## By op (node tests)\n\n"
     << "| op | tests | pass | fail | unsupported | other |\n"
     << "| --- | --- | --- | --- | --- | --- |\n";
  std::map<std::string, std::map<std::string, int>> byOp;
  for (const Result &r : results)
    if (StringRef(r.id).starts_with("node/"))
      byOp[r.op.empty() ? "(no node)" : r.op][r.status]++;
  for (auto &[op, counts] : byOp) {
    int n = 0;
    for (auto &[s, c] : counts)
      n += c;
    int other = n - counts["pass"] - counts["fail"] - counts["unsupported"];
    os << "| " << op << " | " << n << " | " << counts["pass"] << " | " << counts["fail"] << " | "
       << counts["unsupported"] << " | " << other << " |\n";
  }
  os << "\n## Every test\n\n| test | result | message |\n| --- | --- | --- |\n";
  for (const Result &r : results)
    os << "| " << r.id << " | " << r.status << " | " << markdownEscape(r.message) << " |\n";
}

/// docs/supported-ops.md: per ONNX op with an importer handler, the kiln
/// ops its node tests import to, the opsets of the passing tests, the pass
/// count and the limitations the failing tests ran into.
void writeSupportedOps(const std::vector<Result> &results) {
  std::error_code ec;
  raw_fd_ostream os(supportedOps, ec);
  if (ec) {
    errs() << "kiln-conformance: cannot write " << supportedOps << ": " << ec.message() << "\n";
    exit(2);
  }
  struct OpFacts {
    int tests = 0, pass = 0;
    std::set<int> opsets;
    std::set<std::string> kilnOps, limits;
  };
  std::map<std::string, OpFacts> facts;
  for (const Result &r : results) {
    if (!StringRef(r.id).starts_with("node/") || StringRef(r.id).ends_with("_expanded") || r.op.empty())
      continue;
    OpFacts &f = facts[r.op];
    ++f.tests;
    if (r.status == "pass") {
      ++f.pass;
      int v = 0;
      if (!StringRef(r.opset).getAsInteger(10, v))
        f.opsets.insert(v);
      SmallVector<StringRef> names;
      StringRef(r.kilnOps).split(names, ' ', -1, false);
      for (StringRef n : names)
        f.kilnOps.insert(n.drop_front(5).str()); // drop "kiln."
    } else if (r.status == "unsupported") {
      // The part after "(Op, opset N): ", or after the file name.
      StringRef m(r.message);
      size_t at = m.find("): ");
      StringRef why = at != StringRef::npos ? m.drop_front(at + 3) : m.rsplit(".onnx: ").second;
      if (!why.empty())
        f.limits.insert(why.take_front(110).str());
    }
  }
  os << "<!-- Generated by kiln-conformance --supported-ops; do not edit. -->\n"
     << "# Supported ONNX ops\n\n"
     << "Every op the importer handles (the default domain's, then those of "
        "ai.onnx.preview.training), as measured on the ONNX "
        "node tests (the `_expanded` variants excluded): the kiln core ops its "
        "passing tests decompose into, the opsets of those tests, how many of "
        "its tests pass, and what the others ran into. `make conformance` "
        "regenerates this file; docs/dialect.md describes the core ops.\n\n"
     << "| ONNX op | kiln ops | opsets passing | node tests passing | limitations seen |\n"
     << "| --- | --- | --- | --- | --- |\n";
  for (const std::string &op : kiln::supportedOnnxOps()) {
    const OpFacts &f = facts[op];
    std::string opsets;
    if (!f.opsets.empty())
      opsets =
          std::to_string(*f.opsets.begin()) + (f.opsets.size() > 1 ? "-" + std::to_string(*f.opsets.rbegin()) : "");
    std::string kops, limits;
    for (const std::string &k : f.kilnOps)
      kops += (kops.empty() ? "" : ", ") + k;
    int shown = 0;
    for (const std::string &l : f.limits)
      if (shown++ < 3)
        limits += (limits.empty() ? "" : "; ") + markdownEscape(l);
    if (f.limits.size() > 3)
      limits += "; ...";
    os << "| " << op << " | " << kops << " | " << opsets << " | "
       << (f.tests ? std::to_string(f.pass) + " of " + std::to_string(f.tests) : std::string("no node test")) << " | "
       << limits << " |\n";
  }
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "kiln-conformance: run the ONNX backend test suite (CPU or CUDA target)\n");
  if (target != "cpu" && target != "cuda") {
    errs() << "kiln-conformance: --target must be cpu or cuda, found '" << target << "'\n";
    return 2;
  }
  if (precision != "fp32" && precision != "fp16" && precision != "bf16") {
    errs() << "kiln-conformance: --precision expects fp32, fp16 or bf16, found '" << precision << "'\n";
    return 2;
  }
  if (emulateMaxBlock == 0 || !isPowerOf2_32(emulateMaxBlock) || emulateMaxBlock > 1024) {
    errs() << "kiln-conformance: --emulate-max-block expects a power of two from 1 to 1024, found " << emulateMaxBlock
           << "\n";
    return 2;
  }
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();

  if (requireGpu && target == "cuda" && !emulateGpu) {
    if (!gpuPresent()) {
      outs() << "kiln-conformance: no CUDA device (or no CUDA runtime in this "
                "build): skipped\n";
      return 77;
    }
  }

  if (!packDir.empty() && target != "cuda") {
    errs() << "kiln-conformance: --pack needs --target=cuda\n";
    return 2;
  }
  std::set<std::string> only;
  if (!onlyList.empty()) {
    auto buffer = MemoryBuffer::getFile(onlyList);
    if (!buffer) {
      errs() << "kiln-conformance: cannot read " << onlyList << "\n";
      return 2;
    }
    SmallVector<StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, false);
    for (StringRef line : lines)
      if (!line.trim().empty() && !line.trim().starts_with("#"))
        only.insert(line.trim().str());
  }

  std::vector<Result> results;
  std::vector<std::string> dirs;
  Regex re(filter);
  SmallVector<StringRef> folderList;
  if (folders.empty())
    folderList.assign(std::begin(kFolders), std::end(kFolders));
  else
    StringRef(folders).split(folderList, ',', -1, false);
  for (StringRef folder : folderList) {
    SmallString<256> root(suiteDir.getValue());
    sys::path::append(root, folder);
    std::vector<std::string> names;
    std::error_code ec;
    for (sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
      if (sys::fs::exists(it->path() + "/model.onnx"))
        names.push_back(sys::path::filename(it->path()).str());
    std::sort(names.begin(), names.end());
    for (const std::string &n : names) {
      std::string id = folder.str() + "/" + n;
      if ((!filter.empty() && !re.match(id)) || (!onlyList.empty() && !only.count(id)))
        continue;
      results.push_back({id, "", "", "", "", ""});
      dirs.push_back((root + "/" + n).str());
    }
  }
  if (results.empty()) {
    // 77: CTest's skip code; the suite is data beside the checkout.
    outs() << "kiln-conformance: no tests found under " << suiteDir << (filter.empty() ? "" : " matching the filter")
           << ": skipped\n";
    return 77;
  }

  auto t0 = std::chrono::steady_clock::now();
  runAll(results, dirs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (!packDir.empty()) {
    // The manifest lists what was packed; a test that was not leaves no
    // folder behind, and not-packed.txt says why.
    std::error_code ec;
    raw_fd_ostream manifest(packDir + "/manifest.txt", ec);
    raw_fd_ostream notPacked(packDir + "/not-packed.txt", ec);
    if (ec) {
      errs() << "kiln-conformance: cannot write into " << packDir << ": " << ec.message() << "\n";
      return 2;
    }
    size_t packed = 0;
    for (const Result &r : results) {
      if (r.status == "packed") {
        manifest << r.id << "\n";
        ++packed;
        continue;
      }
      sys::fs::remove_directories(packDir + "/" + r.id);
      notPacked << r.id << "\t" << r.status << "\t" << r.message << "\n";
      outs() << "not packed: " << r.id << ": " << r.status << ": " << r.message << "\n";
    }
    outs() << "packed " << packed << " of " << results.size() << " tests into " << packDir << " ("
           << format("%.0f", seconds) << " s)\n";
    return packed == results.size() ? 0 : 1;
  }

  std::map<std::string, std::pair<int, int>> perFolder; // pass, total
  int compiledOnly = 0;
  std::string notRun;
  for (const Result &r : results) {
    auto &p = perFolder[StringRef(r.id).split('/').first.str()];
    p.second++;
    p.first += r.status == "pass";
    if (r.status == "compiled") {
      ++compiledOnly;
      if (notRun.empty())
        notRun = StringRef(r.message).split("not run: ").second.str();
    }
  }
  // Without a GPU nothing runs: say so, and how many compiled.
  if (compiledOnly)
    outs() << "cuda: " << compiledOnly << " of " << results.size() << " models compiled for " << gpuArch
           << " with NVRTC but were not run (" << notRun << ")\n";
  int passed = 0;
  for (auto &[folder, p] : perFolder) {
    outs() << folder << ": " << p.first << " of " << p.second << " pass\n";
    passed += p.first;
  }
  int crashes = 0;
  for (const Result &r : results)
    if (r.status == "crash" || r.status == "timeout") {
      ++crashes;
      outs() << r.status << ": " << r.id << ": " << r.message << "\n";
    }
  outs() << "total: " << passed << " of " << results.size() << " pass, " << crashes << " crash or time out ("
         << format("%.0f", seconds) << " s)\n";

  if (!report.empty())
    writeReport(results);
  if (!supportedOps.empty())
    writeSupportedOps(results);
  if (!writeExpect.empty()) {
    std::error_code ec;
    raw_fd_ostream os(writeExpect, ec);
    os << "# Tests that pass; kiln-conformance --expect fails if one stops passing.\n"
       << "# Regenerate with `make conformance` after adding coverage.\n";
    for (const Result &r : results)
      if (r.status == "pass")
        os << r.id << "\n";
  }
  int regressions = 0;
  if (!expect.empty()) {
    auto buffer = MemoryBuffer::getFile(expect);
    if (!buffer) {
      errs() << "kiln-conformance: cannot read " << expect << "\n";
      return 2;
    }
    std::map<std::string, const Result *> byId;
    for (const Result &r : results)
      byId[r.id] = &r;
    SmallVector<StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, false);
    for (StringRef line : lines) {
      line = line.trim();
      if (line.empty() || line.starts_with("#"))
        continue;
      auto it = byId.find(line.str());
      if (it == byId.end()) {
        if (filter.empty()) {
          outs() << "REGRESSION: " << line << " is expected to pass but was not found\n";
          ++regressions;
        }
        continue;
      }
      // Without a GPU, a CUDA test meets its expectation by compiling;
      // with --require-gpu it must run and pass.
      bool compiledOnly = it->second->status == "compiled" && !requireGpu;
      if (it->second->status != "pass" && !compiledOnly) {
        outs() << "REGRESSION: " << line << " is expected to pass: " << it->second->status << ": "
               << it->second->message << "\n";
        ++regressions;
      }
    }
    outs() << regressions << " regressions against " << expect << "\n";
  }
  return regressions ? 1 : 0;
}

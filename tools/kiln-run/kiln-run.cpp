//===- kiln-run.cpp - load, run, check and time a shared artifact ---------===//
//
// Loads PREFIX.so through its generic entry (kiln_artifact_v1) and the
// runtime API only, the way any application can. Inputs come from .npy or
// ONNX TensorProto .pb files; outputs are written as .npy and compared like
// numpy.allclose (|a - b| <= atol + rtol * |b|, NaN equal to NaN) against
// expected files. A training step (kilnc train) runs --steps times over its
// inputs (a file may hold one batch per step), starting from the artifact's
// initial state or a saved one; the state can be saved, written as .npy and
// its parameters written back into the ONNX model. A CUDA artifact
// (kilnc --target=cuda --shared) runs on GPU 0 through kiln/runtime_cuda.h,
// with the inputs copied to device buffers and the outputs copied back.
// Exits 1 on any failure or mismatch.
//
//===----------------------------------------------------------------------===//

#include "ElfCheck.h"
#include "kiln/Compiler/TensorData.h"
#include "kiln/runtime.h"
#ifdef KILN_RUN_CUDA
#include "CudaDevice.h"
#include "kiln/runtime_cuda.h"
#endif

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <memory>

using namespace llvm;

static cl::OptionCategory runCategory("kiln-run options");
static cl::opt<std::string> artifactPath(cl::Positional, cl::Required,
                                         cl::desc("<PREFIX.so>"),
                                         cl::cat(runCategory));
static cl::list<std::string>
    inputs("input", cl::value_desc("[NAME=]FILE"),
           cl::desc("an input (.npy or ONNX TensorProto .pb); without NAME, "
                    "the name stored in the .pb or the next unset input"),
           cl::cat(runCategory));
static cl::opt<std::string> outputDir("output-dir", cl::value_desc("DIR"),
                                      cl::desc("write each output as NAME.npy"),
                                      cl::cat(runCategory));
static cl::list<std::string>
    compares("compare", cl::value_desc("[NAME=]FILE"),
             cl::desc("compare an output with expected data (.npy or .pb)"),
             cl::cat(runCategory));
static cl::opt<double> relTol("rtol", cl::init(1e-4),
                            cl::desc("relative tolerance (default 1e-4)"),
                            cl::cat(runCategory));
static cl::opt<double> absTol("atol", cl::init(1e-5),
                            cl::desc("absolute tolerance (default 1e-5)"),
                            cl::cat(runCategory));
static cl::opt<unsigned> bench("bench", cl::init(0), cl::value_desc("N"),
                               cl::desc("time N runs after a warm-up and print "
                                        "the median latency"),
                               cl::cat(runCategory));
/// --threads; made in main, after an LLVM library's own "threads" option
/// (linked in through the compiler's libraries) has moved out of the way.
static cl::opt<unsigned> *threads;
static cl::opt<unsigned>
    steps("steps", cl::init(1), cl::value_desc("N"),
          cl::desc("run N times; an input file of shape [S, <input shape>] "
                   "gives run i its batch i mod S; outputs are stacked to "
                   "[N, <output shape>] when N > 1 (default 1)"),
          cl::cat(runCategory));
static cl::opt<std::string>
    stateIn("state", cl::value_desc("FILE"),
            cl::desc("training step: start from this state (raw bytes, as "
                     "--save-state writes) instead of the initial one"),
            cl::cat(runCategory));
static cl::opt<std::string>
    stateOut("save-state", cl::value_desc("FILE"),
             cl::desc("training step: write the state after the runs"),
             cl::cat(runCategory));
static cl::opt<std::string>
    exportOnnx("export-onnx", cl::value_desc("MODEL.onnx=OUT.onnx"),
               cl::desc("training step: write a copy of MODEL.onnx whose "
                        "initializers hold the trained parameters"),
               cl::cat(runCategory));

namespace {

[[noreturn]] void fail(const Twine &message) {
  errs() << "kiln-run: error: " << message << "\n";
  // What standard output could not take is lost either way; LLVM would
  // abort at exit over it.
  outs().flush();
  outs().clear_error();
  std::exit(1);
}

/// A tensor in host memory, described with kiln dtypes.
struct Tensor {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::string data;
};

kiln_dtype_t fromOnnxType(int t) {
  return static_cast<kiln_dtype_t>(kiln::kilnDTypeOfOnnx(t));
}

/// numpy descr of a kiln dtype; bf16 has none in numpy and is stored as its
/// bit pattern ('<u2', which reads back as u16).
const char *npyDescr(kiln_dtype_t t) {
  switch (t) {
  case KILN_DTYPE_F32: return "<f4";
  case KILN_DTYPE_F64: return "<f8";
  case KILN_DTYPE_F16: return "<f2";
  case KILN_DTYPE_BF16: return "<u2";
  case KILN_DTYPE_I8: return "|i1";
  case KILN_DTYPE_I32: return "<i4";
  case KILN_DTYPE_I64: return "<i8";
  case KILN_DTYPE_BOOL: return "|b1";
  case KILN_DTYPE_U8: return "|u1";
  case KILN_DTYPE_U16: return "<u2";
  case KILN_DTYPE_U32: return "<u4";
  case KILN_DTYPE_U64: return "<u8";
  case KILN_DTYPE_I16: return "<i2";
  default: return "";
  }
}

kiln_dtype_t fromNpyDescr(StringRef d) {
  if (d == "<f4") return KILN_DTYPE_F32;
  if (d == "<f8") return KILN_DTYPE_F64;
  if (d == "<f2") return KILN_DTYPE_F16;
  if (d == "|i1" || d == "<i1") return KILN_DTYPE_I8;
  if (d == "<i4") return KILN_DTYPE_I32;
  if (d == "<i8") return KILN_DTYPE_I64;
  if (d == "|b1") return KILN_DTYPE_BOOL;
  if (d == "|u1" || d == "<u1") return KILN_DTYPE_U8;
  if (d == "<u2") return KILN_DTYPE_U16;
  if (d == "<u4") return KILN_DTYPE_U32;
  if (d == "<u8") return KILN_DTYPE_U64;
  if (d == "<i2") return KILN_DTYPE_I16;
  return KILN_DTYPE_INVALID;
}

/// Reads an .npy file (format 1.0-3.0, C order, little-endian).
Tensor readNpy(StringRef path, StringRef bytes) {
  auto bad = [&](const Twine &why) -> Tensor {
    fail("'" + path + "': not a supported .npy file: " + why);
  };
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return bad("no .npy magic");
  unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = (headerLen << 8) | static_cast<uint8_t>(bytes[8 + i]);
    start = 12;
  } else {
    return bad("unknown version " + Twine(major));
  }
  if (headerLen > bytes.size() - start)
    return bad("truncated header");
  StringRef header = bytes.substr(start, headerLen);
  auto field = [&](StringRef key) {
    size_t at = header.find("'" + key.str() + "'");
    if (at == StringRef::npos)
      bad("no '" + key + "' in the header");
    StringRef rest = header.substr(at + key.size() + 2).ltrim(" :");
    return rest;
  };
  StringRef descr = field("descr");
  descr = descr.drop_front(1).take_until([](char c) { return c == '\''; });
  Tensor t;
  t.dtype = fromNpyDescr(descr);
  if (t.dtype == KILN_DTYPE_INVALID)
    return bad("dtype '" + descr + "' is not supported");
  if (field("fortran_order").starts_with("True"))
    return bad("Fortran order is not supported");
  StringRef shape = field("shape");
  shape = shape.drop_front(1).take_until([](char c) { return c == ')'; });
  SmallVector<StringRef> dims;
  shape.split(dims, ',', -1, /*KeepEmpty=*/false);
  uint64_t count = 1;
  for (StringRef d : dims) {
    d = d.trim();
    if (d.empty())
      continue;
    int64_t v;
    if (d.getAsInteger(10, v) || v < 0)
      return bad("bad dimension '" + d + "'");
    t.shape.push_back(v);
    // The product of the dimensions, and the bytes, without wrapping.
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(v), &count))
      return bad("the dimensions' product overflows 64 bits");
  }
  size_t dataStart = start + headerLen;
  uint64_t size;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(kiln_dtype_size(t.dtype)), &size))
    return bad("the data size overflows 64 bits");
  if (bytes.size() - dataStart != size)
    return bad("expected " + Twine(size) + " data bytes, found " +
               Twine(bytes.size() - dataStart));
  t.data = bytes.substr(dataStart).str();
  return t;
}

Tensor readTensorFile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    fail("cannot read '" + path + "': " + buffer.getError().message());
  StringRef bytes = (*buffer)->getBuffer();
  if (path.ends_with(".npy"))
    return readNpy(path, bytes);
  kiln::TensorBytes decoded;
  std::string error;
  if (!kiln::parseTensorFile(bytes, decoded, error))
    fail("'" + path + "': " + error);
  Tensor t;
  t.name = decoded.name;
  t.dtype = fromOnnxType(decoded.dataType);
  t.shape = decoded.dims;
  t.data = std::move(decoded.data);
  return t;
}

void writeNpy(StringRef path, const Tensor &t) {
  std::string header = "{'descr': '" + std::string(npyDescr(t.dtype)) +
                       "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape.size(); ++i)
    header += (i ? ", " : "") + std::to_string(t.shape[i]);
  if (t.shape.size() == 1)
    header += ","; // numpy's one-element tuple
  header += "), }";
  // Pad so that the data starts at a multiple of 64 bytes; end with '\n'.
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    fail("cannot write '" + path + "': " + ec.message());
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header << t.data;
  os.close();
  if (os.has_error()) {
    // A full disk: say so, leave no partial file, and do not let LLVM abort.
    ec = os.error();
    os.clear_error();
    sys::fs::remove(path);
    fail("cannot write '" + path + "': " + ec.message());
  }
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Element i of t as a double.
double element(const Tensor &t, size_t i) {
  return kiln::elementAsDouble(t.dtype, t.data.data(), i);
}

/// Splits "NAME=FILE" (or "FILE") into its parts.
std::pair<std::string, std::string> splitSpec(StringRef spec) {
  auto [name, file] = spec.split('=');
  if (file.empty())
    return {"", spec.str()};
  return {name.str(), file.str()};
}

/// Resolves which signature slot a file goes to: by explicit name, by the
/// name stored in the file, else the first slot not yet taken.
size_t resolveSlot(StringRef what, const std::string &explicitName,
                   const Tensor &t, const std::vector<kiln_tensor_info_t> &sig,
                   std::vector<bool> &taken) {
  std::string name = explicitName.empty() ? t.name : explicitName;
  if (!name.empty()) {
    for (size_t i = 0; i < sig.size(); ++i)
      if (name == sig[i].name) {
        if (taken[i])
          fail(what + " '" + name + "' is given twice");
        taken[i] = true;
        return i;
      }
    if (!explicitName.empty())
      fail("the model has no " + what + " named '" + name + "'");
  }
  for (size_t i = 0; i < sig.size(); ++i)
    if (!taken[i]) {
      taken[i] = true;
      return i;
    }
  fail("more " + what + " files than the model has " + what + "s");
}

void checkAgainst(StringRef what, const Tensor &t, const kiln_tensor_info_t &info) {
  if (t.dtype != info.dtype)
    fail(what + " '" + info.name + "': the file holds " +
         kiln_dtype_name(t.dtype) + ", the model expects " +
         kiln_dtype_name(info.dtype));
  if (!std::equal(t.shape.begin(), t.shape.end(), info.shape,
                  info.shape + info.rank) ||
      t.shape.size() != info.rank)
    fail(what + " '" + info.name + "': the file has shape " +
         shapeText(t.shape) + ", the model expects " +
         shapeText(ArrayRef<int64_t>(info.shape, info.rank)));
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  auto &registered = cl::getRegisteredOptions();
  if (auto it = registered.find("threads"); it != registered.end())
    it->second->setArgStr("llvm-threads");
  cl::opt<unsigned> threadsOption(
      "threads", cl::init(0), cl::value_desc("N"),
      cl::desc("run on N threads, the calling one included (default 0: "
               "every core)"),
      cl::cat(runCategory));
  threads = &threadsOption;
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "kiln-run: load a shared Kiln artifact, run it, check and time it\n\n"
      "  kiln-run build/mlp.so --input input=x.npy --output-dir out\n"
      "  kiln-run build/mlp.so --input x.pb --compare y.pb --bench 100\n");

  std::string path = artifactPath;
  if (!sys::path::has_parent_path(path))
    path = "./" + path; // dlopen searches the library path otherwise
  // A truncated file would fault inside dlopen.
  if (std::string why = kiln::elfIncomplete(path); !why.empty())
    fail("'" + artifactPath + "' " + why);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    fail("cannot load '" + artifactPath + "': " + dlerror());
  using EntryFn = const kiln_artifact_t *(*)();
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, "kiln_artifact_v1"));
  if (!entry)
    fail("'" + artifactPath +
         "' is not a Kiln shared artifact (no kiln_artifact_v1; compile "
         "with kilnc --shared)");
  kiln_model_t *model = nullptr;
  if (kiln_model_open(entry(), &model) != KILN_STATUS_OK)
    fail("'" + artifactPath + "': " + kiln_last_error());
  if (kiln_model_set_num_threads(model, *threads) != KILN_STATUS_OK)
    fail(Twine("cannot use ") + Twine(threads->getValue()) + " threads: " +
         kiln_last_error());
  // A CUDA artifact: its signature reads through the generic handle, its
  // run goes through the CUDA runtime on GPU 0.
  bool onGpu = kiln_model_is_cuda(model);
#ifdef KILN_RUN_CUDA
  std::unique_ptr<kiln::CudaDevice> device;
  kiln_cuda_model_t *gpuModel = nullptr;
  if (onGpu) {
    std::string error;
    device = kiln::CudaDevice::open(0, error);
    if (!device)
      fail("'" + artifactPath + "' is a CUDA artifact: cuda: " + error);
    if (kiln_cuda_model_open(entry(), 0, &gpuModel) != KILN_STATUS_OK)
      fail("'" + artifactPath + "': " + kiln_last_error());
  }
#else
  if (onGpu)
    fail("'" + artifactPath + "' is a CUDA artifact, and this kiln-run was "
         "built without the CUDA runtime (no CUDA toolkit at configure time)");
#endif

  std::vector<kiln_tensor_info_t> inSig(kiln_model_num_inputs(model));
  std::vector<kiln_tensor_info_t> outSig(kiln_model_num_outputs(model));
  for (size_t i = 0; i < inSig.size(); ++i)
    kiln_model_input_info(model, i, &inSig[i]);
  for (size_t i = 0; i < outSig.size(); ++i)
    kiln_model_output_info(model, i, &outSig[i]);

  if (steps == 0)
    fail("--steps must be at least 1");
  // Inputs; a file with one more leading dimension holds a batch per step.
  std::vector<Tensor> in(inSig.size());
  std::vector<Tensor> batches(inSig.size()); // data empty: the same every step
  std::vector<bool> inTaken(inSig.size(), false);
  for (const std::string &spec : inputs) {
    auto [name, file] = splitSpec(spec);
    Tensor t = readTensorFile(file);
    size_t slot = resolveSlot("input", name, t, inSig, inTaken);
    const kiln_tensor_info_t &sig = inSig[slot];
    bool batched = t.shape.size() == sig.rank + 1 && !t.shape.empty() &&
                   t.shape[0] > 0 && t.dtype == sig.dtype &&
                   std::equal(t.shape.begin() + 1, t.shape.end(), sig.shape);
    if (batched) {
      batches[slot] = std::move(t);
      in[slot].name = sig.name;
      in[slot].dtype = sig.dtype;
      in[slot].shape.assign(sig.shape, sig.shape + sig.rank);
      in[slot].data = batches[slot].data.substr(0, sig.size_bytes);
      continue;
    }
    checkAgainst("input", t, sig);
    in[slot] = std::move(t);
  }
  for (size_t i = 0; i < inSig.size(); ++i)
    if (!inTaken[i])
      fail(std::string("no file for input '") + inSig[i].name + "' (pass --input " +
           inSig[i].name + "=FILE)");

  // Outputs and arena, owned here.
  std::vector<Tensor> out(outSig.size());
  for (size_t i = 0; i < outSig.size(); ++i) {
    out[i].name = outSig[i].name;
    out[i].dtype = outSig[i].dtype;
    out[i].shape.assign(outSig[i].shape, outSig[i].shape + outSig[i].rank);
    out[i].data.assign(outSig[i].size_bytes, '\0');
  }
  // A CUDA model's arena is device memory (below).
  size_t arenaBytes = onGpu ? 0 : kiln_model_arena_bytes(model);
  size_t alignment = std::max<size_t>(kiln_model_arena_alignment(model), 16);
  // An arena of 2 MB or more starts on a 2 MB boundary and asks for
  // transparent huge pages: a convolution's k loop reads a new input
  // channel, often a new 4 KB page, at every step, and with 4 KB pages
  // those reads miss the TLB (resnet18: 2-4 % faster at one thread).
  constexpr size_t kHugePage = size_t(2) << 20;
  if (arenaBytes >= kHugePage)
    alignment = std::max(alignment, kHugePage);
  size_t allocBytes = (std::max<size_t>(arenaBytes, 1) + alignment - 1) / alignment * alignment;
  std::unique_ptr<void, decltype(&std::free)> arena(
      std::aligned_alloc(alignment, allocBytes), &std::free);
#ifdef MADV_HUGEPAGE
  // Only a hint: where huge pages are off, the arena keeps 4 KB pages.
  if (arena && alignment >= kHugePage)
    (void)madvise(arena.get(), allocBytes, MADV_HUGEPAGE);
#endif
  if (!arena)
    fail("cannot allocate an arena of " + Twine(arenaBytes) + " bytes");

  // The state of a training step, owned here like the arena.
  size_t numState = kiln_model_num_state(model);
  std::vector<kiln_state_info_t> stateSig(numState);
  for (size_t i = 0; i < numState; ++i)
    kiln_model_state_info(model, i, &stateSig[i]);
  size_t stateBytes = kiln_model_state_bytes(model);
  size_t stateAlign = std::max<size_t>(kiln_model_state_alignment(model), 16);
  std::unique_ptr<void, decltype(&std::free)> state(
      numState ? std::aligned_alloc(stateAlign, (stateBytes + stateAlign - 1) /
                                                    stateAlign * stateAlign)
               : nullptr,
      &std::free);
  if (numState && !state)
    fail("cannot allocate a state of " + Twine(stateBytes) + " bytes");
  if (!numState && (!stateIn.empty() || !stateOut.empty() || !exportOnnx.empty()))
    fail("'" + artifactPath + "' has no state (compile a training step with "
         "kilnc train): --state, --save-state and --export-onnx do not apply");
  if (numState && stateIn.empty()) {
    if (kiln_model_init_state(model, state.get(), stateBytes) != KILN_STATUS_OK)
      fail(Twine("cannot initialize the state: ") + kiln_last_error());
  } else if (numState) {
    // Refused unless it is this model's state, whole.
    if (kiln_model_load_state(model, state.get(), stateBytes, stateIn.c_str()) != KILN_STATUS_OK)
      fail(kiln_last_error());
  }

  std::vector<kiln_tensor_t> inViews, outViews;
  for (Tensor &t : in)
    inViews.push_back({t.dtype, t.shape.size(), t.shape.data(), t.data.data()});
  for (Tensor &t : out)
    outViews.push_back({t.dtype, t.shape.size(), t.shape.data(), t.data.data()});
#ifdef KILN_RUN_CUDA
  // Device copies of the inputs and outputs, and the device arena.
  std::vector<void *> dIn(in.size()), dOut(out.size());
  void *dArena = nullptr, *dState = nullptr;
  if (onGpu) {
    std::string error;
    for (size_t i = 0; i < in.size() && !error.size(); ++i)
      dIn[i] = device->allocate(inSig[i].size_bytes, error);
    for (size_t o = 0; o < out.size() && !error.size(); ++o)
      dOut[o] = device->allocate(outSig[o].size_bytes, error);
    if (error.empty() && kiln_cuda_model_arena_bytes(gpuModel) > 0)
      dArena = device->allocate(kiln_cuda_model_arena_bytes(gpuModel), error);
    // A training step's state: initialized (or loaded) here, on the device
    // for the steps, and back here after them.
    if (error.empty() && numState) {
      dState = device->allocate(stateBytes, error);
      if (dState)
        device->toDevice(dState, state.get(), stateBytes, error);
    }
    if (!error.empty())
      fail("cuda: " + error);
  }
  // One run on the device, its inputs already there.
  auto runOnDevice = [&] {
    std::string error;
    kiln_status_t s =
        numState ? kiln_cuda_model_run_with_state(gpuModel, dIn.data(), dIn.size(), dOut.data(),
                                                  dOut.size(), dArena, dState, device->stream())
                 : kiln_cuda_model_run(gpuModel, dIn.data(), dIn.size(), dOut.data(),
                                       dOut.size(), dArena, device->stream());
    if (s != KILN_STATUS_OK)
      fail(Twine("run failed: ") + kiln_last_error());
    if (!device->synchronize(error))
      fail("cuda: " + error);
  };
#endif
  auto run = [&] {
#ifdef KILN_RUN_CUDA
    if (onGpu) {
      std::string error;
      for (size_t i = 0; i < in.size(); ++i)
        if (!device->toDevice(dIn[i], in[i].data.data(), inSig[i].size_bytes, error))
          fail("cuda: " + error);
      runOnDevice();
      for (size_t o = 0; o < out.size(); ++o)
        if (!device->toHost(out[o].data.data(), dOut[o], outSig[o].size_bytes, error))
          fail("cuda: " + error);
      return;
    }
#endif
    kiln_status_t s =
        numState ? kiln_model_run_with_state(
                       model, inViews.data(), inViews.size(), outViews.data(),
                       outViews.size(), state.get(), stateBytes, arena.get(),
                       arenaBytes)
                 : kiln_model_run(model, inViews.data(), inViews.size(),
                                  outViews.data(), outViews.size(),
                                  arena.get(), arenaBytes);
    if (s != KILN_STATUS_OK)
      fail(Twine("run failed: ") + kiln_last_error());
  };
  // Each step takes its batch of the batched inputs; outputs are kept per
  // step when there are several.
  std::vector<std::string> stacked(out.size());
  for (unsigned step = 0; step < steps; ++step) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (batches[i].data.empty())
        continue;
      size_t count = batches[i].shape[0], size = inSig[i].size_bytes;
      std::memcpy(in[i].data.data(),
                  batches[i].data.data() + (step % count) * size, size);
    }
    run();
    if (steps > 1)
      for (size_t o = 0; o < out.size(); ++o)
        stacked[o] += out[o].data;
  }
#ifdef KILN_RUN_CUDA
  if (onGpu && numState) {
    std::string error;
    if (!device->toHost(state.get(), dState, stateBytes, error))
      fail("cuda: " + error);
  }
#endif

  auto fileName = [](StringRef name) {
    std::string file;
    for (char c : name)
      file += (isAlnum(c) || c == '.' || c == '-' || c == '_') ? c : '_';
    return file;
  };
  if (!outputDir.empty()) {
    if (std::error_code ec = sys::fs::create_directories(outputDir))
      fail("cannot create '" + outputDir + "': " + ec.message());
    for (size_t o = 0; o < out.size(); ++o) {
      Tensor t = out[o];
      if (steps > 1) {
        t.shape.insert(t.shape.begin(), steps);
        t.data = stacked[o];
      }
      SmallString<256> p(outputDir.getValue());
      sys::path::append(p, fileName(t.name) + ".npy");
      writeNpy(p, t);
      outs() << "wrote " << p << "\n";
    }
    // The state after the last step, one file per tensor.
    for (const kiln_state_info_t &s : stateSig) {
      Tensor t;
      t.name = s.tensor.name;
      t.dtype = s.tensor.dtype;
      t.shape.assign(s.tensor.shape, s.tensor.shape + s.tensor.rank);
      t.data.assign(static_cast<const char *>(state.get()) + s.offset,
                    s.tensor.size_bytes);
      SmallString<256> p(outputDir.getValue());
      sys::path::append(p, "state." + fileName(t.name) + ".npy");
      writeNpy(p, t);
      outs() << "wrote " << p << "\n";
    }
  }
  if (!stateOut.empty()) {
    // Atomic (a temporary, fsync, rename) and identified: the runtime's
    // state file (a header with the layout's fingerprint and a checksum).
    if (kiln_model_save_state(model, state.get(), stateBytes, stateOut.c_str()) != KILN_STATUS_OK)
      fail(kiln_last_error());
    outs() << "wrote " << stateOut << "\n";
  }
  if (!exportOnnx.empty()) {
    auto [modelPath, outPath] = StringRef(exportOnnx).split('=');
    if (modelPath.empty() || outPath.empty())
      fail("--export-onnx expects MODEL.onnx=OUT.onnx, found '" + exportOnnx + "'");
    auto modelBuffer = MemoryBuffer::getFile(modelPath, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (!modelBuffer)
      fail("cannot read '" + modelPath + "': " + modelBuffer.getError().message());
    std::vector<kiln::TensorBytes> values;
    for (const kiln_state_info_t &s : stateSig) {
      if (s.role != KILN_STATE_PARAMETER)
        continue;
      kiln::TensorBytes v;
      v.name = s.tensor.name;
      for (int t = 1; t < 32 && !v.dataType; ++t)
        if (kiln::kilnDTypeOfOnnx(t) == static_cast<int>(s.tensor.dtype))
          v.dataType = t;
      v.dims.assign(s.tensor.shape, s.tensor.shape + s.tensor.rank);
      v.numElements = static_cast<int64_t>(s.tensor.num_elements);
      v.data.assign(static_cast<const char *>(state.get()) + s.offset,
                    s.tensor.size_bytes);
      values.push_back(std::move(v));
    }
    std::string bytes, error;
    if (!kiln::replaceInitializers((*modelBuffer)->getBuffer(), values, bytes,
                                   error))
      fail("cannot write the parameters into '" + modelPath + "': " + error);
    // Written under a temporary name and renamed: no half-written model.
    SmallString<256> temp;
    int fd;
    if (std::error_code ec = sys::fs::createUniqueFile(outPath + ".tmp-%%%%%%%%", fd, temp))
      fail("cannot create '" + outPath + "': " + ec.message());
    {
      raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << bytes;
      os.close();
      if (os.has_error()) {
        sys::fs::remove(temp);
        fail("cannot write '" + outPath + "': " + os.error().message());
      }
    }
    if (std::error_code ec = sys::fs::rename(temp, outPath)) {
      sys::fs::remove(temp);
      fail("cannot write '" + outPath + "': " + ec.message());
    }
    outs() << "wrote " << outPath << "\n";
  }

  bool mismatch = false;
  std::vector<bool> cmpTaken(outSig.size(), false);
  for (const std::string &spec : compares) {
    auto [name, file] = splitSpec(spec);
    Tensor expected = readTensorFile(file);
    size_t slot = resolveSlot("output", name, expected, outSig, cmpTaken);
    checkAgainst("expected output", expected, outSig[slot]);
    const Tensor &actual = out[slot];
    double maxAbs = 0, maxRel = 0;
    size_t bad = 0, count = outSig[slot].num_elements;
    for (size_t i = 0; i < count; ++i) {
      double a = element(actual, i), b = element(expected, i);
      if (std::isnan(a) && std::isnan(b))
        continue;
      // Equal values (infinities included) differ by 0, not inf - inf.
      double diff = a == b ? 0 : std::fabs(a - b);
      if (std::isnan(diff))
        diff = INFINITY;
      maxAbs = std::max(maxAbs, diff);
      if (b != 0)
        maxRel = std::max(maxRel, diff / std::fabs(b));
      if (!(diff <= absTol + relTol * std::fabs(b)))
        ++bad;
    }
    outs() << "output '" << outSig[slot].name << "': max abs error "
           << format("%.3g", maxAbs) << ", max rel error "
           << format("%.3g", maxRel) << " (rtol " << format("%g", relTol.getValue())
           << ", atol " << format("%g", absTol.getValue()) << "): "
           << (bad ? "MISMATCH in " + std::to_string(bad) + " of " +
                         std::to_string(count) + " elements"
                   : std::string("ok"))
           << "\n";
    mismatch |= bad != 0;
  }

  if (bench > 0) {
    // On a GPU: the run and the wait for it, the data already on the device
    // (from the last run), as a model serving from device buffers sees it.
    auto timed = [&] {
#ifdef KILN_RUN_CUDA
      if (onGpu)
        return runOnDevice();
#endif
      run();
    };
    unsigned warmup = std::min(10u, bench.getValue());
    for (unsigned i = 0; i < warmup; ++i)
      timed();
    std::vector<double> us;
    for (unsigned i = 0; i < bench; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      timed();
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    outs() << "latency: median " << format("%.2f", us[us.size() / 2])
           << " us, min " << format("%.2f", us.front()) << " us over " << bench
           << " runs "
           << (onGpu ? std::string("on GPU 0")
                     : "on " + std::to_string(kiln_model_num_threads(model)) +
                           " threads")
           << "\n";
  }

#ifdef KILN_RUN_CUDA
  if (gpuModel)
    kiln_cuda_model_close(gpuModel);
  device.reset();
#endif
  kiln_model_close(model);
  outs().flush();
  if (outs().has_error()) {
    errs() << "kiln-run: error: cannot write to standard output: " << outs().error().message() << "\n";
    outs().clear_error();
    return 1;
  }
  return mismatch ? 1 : 0;
}

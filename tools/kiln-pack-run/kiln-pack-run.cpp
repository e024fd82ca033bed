//===- kiln-pack-run.cpp - the GPU pack's runner --------------------------===//
//
// Runs the CUDA artifacts of a GPU pack (`make gpu-pack`, tools/gpu-pack/)
// on device 0, in one process and one CUDA context, with nothing but libc,
// the C++ runtime, the NVIDIA driver and the CUDA libraries the runtime
// opens: no LLVM, MLIR or protobuf, so the pack runs on a bare GPU machine.
//
//   kiln-pack-run conformance DIR [--results FILE] [--after ID]
//   kiln-pack-run bench MODEL.so --input FILE... --expect FILE... [--seconds S]
//                                [--no-graphs]
//   kiln-pack-run train MODEL.so --steps N --batch-dir DIR --expect-loss FILE
//                                --expect-state FILE [--rtol R]
//   kiln-pack-run profile MODEL.so --input FILE... [--min-runs N]
//
// Data files are raw tensors: the bytes of the model's input or output, in
// its dtype and shape (the model's signature says which). Outputs compare
// like numpy.allclose: |a - b| <= atol + rtol * |b|, NaN equal to NaN.
//
// conformance: DIR/manifest.txt lists test ids, one a line; test ID is
// DIR/ID/model.so with data sets DIR/ID/<k>/in<i>.bin and out<i>.bin, k from
// 0. Each set runs twice (launched, then captured and replayed as a CUDA
// Graph) and both results are compared. A model compiled over ranges runs
// each set at the sizes of its k/dims.txt (one per dimension); a test's
// tolerance.txt (`RTOL ATOL`) loosens the tolerances for it. One line per test is appended to
// the results file, `ID<TAB>pass|fail|error<TAB>detail`, and flushed, so a
// caller that sees the process die knows which test killed it
// (tools/gpu-pack/run.sh restarts it with --after). A CUDA error leaves the
// context unusable, so after one the runner exits with status 3; a test that
// runs past --timeout seconds is recorded as `timeout` and the runner exits
// with status 4.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#include "ElfCheck.h"
#include "kiln/runtime.h"
#include "kiln/runtime_cuda.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

[[noreturn]] void usage(const std::string &why) {
  std::fprintf(stderr,
               "kiln-pack-run: error: %s\n"
               "usage:\n"
               "  kiln-pack-run conformance DIR [--results FILE] [--after ID] [--tests ID,...]\n"
               "                [--timeout S] [--rtol R] [--atol A]\n"
               "  kiln-pack-run bench MODEL.so --input FILE... --expect FILE... [--rtol R] [--atol A]\n"
               "                [--seconds S] [--warmup N] [--min-runs N] [--no-graphs]\n"
               "  kiln-pack-run train MODEL.so --steps N --batch-dir DIR --expect-loss FILE\n"
               "                --expect-state FILE [--rtol R]\n"
               "  kiln-pack-run profile MODEL.so --input FILE... [--min-runs N]\n",
               why.c_str());
  std::exit(2);
}

bool readFile(const std::string &path, std::string &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  bytes = ss.str();
  return true;
}

//===----------------------------------------------------------------------===//
// Elements as doubles, for every dtype of kiln/runtime.h
//===----------------------------------------------------------------------===//

/// A minifloat: `e` exponent bits, `m` mantissa bits, exponent `bias`.
/// ieee: all-ones exponent is inf (mantissa 0) or NaN; fn: only all-ones
/// exponent and mantissa is NaN, no inf; uz: the negative-zero pattern is
/// the only NaN, no inf.
enum class Special { Ieee, Fn, Uz, None };
double minifloat(unsigned bits, int e, int m, int bias, Special special) {
  unsigned sign = bits >> (e + m) & 1, exp = bits >> m & ((1u << e) - 1), man = bits & ((1u << m) - 1);
  unsigned allExp = (1u << e) - 1, allMan = (1u << m) - 1;
  if (special == Special::Uz && sign && exp == 0 && man == 0)
    return NAN;
  if (special == Special::Ieee && exp == allExp)
    return man ? NAN : (sign ? -INFINITY : INFINITY);
  if (special == Special::Fn && exp == allExp && man == allMan)
    return NAN;
  double v =
      exp == 0 ? std::ldexp(double(man), 1 - bias - m) : std::ldexp(double(man | (1u << m)), int(exp) - bias - m);
  return sign ? -v : v;
}

double element(kiln_dtype_t t, const char *p, size_t i) {
  auto at = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
  };
  // Narrow types take a byte each (kiln/runtime.h): the 4-bit float in the
  // low nibble, the 4- and 2-bit integers sign- or zero-extended.
  switch (t) {
  case KILN_DTYPE_F32:
    return at(0.0f);
  case KILN_DTYPE_F64:
    return at(0.0);
  case KILN_DTYPE_F16:
    return minifloat(at(uint16_t(0)), 5, 10, 15, Special::Ieee);
  case KILN_DTYPE_BF16:
    return minifloat(at(uint16_t(0)), 8, 7, 127, Special::Ieee);
  case KILN_DTYPE_I8:
    return at(int8_t(0));
  case KILN_DTYPE_I16:
    return at(int16_t(0));
  case KILN_DTYPE_I32:
    return at(int32_t(0));
  case KILN_DTYPE_I64:
    return double(at(int64_t(0)));
  case KILN_DTYPE_BOOL:
    return at(uint8_t(0)) != 0;
  case KILN_DTYPE_U8:
    return at(uint8_t(0));
  case KILN_DTYPE_U16:
    return at(uint16_t(0));
  case KILN_DTYPE_U32:
    return at(uint32_t(0));
  case KILN_DTYPE_U64:
    return double(at(uint64_t(0)));
  case KILN_DTYPE_F8E4M3FN:
    return minifloat(at(uint8_t(0)), 4, 3, 7, Special::Fn);
  case KILN_DTYPE_F8E4M3FNUZ:
    return minifloat(at(uint8_t(0)), 4, 3, 8, Special::Uz);
  case KILN_DTYPE_F8E5M2:
    return minifloat(at(uint8_t(0)), 5, 2, 15, Special::Ieee);
  case KILN_DTYPE_F8E5M2FNUZ:
    return minifloat(at(uint8_t(0)), 5, 2, 16, Special::Uz);
  case KILN_DTYPE_F8E8M0: {
    unsigned v = at(uint8_t(0));
    return v == 0xff ? NAN : std::ldexp(1.0, int(v) - 127);
  }
  case KILN_DTYPE_F4E2M1:
    return minifloat(at(uint8_t(0)) & 15u, 2, 1, 1, Special::None);
  case KILN_DTYPE_U4:
  case KILN_DTYPE_U2:
    return at(uint8_t(0));
  case KILN_DTYPE_I4:
  case KILN_DTYPE_I2:
    return at(int8_t(0));
  default:
    return NAN;
  }
}

/// Empty when `got` matches `want` (both info.size_bytes of info's type).
std::string compare(const kiln_tensor_info_t &info, const char *got, const char *want, double rtol, double atol) {
  size_t bad = 0, firstBad = 0;
  double worst = 0;
  for (size_t k = 0; k < info.num_elements; ++k) {
    double a = element(info.dtype, got, k), b = element(info.dtype, want, k);
    if ((std::isnan(a) && std::isnan(b)) || a == b)
      continue;
    double diff = std::fabs(a - b);
    if (!(diff <= atol + rtol * std::fabs(b))) {
      if (!bad++)
        firstBad = k;
      worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
    }
  }
  if (!bad)
    return "";
  char text[200];
  std::snprintf(text, sizeof text, "%zu of %zu elements differ (first at %zu, max abs error %.3g)", bad,
                info.num_elements, firstBad, worst);
  return text;
}

/// The largest |a - b| / (atol + rtol |b|) over the elements: <= 1 passes.
double worstRatio(const kiln_tensor_info_t &info, const char *got, const char *want, double rtol, double atol) {
  double worst = 0;
  for (size_t k = 0; k < info.num_elements; ++k) {
    double a = element(info.dtype, got, k), b = element(info.dtype, want, k);
    if ((std::isnan(a) && std::isnan(b)) || a == b)
      continue;
    double r = std::fabs(a - b) / (atol + rtol * std::fabs(b));
    worst = std::isnan(r) ? INFINITY : std::max(worst, r);
  }
  return worst;
}

//===----------------------------------------------------------------------===//
// A loaded artifact with its device buffers
//===----------------------------------------------------------------------===//

/// The status of a failed step: "error" (the pack or the artifact is
/// broken), "fail" (it ran and computed something else or refused to run),
/// "cuda" (a CUDA error: the context is no longer usable).
struct Failure {
  std::string status, message;
};

class Loaded {
public:
  ~Loaded() {
    for (void *p : buffers_)
      device_->release(p);
    kiln_cuda_model_close(gpu_);
    kiln_model_close(model_);
    if (library_)
      dlclose(library_);
  }

  static std::unique_ptr<Loaded> open(kiln::CudaDevice &device, const std::string &path, Failure &failure) {
    std::unique_ptr<Loaded> l(new Loaded(device));
    std::string p = path.find('/') == std::string::npos ? "./" + path : path;
    if (std::string why = kiln::elfIncomplete(p); !why.empty()) {
      failure = {"error", path + " " + why};
      return nullptr;
    }
    l->library_ = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l->library_) {
      const char *why = dlerror();
      failure = {"error", "cannot load " + path + ": " + (why ? why : "?")};
      return nullptr;
    }
    using EntryFn = const kiln_artifact_t *(*)();
    auto entry = reinterpret_cast<EntryFn>(dlsym(l->library_, "kiln_artifact_v1"));
    if (!entry) {
      failure = {"error", path + " is not a Kiln shared artifact (no kiln_artifact_v1)"};
      return nullptr;
    }
    if (kiln_model_open(entry(), &l->model_) != KILN_STATUS_OK) {
      failure = {"error", std::string("kiln_model_open: ") + kiln_last_error()};
      return nullptr;
    }
    if (!kiln_model_is_cuda(l->model_)) {
      failure = {"error", path + " is not a CUDA artifact"};
      return nullptr;
    }
    kiln_status_t s = kiln_cuda_model_open(entry(), 0, &l->gpu_);
    if (s != KILN_STATUS_OK) {
      failure = {"fail", std::string("kiln_cuda_model_open: ") + kiln_last_error()};
      return nullptr;
    }
    // A data-parallel step runs its all-reduces through NCCL, one rank.
    if (kiln_model_num_buckets(l->model_) > 0 && kiln_cuda_model_use_nccl(l->gpu_, nullptr) != KILN_STATUS_OK) {
      failure = {"fail", std::string("kiln_cuda_model_use_nccl: ") + kiln_last_error()};
      return nullptr;
    }
    for (size_t i = 0; i < kiln_model_num_inputs(l->model_); ++i) {
      kiln_tensor_info_t info;
      kiln_model_input_info(l->model_, i, &info);
      l->inputs_.push_back(info);
    }
    for (size_t i = 0; i < kiln_model_num_outputs(l->model_); ++i) {
      kiln_tensor_info_t info;
      kiln_model_output_info(l->model_, i, &info);
      l->outputs_.push_back(info);
    }
    std::string error;
    auto alloc = [&](size_t bytes) {
      void *d = device.allocate(bytes, error);
      if (d)
        l->buffers_.push_back(d);
      return d;
    };
    for (const kiln_tensor_info_t &t : l->inputs_)
      l->dIn_.push_back(alloc(t.size_bytes));
    for (const kiln_tensor_info_t &t : l->outputs_)
      l->dOut_.push_back(alloc(t.size_bytes));
    size_t arena = kiln_cuda_model_arena_bytes(l->gpu_);
    l->dArena_ = arena ? alloc(arena) : nullptr;
    // A training step: its initial state, written here and copied over.
    size_t stateBytes = kiln_cuda_model_state_bytes(l->gpu_);
    if (stateBytes && error.empty()) {
      l->dState_ = alloc(stateBytes);
      if (!l->resetState(failure))
        return nullptr;
    }
    if (!error.empty()) {
      failure = {"cuda", error};
      return nullptr;
    }
    return l;
  }

  /// Writes the artifact's initial state into the device state.
  bool resetState(Failure &failure) {
    size_t bytes = kiln_model_state_bytes(model_), align = kiln_model_state_alignment(model_);
    std::vector<char> host(bytes + align);
    char *aligned = host.data() + (align - reinterpret_cast<uintptr_t>(host.data()) % align) % align;
    if (kiln_model_init_state(model_, aligned, bytes) != KILN_STATUS_OK) {
      failure = {"error", std::string("kiln_model_init_state: ") + kiln_last_error()};
      return false;
    }
    std::string error;
    if (!device_->toDevice(dState_, aligned, bytes, error)) {
      failure = {"cuda", error};
      return false;
    }
    return true;
  }

  /// The device state, copied back.
  bool state(std::string &out, Failure &failure) {
    out.assign(kiln_model_state_bytes(model_), '\0');
    std::string error;
    if (!device_->toHost(&out[0], dState_, out.size(), error)) {
      failure = {"cuda", error};
      return false;
    }
    return true;
  }
  kiln_model_t *model() const { return model_; }

  /// A model over ranges: the next runs at `dims` (one per dimension, each
  /// in its range); the tensors' infos then give the shapes and bytes at
  /// those sizes.
  bool setDims(const std::vector<int64_t> &dims, Failure &failure) {
    if (dims.size() != kiln_model_num_dims(model_)) {
      failure = {"error", "dims.txt has " + std::to_string(dims.size()) + " sizes, the model " +
                              std::to_string(kiln_model_num_dims(model_)) + " dimensions"};
      return false;
    }
    dims_ = dims;
    auto at = [&](std::vector<kiln_tensor_info_t> &infos, std::vector<std::vector<int64_t>> &shapes, bool output) {
      shapes.resize(infos.size());
      for (size_t i = 0; i < infos.size(); ++i) {
        shapes[i].assign(infos[i].rank, 0);
        kiln_status_t st = output ? kiln_model_output_shape(model_, i, dims.data(), shapes[i].data())
                                  : kiln_model_input_shape(model_, i, dims.data(), shapes[i].data());
        if (st != KILN_STATUS_OK) {
          failure = {"error", std::string("dims.txt: ") + kiln_last_error()};
          return false;
        }
        infos[i].shape = shapes[i].data();
        infos[i].num_elements = 1;
        for (int64_t d : shapes[i])
          infos[i].num_elements *= size_t(d);
        infos[i].size_bytes = infos[i].num_elements * kiln_dtype_size(infos[i].dtype);
      }
      return true;
    };
    return at(inputs_, inShapes_, false) && at(outputs_, outShapes_, true);
  }

  const std::vector<kiln_tensor_info_t> &inputs() const { return inputs_; }
  const std::vector<kiln_tensor_info_t> &outputs() const { return outputs_; }
  kiln_cuda_model_t *gpu() const { return gpu_; }

  /// Copies `data` (one string per input, each of the input's size) in.
  bool setInputs(const std::vector<std::string> &data, Failure &failure) {
    std::string error;
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!device_->toDevice(dIn_[i], data[i].data(), data[i].size(), error)) {
        failure = {"cuda", error};
        return false;
      }
    return true;
  }

  /// One run step by step, timed per step (kiln_cuda_model_profile).
  bool profile(std::vector<float> &ms, Failure &failure) {
    ms.assign(kiln_cuda_model_num_steps(gpu_), 0.0f);
    if (kiln_cuda_model_profile(gpu_, dIn_.data(), dIn_.size(), dOut_.data(), dOut_.size(), dArena_, dState_, nullptr,
                                device_->stream(), ms.data(), ms.size()) != KILN_STATUS_OK) {
      failure = {"fail", std::string("kiln_cuda_model_profile: ") + kiln_last_error()};
      return false;
    }
    return true;
  }

  /// One run, not waited for.
  bool launch(Failure &failure) {
    if (!dims_.empty()) {
      if (kiln_cuda_model_run_dims(gpu_, dIn_.data(), dIn_.size(), dOut_.data(), dOut_.size(), dArena_, dState_,
                                   dims_.data(), device_->stream()) != KILN_STATUS_OK) {
        failure = {"fail", std::string("kiln_cuda_model_run_dims: ") + kiln_last_error()};
        return false;
      }
      return true;
    }
    kiln_status_t s = dState_ ? kiln_cuda_model_run_with_state(gpu_, dIn_.data(), dIn_.size(), dOut_.data(),
                                                               dOut_.size(), dArena_, dState_, device_->stream())
                              : kiln_cuda_model_run(gpu_, dIn_.data(), dIn_.size(), dOut_.data(), dOut_.size(), dArena_,
                                                    device_->stream());
    if (s != KILN_STATUS_OK) {
      failure = {"fail", std::string("kiln_cuda_model_run: ") + kiln_last_error()};
      return false;
    }
    return true;
  }

  bool wait(Failure &failure) {
    std::string error;
    if (!device_->synchronize(error)) {
      failure = {"cuda", error};
      return false;
    }
    return true;
  }

  /// Runs once, waits, and copies every output back.
  bool run(std::vector<std::string> &out, Failure &failure) {
    if (!launch(failure) || !wait(failure))
      return false;
    out.resize(outputs_.size());
    std::string error;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      // A pattern the run must overwrite, so stale bytes cannot pass.
      out[i].assign(outputs_[i].size_bytes, '\x5a');
      if (!device_->toHost(&out[i][0], dOut_[i], out[i].size(), error)) {
        failure = {"cuda", error};
        return false;
      }
    }
    return true;
  }

  /// Fills the device outputs with a pattern, so a run that writes nothing
  /// is caught.
  bool poisonOutputs(Failure &failure) {
    std::string error;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      std::string junk(outputs_[i].size_bytes, '\x7f');
      if (!device_->toDevice(dOut_[i], junk.data(), junk.size(), error)) {
        failure = {"cuda", error};
        return false;
      }
    }
    return true;
  }

private:
  explicit Loaded(kiln::CudaDevice &device) : device_(&device) {}
  kiln::CudaDevice *device_;
  void *library_ = nullptr;
  kiln_model_t *model_ = nullptr;
  kiln_cuda_model_t *gpu_ = nullptr;
  std::vector<kiln_tensor_info_t> inputs_, outputs_;
  std::vector<int64_t> dims_; ///< setDims's sizes; empty: the bounds
  std::vector<std::vector<int64_t>> inShapes_, outShapes_;
  std::vector<void *> buffers_, dIn_, dOut_;
  void *dArena_ = nullptr, *dState_ = nullptr;
};

/// Reads the raw tensors `paths` for `infos`, checking their sizes.
bool readTensors(const std::vector<std::string> &paths, const std::vector<kiln_tensor_info_t> &infos, const char *what,
                 std::vector<std::string> &data, Failure &failure) {
  if (paths.size() != infos.size()) {
    failure = {"error", "the model has " + std::to_string(infos.size()) + " " + what + "s, " +
                            std::to_string(paths.size()) + " files given"};
    return false;
  }
  data.resize(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!readFile(paths[i], data[i])) {
      failure = {"error", "cannot read " + paths[i]};
      return false;
    }
    if (data[i].size() != infos[i].size_bytes) {
      failure = {"error", paths[i] + ": " + std::to_string(data[i].size()) + " bytes, expected " +
                              std::to_string(infos[i].size_bytes) + " for " + what + " '" + infos[i].name + "'"};
      return false;
    }
  }
  return true;
}

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string flatten(std::string s) {
  for (char &c : s)
    if (c == '\t' || c == '\n' || c == '\r')
      c = ' ';
  return s;
}

struct Options {
  std::vector<std::string> positional, inputs, expects;
  std::string results, after, tests, batchDir, expectLoss, expectState;
  double rtol = 1e-3, atol = 1e-7, seconds = 2, timeout = 30;
  long warmup = 3, minRuns = 5;
  long steps = 0;
  bool graphs = true;
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() {
      std::string v = value();
      char *end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end)
        usage(a + " needs a number, not '" + v + "'");
      return d;
    };
    if (a == "--results")
      o.results = value();
    else if (a == "--after")
      o.after = value();
    else if (a == "--tests")
      o.tests = value();
    else if (a == "--timeout")
      o.timeout = number();
    else if (a == "--warmup")
      o.warmup = static_cast<long>(number());
    else if (a == "--min-runs")
      o.minRuns = static_cast<long>(number());
    else if (a == "--input")
      o.inputs.push_back(value());
    else if (a == "--expect")
      o.expects.push_back(value());
    else if (a == "--rtol")
      o.rtol = number();
    else if (a == "--atol")
      o.atol = number();
    else if (a == "--seconds")
      o.seconds = number();
    else if (a == "--steps")
      o.steps = static_cast<long>(number());
    else if (a == "--batch-dir")
      o.batchDir = value();
    else if (a == "--expect-loss")
      o.expectLoss = value();
    else if (a == "--expect-state")
      o.expectState = value();
    else if (a == "--no-graphs")
      o.graphs = false;
    else if (a.rfind("--", 0) == 0)
      usage("unknown option " + a);
    else
      o.positional.push_back(a);
  }
  return o;
}

std::unique_ptr<kiln::CudaDevice> openDevice() {
  std::string error;
  auto device = kiln::CudaDevice::open(0, error);
  if (!device) {
    std::fprintf(stderr, "kiln-pack-run: no CUDA device: %s\n", error.c_str());
    std::exit(77);
  }
  return device;
}

//===----------------------------------------------------------------------===//
// conformance
//===----------------------------------------------------------------------===//

/// Runs one test; status "cuda" after a CUDA error.
Failure runTest(kiln::CudaDevice &device, const std::string &dir, const Options &options) {
  Failure f;
  // A test's tolerance.txt (`RTOL ATOL`) loosens the tolerances for it.
  Options o = options;
  std::string tolerance;
  if (readFile(dir + "/tolerance.txt", tolerance)) {
    std::istringstream ss(tolerance);
    double rtol = 0, atol = 0;
    if (ss >> rtol >> atol) {
      o.rtol = std::max(o.rtol, rtol);
      o.atol = std::max(o.atol, atol);
    }
  }
  auto loaded = Loaded::open(device, dir + "/model.so", f);
  if (!loaded)
    return f;
  for (int set = 0;; ++set) {
    std::string setDir = dir + "/" + std::to_string(set);
    struct stat st;
    if (stat(setDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      if (set == 0)
        return {"error", "no data set in " + dir};
      break;
    }
    // A model over ranges: this set's sizes (kiln-conformance --pack).
    std::string dimsText;
    if (readFile(setDir + "/dims.txt", dimsText)) {
      std::vector<int64_t> dims;
      std::istringstream ss(dimsText);
      for (int64_t d; ss >> d;)
        dims.push_back(d);
      if (!loaded->setDims(dims, f))
        return f;
    }
    std::vector<std::string> inPaths, outPaths, in, want;
    for (size_t i = 0; i < loaded->inputs().size(); ++i)
      inPaths.push_back(setDir + "/in" + std::to_string(i) + ".bin");
    for (size_t i = 0; i < loaded->outputs().size(); ++i)
      outPaths.push_back(setDir + "/out" + std::to_string(i) + ".bin");
    if (!readTensors(inPaths, loaded->inputs(), "input", in, f) ||
        !readTensors(outPaths, loaded->outputs(), "output", want, f) || !loaded->setInputs(in, f))
      return f;
    // Run 0 launches step by step; run 1 has the same pointers, so it is
    // captured into a CUDA Graph and replayed.
    for (int run = 0; run < 2; ++run) {
      std::vector<std::string> got;
      if (!loaded->poisonOutputs(f) || !loaded->run(got, f))
        return f;
      for (size_t i = 0; i < got.size(); ++i) {
        std::string d = compare(loaded->outputs()[i], got[i].data(), want[i].data(), o.rtol, o.atol);
        if (!d.empty())
          return {"fail", std::to_string(set) + " output " + std::to_string(i) + " '" + loaded->outputs()[i].name +
                              "'" + (run ? " (graph replay)" : "") + ": " + d};
      }
    }
  }
  return {"pass", ""};
}

/// The watchdog: a test that hangs (a kernel that never ends) is written
/// down from the signal handler, with write(2) only, and ends the process.
char timeoutLine[1024];
size_t timeoutLineSize = 0;
int timeoutFd = 1;
void onTimeout(int) {
  ssize_t ignored = write(timeoutFd, timeoutLine, timeoutLineSize);
  (void)ignored;
  _exit(4);
}

int conformance(const Options &o) {
  if (o.positional.size() != 1)
    usage("conformance takes one folder");
  const std::string &root = o.positional[0];
  std::ifstream manifest(root + "/manifest.txt");
  if (!manifest)
    usage("cannot read " + root + "/manifest.txt");
  std::vector<std::string> ids;
  for (std::string line; std::getline(manifest, line);)
    if (!line.empty() && line[0] != '#')
      ids.push_back(line);
  if (!o.tests.empty()) {
    std::vector<std::string> chosen;
    std::stringstream list(o.tests);
    for (std::string id; std::getline(list, id, ',');) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end())
        usage("--tests: no test '" + id + "' in the manifest");
      chosen.push_back(id);
    }
    ids = chosen;
  }
  size_t start = 0;
  if (!o.after.empty()) {
    auto it = std::find(ids.begin(), ids.end(), o.after);
    if (it == ids.end())
      usage("--after: no test '" + o.after + "' in the manifest");
    start = it - ids.begin() + 1;
  }
  FILE *results = o.results.empty() ? stdout : std::fopen(o.results.c_str(), "a");
  if (!results)
    usage("cannot append to " + o.results);
  auto device = openDevice();
  timeoutFd = fileno(results);
  std::signal(SIGALRM, onTimeout);
  size_t passed = 0, ran = 0;
  for (size_t t = start; t < ids.size(); ++t) {
    auto t0 = std::chrono::steady_clock::now();
    int n = std::snprintf(timeoutLine, sizeof timeoutLine, "%s\ttimeout\tstill running after %g s\n", ids[t].c_str(),
                          o.timeout);
    timeoutLineSize = n > 0 ? std::min<size_t>(n, sizeof timeoutLine - 1) : 0;
    alarm(static_cast<unsigned>(std::max(1.0, std::ceil(o.timeout))));
    Failure f = runTest(*device, root + "/" + ids[t], o);
    alarm(0);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    bool fatal = f.status == "cuda";
    if (fatal)
      f = {"fail", "cuda: " + f.message};
    std::fprintf(results, "%s\t%s\t%.1f ms%s%s\n", ids[t].c_str(), f.status.c_str(), ms, f.message.empty() ? "" : ": ",
                 flatten(f.message).c_str());
    std::fflush(results);
    ++ran;
    passed += f.status == "pass";
    if (fatal) {
      std::fprintf(stderr, "kiln-pack-run: %s left the CUDA context unusable; stopping\n", ids[t].c_str());
      return 3;
    }
  }
  std::fprintf(stderr, "kiln-pack-run: %zu of %zu tests passed\n", passed, ran);
  return 0;
}

//===----------------------------------------------------------------------===//
// bench
//===----------------------------------------------------------------------===//

int bench(const Options &o) {
  if (o.positional.size() != 1)
    usage("bench takes one MODEL.so");
  auto device = openDevice();
  Failure f;
  auto loaded = Loaded::open(*device, o.positional[0], f);
  std::vector<std::string> in, want, got;
  auto report = [&](const Failure &f) {
    std::printf("{\"ok\": false, \"status\": \"%s\", \"error\": \"%s\"}\n", f.status.c_str(),
                jsonEscape(f.message).c_str());
    return 1;
  };
  if (!loaded || !readTensors(o.inputs, loaded->inputs(), "input", in, f) ||
      !readTensors(o.expects, loaded->outputs(), "output", want, f) || !loaded->setInputs(in, f))
    return report(f);
  if (kiln_cuda_model_use_graphs(loaded->gpu(), o.graphs) != KILN_STATUS_OK)
    return report({"fail", std::string("graphs: ") + kiln_last_error()});
  if (!loaded->poisonOutputs(f) || !loaded->run(got, f))
    return report(f);
  double ratio = 0;
  std::string mismatch;
  for (size_t i = 0; i < got.size(); ++i) {
    ratio = std::max(ratio, worstRatio(loaded->outputs()[i], got[i].data(), want[i].data(), o.rtol, o.atol));
    std::string d = compare(loaded->outputs()[i], got[i].data(), want[i].data(), o.rtol, o.atol);
    if (!d.empty() && mismatch.empty())
      mismatch = "output '" + std::string(loaded->outputs()[i].name) + "': " + d;
  }
  // Warm-up (the second run captures the graph), then runs until the time
  // is up: each the launch (or graph replay) and the wait for it.
  for (long i = 0; i < o.warmup; ++i)
    if (!loaded->launch(f) || !loaded->wait(f))
      return report(f);
  std::vector<double> us;
  auto start = std::chrono::steady_clock::now();
  while (us.size() < static_cast<size_t>(std::max(1L, o.minRuns)) ||
         (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < o.seconds &&
          us.size() < 100000)) {
    auto t0 = std::chrono::steady_clock::now();
    if (!loaded->launch(f) || !loaded->wait(f))
      return report(f);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  // The outputs after all the timed runs must still be right.
  std::vector<std::string> after;
  if (!loaded->run(after, f))
    return report(f);
  for (size_t i = 0; i < after.size() && mismatch.empty(); ++i) {
    std::string d = compare(loaded->outputs()[i], after[i].data(), want[i].data(), o.rtol, o.atol);
    if (!d.empty())
      mismatch = "after the timed runs, output '" + std::string(loaded->outputs()[i].name) + "': " + d;
  }
  std::printf("{\"ok\": %s, \"median_us\": %.3f, \"min_us\": %.3f, \"runs\": %zu, \"graphs\": %s, "
              "\"worst_tolerance_ratio\": %.4g, \"mismatch\": \"%s\"}\n",
              mismatch.empty() ? "true" : "false", us[us.size() / 2], us[0], us.size(), o.graphs ? "true" : "false",
              ratio, jsonEscape(mismatch).c_str());
  return mismatch.empty() ? 0 : 1;
}

//===----------------------------------------------------------------------===//
// profile
//===----------------------------------------------------------------------===//

/// Times every step of MODEL.so (the median of --min-runs profiled runs
/// after a warm-up) and prints them, the slowest first, with their share of
/// the total.
int profile(const Options &o) {
  if (o.positional.size() != 1)
    usage("profile takes one MODEL.so");
  auto device = openDevice();
  Failure f;
  auto loaded = Loaded::open(*device, o.positional[0], f);
  std::vector<std::string> in;
  if (!loaded || !readTensors(o.inputs, loaded->inputs(), "input", in, f) || !loaded->setInputs(in, f) ||
      !loaded->launch(f) || !loaded->wait(f)) {
    std::printf("profile: %s: %s\n", f.status.c_str(), f.message.c_str());
    return 1;
  }
  size_t n = kiln_cuda_model_num_steps(loaded->gpu());
  std::vector<std::vector<float>> runs;
  for (long r = 0; r < std::max(1L, o.minRuns); ++r) {
    std::vector<float> ms;
    if (!loaded->profile(ms, f)) {
      std::printf("profile: %s: %s\n", f.status.c_str(), f.message.c_str());
      return 1;
    }
    runs.push_back(ms);
  }
  std::vector<std::pair<double, size_t>> steps;
  double total = 0;
  for (size_t s = 0; s < n; ++s) {
    std::vector<float> t;
    for (const auto &run : runs)
      t.push_back(run[s]);
    std::sort(t.begin(), t.end());
    steps.push_back({t[t.size() / 2], s});
    total += t[t.size() / 2];
  }
  std::sort(steps.begin(), steps.end(),
            [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  std::printf("profile of %s: %zu steps, %.3f ms step by step (median of %zu runs)\n", o.positional[0].c_str(), n,
              total, runs.size());
  for (const auto &[ms, s] : steps) {
    char what[256];
    kiln_cuda_model_step_description(loaded->gpu(), s, what, sizeof what);
    std::printf("  step %4zu %9.4f ms %5.1f%%  %s\n", s, ms, total > 0 ? 100 * ms / total : 0.0, what);
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// train
//===----------------------------------------------------------------------===//

/// Runs a training step --steps times from its initial state, step k on the
/// k-th batch of each input (DIR/in<i>.bin holds the batches one after
/// another), and compares output 0 of every step and the final state with
/// the expected files (the CPU step's): per tensor, the largest difference
/// relative to the tensor's largest value must be within --rtol.
int train(const Options &o) {
  if (o.positional.size() != 1 || o.steps < 1 || o.batchDir.empty() || o.expectLoss.empty() || o.expectState.empty())
    usage("train takes MODEL.so, --steps N, --batch-dir, --expect-loss and --expect-state");
  auto device = openDevice();
  Failure f;
  auto loaded = Loaded::open(*device, o.positional[0], f);
  auto fail = [&](const Failure &f) {
    std::printf("training step: %s: %s\n", f.status.c_str(), f.message.c_str());
    return 1;
  };
  if (!loaded)
    return fail(f);
  if (!kiln_model_num_state(loaded->model()) || loaded->outputs().empty())
    return fail({"error", o.positional[0] + " is not a training step with an output"});
  std::vector<std::string> batches(loaded->inputs().size());
  for (size_t i = 0; i < batches.size(); ++i) {
    std::string path = o.batchDir + "/in" + std::to_string(i) + ".bin";
    if (!readFile(path, batches[i]) || batches[i].size() != loaded->inputs()[i].size_bytes * o.steps)
      return fail({"error", path + ": expected " + std::to_string(o.steps) + " batches of " +
                                std::to_string(loaded->inputs()[i].size_bytes) + " bytes"});
  }
  std::string wantLoss, wantState;
  const kiln_tensor_info_t &lossInfo = loaded->outputs()[0];
  if (!readFile(o.expectLoss, wantLoss) || wantLoss.size() != lossInfo.size_bytes * o.steps)
    return fail({"error", o.expectLoss + ": expected " + std::to_string(o.steps) + " values of output 0"});
  // The CPU step's state file (kiln-run --save-state): checked to be this
  // model's state, whole, by the runtime.
  {
    size_t bytes = kiln_model_state_bytes(loaded->model());
    std::vector<uint64_t> buffer(bytes / 8 + 8);
    if (kiln_model_load_state(loaded->model(), buffer.data(), buffer.size() * 8, o.expectState.c_str()) !=
        KILN_STATUS_OK)
      return fail({"error", kiln_last_error()});
    wantState.assign(reinterpret_cast<const char *>(buffer.data()), bytes);
  }
  std::string gotLoss;
  auto t0 = std::chrono::steady_clock::now();
  for (long step = 0; step < o.steps; ++step) {
    std::vector<std::string> in;
    for (size_t i = 0; i < batches.size(); ++i)
      in.push_back(batches[i].substr(step * loaded->inputs()[i].size_bytes, loaded->inputs()[i].size_bytes));
    std::vector<std::string> out;
    if (!loaded->setInputs(in, f) || !loaded->run(out, f))
      return fail(f);
    gotLoss += out[0];
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string gotState;
  if (!loaded->state(gotState, f))
    return fail(f);
  // Normwise: the largest difference over the largest value, per tensor.
  auto normwise = [](const kiln_tensor_info_t &info, const char *got, const char *want) {
    double diff = 0, scale = 0;
    for (size_t k = 0; k < info.num_elements; ++k) {
      double a = element(info.dtype, got, k), b = element(info.dtype, want, k);
      diff = std::max(diff, a == b ? 0.0 : std::fabs(a - b));
      scale = std::max(scale, std::fabs(b));
    }
    return std::isnan(diff) ? INFINITY : diff / std::max(scale, 1e-30);
  };
  bool ok = true;
  kiln_tensor_info_t losses = lossInfo;
  losses.num_elements = lossInfo.num_elements * o.steps;
  double lossErr = normwise(losses, gotLoss.data(), wantLoss.data());
  std::printf("training step: %ld steps in %.1f ms; loss %.6g -> %.6g (cpu %.6g -> %.6g), max difference "
              "%.3g of the largest\n",
              o.steps, ms, element(lossInfo.dtype, gotLoss.data(), 0),
              element(lossInfo.dtype, gotLoss.data(), losses.num_elements - 1),
              element(lossInfo.dtype, wantLoss.data(), 0),
              element(lossInfo.dtype, wantLoss.data(), losses.num_elements - 1), lossErr);
  ok &= lossErr <= o.rtol;
  for (size_t i = 0; i < kiln_model_num_state(loaded->model()); ++i) {
    kiln_state_info_t s;
    kiln_model_state_info(loaded->model(), i, &s);
    double err = normwise(s.tensor, gotState.data() + s.offset, wantState.data() + s.offset);
    std::printf("state '%s': max difference %.3g of the largest value%s\n", s.tensor.name, err,
                err <= o.rtol ? "" : "  MISMATCH");
    ok &= err <= o.rtol;
  }
  std::printf("training step: %s (tolerance %g)\n", ok ? "matches the CPU step" : "MISMATCH", o.rtol);
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    usage("no command");
  std::string command = argv[1];
  if (command == "--help" || command == "-h") {
    std::printf("kiln-pack-run: runs a GPU pack's CUDA artifacts on device 0 "
                "(see tools/gpu-pack/README.md)\n");
    return 0;
  }
  Options o = parse(argc, argv);
  if (command == "conformance")
    return conformance(o);
  if (command == "bench")
    return bench(o);
  if (command == "train")
    return train(o);
  if (command == "profile")
    return profile(o);
  usage("unknown command '" + command + "'");
}

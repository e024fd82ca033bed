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
#include "kiln/Compiler/TensorFile.h"
#include "kiln/runtime.h"
#ifdef KILN_RUN_CUDA
#include "CudaDevice.h"
#include "kiln/runtime_cuda.h"
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <memory>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

/// The command line (parseOptions).
struct Options {
  std::string artifact;
  std::vector<std::string> inputs, compares;
  std::string outputDir, stateIn, stateOut, exportOnnx, profile, benchTimes;
  double rtol = 1e-4, atol = 1e-5;
  unsigned bench = 0, threads = 0, steps = 1, profileRuns = 10;
  double commTimeout = -1; // data-parallel: the runtime's default
};

const char *const kUsage = "kiln-run: load a shared Kiln artifact, run it, check and time it\n"
                           "\n"
                           "  kiln-run build/mlp.so --input input=x.npy --output-dir out\n"
                           "  kiln-run build/mlp.so --input x.pb --compare y.pb --bench 100\n"
                           "\n"
                           "USAGE: kiln-run [options] <PREFIX.so>\n"
                           "\n"
                           "OPTIONS (--name VALUE or --name=VALUE):\n"
                           "  --input [NAME=]FILE        an input (.npy or ONNX TensorProto .pb); without NAME,\n"
                           "                             the name stored in the .pb or the next unset input\n"
                           "  --output-dir DIR           write each output as NAME.npy\n"
                           "  --compare [NAME=]FILE      compare an output with expected data (.npy or .pb)\n"
                           "  --rtol X                   relative tolerance (default 1e-4)\n"
                           "  --atol X                   absolute tolerance (default 1e-5)\n"
                           "  --bench N                  time N runs after a warm-up and print the median latency\n"
                           "  --bench-times FILE         with --bench: write each run's latency (microseconds, in\n"
                           "                             run order, one per line), for statistics on a noisy machine\n"
                           "  --threads N                run on N threads, the calling one included (default 0:\n"
                           "                             every core)\n"
                           "  --steps N                  run N times; an input file of shape [S, <input shape>]\n"
                           "                             gives run i its batch i mod S; outputs are stacked to\n"
                           "                             [N, <output shape>] when N > 1 (default 1)\n"
                           "  --state FILE               training step: start from this state (as --save-state\n"
                           "                             writes) instead of the initial one\n"
                           "  --save-state FILE          training step: write the state after the runs\n"
                           "  --export-onnx MODEL.onnx=OUT.onnx\n"
                           "                             training step: write a copy of MODEL.onnx whose\n"
                           "                             initializers hold the trained parameters\n"
                           "  --profile FILE             after the other runs, time each kernel (CPU) or step\n"
                           "                             (CUDA) over --profile-runs runs; write them to FILE as\n"
                           "                             a Chrome/Perfetto trace and print a table by time\n"
                           "  --profile-runs N           runs --profile times, after one warm-up (default 10)\n"
                           "  --comm-timeout S           data-parallel step: fail a step whose all-reduce waits\n"
                           "                             longer than S seconds (default 600; 0: wait forever)\n"
                           "  --help                     print this and exit\n"
                           "\n"
                           "A data-parallel training step (kilnc train --data-parallel) run under\n"
                           "`mpirun -np R kiln-run ...` averages its gradients over the R ranks. An input\n"
                           "file whose first dimension (after the steps one) is R times the input's is the\n"
                           "whole batch: rank r takes its r-th block; where that dimension is symbolic\n"
                           "(kilnc --dim NAME=LO..HI), every file is the whole batch and must split\n"
                           "evenly. Rank 0 alone writes --output-dir,\n"
                           "--save-state and --export-onnx; --bench also prints how much of the\n"
                           "all-reduce time compute hid.\n";

[[noreturn]] void fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  std::exit(1);
}

unsigned parseUnsigned(const std::string &option, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || text[0] == '-' || v > UINT32_MAX)
    fail("--" + option + " expects a non-negative integer, found '" + text + "'");
  return static_cast<unsigned>(v);
}

double parseDouble(const std::string &option, const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(v >= 0))
    fail("--" + option + " expects a non-negative number, found '" + text + "'");
  return v;
}

/// Reads argv: options as --name VALUE or --name=VALUE (one dash works too,
/// as with LLVM's tools), and the artifact.
Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!o.artifact.empty())
        fail("one artifact expected, found '" + o.artifact + "' and '" + arg + "'");
      o.artifact = arg;
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1), value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      hasValue = true;
    }
    if (name == "help" || name == "h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    static const char *const valued[] = {"input",       "output-dir", "compare",      "rtol",         "atol",
                                         "bench",       "threads",    "steps",        "state",        "save-state",
                                         "export-onnx", "profile",    "profile-runs", "comm-timeout", "bench-times"};
    if (std::find_if(std::begin(valued), std::end(valued), [&](const char *v) { return name == v; }) ==
        std::end(valued))
      fail("unknown option '" + arg + "' (kiln-run --help lists them)");
    if (!hasValue) {
      if (i + 1 == argc)
        fail("option '--" + name + "' needs a value");
      value = argv[++i];
    }
    if (name == "input")
      o.inputs.push_back(value);
    else if (name == "compare")
      o.compares.push_back(value);
    else if (name == "output-dir")
      o.outputDir = value;
    else if (name == "state")
      o.stateIn = value;
    else if (name == "save-state")
      o.stateOut = value;
    else if (name == "export-onnx")
      o.exportOnnx = value;
    else if (name == "rtol")
      o.rtol = parseDouble(name, value);
    else if (name == "atol")
      o.atol = parseDouble(name, value);
    else if (name == "bench")
      o.bench = parseUnsigned(name, value);
    else if (name == "bench-times")
      o.benchTimes = value;
    else if (name == "threads")
      o.threads = parseUnsigned(name, value);
    else if (name == "steps")
      o.steps = parseUnsigned(name, value);
    else if (name == "profile")
      o.profile = value;
    else if (name == "profile-runs")
      o.profileRuns = parseUnsigned(name, value);
    else if (name == "comm-timeout")
      o.commTimeout = parseDouble(name, value);
  }
  if (o.artifact.empty())
    fail("no artifact given (kiln-run --help shows how)");
  if (!o.benchTimes.empty() && o.bench == 0)
    fail("--bench-times needs --bench N");
  return o;
}

/// The whole file at `path`.
std::string readFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    fail("cannot read '" + path + "': " + std::strerror(errno));
  std::string bytes;
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    bytes.append(chunk, n);
  bool bad = std::ferror(f);
  int error = errno;
  std::fclose(f);
  if (bad)
    fail("cannot read '" + path + "': " + std::strerror(error));
  return bytes;
}

/// Writes `bytes` to `path` through a temporary in the same folder, synced
/// and renamed: a full disk or a crash leaves no partial file.
void writeFileAtomically(const std::string &path, std::string_view bytes) {
  std::string temp = path + ".tmp-XXXXXX";
  int fd = mkstemp(temp.data());
  if (fd < 0)
    fail("cannot create '" + path + "': " + std::strerror(errno));
  const char *p = bytes.data();
  size_t left = bytes.size();
  int error = 0;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (!error && ::fsync(fd) != 0)
    error = errno;
  // mkstemp makes the file 0600; give it what a new file would get.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (!error && ::fchmod(fd, 0666 & ~mask) != 0)
    error = errno;
  if (::close(fd) != 0 && !error)
    error = errno;
  if (!error && std::rename(temp.c_str(), path.c_str()) != 0)
    error = errno;
  if (error) {
    std::remove(temp.c_str());
    fail("cannot write '" + path + "': " + std::strerror(error));
  }
}

/// A tensor in host memory, described with kiln dtypes.
struct Tensor {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::string data;
};

Tensor readTensorFile(const std::string &path) {
  std::string bytes = readFile(path);
  std::string error;
  Tensor t;
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    kiln::NpyTensor npy;
    if (!kiln::readNpy(bytes, npy, error))
      fail("'" + path + "': not a supported .npy file: " + error);
    t.dtype = static_cast<kiln_dtype_t>(npy.dtype);
    t.shape = std::move(npy.shape);
    t.data = std::move(npy.data);
    return t;
  }
  kiln::TensorBytes decoded;
  if (!kiln::parseTensorFile(bytes, decoded, error))
    fail("'" + path + "': " + error);
  t.name = decoded.name;
  t.dtype = static_cast<kiln_dtype_t>(kiln::kilnDTypeOfOnnx(decoded.dataType));
  t.shape = decoded.dims;
  t.data = std::move(decoded.data);
  return t;
}

void writeNpy(const std::string &path, const Tensor &t) {
  writeFileAtomically(path, kiln::npyFile(t.dtype, t.shape, t.data));
}

std::string shapeText(const int64_t *shape, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Element i of t as a double.
double element(const Tensor &t, size_t i) { return kiln::elementAsDouble(t.dtype, t.data.data(), i); }

/// Splits "NAME=FILE" (or "FILE") into its parts.
std::pair<std::string, std::string> splitSpec(const std::string &spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq + 1 == spec.size())
    return {"", spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

/// Resolves which signature slot a file goes to: by explicit name, by the
/// name stored in the file, else the first slot not yet taken.
size_t resolveSlot(const std::string &what, const std::string &explicitName, const Tensor &t,
                   const std::vector<kiln_tensor_info_t> &sig, std::vector<bool> &taken) {
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

/// With `symbolic` (a model compiled with --dim NAME=LO..HI), only the
/// rank is checked here: the run checks the sizes against the ranges.
void checkAgainst(const std::string &what, const Tensor &t, const kiln_tensor_info_t &info, bool symbolic = false) {
  if (t.dtype != info.dtype)
    fail(what + " '" + info.name + "': the file holds " + kiln_dtype_name(t.dtype) + ", the model expects " +
         kiln_dtype_name(info.dtype));
  if (symbolic && t.shape.size() == info.rank)
    return;
  if (!std::equal(t.shape.begin(), t.shape.end(), info.shape, info.shape + info.rank) || t.shape.size() != info.rank)
    fail(what + " '" + info.name + "': the file has shape " + shapeText(t.shape.data(), t.shape.size()) +
         ", the model expects " + shapeText(info.shape, info.rank));
}

/// One kernel (or CUDA step) of a profile.
struct KernelTime {
  std::string name;
  uint64_t flops = 0;          ///< 0: not counted
  std::vector<double> us;      ///< per profiled run
  std::vector<double> startUs; ///< per run, from the first run's start
  double median = 0;
};

/// JSON string contents: quotes, backslashes and control characters escaped.
std::string jsonEscape(const std::string &s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// Writes `kernels` as a Chrome trace (the JSON object format, one complete
/// "X" event per kernel and run, in microseconds) that chrome://tracing and
/// ui.perfetto.dev open, then prints the kernels by median time.
void reportProfile(const std::string &path, const std::string &artifact, std::vector<KernelTime> &kernels,
                   unsigned runs, const std::string &where, const char *what) {
  std::string json = "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"artifact\": \"" + jsonEscape(artifact) +
                     "\", \"runs\": " + std::to_string(runs) + "}, \"traceEvents\": [\n";
  json += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, "
          "\"args\": {\"name\": \"" +
          jsonEscape(artifact) + "\"}}";
  double total = 0;
  for (KernelTime &k : kernels) {
    std::vector<double> sorted = k.us;
    std::sort(sorted.begin(), sorted.end());
    k.median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    total += k.median;
  }
  for (unsigned run = 0; run < runs; ++run)
    for (size_t i = 0; i < kernels.size(); ++i) {
      const KernelTime &k = kernels[i];
      char event[160];
      std::snprintf(event, sizeof event, "\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, ",
                    k.startUs[run], k.us[run]);
      json += ",\n{\"name\": \"" + jsonEscape(k.name) + "\", \"cat\": \"kernel\", " + event +
              "\"args\": {\"kernel\": " + std::to_string(i) + ", \"run\": " + std::to_string(run) +
              (k.flops ? ", \"flops\": " + std::to_string(k.flops) : "") + "}}";
    }
  json += "\n]}\n";
  writeFileAtomically(path, json);

  std::vector<size_t> order(kernels.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return kernels[a].median > kernels[b].median; });
  std::printf("profile: %zu kernels, %.1f us in all (medians of %u runs %s); trace in %s\n", kernels.size(), total,
              runs, where.c_str(), path.c_str());
  std::printf("%8s %6s %10s %9s  %s\n", "us", "%", "GFLOP/s", "kernel", what);
  const size_t shown = 30;
  double rest = 0;
  for (size_t r = 0; r < order.size(); ++r) {
    const KernelTime &k = kernels[order[r]];
    if (r >= shown) {
      rest += k.median;
      continue;
    }
    std::string rate =
        k.flops && k.median > 0 ? std::to_string(static_cast<long long>(k.flops / (k.median * 1e3) + 0.5)) : "";
    std::string name = k.name.size() > 100 ? k.name.substr(0, 97) + "..." : k.name;
    std::printf("%8.1f %6.1f %10s %9zu  %s\n", k.median, total > 0 ? 100 * k.median / total : 0.0, rate.c_str(),
                order[r], name.c_str());
  }
  if (order.size() > shown)
    std::printf("%8.1f %6.1f %10s %9s  (%zu more kernels)\n", rest, total > 0 ? 100 * rest / total : 0.0, "", "",
                order.size() - shown);
}

/// Whether this process was started by mpirun (Open MPI's, or a PMIx or
/// PMI launcher): a data-parallel step then joins MPI_COMM_WORLD.
bool underMpirun() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(name) != nullptr)
      return true;
  return false;
}

/// Whether input `index`'s first axis is a symbolic dimension's (kilnc
/// --dim NAME=LO..HI): its size differs between the ranges' two ends.
bool firstAxisSymbolic(const kiln_model_t *model, size_t index, size_t rank) {
  size_t numDims = kiln_model_num_dims(model);
  if (numDims == 0 || rank == 0)
    return false;
  std::vector<int64_t> lo(numDims), hi(numDims), loShape(rank), hiShape(rank);
  for (size_t d = 0; d < numDims; ++d) {
    kiln_dim_info_t info;
    kiln_model_dim_info(model, d, &info);
    lo[d] = info.min;
    hi[d] = info.max;
  }
  return kiln_model_input_shape(model, index, lo.data(), loShape.data()) == KILN_STATUS_OK &&
         kiln_model_input_shape(model, index, hi.data(), hiShape.data()) == KILN_STATUS_OK && loShape[0] != hiShape[0];
}

/// Rank `rank`'s block of an input file that holds the whole batch: one
/// whose first dimension (after a leading steps dimension, if any) is
/// `ranks` times the input's, or any file of the input's rank where that
/// dimension is symbolic (it must divide evenly). The file is split into
/// consecutive blocks. Other files are every rank's own.
Tensor rankShard(const kiln_model_t *model, const Tensor &t, const std::vector<kiln_tensor_info_t> &sig,
                 const std::string &name, int rank, int ranks) {
  for (size_t i = 0; i < sig.size(); ++i) {
    const kiln_tensor_info_t &s = sig[i];
    if ((!name.empty() && name != s.name) || s.rank == 0 || t.dtype != s.dtype)
      continue;
    bool symbolic = firstAxisSymbolic(model, i, s.rank);
    for (size_t lead : {size_t(0), size_t(1)}) {
      if (t.shape.size() != s.rank + lead)
        continue;
      int64_t whole = t.shape[lead];
      if (symbolic) {
        if (whole % ranks != 0)
          fail("input '" + std::string(s.name) + "': a batch of " + std::to_string(whole) +
               " does not split evenly over " + std::to_string(ranks) + " ranks");
      } else if (whole != s.shape[0] * ranks || !std::equal(t.shape.begin() + lead + 1, t.shape.end(), s.shape + 1)) {
        continue;
      }
      size_t steps = lead ? t.shape[0] : 1, block = t.data.size() / steps / ranks;
      Tensor out = t;
      out.shape[lead] = whole / ranks;
      out.data.clear();
      for (size_t step = 0; step < steps; ++step)
        out.data += t.data.substr((step * ranks + rank) * block, block);
      return out;
    }
  }
  return t;
}

/// mkdir -p.
void createDirectories(const std::string &path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/')
      continue;
    std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      fail("cannot create '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("cannot create '" + path + "': it exists and is not a folder");
}

/// A buffer of `bytes` (the arena, a training step's state) at `alignment`
/// or more. One of 2 MB or more starts on a 2 MB boundary and asks for
/// transparent huge pages: a convolution's k loop reads a new input
/// channel, often a new 4 KB page, at every step, and a matmul over a
/// trained (not packed) weight reads a new row of it, 4 KB apart in a
/// 1024-wide layer; with 4 KB pages those reads miss the TLB (resnet18's
/// arena: 2-4 % faster at one thread).
std::unique_ptr<void, decltype(&std::free)> allocateBuffer(size_t bytes, size_t alignment) {
  constexpr size_t kHugePage = size_t(2) << 20;
  alignment = std::max<size_t>(alignment, 16);
  if (bytes >= kHugePage)
    alignment = std::max(alignment, kHugePage);
  size_t allocBytes = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  std::unique_ptr<void, decltype(&std::free)> buffer(std::aligned_alloc(alignment, allocBytes), &std::free);
#ifdef MADV_HUGEPAGE
  // Only a hint: where huge pages are off, the buffer keeps 4 KB pages.
  if (buffer && alignment >= kHugePage)
    (void)madvise(buffer.get(), allocBytes, MADV_HUGEPAGE);
#endif
  return buffer;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  const std::string &artifactPath = o.artifact;

  std::string path = artifactPath;
  if (path.find('/') == std::string::npos)
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
  if (kiln_model_set_num_threads(model, o.threads) != KILN_STATUS_OK)
    fail("cannot use " + std::to_string(o.threads) + " threads: " + kiln_last_error());
  // A data-parallel step under mpirun averages over MPI_COMM_WORLD; run
  // alone, it is the only rank.
  kiln_comm_t *comm = nullptr;
  int rank = 0, ranks = 1;
  if (kiln_model_num_buckets(model) > 0 && underMpirun()) {
    if (kiln_comm_open_mpi(nullptr, &comm) != KILN_STATUS_OK)
      fail(std::string("data-parallel run: ") + kiln_last_error());
    // A CUDA step's collectives are NCCL's (below), bootstrapped over comm.
    if (!kiln_model_is_cuda(model) && kiln_model_set_comm(model, comm) != KILN_STATUS_OK)
      fail(std::string("data-parallel run: ") + kiln_last_error());
    if (o.commTimeout >= 0 && kiln_comm_set_timeout(comm, o.commTimeout) != KILN_STATUS_OK)
      fail(std::string("--comm-timeout: ") + kiln_last_error());
    rank = kiln_comm_rank(comm);
    ranks = kiln_comm_size(comm);
  }
  // Only rank 0 writes files and prints results; every rank fails loudly.
  bool writer = rank == 0;
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
    // A data-parallel step all-reduces with NCCL, over the MPI ranks under
    // mpirun, else as the only rank (NCCL still runs its collectives).
    if (kiln_model_num_buckets(model) > 0 && kiln_cuda_model_use_nccl(gpuModel, comm) != KILN_STATUS_OK)
      fail(std::string("data-parallel run: ") + kiln_last_error());
    if (kiln_model_num_buckets(model) > 0 && o.commTimeout >= 0 &&
        kiln_cuda_model_set_nccl_timeout(gpuModel, o.commTimeout) != KILN_STATUS_OK)
      fail(std::string("--comm-timeout: ") + kiln_last_error());
  }
#else
  if (onGpu)
    fail("'" + artifactPath +
         "' is a CUDA artifact, and this kiln-run was "
         "built without the CUDA runtime (no CUDA toolkit at configure time)");
#endif

  std::vector<kiln_tensor_info_t> inSig(kiln_model_num_inputs(model));
  std::vector<kiln_tensor_info_t> outSig(kiln_model_num_outputs(model));
  for (size_t i = 0; i < inSig.size(); ++i)
    kiln_model_input_info(model, i, &inSig[i]);
  for (size_t i = 0; i < outSig.size(); ++i)
    kiln_model_output_info(model, i, &outSig[i]);

  if (o.steps == 0)
    fail("--steps must be at least 1");
  // A model with symbolic dimensions runs at the sizes of its input files.
  size_t numDims = kiln_model_num_dims(model);
  // Inputs; a file with one more leading dimension holds a batch per step.
  std::vector<Tensor> in(inSig.size());
  std::vector<Tensor> batches(inSig.size()); // data empty: the same every step
  std::vector<bool> inTaken(inSig.size(), false);
  for (const std::string &spec : o.inputs) {
    auto [name, file] = splitSpec(spec);
    Tensor t = readTensorFile(file);
    if (ranks > 1)
      t = rankShard(model, t, inSig, name, rank, ranks);
    size_t slot = resolveSlot("input", name, t, inSig, inTaken);
    const kiln_tensor_info_t &sig = inSig[slot];
    // With symbolic dimensions a step's sizes are the file's (checked by
    // the run), so only the rank tells a batched file.
    bool batched = t.shape.size() == sig.rank + 1 && !t.shape.empty() && t.shape[0] > 0 && t.dtype == sig.dtype &&
                   (numDims > 0 || std::equal(t.shape.begin() + 1, t.shape.end(), sig.shape));
    if (batched) {
      batches[slot] = std::move(t);
      in[slot].name = sig.name;
      in[slot].dtype = sig.dtype;
      in[slot].shape.assign(batches[slot].shape.begin() + 1, batches[slot].shape.end());
      in[slot].data = batches[slot].data.substr(0, batches[slot].data.size() / batches[slot].shape[0]);
      continue;
    }
    checkAgainst("input", t, sig, numDims > 0);
    in[slot] = std::move(t);
  }
  for (size_t i = 0; i < inSig.size(); ++i)
    if (!inTaken[i])
      fail(std::string("no file for input '") + inSig[i].name + "' (pass --input " + inSig[i].name + "=FILE)");
  std::vector<int64_t> dims(numDims);
  if (numDims > 0) {
    std::vector<kiln_tensor_t> views;
    for (Tensor &t : in)
      views.push_back({t.dtype, t.shape.size(), t.shape.data(), t.data.data()});
    if (kiln_model_dims_of_inputs(model, views.data(), views.size(), dims.data()) != KILN_STATUS_OK)
      fail(kiln_last_error());
  }

  // Outputs and arena, owned here; with symbolic dimensions, at the sizes
  // the inputs give.
  std::vector<Tensor> out(outSig.size());
  for (size_t i = 0; i < outSig.size(); ++i) {
    out[i].name = outSig[i].name;
    out[i].dtype = outSig[i].dtype;
    out[i].shape.assign(outSig[i].shape, outSig[i].shape + outSig[i].rank);
    size_t bytes = outSig[i].size_bytes;
    if (numDims > 0) {
      if (kiln_model_output_shape(model, i, dims.data(), out[i].shape.data()) != KILN_STATUS_OK)
        fail(kiln_last_error());
      bytes = kiln_dtype_size(out[i].dtype);
      for (int64_t d : out[i].shape)
        bytes *= static_cast<size_t>(d);
    }
    out[i].data.assign(bytes, '\0');
  }
  // A CUDA model's arena is device memory (below). With symbolic
  // dimensions, the arena the inputs' sizes need (no more: a run that
  // wrote past it would show under a sanitizer).
  size_t arenaBytes = onGpu ? 0 : kiln_model_arena_bytes(model);
  if (!onGpu && numDims > 0 && kiln_model_arena_bytes_at(model, dims.data(), &arenaBytes) != KILN_STATUS_OK)
    fail(kiln_last_error());
  auto arena = allocateBuffer(arenaBytes, kiln_model_arena_alignment(model));
  if (!arena)
    fail("cannot allocate an arena of " + std::to_string(arenaBytes) + " bytes");

  // The state of a training step, owned here like the arena.
  size_t numState = kiln_model_num_state(model);
  std::vector<kiln_state_info_t> stateSig(numState);
  for (size_t i = 0; i < numState; ++i)
    kiln_model_state_info(model, i, &stateSig[i]);
  size_t stateBytes = kiln_model_state_bytes(model);
  size_t stateAlign = std::max<size_t>(kiln_model_state_alignment(model), 16);
  std::unique_ptr<void, decltype(&std::free)> state(nullptr, &std::free);
  if (numState)
    state = allocateBuffer(stateBytes, stateAlign);
  if (numState && !state)
    fail("cannot allocate a state of " + std::to_string(stateBytes) + " bytes");
  if (!numState && (!o.stateIn.empty() || !o.stateOut.empty() || !o.exportOnnx.empty()))
    fail("'" + artifactPath +
         "' has no state (compile a training step with "
         "kilnc train): --state, --save-state and --export-onnx do not apply");
  if (numState && o.stateIn.empty()) {
    if (kiln_model_init_state(model, state.get(), stateBytes) != KILN_STATUS_OK)
      fail(std::string("cannot initialize the state: ") + kiln_last_error());
  } else if (numState) {
    // Refused unless it is this model's state, whole.
    if (kiln_model_load_state(model, state.get(), stateBytes, o.stateIn.c_str()) != KILN_STATUS_OK)
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
    // With symbolic dimensions, at the sizes of the input files.
    kiln_status_t s =
        numDims ? kiln_cuda_model_run_dims(gpuModel, dIn.data(), dIn.size(), dOut.data(), dOut.size(), dArena,
                                           numState ? dState : nullptr, dims.data(), device->stream())
        : numState
            ? kiln_cuda_model_run_with_state(gpuModel, dIn.data(), dIn.size(), dOut.data(), dOut.size(), dArena, dState,
                                             device->stream())
            : kiln_cuda_model_run(gpuModel, dIn.data(), dIn.size(), dOut.data(), dOut.size(), dArena, device->stream());
    if (s != KILN_STATUS_OK)
      fail(std::string("run failed: ") + kiln_last_error());
    if (!device->synchronize(error))
      fail("cuda: " + error);
  };
#endif
  auto run = [&] {
#ifdef KILN_RUN_CUDA
    if (onGpu) {
      std::string error;
      // At the run's sizes: the buffers are sized for the bounds.
      for (size_t i = 0; i < in.size(); ++i)
        if (!device->toDevice(dIn[i], in[i].data.data(), in[i].data.size(), error))
          fail("cuda: " + error);
      runOnDevice();
      for (size_t o = 0; o < out.size(); ++o)
        if (!device->toHost(out[o].data.data(), dOut[o], out[o].data.size(), error))
          fail("cuda: " + error);
      return;
    }
#endif
    kiln_status_t s = numState
                          ? kiln_model_run_with_state(model, inViews.data(), inViews.size(), outViews.data(),
                                                      outViews.size(), state.get(), stateBytes, arena.get(), arenaBytes)
                          : kiln_model_run(model, inViews.data(), inViews.size(), outViews.data(), outViews.size(),
                                           arena.get(), arenaBytes);
    if (s != KILN_STATUS_OK)
      fail(std::string("run failed: ") + kiln_last_error());
  };
  // Sizes the run computes from data (decision 0031): each output is
  // dense at the shape the run's dims give it, its leading bytes.
  bool computedDims = false;
  for (size_t d = 0; d < numDims; ++d) {
    kiln_dim_info_t info{};
    if (kiln_model_dim_info(model, d, &info) == KILN_STATUS_OK && info.computed)
      computedDims = true;
  }
  std::vector<Tensor> produced = out;
  auto takeOutputs = [&] {
    if (!computedDims)
      return;
    if (kiln_model_last_dims(model, dims.data()) != KILN_STATUS_OK)
      fail(kiln_last_error());
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<int64_t> shape(out[i].shape.size());
      if (kiln_model_output_shape(model, i, dims.data(), shape.data()) != KILN_STATUS_OK)
        fail(kiln_last_error());
      size_t bytes = kiln_dtype_size(out[i].dtype);
      for (int64_t d : shape)
        bytes *= static_cast<size_t>(d);
      produced[i].shape = shape;
      produced[i].data = out[i].data.substr(0, bytes);
    }
  };
  // Each step takes its batch of the batched inputs; outputs are kept per
  // step when there are several.
  std::vector<std::string> stacked(out.size());
  for (unsigned step = 0; step < o.steps; ++step) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (batches[i].data.empty())
        continue;
      size_t count = batches[i].shape[0], size = in[i].data.size();
      std::memcpy(in[i].data.data(), batches[i].data.data() + (step % count) * size, size);
    }
    std::vector<std::vector<int64_t>> before;
    for (const Tensor &t : produced)
      before.push_back(t.shape);
    run();
    takeOutputs();
    for (size_t i = 0; step > 0 && i < out.size(); ++i)
      if (produced[i].shape != before[i])
        fail("output '" + out[i].name +
             "' has a shape computed from data that differs from step to step; "
             "run one step at a time");
    if (o.steps > 1)
      for (size_t o = 0; o < out.size(); ++o)
        stacked[o] += computedDims ? produced[o].data : out[o].data;
  }
#ifdef KILN_RUN_CUDA
  if (onGpu && numState) {
    std::string error;
    if (!device->toHost(state.get(), dState, stateBytes, error))
      fail("cuda: " + error);
  }
#endif

  // Every rank applied the same averaged update: their state tensors must
  // be identical, byte for byte (the padding between them is not state).
  // Rank 0's checksum, compared on every rank.
  if (comm && numState) {
    std::vector<kiln_data_range_t> ranges;
    for (const kiln_state_info_t &s : stateSig)
      ranges.push_back({static_cast<const char *>(state.get()) + s.offset, s.tensor.size_bytes});
    uint64_t mine = kiln_data_checksum(ranges.data(), ranges.size()), first = mine;
    if (kiln_comm_broadcast(comm, &first, sizeof first, 0) != KILN_STATUS_OK)
      fail(std::string("data-parallel run: ") + kiln_last_error());
    double same = mine == first ? 1.0 : 0.0;
    if (kiln_comm_allreduce_mean(comm, &same, 1, KILN_DTYPE_F64) != KILN_STATUS_OK)
      fail(std::string("data-parallel run: ") + kiln_last_error());
    if (same != 1.0)
      fail("rank " + std::to_string(rank) + ": the ranks' states differ after the steps");
    if (writer)
      std::printf("state: identical on all %d ranks\n", ranks);
  }
  auto fileName = [](const std::string &name) {
    std::string file;
    for (char c : name)
      file += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
    return file;
  };
  if (!o.outputDir.empty() && writer) {
    createDirectories(o.outputDir);
    auto write = [&](const std::string &file, const Tensor &t) {
      std::string p = o.outputDir + "/" + file;
      writeNpy(p, t);
      std::printf("wrote %s\n", p.c_str());
    };
    for (size_t i = 0; i < out.size(); ++i) {
      Tensor t = computedDims ? produced[i] : out[i];
      if (o.steps > 1) {
        t.shape.insert(t.shape.begin(), o.steps);
        t.data = stacked[i];
      }
      write(fileName(t.name) + ".npy", t);
    }
    // The state after the last step, one file per tensor.
    for (const kiln_state_info_t &s : stateSig) {
      Tensor t;
      t.name = s.tensor.name;
      t.dtype = s.tensor.dtype;
      t.shape.assign(s.tensor.shape, s.tensor.shape + s.tensor.rank);
      t.data.assign(static_cast<const char *>(state.get()) + s.offset, s.tensor.size_bytes);
      write("state." + fileName(t.name) + ".npy", t);
    }
  }
  if (!o.stateOut.empty() && writer) {
    // Atomic (a temporary, fsync, rename) and identified: the runtime's
    // state file (a header with the layout's fingerprint and a checksum).
    if (kiln_model_save_state(model, state.get(), stateBytes, o.stateOut.c_str()) != KILN_STATUS_OK)
      fail(kiln_last_error());
    std::printf("wrote %s\n", o.stateOut.c_str());
  }
  if (!o.exportOnnx.empty() && writer) {
    size_t eq = o.exportOnnx.find('=');
    std::string modelPath = o.exportOnnx.substr(0, eq);
    std::string outPath = eq == std::string::npos ? "" : o.exportOnnx.substr(eq + 1);
    if (modelPath.empty() || outPath.empty())
      fail("--export-onnx expects MODEL.onnx=OUT.onnx, found '" + o.exportOnnx + "'");
    std::string modelBytes = readFile(modelPath);
    std::vector<kiln::TensorBytes> values;
    for (const kiln_state_info_t &s : stateSig) {
      if (s.role != KILN_STATE_PARAMETER)
        continue;
      kiln::TensorBytes v;
      v.name = s.tensor.name;
      v.dataType = kiln::onnxTypeOfKilnDType(s.tensor.dtype);
      v.dims.assign(s.tensor.shape, s.tensor.shape + s.tensor.rank);
      v.numElements = static_cast<int64_t>(s.tensor.num_elements);
      v.data.assign(static_cast<const char *>(state.get()) + s.offset, s.tensor.size_bytes);
      values.push_back(std::move(v));
    }
    std::string bytes, error;
    if (!kiln::replaceInitializers(modelBytes, values, bytes, error))
      fail("cannot write the parameters into '" + modelPath + "': " + error);
    // Written under a temporary name and renamed: no half-written model.
    writeFileAtomically(outPath, bytes);
    std::printf("wrote %s\n", outPath.c_str());
  }

  bool mismatch = false;
  std::vector<bool> cmpTaken(outSig.size(), false);
  for (const std::string &spec : o.compares) {
    auto [name, file] = splitSpec(spec);
    Tensor expected = readTensorFile(file);
    size_t slot = resolveSlot("output", name, expected, outSig, cmpTaken);
    const Tensor &actual = computedDims ? produced[slot] : out[slot];
    checkAgainst("expected output", expected, outSig[slot], numDims > 0);
    if (expected.shape != actual.shape)
      fail("expected output '" + actual.name + "': the file has shape " +
           shapeText(expected.shape.data(), expected.shape.size()) + ", the run's sizes give " +
           shapeText(actual.shape.data(), actual.shape.size()));
    double maxAbs = 0, maxRel = 0;
    size_t bad = 0, count = actual.data.size() / kiln_dtype_size(actual.dtype);
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
      if (!(diff <= o.atol + o.rtol * std::fabs(b)))
        ++bad;
    }
    std::string verdict =
        bad ? "MISMATCH in " + std::to_string(bad) + " of " + std::to_string(count) + " elements" : std::string("ok");
    std::printf("output '%s': max abs error %.3g, max rel error %.3g (rtol %g, atol %g): %s\n", outSig[slot].name,
                maxAbs, maxRel, o.rtol, o.atol, verdict.c_str());
    mismatch |= bad != 0;
  }

  if (o.bench > 0) {
    // On a GPU: the run and the wait for it, the data already on the device
    // (from the last run), as a model serving from device buffers sees it.
    auto timed = [&] {
#ifdef KILN_RUN_CUDA
      if (onGpu)
        return runOnDevice();
#endif
      run();
    };
    unsigned warmup = std::min(10u, o.bench);
    for (unsigned i = 0; i < warmup; ++i)
      timed();
    std::vector<double> us;
    for (unsigned i = 0; i < o.bench; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      timed();
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    if (!o.benchTimes.empty()) {
      std::string text;
      for (double t : us)
        text += std::to_string(t) + "\n";
      writeFileAtomically(o.benchTimes, text);
    }
    std::sort(us.begin(), us.end());
    std::string where =
        onGpu ? std::string("on GPU 0") : "on " + std::to_string(kiln_model_num_threads(model)) + " threads";
    if (comm && !onGpu) {
      // The blocked and in-flight times of the last run, every rank's
      // averaged: the fraction of the all-reduces hidden behind compute.
      double times[2];
      kiln_model_comm_times(model, &times[0], &times[1]);
      if (kiln_comm_allreduce_mean(comm, times, 2, KILN_DTYPE_F64) != KILN_STATUS_OK)
        fail(std::string("data-parallel run: ") + kiln_last_error());
      double hidden = times[1] > 0 ? 1.0 - times[0] / times[1] : 1.0;
      where += ", rank " + std::to_string(rank) + " of " + std::to_string(ranks);
      if (writer)
        std::printf("all-reduce: %.2f us in flight per step, %.2f us of it waited for: %.0f%% hidden behind "
                    "compute\n",
                    times[1] * 1e6, times[0] * 1e6, hidden * 100);
    }
    std::printf("latency: median %.2f us, min %.2f us over %u runs %s\n", us[us.size() / 2], us.front(), o.bench,
                where.c_str());
  }

  if (!o.profile.empty()) {
    if (o.profileRuns == 0)
      fail("--profile-runs must be at least 1");
    std::vector<KernelTime> kernels;
    std::string where;
    const char *what = "ONNX nodes";
#ifdef KILN_RUN_CUDA
    if (onGpu) {
      // Per step, launched one by one with events around each (no graph).
      size_t n = kiln_cuda_model_num_steps(gpuModel);
      kernels.resize(n);
      for (size_t i = 0; i < n; ++i) {
        char description[512];
        if (kiln_cuda_model_step_description(gpuModel, i, description, sizeof description) == KILN_STATUS_OK)
          kernels[i].name = description;
        else
          kernels[i].name = "step " + std::to_string(i);
      }
      std::vector<float> ms(n);
      runOnDevice(); // warm-up
      double at = 0;
      for (unsigned r = 0; r < o.profileRuns; ++r) {
        if (kiln_cuda_model_profile(gpuModel, dIn.data(), dIn.size(), dOut.data(), dOut.size(), dArena, dState,
                                    numDims ? dims.data() : nullptr, device->stream(), ms.data(), n) != KILN_STATUS_OK)
          fail(std::string("profiled run failed: ") + kiln_last_error());
        for (size_t i = 0; i < n; ++i) {
          kernels[i].startUs.push_back(at);
          kernels[i].us.push_back(ms[i] * 1e3);
          at += ms[i] * 1e3;
        }
      }
      where = "on GPU 0, step by step";
      what = "step";
    }
#endif
    if (!onGpu) {
      // 0 kernels: a model of reshapes alone, or an artifact without probes
      // (ABI 4), which the profiled run refuses, saying so.
      size_t n = kiln_model_num_kernels(model);
      kernels.resize(n);
      // A model over ranges counted its flops at the upper bounds: a rate
      // at smaller sizes would be made up, so none is shown.
      bool atBounds = true;
      for (size_t d = 0; d < numDims; ++d) {
        kiln_dim_info_t info;
        kiln_model_dim_info(model, d, &info);
        atBounds &= dims[d] == info.max;
      }
      if (!atBounds)
        std::printf("profile: GFLOP/s not shown: the kernels' flops are counted at the ranges' upper bounds\n");
      for (size_t i = 0; i < n; ++i) {
        kernels[i].name = kiln_model_kernel_name(model, i);
        kernels[i].flops = atBounds ? kiln_model_kernel_flops(model, i) : 0;
      }
      std::vector<uint64_t> t(n + 1);
      auto profiled = [&] {
        if (kiln_model_run_profiled(model, inViews.data(), inViews.size(), outViews.data(), outViews.size(),
                                    numState ? state.get() : nullptr, numState ? stateBytes : 0, arena.get(),
                                    arenaBytes, t.data(), t.size()) != KILN_STATUS_OK)
          fail(std::string("profiled run failed: ") + kiln_last_error());
      };
      profiled(); // warm-up
      uint64_t origin = 0;
      for (unsigned r = 0; r < o.profileRuns; ++r) {
        profiled();
        if (r == 0)
          origin = t[0];
        for (size_t i = 0; i < n; ++i) {
          kernels[i].startUs.push_back((t[i] - origin) / 1e3);
          kernels[i].us.push_back((t[i + 1] - t[i]) / 1e3);
        }
      }
      where = "on " + std::to_string(kiln_model_num_threads(model)) + " threads";
    }
    // Every rank profiles (the runs are collective); rank 0 reports.
    if (writer)
      reportProfile(o.profile, artifactPath, kernels, o.profileRuns, where, what);
  }

#ifdef KILN_RUN_CUDA
  if (gpuModel)
    kiln_cuda_model_close(gpuModel);
  device.reset();
#endif
  kiln_model_close(model);
  kiln_comm_close(comm);
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "kiln-run: error: cannot write to standard output: %s\n", std::strerror(errno));
    return 1;
  }
  return mismatch ? 1 : 0;
}

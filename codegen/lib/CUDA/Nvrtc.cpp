//===- Nvrtc.cpp - CUDA C to cubin and PTX with NVRTC, in process ---------===//
//
// One NVRTC program per model holds every kernel; one compile for the real
// architecture gives both the cubin (run as is on that architecture) and the
// PTX (JIT-compiled by the driver on newer ones). NVRTC's log names lines of
// the source, which are mapped back to the kernel and so to the ONNX node the
// kernel came from. Built without the CUDA toolkit, this file only reports
// that NVRTC is missing.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CudaCodegen.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#ifdef KILN_HAVE_NVRTC
#include <nvrtc.h>
#endif

using namespace mlir;
using namespace kiln;

#ifdef KILN_HAVE_NVRTC

bool kiln::haveNvrtc() { return true; }

/// Reports the first errors of an NVRTC log at their kernels' locations.
static void reportLog(ModuleOp module, const CudaProgram &program,
                      StringRef log) {
  llvm::Regex lineRe(
      "^kiln\\.cu\\(([0-9]+)\\): (error|catastrophic error): (.*)$");
  SmallVector<StringRef> lines;
  log.split(lines, '\n');
  unsigned reported = 0;
  for (StringRef l : lines) {
    SmallVector<StringRef> m;
    if (!lineRe.match(l.rtrim(), &m))
      continue;
    unsigned at = 0;
    m[1].getAsInteger(10, at);
    const CudaKernel *kernel = nullptr;
    for (const CudaKernel &k : program.kernels)
      if (at >= k.firstLine && at <= k.lastLine)
        kernel = &k;
    if (kernel)
      emitError(kernel->loc)
          << "nvrtc could not compile kernel '" << kernel->name << "' (line "
          << at << " of the CUDA C): " << m[3];
    else
      module.emitError("nvrtc could not compile the CUDA C (line ")
          << at << "): " << m[3];
    if (++reported == 3)
      return;
  }
  if (reported == 0)
    module.emitError("nvrtc could not compile the CUDA C: ") << log.trim();
}

/// One NVRTC compile of the program for `arch`: its cubin, and its PTX
/// when `ptx` is given.
static LogicalResult compileFor(ModuleOp module, const CudaProgram &program,
                                const std::string &gpuArch, std::string &cubin,
                                std::string *ptx) {
  nvrtcProgram prog;
  nvrtcResult rc = nvrtcCreateProgram(&prog, program.source.c_str(), "kiln.cu",
                                      0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS)
    return module.emitError("nvrtc: cannot create a program: ")
           << nvrtcGetErrorString(rc);
  llvm::scope_exit destroy([&] { nvrtcDestroyProgram(&prog); });
  std::string arch = "--gpu-architecture=" + gpuArch;
  std::string include = "--include-path=" KILN_CUDA_INCLUDE_DIR;
  // -std=c++17 pins the dialect; NVRTC's default could change under us.
  const char *opts[] = {arch.c_str(), include.c_str(), "-std=c++17"};
  rc = nvrtcCompileProgram(prog, 3, opts);
  if (rc != NVRTC_SUCCESS) {
    size_t size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      nvrtcGetProgramLog(prog, log.data());
      log.resize(size - 1);
    }
    if (rc == NVRTC_ERROR_COMPILATION) {
      reportLog(module, program, log);
      return failure();
    }
    return module.emitError("nvrtc: ")
           << nvrtcGetErrorString(rc) << ": " << log;
  }
  size_t cubinSize = 0, ptxSize = 0;
  if (nvrtcGetCUBINSize(prog, &cubinSize) != NVRTC_SUCCESS || cubinSize == 0 ||
      (ptx &&
       (nvrtcGetPTXSize(prog, &ptxSize) != NVRTC_SUCCESS || ptxSize == 0)))
    return module.emitError("nvrtc: no cubin or PTX for ") << gpuArch;
  cubin.resize(cubinSize);
  if (nvrtcGetCUBIN(prog, cubin.data()) != NVRTC_SUCCESS)
    return module.emitError("nvrtc: cannot read the cubin for ") << gpuArch;
  if (ptx) {
    ptx->resize(ptxSize);
    if (nvrtcGetPTX(prog, ptx->data()) != NVRTC_SUCCESS)
      return module.emitError("nvrtc: cannot read the PTX for ") << gpuArch;
    ptx->resize(ptxSize - 1); // the terminating NUL
  }
  return success();
}

LogicalResult kiln::compileCudaProgram(ModuleOp module, CudaProgram &program) {
  // The lowest architecture gives the PTX that newer GPUs JIT; each
  // further one only a cubin.
  if (failed(compileFor(module, program, program.gpuArch, program.cubin,
                        &program.ptx)))
    return failure();
  program.moreCubins.assign(program.moreGpuArchs.size(), std::string());
  for (size_t i = 0; i < program.moreGpuArchs.size(); ++i)
    if (failed(compileFor(module, program, program.moreGpuArchs[i],
                          program.moreCubins[i], nullptr)))
      return failure();
  return success();
}

#else // !KILN_HAVE_NVRTC

bool kiln::haveNvrtc() { return false; }

LogicalResult kiln::compileCudaProgram(ModuleOp module, CudaProgram &) {
  return module.emitError(
      "this kilnc was built without the CUDA toolkit, so it cannot run NVRTC; "
      "--target=cuda can only print the CUDA C (--emit=cuda)");
}

#endif

//===- HostEmulation.cpp - a CUDA program's kernels built for the host ----===//
//
// CUDA's built-ins for a host C++ compiler, and a launcher per kernel. Most
// kernels never synchronize threads, so running the threads of a launch one
// after another computes what the GPU computes. A block reduction's threads
// run as host threads, one block after another: __shared__ arrays become
// statics that the block's threads share, and __syncthreads a barrier
// across them. Its code reads the block size from blockDim, so a launcher
// may run it with fewer threads than the step asks for and compute the same.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CudaCodegen.h"

#include <algorithm>

using namespace kiln;

static const char kHostShim[] = R"(#include <math.h>
#include <pthread.h>
#include <stddef.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
struct kiln_dim3 { unsigned x, y, z; };
struct kiln_block_thread { char **a; unsigned grid, t; };
static kiln_dim3 blockDim, gridDim;
static thread_local kiln_dim3 blockIdx, threadIdx;
static pthread_barrier_t kiln_barrier;
static inline void __syncthreads() { pthread_barrier_wait(&kiln_barrier); }
static inline float __int_as_float(int x) { float f; __builtin_memcpy(&f, &x, 4); return f; }
static inline float __uint_as_float(unsigned x) { float f; __builtin_memcpy(&f, &x, 4); return f; }
static inline unsigned __float_as_uint(float x) { unsigned u; __builtin_memcpy(&u, &x, 4); return u; }
static inline double __longlong_as_double(long long x) { double f; __builtin_memcpy(&f, &x, 8); return f; }
static inline int __clzll(unsigned long long x) { return x ? __builtin_clzll(x) : 64; }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
)";

std::string kiln::hostEmulationSource(const CudaProgram &program,
                                      unsigned maxSyncBlock) {
  std::string os = kHostShim;
  os += program.source;
  // Each kernel's arguments, as its steps pass them: a base pointer, or a
  // run-time size (CudaSpace::Dim) that travels in the pointer's slot.
  std::vector<int> arity(program.kernels.size(), -1);
  std::vector<std::vector<bool>> isDim(program.kernels.size());
  for (const CudaStep &s : program.steps)
    if (!s.gemm && !s.conv && !s.collective) {
      arity[s.kernel] = static_cast<int>(s.args.size());
      isDim[s.kernel].clear();
      for (const CudaArg &a : s.args)
        isDim[s.kernel].push_back(a.space == CudaSpace::Dim);
    }
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const std::string &name = program.kernels[k].name;
    std::string call;
    if (arity[k] >= 0) {
      call = name + "(";
      for (int i = 0; i < arity[k]; ++i) {
        std::string arg = "a[" + std::to_string(i) + "]";
        call +=
            (i ? ", " : "") + (isDim[k][i] ? "(int64_t)(size_t)" + arg : arg);
      }
      call += ");";
    }
    os += "extern \"C\" const int kiln_arity_" + name + " = " +
          std::to_string(std::max(arity[k], 0)) + ";\n";
    if (program.kernels[k].synchronizes) {
      // Each thread of the block a host thread (plain pthreads: the shim
      // includes no C++ headers, so the host compiler is quick).
      os += "static void *kiln_thread_" + name +
            "(void *p) {\n"
            "  kiln_block_thread *x = (kiln_block_thread *)p;\n"
            "  char **a = x->a;\n"
            "  (void)a;\n"
            "  threadIdx.x = x->t;\n"
            "  for (unsigned b = 0; b < x->grid; ++b) {\n"
            "    blockIdx.x = b;\n"
            "    " +
            call +
            "\n"
            "    pthread_barrier_wait(&kiln_barrier);\n"
            "  }\n"
            "  return nullptr;\n"
            "}\n";
      os += "extern \"C\" void kiln_launch_" + name +
            "(char **a, unsigned grid, unsigned block) {\n"
            "  if (block > " +
            std::to_string(maxSyncBlock) +
            "u) block = " + std::to_string(maxSyncBlock) +
            "u;\n"
            "  gridDim.x = grid; blockDim.x = block;\n"
            "  pthread_barrier_init(&kiln_barrier, nullptr, block);\n"
            "  pthread_t threads[" +
            std::to_string(maxSyncBlock) +
            "];\n"
            "  kiln_block_thread args[" +
            std::to_string(maxSyncBlock) +
            "];\n"
            "  for (unsigned t = 0; t < block; ++t) {\n"
            "    args[t] = kiln_block_thread{a, grid, t};\n"
            "    pthread_create(&threads[t], nullptr, kiln_thread_" +
            name +
            ", &args[t]);\n"
            "  }\n"
            "  for (unsigned t = 0; t < block; ++t) pthread_join(threads[t], "
            "nullptr);\n"
            "  pthread_barrier_destroy(&kiln_barrier);\n";
    } else {
      os += "extern \"C\" void kiln_launch_" + name +
            "(char **a, unsigned grid, unsigned block) {\n"
            "  gridDim.x = grid; blockDim.x = block;\n"
            "  for (unsigned b = 0; b < grid; ++b)\n"
            "    for (unsigned t = 0; t < block; ++t) {\n"
            "      blockIdx.x = b; threadIdx.x = t;\n"
            "      " +
            call +
            "\n"
            "    }\n";
    }
    os += "}\n";
  }
  if (!program.constants.empty())
    os +=
        "extern \"C\" unsigned char *kiln_emulated_constants(size_t *bytes) {\n"
        "  *bytes = sizeof kiln_constants;\n"
        "  return kiln_constants;\n"
        "}\n";
  return os;
}

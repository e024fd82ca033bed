/*
 * FakeCudaDriver.c - a stand-in for libcuda.so.1 for the CUDA runtime's unit
 * tests on machines without a GPU (CI has none). It implements the driver
 * entry points runtime/cuda/runtime_cuda.c loads, on the host: one sm_90
 * device, modules that accept any image, and kernel launches, stream
 * captures and graph launches that are written to a log instead of run.
 * Tests read the log (kiln_fake_cuda_log) to check which launches a run made
 * and with which arguments; with KILN_FAKE_CUDA_TRACE=FILE in the
 * environment every line is also appended to FILE (for tests of programs,
 * such as kiln-run). Device memory is host memory. Built as libcuda.so.1 in
 * its own folder, which only these tests put on LD_LIBRARY_PATH.
 *
 * Emulation (KILN_FAKE_CUDA_KERNELS=DIR in the environment): loading a cubin
 * opens DIR/<hash>.so, the module's kernels built for the host
 * (kiln::hostEmulationSource; <hash> is kiln_image_hash of the cubin), or,
 * when the variable names a .so file, that file (kilnc --emit=cuda-host), and
 * launches then run those kernels on the host, at once or, captured, when
 * the graph is launched; the fake cuBLASLt and cuDNN then compute too. This
 * is how the GPU pack's `run.sh --emulate` runs its CUDA artifacts without
 * a GPU, through the same runtime and runner as on one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup */
#endif

#include "ImageHash.h"

#include <cuda.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char fake_log[1 << 16];
static size_t fake_log_size;
static int fail_instantiate;
static int cc_major = 9, cc_minor = 0;
static CUstream capturing;                                         /* the stream a capture started on */
static CUstream caller_capturing;                                  /* a stream "the caller" captures */
static unsigned char constants[256] __attribute__((aligned(256))); /* as kiln_constants is */

/* Work on a stream: run at once, or recorded by a capture and run by each
 * launch of the graph. ctx is owned (copied in). */
typedef struct fake_work {
  void (*run)(void *ctx);
  void *ctx;
  size_t ctx_bytes;
} fake_work;

/* Launches recorded by a capture. */
typedef struct fake_graph {
  char launches[4096];
  fake_work *work;
  size_t count, capacity;
} fake_graph;
static fake_graph *recording;

static void *copy_of(const void *p, size_t bytes) {
  void *q = malloc(bytes ? bytes : 1);
  if (q && bytes)
    memcpy(q, p, bytes);
  return q;
}
static void graph_free(fake_graph *g) {
  for (size_t i = 0; i < g->count; ++i)
    free(g->work[i].ctx);
  free(g->work);
  free(g);
}
static fake_graph *graph_copy(const fake_graph *g) {
  fake_graph *c = malloc(sizeof *c);
  *c = *g;
  c->work = copy_of(g->work, g->count * sizeof *g->work);
  c->capacity = g->count;
  for (size_t i = 0; i < g->count; ++i)
    c->work[i].ctx = copy_of(g->work[i].ctx, g->work[i].ctx_bytes);
  return c;
}

/* Emulation: the folder of the host-built kernels, or NULL. */
static const char *kernels_dir(void) {
  const char *d = getenv("KILN_FAKE_CUDA_KERNELS");
  return d && *d ? d : NULL;
}
int kiln_fake_cuda_emulating(void) { return kernels_dir() != NULL; }

/* Starts with the name, which the log prints. */
typedef struct fake_function {
  char name[128];
  void (*launch)(char **args, unsigned grid, unsigned block);
  int arity;
  struct fake_function *next; /* the module's functions, freed with it */
} fake_function;
typedef struct fake_module {
  const void *image;
  void *library; /* the host-built kernels, when emulating */
  fake_function *functions;
} fake_module;

/* Kernel arities, which a fake cannot read from a module image: set by the
 * tests (kiln_fake_cuda_set_arity); a kernel not listed logs no arguments. */
static struct {
  char name[32];
  int arity;
} arities[16];

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *line = fake_log + fake_log_size;
  int n = vsnprintf(line, sizeof fake_log - fake_log_size, fmt, ap);
  va_end(ap);
  if (n > 0 && fake_log_size + (size_t)n < sizeof fake_log) {
    fake_log_size += (size_t)n;
    const char *trace = getenv("KILN_FAKE_CUDA_TRACE");
    FILE *f = trace ? fopen(trace, "a") : NULL;
    if (f) {
      fputs(line, f);
      fclose(f);
    }
  }
}

/* --- test controls ------------------------------------------------------ */
const char *kiln_fake_cuda_log(void) { return fake_log; }
void kiln_fake_cuda_reset(void) {
  fake_log[0] = '\0';
  fake_log_size = 0;
  fail_instantiate = 0;
  caller_capturing = NULL;
}
/* The device's compute capability (9.0 until set). */
void kiln_fake_cuda_set_cc(int major, int minor) {
  cc_major = major;
  cc_minor = minor;
}
void kiln_fake_cuda_fail_instantiate(int fail) { fail_instantiate = fail; }
void kiln_fake_cuda_caller_captures(void *stream) { caller_capturing = (CUstream)stream; }
const unsigned char *kiln_fake_cuda_constants(void) { return constants; }
void kiln_fake_cuda_set_arity(const char *kernel, int arity) {
  for (size_t i = 0; i < sizeof arities / sizeof arities[0]; ++i)
    if (arities[i].name[0] == '\0' || strcmp(arities[i].name, kernel) == 0) {
      snprintf(arities[i].name, sizeof arities[i].name, "%s", kernel);
      arities[i].arity = arity;
      return;
    }
}

/* Work put on `stream` (a launch, or a library call of the fake cuBLASLt
 * or cuDNN): logged as launched (and `run` on a copy of ctx, when given), or
 * recorded into the graph a capture of the stream makes. */
void kiln_fake_cuda_enqueue_work(const char *line, CUstream stream, void (*run)(void *), const void *ctx,
                                 size_t ctx_bytes) {
  if (recording != NULL && stream == capturing) {
    /* The text keeps what fits (a long model's graph is cut short). */
    size_t used = strlen(recording->launches);
    if (used + strlen(line) + 2 <= sizeof recording->launches) {
      strcat(recording->launches, line);
      strcat(recording->launches, ";");
    }
    say("capture %s\n", line);
    if (run) {
      if (recording->count == recording->capacity) {
        recording->capacity = recording->capacity ? 2 * recording->capacity : 16;
        recording->work = realloc(recording->work, recording->capacity * sizeof *recording->work);
      }
      recording->work[recording->count++] = (fake_work){run, copy_of(ctx, ctx_bytes), ctx_bytes};
    }
  } else {
    say("launch %s\n", line);
    if (run) {
      void *copy = copy_of(ctx, ctx_bytes);
      run(copy);
      free(copy);
    }
  }
}
void kiln_fake_cuda_enqueue(const char *line, CUstream stream) {
  kiln_fake_cuda_enqueue_work(line, stream, NULL, NULL, 0);
}
/* Lines of other fakes (the fake cuBLASLt's set-up calls). */
void kiln_fake_cuda_say(const char *line) { say("%s\n", line); }

/* --- the driver API ----------------------------------------------------- */
CUresult cuInit(unsigned int flags) { return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
  (void)device;
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? cc_major
           : attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? cc_minor
                                                                       : 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  (void)device;
  *context = (CUcontext)0xc0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  (void)device;
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent_v2(CUcontext context) { return context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  *context = (CUcontext)0xc0;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  /* Which image the runtime chose: a cubin (ELF; the tests' differ in their
   * fifth byte) or PTX (text). */
  const unsigned char *b = image;
  int cubin = memcmp(b,
                     "\x7f"
                     "ELF",
                     4) == 0;
  if (cubin)
    say("load cubin %u\n", (unsigned)b[4]);
  else
    say("load ptx\n");
  fake_module *m = calloc(1, sizeof *m);
  m->image = image;
  const char *dir = kernels_dir();
  if (dir) {
    if (!cubin) {
      say("emulation: a PTX image has no host kernels\n");
      free(m);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    /* A folder holds a library per cubin; a file is every module's (one
     * model's test). */
    char path[4096];
    size_t n = strlen(dir);
    if (n > 3 && strcmp(dir + n - 3, ".so") == 0)
      snprintf(path, sizeof path, "%s", dir);
    else
      snprintf(path, sizeof path, "%s/%016llx.so", dir, (unsigned long long)kiln_image_hash(image));
    m->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->library) {
      say("emulation: cannot open %s: %s\n", path, dlerror());
      free(m);
      return CUDA_ERROR_INVALID_IMAGE;
    }
  }
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule module) {
  fake_module *m = (fake_module *)module;
  if (m->library)
    dlclose(m->library);
  while (m->functions) {
    fake_function *next = m->functions->next;
    free(m->functions);
    m->functions = next;
  }
  free(m);
  say("unload\n");
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  fake_module *m = (fake_module *)module;
  fake_function *f = calloc(1, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  if (m->library) {
    char symbol[160];
    snprintf(symbol, sizeof symbol, "kiln_launch_%s", name);
    f->launch = (void (*)(char **, unsigned, unsigned))dlsym(m->library, symbol);
    snprintf(symbol, sizeof symbol, "kiln_arity_%s", name);
    const int *arity = (const int *)dlsym(m->library, symbol);
    if (!f->launch || !arity) {
      free(f);
      return CUDA_ERROR_NOT_FOUND;
    }
    f->arity = *arity;
  }
  f->next = m->functions;
  m->functions = f;
  *function = (CUfunction)f;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr *where, size_t *bytes, CUmodule module, const char *name) {
  const fake_module *m = (const fake_module *)module;
  if (strcmp(name, "kiln_constants") != 0)
    return CUDA_ERROR_NOT_FOUND;
  if (m->library) {
    unsigned char *(*get)(size_t *) = (unsigned char *(*)(size_t *))dlsym(m->library, "kiln_emulated_constants");
    if (!get)
      return CUDA_ERROR_NOT_FOUND;
    *where = (CUdeviceptr)(size_t)get(bytes);
    return CUDA_SUCCESS;
  }
  *where = (CUdeviceptr)(size_t)constants;
  *bytes = sizeof constants;
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, size_t bytes) {
  memcpy((void *)(size_t)to, from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  void *m = aligned_alloc(256, (bytes + 255) / 256 * 256);
  *p = (CUdeviceptr)(size_t)m;
  say("alloc %zu\n", bytes);
  return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(size_t)p);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  memcpy(to, (const void *)(size_t)from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
  (void)flags;
  *stream = (CUstream)malloc(1);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream stream) {
  free(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) {
  (void)stream;
  say("synchronize\n");
  return CUDA_SUCCESS;
}
/* An emulated launch: the host kernels' launcher and the argument values. */
typedef struct fake_launch {
  void (*launch)(char **args, unsigned grid, unsigned block);
  unsigned grid, block;
  char *args[64];
} fake_launch;
static void run_launch(void *ctx) {
  fake_launch *l = ctx;
  l->launch(l->args, l->grid, l->block);
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params, void **extra) {
  (void)gy, (void)gz, (void)by, (void)bz, (void)shared, (void)extra;
  const fake_function *fn = (const fake_function *)f;
  char line[256];
  int n = snprintf(line, sizeof line, "%s %ux%u", fn->name, gx, bx);
  int arity = 0;
  for (size_t i = 0; i < sizeof arities / sizeof arities[0]; ++i)
    if (strcmp(arities[i].name, fn->name) == 0)
      arity = arities[i].arity;
  for (int a = 0; a < arity && n < (int)sizeof line; ++a)
    n += snprintf(line + n, sizeof line - (size_t)n, " %#llx", (unsigned long long)*(CUdeviceptr *)params[a]);
  if (!fn->launch) {
    kiln_fake_cuda_enqueue(line, stream);
    return CUDA_SUCCESS;
  }
  fake_launch l = {fn->launch, gx, bx, {0}};
  if (fn->arity > (int)(sizeof l.args / sizeof l.args[0]))
    return CUDA_ERROR_INVALID_VALUE;
  for (int a = 0; a < fn->arity; ++a)
    l.args[a] = (char *)(size_t) * (CUdeviceptr *)params[a];
  kiln_fake_cuda_enqueue_work(line, stream, run_launch, &l, sizeof l);
  return CUDA_SUCCESS;
}
/* NVRTC looks the driver up too (cuInit, then this private table) when a
 * program that compiles kernels runs with the fake: say there is none. */
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGetErrorString(CUresult rc, const char **s) {
  *s = rc == CUDA_SUCCESS ? "no error" : "fake error";
  return CUDA_SUCCESS;
}
CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  if (recording != NULL || stream == NULL)
    return CUDA_ERROR_ILLEGAL_STATE;
  recording = calloc(1, sizeof *recording);
  capturing = stream;
  say("begin capture mode %d\n", (int)mode);
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  if (recording == NULL || stream != capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  *graph = (CUgraph)recording;
  recording = NULL;
  capturing = NULL;
  say("end capture\n");
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  *status = stream == caller_capturing || (recording != NULL && stream == capturing) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                                                     : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  (void)flags;
  if (fail_instantiate) {
    say("instantiate failed\n");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  *exec = (CUgraphExec)graph_copy((const fake_graph *)graph);
  say("instantiate\n");
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  (void)stream;
  const fake_graph *g = (const fake_graph *)exec;
  say("graph launch %s\n", g->launches);
  for (size_t i = 0; i < g->count; ++i)
    g->work[i].run(g->work[i].ctx);
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  graph_free((fake_graph *)exec);
  say("destroy exec\n");
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  graph_free((fake_graph *)graph);
  return CUDA_SUCCESS;
}

/* Events: the host time at which the stream reached the record (work runs
 * at once, or when a captured graph is launched). */
typedef struct fake_event {
  double ms;
  int never; /* recorded on a stalled stream: never happens */
} fake_event;

/* Streams whose work never completes from now on (the fake libnccl's
 * KILN_FAKE_NCCL_FAIL: a collective that waits for a rank forever). */
static CUstream stalled[8];
void kiln_fake_cuda_stall(CUstream stream) {
  for (size_t i = 0; i < sizeof stalled / sizeof stalled[0]; ++i)
    if (stalled[i] == NULL || stalled[i] == stream) {
      stalled[i] = stream;
      return;
    }
}
static int is_stalled(CUstream stream) {
  for (size_t i = 0; i < sizeof stalled / sizeof stalled[0] && stalled[i] != NULL; ++i)
    if (stalled[i] == stream)
      return 1;
  return 0;
}
static void run_record(void *ctx) {
  fake_event *e = *(fake_event **)ctx;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  e->ms = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}
CUresult cuEventCreate(CUevent *event, unsigned flags) {
  (void)flags;
  *event = (CUevent)calloc(1, sizeof(fake_event));
  return *event ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventRecord(CUevent event, CUstream stream) {
  fake_event *e = (fake_event *)event;
  e->never = is_stalled(stream);
  kiln_fake_cuda_enqueue_work("event", stream, run_record, &e, sizeof e);
  return CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent event) { return ((fake_event *)event)->never ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  (void)event;
  (void)flags;
  /* Work runs as it is enqueued, so every event has happened already. */
  kiln_fake_cuda_enqueue("stream wait event", stream);
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent event) {
  (void)event;
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  *ms = (float)(((fake_event *)end)->ms - ((fake_event *)start)->ms);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent event) {
  free(event);
  return CUDA_SUCCESS;
}

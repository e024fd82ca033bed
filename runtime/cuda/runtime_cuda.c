/*
 * runtime_cuda.c - kiln/runtime_cuda.h: load and run a CUDA artifact.
 *
 * The driver API is reached through dlopen("libcuda.so.1") and dlsym, never
 * by linking libcuda (the toolkit's stub would make programs fail at start on
 * machines without a driver, and the real library comes with the driver, not
 * the toolkit). Opening does all the work that can fail for lack of a
 * device: driver, device, primary context, module (cubin or PTX), kernels,
 * constants. A run checks its arguments and launches the steps in order on
 * the caller's stream, with the kernel parameters on its own stack.
 *
 * CUDA Graphs: the first run with a given stream and set of device pointers
 * launches the steps directly; the second with the same ones captures them
 * into a graph, and every later one replays that graph with one
 * cuGraphLaunch. A run with other pointers or another stream launches
 * directly again and becomes the new candidate. Runs on the default stream
 * (not capturable) and runs into a stream the caller is capturing launch
 * directly. The cache is guarded by a mutex, so one handle may be run from
 * several threads.
 *
 * Data-parallel steps (kilnc train --target=cuda --data-parallel): with
 * kiln_cuda_model_use_nccl, a bucket's start step records an event on the
 * compute stream, makes the model's side stream wait for it and enqueues
 * one ncclAllReduce (ncclAvg, in place) per tensor there, in a group, then
 * records the bucket's done event; its wait step makes the compute stream
 * wait for that event. NCCL (libnccl.so.2) is loaded with dlopen like the
 * vendor libraries. Such a model launches its steps directly (no graphs).
 * Without NCCL the bucket steps do nothing: one rank. With it, a run ends by
 * polling the buckets' done events on the host, with NCCL's asynchronous
 * error and the communicator's timeout: a failed or stuck collective aborts
 * the NCCL communicator and fails the run (and every later one) instead of
 * hanging.
 */
#include "kiln/runtime_cuda.h"

#include "cublaslt_steps.h"
#include "cudnn_steps.h"
#include "descriptor.h"
#include "error.h"
#include "vendor_library.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The driver entry points used, by the names libcuda.so.1 exports. */
typedef struct driver {
  void *library;
  CUresult (*init)(unsigned int);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*primaryCtxRelease)(CUdevice);
  CUresult (*ctxPushCurrent)(CUcontext);
  CUresult (*ctxPopCurrent)(CUcontext *);
  CUresult (*moduleLoadData)(CUmodule *, const void *);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*moduleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void **, void **);
  CUresult (*getErrorString)(CUresult, const char **);
  /* CUDA Graphs (drivers of CUDA 11.4 and later); all NULL without them. */
  CUresult (*streamBeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*streamEndCapture)(CUstream, CUgraph *);
  CUresult (*streamIsCapturing)(CUstream, CUstreamCaptureStatus *);
  CUresult (*graphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*graphLaunch)(CUgraphExec, CUstream);
  CUresult (*graphExecDestroy)(CUgraphExec);
  CUresult (*graphDestroy)(CUgraph);
  /* Events, for kiln_cuda_model_profile only; all NULL without them. */
  CUresult (*eventCreate)(CUevent *, unsigned);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*eventSynchronize)(CUevent);
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*eventDestroy)(CUevent);
  /* Streams and waits, for data-parallel steps (kiln_cuda_model_use_nccl). */
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*eventQuery)(CUevent);
} driver_t;

/* NCCL's types as its ABI has them (nccl.h is not needed to build). */
typedef struct nccl_comm *nccl_comm_t;
typedef struct {
  char internal[128];
} nccl_unique_id_t;
enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7 };           /* ncclResult_t */
enum { NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_AVG = 4 }; /* ncclDataType_t, ncclRedOp_t */

/* A data-parallel model's NCCL state. */
typedef struct nccl_state {
  void *library;
  int (*getUniqueId)(nccl_unique_id_t *);
  int (*commInitRank)(nccl_comm_t *, int, nccl_unique_id_t, int);
  int (*commDestroy)(nccl_comm_t);
  int (*allReduce)(const void *, void *, size_t, int, int, nccl_comm_t, CUstream);
  int (*groupStart)(void);
  int (*groupEnd)(void);
  const char *(*getErrorString)(int);
  int (*commGetAsyncError)(nccl_comm_t, int *);
  int (*commAbort)(nccl_comm_t);
  nccl_comm_t comm;      /* NULL once aborted */
  double timeout;        /* seconds a run waits for its all-reduces; 0: forever */
  char failure[256];     /* why the communicator was aborted, or "" */
  CUstream side;         /* the collectives' stream */
  CUevent *ready, *done; /* per bucket: compute work done; all-reduce done */
} nccl_state_t;

struct kiln_cuda_model {
  driver_t drv;
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUdeviceptr constants;  /* the module's kiln_constants, or 0 */
  nccl_state_t *nccl;     /* a data-parallel step's collectives, or NULL (one rank) */
  kiln_cublaslt_t *lt;    /* the gemm steps' state, or NULL without any */
  kiln_cudnn_t *dnn;      /* the conv steps' state, or NULL without any */
  kiln_desc_model_t desc; /* points into the artifact's descriptor */
  /* The graph cache (see the top of this file), guarded by `lock`. */
  pthread_mutex_t lock;
  int use_graphs;         /* kiln_cuda_model_use_graphs; on where the driver has graphs */
  int have_candidate;     /* `key` holds the pointers of the last run */
  CUgraphExec graph;      /* the steps captured for `key`, or NULL */
  void **key;             /* stream, inputs, outputs, arena, state, dims of the last run */
  void **next_key;        /* the same for the run in progress */
  CUfunction functions[]; /* one per kernel */
};

static const char *error_string(const driver_t *drv, CUresult rc) {
  const char *s = NULL;
  if (drv->getErrorString == NULL || drv->getErrorString(rc, &s) != CUDA_SUCCESS || s == NULL)
    return "unknown CUDA error";
  return s;
}

static kiln_status_t load_driver(driver_t *drv) {
  memset(drv, 0, sizeof *drv);
  drv->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (drv->library == NULL) {
    const char *why = dlerror();
    return kiln_error_set(KILN_STATUS_UNAVAILABLE,
                          "cuda: cannot load the NVIDIA driver library libcuda.so.1 (%s): no driver or GPU",
                          why ? why : "not found");
  }
  /* The required entry points, then CUDA Graphs' and events' (optional:
   * all of a group or none). */
  struct {
    void **slot;
    const char *name;
    int graph; /* 1: CUDA Graphs, 2: events, 3: streams and waits */
  } symbols[] = {
      {(void **)&drv->init, "cuInit", 0},
      {(void **)&drv->deviceGetCount, "cuDeviceGetCount", 0},
      {(void **)&drv->deviceGet, "cuDeviceGet", 0},
      {(void **)&drv->deviceGetAttribute, "cuDeviceGetAttribute", 0},
      {(void **)&drv->primaryCtxRetain, "cuDevicePrimaryCtxRetain", 0},
      {(void **)&drv->primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 0},
      {(void **)&drv->ctxPushCurrent, "cuCtxPushCurrent_v2", 0},
      {(void **)&drv->ctxPopCurrent, "cuCtxPopCurrent_v2", 0},
      {(void **)&drv->moduleLoadData, "cuModuleLoadData", 0},
      {(void **)&drv->moduleUnload, "cuModuleUnload", 0},
      {(void **)&drv->moduleGetFunction, "cuModuleGetFunction", 0},
      {(void **)&drv->moduleGetGlobal, "cuModuleGetGlobal_v2", 0},
      {(void **)&drv->memcpyHtoD, "cuMemcpyHtoD_v2", 0},
      {(void **)&drv->launchKernel, "cuLaunchKernel", 0},
      {(void **)&drv->getErrorString, "cuGetErrorString", 0},
      {(void **)&drv->streamBeginCapture, "cuStreamBeginCapture_v2", 1},
      {(void **)&drv->streamEndCapture, "cuStreamEndCapture", 1},
      {(void **)&drv->streamIsCapturing, "cuStreamIsCapturing", 1},
      {(void **)&drv->graphInstantiate, "cuGraphInstantiateWithFlags", 1},
      {(void **)&drv->graphLaunch, "cuGraphLaunch", 1},
      {(void **)&drv->graphExecDestroy, "cuGraphExecDestroy", 1},
      {(void **)&drv->graphDestroy, "cuGraphDestroy", 1},
      {(void **)&drv->eventCreate, "cuEventCreate", 2},
      {(void **)&drv->eventRecord, "cuEventRecord", 2},
      {(void **)&drv->eventSynchronize, "cuEventSynchronize", 2},
      {(void **)&drv->eventElapsedTime, "cuEventElapsedTime_v2", 2},
      {(void **)&drv->eventDestroy, "cuEventDestroy_v2", 2},
      {(void **)&drv->streamCreate, "cuStreamCreate", 3},
      {(void **)&drv->streamDestroy, "cuStreamDestroy_v2", 3},
      {(void **)&drv->streamWaitEvent, "cuStreamWaitEvent", 3},
      {(void **)&drv->eventQuery, "cuEventQuery", 3},
  };
  size_t count = sizeof symbols / sizeof symbols[0];
  int have[4] = {1, 1, 1, 1};
  for (size_t i = 0; i < count; ++i) {
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    void *fn = dlsym(drv->library, symbols[i].name);
    /* CUDA 13's name; drivers before it have only the first version. */
    if (fn == NULL && strcmp(symbols[i].name, "cuEventElapsedTime_v2") == 0)
      fn = dlsym(drv->library, "cuEventElapsedTime");
    if (fn == NULL && !symbols[i].graph) {
      dlclose(drv->library);
      drv->library = NULL;
      return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: libcuda.so.1 lacks %s (driver too old?)", symbols[i].name);
    }
    have[symbols[i].graph] &= fn != NULL;
    memcpy(symbols[i].slot, &fn, sizeof fn);
  }
  for (size_t i = 0; i < count; ++i)
    if (!have[symbols[i].graph])
      memset(symbols[i].slot, 0, sizeof(void *));
  return KILN_STATUS_OK;
}

static int driver_has_graphs(const driver_t *drv) { return drv->graphLaunch != NULL; }

/* Loads module, kernels and constants; the context is current. */
static kiln_status_t load_module(struct kiln_cuda_model *m, int device, int cc) {
  const driver_t *drv = &m->drv;
  const kiln_desc_model_t *d = &m->desc;
  /* A cubin runs on its own major version at the same or a later minor one;
   * of those, the newest wins. PTX (for the lowest architecture) runs on any
   * later one, through the driver's JIT. */
  const void *image = NULL;
  const char *image_arch = NULL;
  int arch = kiln_desc_gpu_arch_number(&d->gpu_arch);
  if (d->cubin_size > 0 && cc / 10 == arch / 10 && cc >= arch) {
    image = d->cubin;
    image_arch = d->gpu_arch.data;
  }
  for (size_t i = 0; i < d->num_more_cubins; ++i) {
    int more = kiln_desc_gpu_arch_number(&d->more_arch[i]);
    if (cc / 10 == more / 10 && cc >= more) {
      image = d->more_cubin[i];
      image_arch = d->more_arch[i].data;
    }
  }
  int cubin_runs = image != NULL;
  if (!cubin_runs && (d->ptx.size == 0 || cc < arch)) {
    char archs[96] = "";
    snprintf(archs, sizeof archs, "%s", d->gpu_arch.data);
    for (size_t i = 0; i < d->num_more_cubins; ++i) {
      size_t used = strlen(archs);
      snprintf(archs + used, sizeof archs - used, ", %s", d->more_arch[i].data);
    }
    return kiln_error_set(KILN_STATUS_UNAVAILABLE,
                          "cuda: device %d is sm_%d, but model '%s' has cubins for %s and PTX for %s and newer", device,
                          cc, d->name.data, archs, d->gpu_arch.data);
  }
  if (!cubin_runs) {
    image = d->ptx.data;
    image_arch = d->gpu_arch.data;
  }
  CUresult rc = drv->moduleLoadData(&m->module, image);
  if (rc != CUDA_SUCCESS) {
    m->module = NULL;
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot load the %s %s of model '%s' on sm_%d: %s", image_arch,
                          cubin_runs ? "cubin" : "PTX", d->name.data, cc, error_string(drv, rc));
  }
  for (size_t k = 0; k < d->num_kernels; ++k) {
    kiln_desc_string_t name = kiln_desc_cuda_kernel(d, k);
    rc = drv->moduleGetFunction(&m->functions[k], m->module, name.data);
    if (rc != CUDA_SUCCESS)
      return kiln_error_set(KILN_STATUS_INVALID_ARTIFACT, "cuda: the module has no kernel '%s': %s", name.data,
                            error_string(drv, rc));
  }
  if (d->constants_size > 0) {
    CUdeviceptr where;
    size_t bytes;
    rc = drv->moduleGetGlobal(&where, &bytes, m->module, "kiln_constants");
    if (rc != CUDA_SUCCESS || bytes < d->constants_size)
      return kiln_error_set(KILN_STATUS_INVALID_ARTIFACT,
                            "cuda: the module's kiln_constants cannot hold the model's %zu bytes of constants",
                            d->constants_size);
    rc = drv->memcpyHtoD(where, d->constants, d->constants_size);
    if (rc != CUDA_SUCCESS)
      return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: copying the constants to the device failed: %s",
                            error_string(drv, rc));
    m->constants = where;
  }
  kiln_status_t st = d->num_gemms > 0 ? kiln_cublaslt_open(&m->desc, &m->lt) : KILN_STATUS_OK;
  if (st == KILN_STATUS_OK && d->num_convs > 0)
    st = kiln_cudnn_open(&m->desc, &m->dnn);
  return st;
}

/* Frees a model's NCCL state; the context is current. */
static void nccl_release(const driver_t *drv, const kiln_desc_model_t *d, nccl_state_t *n) {
  if (n == NULL)
    return;
  if (n->comm != NULL)
    n->commDestroy(n->comm);
  for (size_t b = 0; b < d->num_buckets; ++b) {
    if (n->ready && n->ready[b])
      drv->eventDestroy(n->ready[b]);
    if (n->done && n->done[b])
      drv->eventDestroy(n->done[b]);
  }
  if (n->side != NULL)
    drv->streamDestroy(n->side);
  free(n->ready);
  free(n->done);
  /* libnccl stays loaded: it keeps threads of its own. */
  free(n);
}

static void release(struct kiln_cuda_model *m) {
  if ((m->module != NULL || m->graph != NULL || m->lt != NULL || m->dnn != NULL || m->nccl != NULL) &&
      m->drv.ctxPushCurrent(m->context) == CUDA_SUCCESS) {
    CUcontext ignored;
    nccl_release(&m->drv, &m->desc, m->nccl);
    /* A graph still running is freed by the driver when it completes. */
    if (m->graph != NULL)
      m->drv.graphExecDestroy(m->graph);
    kiln_cublaslt_close(m->lt);
    kiln_cudnn_close(m->dnn);
    if (m->module != NULL)
      m->drv.moduleUnload(m->module);
    m->drv.ctxPopCurrent(&ignored);
  }
  if (m->context != NULL)
    m->drv.primaryCtxRelease(m->device);
  if (m->drv.library != NULL)
    dlclose(m->drv.library);
  pthread_mutex_destroy(&m->lock);
  free(m->key);
  free(m);
}

kiln_status_t kiln_cuda_model_open(const kiln_artifact_t *artifact, int device, kiln_cuda_model_t **out_model) {
  if (out_model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "out_model is null");
  *out_model = NULL;
  if (artifact == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "artifact is null");
  /* ABI 3 only appended a CPU entry point; a CUDA artifact of ABI 2 is the same. */
  if (artifact->abi_version < 2 || artifact->abi_version > KILN_ABI_VERSION)
    return kiln_error_set(KILN_STATUS_VERSION_MISMATCH, "artifact has ABI version %u, this runtime supports 2 to %d",
                          (unsigned)artifact->abi_version, KILN_ABI_VERSION);
  if (artifact->descriptor == NULL || artifact->descriptor_size < 8 || artifact->descriptor_size > SIZE_MAX)
    return kiln_error_set(KILN_STATUS_INVALID_ARTIFACT, "artifact has no valid descriptor");
  kiln_desc_model_t desc;
  size_t err_size;
  char *err = kiln_error_buffer(&err_size);
  kiln_status_t st = kiln_desc_check_checksum(artifact, err, err_size);
  if (st == KILN_STATUS_OK)
    st = kiln_desc_check_data(artifact, err, err_size);
  if (st == KILN_STATUS_OK)
    st = kiln_desc_check_code(artifact, err, err_size);
  if (st != KILN_STATUS_OK)
    return st;
  st = kiln_desc_read(artifact->descriptor, (size_t)artifact->descriptor_size, &desc, err, err_size);
  if (st != KILN_STATUS_OK)
    return st;
  if (!desc.has_cuda)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                          "model '%s' was compiled for target '%s', not cuda: run it with kiln_model_run",
                          desc.name.data, desc.target.data);
  if (device < 0)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "device %d is negative", device);

  struct kiln_cuda_model *m = calloc(1, sizeof *m + desc.num_kernels * sizeof(CUfunction));
  if (m == NULL)
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the model handle");
  m->desc = desc;
  size_t key_size = 3 + desc.num_inputs + desc.num_outputs + desc.num_dims;
  m->key = calloc(2 * key_size, sizeof(void *));
  if (m->key == NULL || pthread_mutex_init(&m->lock, NULL) != 0) {
    free(m->key);
    free(m);
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the model handle");
  }
  m->next_key = m->key + key_size;
  if ((st = load_driver(&m->drv)) != KILN_STATUS_OK) {
    pthread_mutex_destroy(&m->lock);
    free(m->key);
    free(m);
    return st;
  }
  m->use_graphs = driver_has_graphs(&m->drv);
  const driver_t *drv = &m->drv;
  CUresult rc = drv->init(0);
  int count = 0;
  if (rc == CUDA_SUCCESS)
    rc = drv->deviceGetCount(&count);
  if (rc != CUDA_SUCCESS || count == 0) {
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: no usable GPU: %s",
                        rc != CUDA_SUCCESS ? error_string(drv, rc) : "the driver reports no device");
    release(m);
    return st;
  }
  if (device >= count) {
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: device %d requested, %d present", device, count);
    release(m);
    return st;
  }
  int major = 0, minor = 0;
  if ((rc = drv->deviceGet(&m->device, device)) != CUDA_SUCCESS ||
      (rc = drv->deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, m->device)) != CUDA_SUCCESS ||
      (rc = drv->deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, m->device)) != CUDA_SUCCESS ||
      (rc = drv->primaryCtxRetain(&m->context, m->device)) != CUDA_SUCCESS) {
    m->context = NULL;
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: device %d: %s", device, error_string(drv, rc));
    release(m);
    return st;
  }
  if ((rc = drv->ctxPushCurrent(m->context)) != CUDA_SUCCESS) {
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot make device %d current: %s", device,
                        error_string(drv, rc));
    release(m);
    return st;
  }
  st = load_module(m, device, major * 10 + minor);
  CUcontext ignored;
  drv->ctxPopCurrent(&ignored);
  if (st != KILN_STATUS_OK) {
    release(m);
    return st;
  }
  *out_model = m;
  kiln_error_clear();
  return KILN_STATUS_OK;
}

void kiln_cuda_model_close(kiln_cuda_model_t *model) {
  if (model != NULL)
    release(model);
}

size_t kiln_cuda_model_arena_bytes(const kiln_cuda_model_t *model) { return model ? model->desc.arena_bytes : 0; }

size_t kiln_cuda_model_arena_alignment(const kiln_cuda_model_t *model) {
  return model ? model->desc.arena_alignment : 0;
}

size_t kiln_cuda_model_state_bytes(const kiln_cuda_model_t *model) { return model ? model->desc.state_bytes : 0; }

size_t kiln_cuda_model_state_alignment(const kiln_cuda_model_t *model) {
  return model && model->desc.num_state > 0 ? model->desc.state_alignment : 0;
}

/* Launches step s on `stream`; the context is current. `dims` holds the
 * run's size of each symbolic dimension (a kernel's int64_t parameters). */
static kiln_status_t launch_step(const struct kiln_cuda_model *m, size_t s, void *const *inputs, void *const *outputs,
                                 void *device_arena, void *device_state, const int64_t *dims, CUstream stream) {
  const kiln_desc_model_t *d = &m->desc;
  const driver_t *drv = &m->drv;
  /* The descriptor limits a step to KILN_DESC_MAX_TENSORS + 1 arguments. */
  CUdeviceptr values[KILN_DESC_MAX_TENSORS + 1];
  void *params[KILN_DESC_MAX_TENSORS + 1];
  {
    kiln_desc_cuda_step_t step = kiln_desc_cuda_step(d, s);
    for (uint32_t a = 0; a < step.num_args; ++a) {
      kiln_desc_cuda_arg_t arg = kiln_desc_cuda_arg(d, step.first_arg + a);
      if (arg.space == KILN_DESC_CUDA_DIM) {
        /* A size, passed by value in the pointer's 8 bytes. */
        values[a] = (CUdeviceptr)(uint64_t)dims[arg.index];
        params[a] = &values[a];
        continue;
      }
      char *base = arg.space == KILN_DESC_CUDA_INPUT       ? (char *)inputs[arg.index]
                   : arg.space == KILN_DESC_CUDA_OUTPUT    ? (char *)outputs[arg.index]
                   : arg.space == KILN_DESC_CUDA_CONSTANTS ? (char *)(uintptr_t)m->constants
                   : arg.space == KILN_DESC_CUDA_STATE     ? (char *)device_state
                                                           : (char *)device_arena;
      values[a] = (CUdeviceptr)(uintptr_t)(base + arg.offset);
      params[a] = &values[a];
    }
    size_t num_library = d->num_kernels + d->num_gemms + d->num_convs;
    if (step.kernel >= num_library) {
      /* A bucket's start or wait: nothing for one rank. */
      const nccl_state_t *n = m->nccl;
      if (n == NULL)
        return KILN_STATUS_OK;
      kiln_desc_cuda_collective_t col = kiln_desc_cuda_collective(d, step.kernel - num_library);
      CUresult rc;
      if (col.wait) {
        if ((rc = drv->streamWaitEvent(stream, n->done[col.bucket], 0)) != CUDA_SUCCESS)
          return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: waiting for bucket %u (step %zu) failed: %s",
                                (unsigned)col.bucket, s, error_string(drv, rc));
        return KILN_STATUS_OK;
      }
      if ((rc = drv->eventRecord(n->ready[col.bucket], stream)) != CUDA_SUCCESS ||
          (rc = drv->streamWaitEvent(n->side, n->ready[col.bucket], 0)) != CUDA_SUCCESS)
        return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: starting bucket %u (step %zu) failed: %s",
                              (unsigned)col.bucket, s, error_string(drv, rc));
      kiln_desc_bucket_t b = kiln_desc_bucket(d, col.bucket);
      int type = b.dtype == KILN_DTYPE_F64 ? NCCL_FLOAT64 : NCCL_FLOAT32;
      int nc = n->groupStart();
      for (uint32_t a = 0; a < step.num_args && nc == NCCL_SUCCESS; ++a) {
        void *p = (void *)(uintptr_t)values[a];
        nc = n->allReduce(p, p, (size_t)kiln_desc_bucket_elements(d, b.first + a), type, NCCL_AVG, n->comm, n->side);
      }
      int ended = n->groupEnd();
      if (nc == NCCL_SUCCESS)
        nc = ended;
      if (nc != NCCL_SUCCESS)
        return kiln_error_set(KILN_STATUS_COMMUNICATION, "nccl: all-reduce of bucket %u (step %zu) failed: %s",
                              (unsigned)col.bucket, s, n->getErrorString(nc));
      if ((rc = drv->eventRecord(n->done[col.bucket], n->side)) != CUDA_SUCCESS)
        return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: starting bucket %u (step %zu) failed: %s",
                              (unsigned)col.bucket, s, error_string(drv, rc));
      return KILN_STATUS_OK;
    }
    if (step.kernel >= d->num_kernels) {
      /* A library step: cuBLASLt's A, B, D, workspace and (bias epilogues)
       * bias, or cuDNN's x, w, y, workspace, bias and residual z. */
      void *operands[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
      for (uint32_t a = 0; a < step.num_args && a < 6; ++a)
        operands[a] = (void *)(uintptr_t)values[a];
      size_t call = step.kernel - d->num_kernels;
      return call < d->num_gemms ? kiln_cublaslt_run(m->lt, call, operands, stream)
                                 : kiln_cudnn_run(m->dnn, call - d->num_gemms, operands, stream);
    }
    CUresult rc =
        drv->launchKernel(m->functions[step.kernel], step.grid, 1, 1, step.block, 1, 1, 0, stream, params, NULL);
    if (rc != CUDA_SUCCESS)
      return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: launching kernel '%s' (step %zu) failed: %s",
                            kiln_desc_cuda_kernel(d, step.kernel).data, s, error_string(drv, rc));
  }
  return KILN_STATUS_OK;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Aborts the NCCL communicator after a failed or stuck all-reduce (which
 * ends the collectives in flight) and keeps why, for every later run. */
static kiln_status_t nccl_fail(nccl_state_t *n, const char *name, const char *why) {
  if (n->comm != NULL)
    n->commAbort(n->comm);
  n->comm = NULL;
  snprintf(n->failure, sizeof n->failure, "%s", why);
  return kiln_error_set(KILN_STATUS_COMMUNICATION, "nccl: %s; model '%s' aborted its communicator: close it",
                        n->failure, name);
}

/* Waits on the host until every bucket's all-reduce of the run just
 * launched is done, watching NCCL's asynchronous error and the timeout;
 * the context is current. */
static kiln_status_t wait_collectives(const struct kiln_cuda_model *m) {
  nccl_state_t *n = m->nccl;
  const driver_t *drv = &m->drv;
  const char *name = m->desc.name.data;
  double begin = now_seconds();
  long pause_ns = 20000;
  char why[256];
  for (size_t b = 0; b < m->desc.num_buckets;) {
    CUresult rc = drv->eventQuery(n->done[b]);
    if (rc == CUDA_SUCCESS) {
      ++b;
      continue;
    }
    if (rc != CUDA_ERROR_NOT_READY)
      return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: waiting for the all-reduce of bucket %zu failed: %s", b,
                            error_string(drv, rc));
    int async = NCCL_SUCCESS;
    int nc = n->commGetAsyncError(n->comm, &async);
    if (nc != NCCL_SUCCESS || (async != NCCL_SUCCESS && async != NCCL_IN_PROGRESS)) {
      snprintf(why, sizeof why, "the all-reduce of bucket %zu failed: %s", b,
               n->getErrorString(nc != NCCL_SUCCESS ? nc : async));
      return nccl_fail(n, name, why);
    }
    if (n->timeout > 0 && now_seconds() - begin > n->timeout) {
      snprintf(why, sizeof why, "the all-reduce of bucket %zu timed out after %g s (a rank failed or stopped calling)",
               b, n->timeout);
      return nccl_fail(n, name, why);
    }
    struct timespec pause = {0, pause_ns};
    nanosleep(&pause, NULL);
    if (pause_ns < 1000000)
      pause_ns *= 2;
  }
  return KILN_STATUS_OK;
}

/* Launches every step on `stream`; the context is current. */
static kiln_status_t launch_steps(const struct kiln_cuda_model *m, void *const *inputs, void *const *outputs,
                                  void *device_arena, void *device_state, const int64_t *dims, CUstream stream) {
  for (size_t s = 0; s < m->desc.num_steps; ++s) {
    kiln_status_t st = launch_step(m, s, inputs, outputs, device_arena, device_state, dims, stream);
    if (st != KILN_STATUS_OK)
      return st;
  }
  return KILN_STATUS_OK;
}

/* Whether a capture may start on `stream`: not a default stream (legacy or
 * per-thread, which cannot be captured), and not a stream the caller is
 * capturing already (its graph then takes the launches). */
static int capturable(const driver_t *drv, void *stream) {
  if (stream == NULL || stream == (void *)CU_STREAM_LEGACY || stream == (void *)CU_STREAM_PER_THREAD)
    return 0;
  CUstreamCaptureStatus status;
  return drv->streamIsCapturing((CUstream)stream, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Captures the steps into a graph, keeps it for `key`, and launches it. A
 * driver that refuses to capture or instantiate, or a step that fails
 * while captured (a library call that cannot be captured), gets direct
 * launches, now and for the rest of the handle's life. */
static kiln_status_t capture_and_launch(struct kiln_cuda_model *m, void *const *inputs, void *const *outputs,
                                        void *device_arena, void *device_state, const int64_t *dims, CUstream stream) {
  const driver_t *drv = &m->drv;
  if (drv->streamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
    m->use_graphs = 0;
    return launch_steps(m, inputs, outputs, device_arena, device_state, dims, stream);
  }
  kiln_status_t st = launch_steps(m, inputs, outputs, device_arena, device_state, dims, stream);
  CUgraph graph = NULL;
  CUresult rc = drv->streamEndCapture(stream, &graph);
  CUgraphExec exec = NULL;
  if (st == KILN_STATUS_OK && rc == CUDA_SUCCESS && graph != NULL &&
      drv->graphInstantiate(&exec, graph, 0) != CUDA_SUCCESS)
    exec = NULL;
  if (graph != NULL)
    drv->graphDestroy(graph);
  if (exec == NULL) {
    /* The captured launches never ran. */
    m->use_graphs = 0;
    return launch_steps(m, inputs, outputs, device_arena, device_state, dims, stream);
  }
  m->graph = exec;
  rc = drv->graphLaunch(exec, stream);
  if (rc != CUDA_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: launching the graph of model '%s' failed: %s",
                          m->desc.name.data, error_string(drv, rc));
  return KILN_STATUS_OK;
}

kiln_status_t kiln_cuda_model_use_nccl(kiln_cuda_model_t *model, kiln_comm_t *comm) {
  if (model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  const kiln_desc_model_t *d = &model->desc;
  if (d->num_buckets == 0)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                          "model '%s' is not a data-parallel step (compile it with kilnc train --data-parallel)",
                          d->name.data);
  if (model->nccl != NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model '%s' uses NCCL already", d->name.data);
  const driver_t *drv = &model->drv;
  if (drv->streamCreate == NULL || drv->eventRecord == NULL || drv->eventQuery == NULL)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: the driver has no streams or events for NCCL");
  nccl_state_t *n = calloc(1, sizeof *n);
  if (n == NULL || (n->ready = calloc(d->num_buckets, sizeof(CUevent))) == NULL ||
      (n->done = calloc(d->num_buckets, sizeof(CUevent))) == NULL) {
    if (n)
      free(n->ready);
    free(n);
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the NCCL state");
  }
  const char *names[] = {"libnccl.so.2"};
  kiln_symbol_t symbols[] = {
      {(void **)&n->getUniqueId, "ncclGetUniqueId"},       {(void **)&n->commInitRank, "ncclCommInitRank"},
      {(void **)&n->commDestroy, "ncclCommDestroy"},       {(void **)&n->allReduce, "ncclAllReduce"},
      {(void **)&n->groupStart, "ncclGroupStart"},         {(void **)&n->groupEnd, "ncclGroupEnd"},
      {(void **)&n->getErrorString, "ncclGetErrorString"}, {(void **)&n->commGetAsyncError, "ncclCommGetAsyncError"},
      {(void **)&n->commAbort, "ncclCommAbort"},
  };
  char what[160];
  snprintf(what, sizeof what, "model '%s' all-reduces its gradients with NCCL", d->name.data);
  n->library = kiln_open_library(names, 1, symbols, sizeof symbols / sizeof symbols[0], what);
  if (n->library == NULL) {
    free(n->ready);
    free(n->done);
    free(n);
    return KILN_STATUS_UNAVAILABLE; /* the message is set */
  }
  /* Rank 0's unique id, given to the others over MPI. */
  nccl_unique_id_t id;
  memset(&id, 0, sizeof id);
  int rank = kiln_comm_rank(comm), ranks = kiln_comm_size(comm);
  int nc = rank == 0 ? n->getUniqueId(&id) : NCCL_SUCCESS;
  if (nc != NCCL_SUCCESS) {
    nccl_release(drv, d, n);
    return kiln_error_set(KILN_STATUS_COMMUNICATION, "nccl: ncclGetUniqueId failed: %s", n->getErrorString(nc));
  }
  kiln_status_t st;
  if (comm != NULL && (st = kiln_comm_broadcast(comm, &id, sizeof id, 0)) != KILN_STATUS_OK) {
    nccl_release(drv, d, n);
    return st;
  }
  CUresult rc = drv->ctxPushCurrent(model->context);
  if (rc != CUDA_SUCCESS) {
    nccl_release(drv, d, n);
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot make the model's device current: %s",
                          error_string(drv, rc));
  }
  st = KILN_STATUS_OK;
  if ((rc = drv->streamCreate(&n->side, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot create the collectives' stream: %s",
                        error_string(drv, rc));
  for (size_t b = 0; b < d->num_buckets && st == KILN_STATUS_OK; ++b)
    if ((rc = drv->eventCreate(&n->ready[b], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS ||
        (rc = drv->eventCreate(&n->done[b], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
      st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot create bucket %zu's events: %s", b,
                          error_string(drv, rc));
  if (st == KILN_STATUS_OK && (nc = n->commInitRank(&n->comm, ranks, id, rank)) != NCCL_SUCCESS) {
    n->comm = NULL;
    st = kiln_error_set(KILN_STATUS_COMMUNICATION, "nccl: ncclCommInitRank (rank %d of %d) failed: %s", rank, ranks,
                        n->getErrorString(nc));
  }
  if (st != KILN_STATUS_OK)
    nccl_release(drv, d, n);
  CUcontext ignored;
  drv->ctxPopCurrent(&ignored);
  if (st != KILN_STATUS_OK)
    return st;
  pthread_mutex_lock(&model->lock);
  n->timeout = kiln_comm_timeout(comm);
  model->nccl = n;
  /* Direct launches only: the collectives run on a second stream. */
  model->use_graphs = 0;
  if (model->graph != NULL) {
    drv->ctxPushCurrent(model->context);
    drv->graphExecDestroy(model->graph);
    drv->ctxPopCurrent(&ignored);
    model->graph = NULL;
  }
  pthread_mutex_unlock(&model->lock);
  kiln_error_clear();
  return KILN_STATUS_OK;
}

kiln_status_t kiln_cuda_model_set_nccl_timeout(kiln_cuda_model_t *model, double seconds) {
  if (model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->nccl == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model '%s' does not use NCCL (kiln_cuda_model_use_nccl)",
                          model->desc.name.data);
  if (!(seconds >= 0.0))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "timeout must be >= 0 seconds, found %g", seconds);
  pthread_mutex_lock(&model->lock);
  model->nccl->timeout = seconds;
  pthread_mutex_unlock(&model->lock);
  kiln_error_clear();
  return KILN_STATUS_OK;
}

kiln_status_t kiln_cuda_model_use_graphs(kiln_cuda_model_t *model, int enable) {
  if (model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (enable && !driver_has_graphs(&model->drv))
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: the driver has no CUDA Graph entry points");
  pthread_mutex_lock(&model->lock);
  model->use_graphs = enable != 0;
  if (!enable && model->graph != NULL && model->drv.ctxPushCurrent(model->context) == CUDA_SUCCESS) {
    CUcontext ignored;
    model->drv.graphExecDestroy(model->graph);
    model->graph = NULL;
    model->drv.ctxPopCurrent(&ignored);
  }
  pthread_mutex_unlock(&model->lock);
  kiln_error_clear();
  return KILN_STATUS_OK;
}

/* The checks every run makes of the inputs, outputs and arena. */
static kiln_status_t check_buffers(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                   void *const *outputs, size_t num_outputs, void *device_arena) {
  const kiln_desc_model_t *d = &model->desc;
  if (num_inputs != d->num_inputs || num_outputs != d->num_outputs)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                          "model '%s': expected %zu inputs and %zu outputs, found %zu and %zu", d->name.data,
                          d->num_inputs, d->num_outputs, num_inputs, num_outputs);
  if ((num_inputs > 0 && inputs == NULL) || (num_outputs > 0 && outputs == NULL))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "inputs or outputs is null");
  /* Vectorized kernels read and write the caller's buffers 16 bytes at a
   * time (cudaMalloc aligns to 256). */
  for (size_t i = 0; i < num_inputs; ++i)
    if (inputs[i] == NULL || (uintptr_t)inputs[i] % d->io_alignment != 0)
      return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "input %zu at %p is null or not aligned to %zu bytes", i,
                            inputs[i], d->io_alignment);
  for (size_t o = 0; o < num_outputs; ++o)
    if (outputs[o] == NULL || (uintptr_t)outputs[o] % d->io_alignment != 0)
      return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "output %zu at %p is null or not aligned to %zu bytes", o,
                            outputs[o], d->io_alignment);
  if (d->arena_bytes > 0 && (device_arena == NULL || (uintptr_t)device_arena % d->arena_alignment != 0))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "device arena %p is null or not aligned to %zu bytes",
                          device_arena, d->arena_alignment);
  return KILN_STATUS_OK;
}

/* The run's sizes of the symbolic dimensions into `out`: `dims` checked
 * against the ranges, or the upper bounds when it is NULL. */
static kiln_status_t resolve_dims(const kiln_desc_model_t *d, const int64_t *dims, int64_t *out) {
  for (size_t i = 0; i < d->num_dims; ++i) {
    kiln_desc_dim_t dim = kiln_desc_dim(d, i);
    out[i] = dims ? dims[i] : dim.hi;
    if (out[i] < dim.lo || out[i] > dim.hi)
      return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                            "model '%s': dimension '%s' is %lld, outside its range %lld..%lld", d->name.data,
                            dim.name.data, (long long)out[i], (long long)dim.lo, (long long)dim.hi);
  }
  return KILN_STATUS_OK;
}

/* The checks of a run's state buffer. */
static kiln_status_t check_state(const kiln_desc_model_t *d, void *device_state) {
  if (d->num_state > 0 && (device_state == NULL || (uintptr_t)device_state % d->state_alignment != 0))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "device state %p is null or not aligned to %zu bytes",
                          device_state, d->state_alignment);
  return KILN_STATUS_OK;
}

/* kiln_cuda_model_run, kiln_cuda_model_run_with_state and
 * kiln_cuda_model_run_dims, their checks done but the buffers' and the
 * dimensions'. */
static kiln_status_t run(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs, void *const *outputs,
                         size_t num_outputs, void *device_arena, void *device_state, const int64_t *run_dims,
                         void *stream) {
  const kiln_desc_model_t *d = &model->desc;
  kiln_status_t checked = check_buffers(model, inputs, num_inputs, outputs, num_outputs, device_arena);
  if (checked != KILN_STATUS_OK)
    return checked;
  int64_t dims[KILN_DESC_MAX_DIMS];
  if ((checked = resolve_dims(d, run_dims, dims)) != KILN_STATUS_OK)
    return checked;

  /* The handle is the caller's; only the graph cache changes, under its lock. */
  struct kiln_cuda_model *m = (struct kiln_cuda_model *)model;
  const driver_t *drv = &m->drv;
  CUresult rc = drv->ctxPushCurrent(m->context);
  if (rc != CUDA_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot make the model's device current: %s",
                          error_string(drv, rc));
  pthread_mutex_lock(&m->lock);
  /* A graph replays its kernels' parameters, the sizes among them. */
  size_t key_size = 3 + num_inputs + num_outputs + d->num_dims;
  m->next_key[0] = stream;
  for (size_t i = 0; i < num_inputs; ++i)
    m->next_key[1 + i] = inputs[i];
  for (size_t o = 0; o < num_outputs; ++o)
    m->next_key[1 + num_inputs + o] = outputs[o];
  m->next_key[1 + num_inputs + num_outputs] = device_arena;
  m->next_key[2 + num_inputs + num_outputs] = device_state;
  for (size_t i = 0; i < d->num_dims; ++i)
    m->next_key[3 + num_inputs + num_outputs + i] = (void *)(uintptr_t)dims[i];
  int same = m->have_candidate && memcmp(m->key, m->next_key, key_size * sizeof(void *)) == 0;
  kiln_status_t st;
  if (same && m->graph != NULL) {
    rc = drv->graphLaunch(m->graph, (CUstream)stream);
    st = rc == CUDA_SUCCESS
             ? KILN_STATUS_OK
             : kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: launching the graph of model '%s' failed: %s",
                              d->name.data, error_string(drv, rc));
  } else if (same && m->use_graphs && capturable(drv, stream)) {
    st = capture_and_launch(m, inputs, outputs, device_arena, device_state, dims, (CUstream)stream);
  } else {
    /* A new candidate: launched directly, captured if it comes again. */
    if (m->graph != NULL) {
      drv->graphExecDestroy(m->graph);
      m->graph = NULL;
    }
    memcpy(m->key, m->next_key, key_size * sizeof(void *));
    m->have_candidate = 1;
    if (m->nccl != NULL && m->nccl->failure[0] != '\0')
      st = kiln_error_set(KILN_STATUS_COMMUNICATION, "nccl: model '%s' aborted its communicator earlier (%s): close it",
                          d->name.data, m->nccl->failure);
    else
      st = launch_steps(m, inputs, outputs, device_arena, device_state, dims, (CUstream)stream);
    if (st == KILN_STATUS_OK && m->nccl != NULL)
      st = wait_collectives(m);
  }
  pthread_mutex_unlock(&m->lock);
  CUcontext ignored;
  drv->ctxPopCurrent(&ignored);
  if (st == KILN_STATUS_OK)
    kiln_error_clear();
  return st;
}

kiln_status_t kiln_cuda_model_run(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                  void *const *outputs, size_t num_outputs, void *device_arena, void *stream) {
  if (model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->desc.num_state > 0)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                          "model '%s' is a training step with state: run it with kiln_cuda_model_run_with_state",
                          model->desc.name.data);
  return run(model, inputs, num_inputs, outputs, num_outputs, device_arena, NULL, NULL, stream);
}

kiln_status_t kiln_cuda_model_run_with_state(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                             void *const *outputs, size_t num_outputs, void *device_arena,
                                             void *device_state, void *stream) {
  if (model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  const kiln_desc_model_t *d = &model->desc;
  if (d->num_state == 0)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has no state: run it with kiln_cuda_model_run",
                          d->name.data);
  kiln_status_t st = check_state(d, device_state);
  if (st != KILN_STATUS_OK)
    return st;
  return run(model, inputs, num_inputs, outputs, num_outputs, device_arena, device_state, NULL, stream);
}

kiln_status_t kiln_cuda_model_run_dims(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                       void *const *outputs, size_t num_outputs, void *device_arena, void *device_state,
                                       const int64_t *dims, void *stream) {
  if (model == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  kiln_status_t st = check_state(&model->desc, device_state);
  if (st != KILN_STATUS_OK)
    return st;
  return run(model, inputs, num_inputs, outputs, num_outputs, device_arena, device_state, dims, stream);
}

size_t kiln_cuda_model_num_steps(const kiln_cuda_model_t *model) { return model ? model->desc.num_steps : 0; }

kiln_status_t kiln_cuda_model_step_description(const kiln_cuda_model_t *model, size_t index, char *buffer,
                                               size_t size) {
  if (model == NULL || buffer == NULL || size == 0 || index >= model->desc.num_steps)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "no step %zu, or no buffer", index);
  const kiln_desc_model_t *d = &model->desc;
  kiln_desc_cuda_step_t step = kiln_desc_cuda_step(d, index);
  if (step.kernel < d->num_kernels) {
    snprintf(buffer, size, "kernel %s<<<%u, %u>>>", kiln_desc_cuda_kernel(d, step.kernel).data, (unsigned)step.grid,
             (unsigned)step.block);
  } else if (step.kernel < d->num_kernels + d->num_gemms) {
    kiln_desc_cuda_gemm_t g = kiln_desc_cuda_gemm(d, step.kernel - d->num_kernels);
    snprintf(buffer, size, "cuBLASLt gemm %zu: %s m %lld n %lld k %lld batch %u",
             (size_t)(step.kernel - d->num_kernels), kiln_dtype_name(g.dtype), (long long)g.m, (long long)g.n,
             (long long)g.k, (unsigned)g.batch);
  } else if (step.kernel >= d->num_kernels + d->num_gemms + d->num_convs) {
    kiln_desc_cuda_collective_t c =
        kiln_desc_cuda_collective(d, step.kernel - d->num_kernels - d->num_gemms - d->num_convs);
    snprintf(buffer, size, "NCCL all-reduce bucket %u %s", (unsigned)c.bucket, c.wait ? "wait" : "start");
  } else {
    size_t c = step.kernel - d->num_kernels - d->num_gemms;
    kiln_desc_cuda_conv_t v = kiln_desc_cuda_conv(d, c);
    char pad[32] = "";
    if (v.pad_h != 0 || v.pad_w != 0)
      snprintf(pad, sizeof pad, " pad %d,%d", (int)v.pad_h, (int)v.pad_w);
    snprintf(buffer, size, "cuDNN conv %zu: %s [%lld,%lld,%lld,%lld] -> [%lld,%lld,%lld,%lld] %lldx%lld/%d%s groups %d",
             c, kiln_dtype_name(v.dtype), (long long)v.n, (long long)v.c, (long long)v.h, (long long)v.w,
             (long long)v.n, (long long)v.k, (long long)v.p, (long long)v.q, (long long)v.r, (long long)v.s,
             (int)v.stride_h, pad, (int)v.groups);
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_cuda_model_profile(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                      void *const *outputs, size_t num_outputs, void *device_arena, void *device_state,
                                      const int64_t *run_dims, void *stream, float *step_ms, size_t num_steps) {
  if (model == NULL || step_ms == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model or step_ms is null");
  const kiln_desc_model_t *d = &model->desc;
  if (num_steps != d->num_steps)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has %zu steps, step_ms holds %zu", d->name.data,
                          d->num_steps, num_steps);
  kiln_status_t st = check_buffers(model, inputs, num_inputs, outputs, num_outputs, device_arena);
  int64_t dims[KILN_DESC_MAX_DIMS];
  if (st == KILN_STATUS_OK)
    st = check_state(d, device_state);
  if (st == KILN_STATUS_OK)
    st = resolve_dims(d, run_dims, dims);
  if (st != KILN_STATUS_OK)
    return st;
  struct kiln_cuda_model *m = (struct kiln_cuda_model *)model;
  const driver_t *drv = &m->drv;
  if (drv->eventCreate == NULL)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: the driver has no event entry points");
  CUresult rc = drv->ctxPushCurrent(m->context);
  if (rc != CUDA_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cannot make the model's device current: %s",
                          error_string(drv, rc));
  /* An event before every step and one after the last. */
  CUevent *events = calloc(d->num_steps + 1, sizeof(CUevent));
  size_t made = 0;
  st = events == NULL ? kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the events") : KILN_STATUS_OK;
  for (; st == KILN_STATUS_OK && made <= d->num_steps; ++made)
    if ((rc = drv->eventCreate(&events[made], CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
      st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cuEventCreate failed: %s", error_string(drv, rc));
  pthread_mutex_lock(&m->lock);
  for (size_t s = 0; st == KILN_STATUS_OK && s < d->num_steps; ++s) {
    if ((rc = drv->eventRecord(events[s], (CUstream)stream)) != CUDA_SUCCESS)
      st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cuEventRecord failed: %s", error_string(drv, rc));
    else
      st = launch_step(m, s, inputs, outputs, device_arena, device_state, dims, (CUstream)stream);
  }
  pthread_mutex_unlock(&m->lock);
  if (st == KILN_STATUS_OK && (rc = drv->eventRecord(events[d->num_steps], (CUstream)stream)) != CUDA_SUCCESS)
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cuEventRecord failed: %s", error_string(drv, rc));
  if (st == KILN_STATUS_OK && (rc = drv->eventSynchronize(events[d->num_steps])) != CUDA_SUCCESS)
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: the profiled run failed: %s", error_string(drv, rc));
  for (size_t s = 0; st == KILN_STATUS_OK && s < d->num_steps; ++s)
    if ((rc = drv->eventElapsedTime(&step_ms[s], events[s], events[s + 1])) != CUDA_SUCCESS)
      st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cuEventElapsedTime failed: %s", error_string(drv, rc));
  for (size_t e = 0; e < made && events[e] != NULL; ++e)
    drv->eventDestroy(events[e]);
  free(events);
  CUcontext ignored;
  drv->ctxPopCurrent(&ignored);
  if (st == KILN_STATUS_OK)
    kiln_error_clear();
  return st;
}

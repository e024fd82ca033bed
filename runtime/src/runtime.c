/*
 * runtime.c - the generic C API of kiln/runtime.h.
 *
 * kiln_model_open verifies an artifact's descriptor and copies the signature
 * into one heap block (the only allocation the runtime ever makes), so the
 * handle does not depend on the descriptor's layout after opening.
 * kiln_model_run checks the caller's tensor views and arena against that
 * signature, packs the data pointers into an array on its stack and calls
 * the compiled code's packed entry point. Every call that returns a status
 * leaves a message in a thread-local buffer on failure and clears it on
 * success; nothing is printed and nothing aborts.
 */
#include "kiln/runtime.h"

#include "checked_math.h"
#include "comm.h"
#include "descriptor.h"
#include "error.h"
#include "pool.h"

#include <inttypes.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) || defined(__clang__)
#define KILN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KILN_PRINTF(fmt, args)
#endif

_Static_assert(KILN_RUNTIME_VERSION == 100, "update kiln_runtime_version_string");

/* Signature copied out of the descriptor. The block allocated for it holds,
 * after this struct: the kiln_tensor_info_t of every input then output, the
 * kiln_state_info_t of every state tensor, the shapes of all of them
 * (int64_t), then every name with its terminator. */
struct kiln_model {
  kiln_status_t (*run_packed)(void *const *buffers, void *arena);
  /* NULL for an ABI 2 artifact: it runs on the calling thread. */
  kiln_status_t (*run_packed_parallel)(void *const *buffers, void *arena, const kiln_parallel_t *parallel);
  /* NULL before ABI 5 and for CUDA artifacts: no profiles. */
  kiln_status_t (*run_packed_profiled)(void *const *buffers, void *arena, const kiln_parallel_t *parallel,
                                       const kiln_profiler_t *profiler);
  /* NULL before ABI 7 and for CUDA artifacts. */
  kiln_status_t (*run_packed_hooks)(void *const *buffers, void *arena, const kiln_run_hooks_t *hooks);
  /* A data-parallel step's collectives once kiln_model_set_comm gave it a
   * communicator; NULL otherwise (it runs as the only rank). */
  kiln_dp_t *dp;
  /* The kernels of a profile: the descriptor lives in the artifact, which
   * outlives the model. */
  kiln_desc_model_t kernels;
  size_t num_threads;                       /* as set; 0 = every core */
  size_t num_cores;                         /* online cores when opened */
  _Atomic(kiln_pool_t *) pool;              /* started by the first parallel run */
  atomic_int pool_failed;                   /* a pool could not be started: stay serial */
  kiln_status_t (*init_state)(void *state); /* non-null iff num_state > 0 */
  const char *name;
  size_t num_inputs;
  size_t num_outputs;
  size_t arena_bytes;
  size_t arena_alignment;
  size_t arena_lower_bound_bytes;
  size_t num_state;
  size_t state_bytes;
  size_t state_alignment;
  kiln_state_info_t *state; /* num_state entries, in the same block */
  int is_cuda;              /* compiled for --target=cuda: run with kiln_cuda_model_run */
  /* The dims of the last successful run (kiln_model_last_dims); the upper
   * bounds before one. */
  int64_t last_dims[KILN_DESC_MAX_DIMS];
  kiln_tensor_info_t tensors[]; /* inputs, then outputs */
};

/* ---- errors --------------------------------------------------------------- */

static _Thread_local char last_error[1024];

static void clear_error(void) { last_error[0] = '\0'; }

KILN_PRINTF(2, 3)
static kiln_status_t fail(kiln_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

const char *kiln_last_error(void) { return last_error; }

kiln_status_t kiln_error_set(kiln_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

void kiln_error_clear(void) { clear_error(); }

char *kiln_error_buffer(size_t *size) {
  *size = sizeof last_error;
  return last_error;
}

const char *kiln_status_string(kiln_status_t status) {
  switch (status) {
  case KILN_STATUS_OK:
    return "ok";
  case KILN_STATUS_INVALID_ARGUMENT:
    return "invalid argument";
  case KILN_STATUS_INVALID_ARTIFACT:
    return "invalid artifact";
  case KILN_STATUS_VERSION_MISMATCH:
    return "version mismatch";
  case KILN_STATUS_OUT_OF_MEMORY:
    return "out of memory";
  case KILN_STATUS_UNAVAILABLE:
    return "unavailable";
  case KILN_STATUS_INTERNAL:
    return "internal error";
  case KILN_STATUS_COMMUNICATION:
    return "communication error";
  }
  return "unknown status";
}

/* ---- versions and dtypes -------------------------------------------------- */

uint32_t kiln_runtime_version(void) { return KILN_RUNTIME_VERSION; }

const char *kiln_runtime_version_string(void) { return "0.1.0"; }

/* ---- open / close --------------------------------------------------------- */

#define add_size kiln_checked_add_size

kiln_status_t kiln_model_open(const kiln_artifact_t *artifact, kiln_model_t **out_model) {
  if (out_model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "out_model is null");
  *out_model = NULL;
  if (artifact == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "artifact is null");
  /* Only abi_version is read before it is known to match: the rest of the
   * struct may have another layout in other ABI versions. */
  if (artifact->abi_version < 2 || artifact->abi_version > KILN_ABI_VERSION)
    return fail(KILN_STATUS_VERSION_MISMATCH, "artifact has ABI version %" PRIu32 ", this runtime supports 2 to %d",
                artifact->abi_version, KILN_ABI_VERSION);
  if (artifact->run_packed == NULL)
    return fail(KILN_STATUS_INVALID_ARTIFACT, "artifact has no run_packed entry point");
  if (artifact->descriptor == NULL)
    return fail(KILN_STATUS_INVALID_ARTIFACT, "artifact has no descriptor");
  if (artifact->descriptor_size < 8 || artifact->descriptor_size > SIZE_MAX)
    return fail(KILN_STATUS_INVALID_ARTIFACT, "descriptor: size of %" PRIu64 " bytes is invalid",
                artifact->descriptor_size);

  kiln_status_t st = kiln_desc_check_checksum(artifact, last_error, sizeof last_error);
  if (st != KILN_STATUS_OK)
    return st;
  if ((st = kiln_desc_check_data(artifact, last_error, sizeof last_error)) != KILN_STATUS_OK)
    return st;
  if ((st = kiln_desc_check_code(artifact, last_error, sizeof last_error)) != KILN_STATUS_OK)
    return st;
  kiln_desc_model_t desc;
  st = kiln_desc_read(artifact->descriptor, (size_t)artifact->descriptor_size, &desc, last_error, sizeof last_error);
  if (st != KILN_STATUS_OK)
    return st;
  if (desc.num_state > 0 && artifact->init_state == NULL)
    return fail(KILN_STATUS_INVALID_ARTIFACT, "artifact has state but no init_state entry point");
  if (desc.num_state == 0 && artifact->init_state != NULL)
    return fail(KILN_STATUS_INVALID_ARTIFACT, "artifact has an init_state entry point but no state");

  /* The descriptor limits counts and totals far below SIZE_MAX; the checked
   * sums keep that from being a silent assumption. */
  size_t num_tensors = desc.num_inputs + desc.num_outputs;
  size_t state_at = sizeof(struct kiln_model) + num_tensors * sizeof(kiln_tensor_info_t);
  state_at = (state_at + alignof(kiln_state_info_t) - 1) / alignof(kiln_state_info_t) * alignof(kiln_state_info_t);
  size_t shapes_at = state_at + desc.num_state * sizeof(kiln_state_info_t);
  shapes_at = (shapes_at + alignof(int64_t) - 1) / alignof(int64_t) * alignof(int64_t);
  size_t names_at, total;
  if (!add_size(shapes_at, desc.total_rank * sizeof(int64_t), &names_at) ||
      !add_size(names_at, desc.name.size + 1, &total) || !add_size(total, desc.total_name_bytes, &total) ||
      !add_size(total, num_tensors + desc.num_state, &total))
    return fail(KILN_STATUS_INVALID_ARTIFACT, "descriptor: signature too large");

  struct kiln_model *model = malloc(total);
  if (model == NULL)
    return fail(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes for the model handle", total);
  unsigned char *base = (unsigned char *)model;
  int64_t *shapes = (int64_t *)(void *)(base + shapes_at);
  char *names = (char *)(base + names_at);

  model->run_packed = artifact->run_packed;
  /* Fields past init_state exist only from ABI 3 on. */
  model->run_packed_parallel = artifact->abi_version >= 3 ? artifact->run_packed_parallel : NULL;
  model->run_packed_profiled = artifact->abi_version >= 5 ? artifact->run_packed_profiled : NULL;
  model->run_packed_hooks = artifact->abi_version >= 7 ? artifact->run_packed_hooks : NULL;
  model->dp = NULL;
  if (desc.num_buckets > 0 && !desc.has_cuda && model->run_packed_hooks == NULL) {
    free(model);
    return fail(KILN_STATUS_INVALID_ARTIFACT, "artifact has all-reduce buckets but no run_packed_hooks entry point");
  }
  /* Run-time sizes reach the code through the hooks of ABI 8 (a CUDA
   * model's kernels through kiln_cuda_model_run_dims). */
  if (desc.num_dims > 0 && !desc.has_cuda && (artifact->abi_version < 8 || model->run_packed_hooks == NULL)) {
    free(model);
    return fail(KILN_STATUS_INVALID_ARTIFACT,
                "artifact has symbolic dimensions but no run_packed_hooks entry point of ABI 8 or later");
  }
  /* Sizes computed by the run (decision 0031) are written back through the
   * dims hook from ABI 10 on; a CUDA model has none. */
  if (desc.num_computed_dims > 0 && (artifact->abi_version < 10 || desc.has_cuda)) {
    free(model);
    return fail(KILN_STATUS_INVALID_ARTIFACT, "artifact has computed dimensions but is %s",
                desc.has_cuda ? "a CUDA model" : "older than ABI 10");
  }
  model->kernels = desc;
  for (size_t d = 0; d < desc.num_dims; ++d)
    model->last_dims[d] = kiln_desc_dim(&desc, d).hi;
  if (model->run_packed_profiled == NULL)
    model->kernels.num_cpu_kernels = 0;
  model->num_threads = 0;
  model->num_cores = kiln_num_cores();
  atomic_init(&model->pool, NULL);
  atomic_init(&model->pool_failed, 0);
  model->init_state = artifact->init_state;
  model->num_state = desc.num_state;
  model->state_bytes = desc.state_bytes;
  model->state_alignment = desc.state_alignment;
  model->state = (kiln_state_info_t *)(void *)(base + state_at);
  model->is_cuda = desc.has_cuda;
  model->num_inputs = desc.num_inputs;
  model->num_outputs = desc.num_outputs;
  model->arena_bytes = desc.arena_bytes;
  model->arena_alignment = desc.arena_alignment;
  model->arena_lower_bound_bytes = desc.arena_lower_bound_bytes;
  memcpy(names, desc.name.data, desc.name.size + 1);
  model->name = names;
  names += desc.name.size + 1;

  for (size_t i = 0; i < num_tensors; ++i) {
    int is_output = i >= desc.num_inputs;
    kiln_desc_tensor_t tensor;
    st =
        kiln_desc_tensor(&desc, is_output, is_output ? i - desc.num_inputs : i, &tensor, last_error, sizeof last_error);
    if (st != KILN_STATUS_OK) { /* cannot happen for a verified descriptor */
      free(model);
      return KILN_STATUS_INTERNAL;
    }
    kiln_tensor_info_t *info = &model->tensors[i];
    memcpy(names, tensor.name.data, tensor.name.size + 1);
    info->name = names;
    names += tensor.name.size + 1;
    if (tensor.rank > 0)
      memcpy(shapes, tensor.shape, tensor.rank * sizeof(int64_t));
    info->shape = shapes;
    shapes += tensor.rank;
    info->dtype = tensor.dtype;
    info->rank = tensor.rank;
    info->num_elements = tensor.num_elements;
    info->size_bytes = tensor.size_bytes;
  }
  for (size_t i = 0; i < desc.num_state; ++i) {
    kiln_desc_tensor_t tensor;
    st = kiln_desc_state(&desc, i, &tensor, last_error, sizeof last_error);
    if (st != KILN_STATUS_OK) { /* cannot happen for a verified descriptor */
      free(model);
      return KILN_STATUS_INTERNAL;
    }
    kiln_state_info_t *info = &model->state[i];
    memcpy(names, tensor.name.data, tensor.name.size + 1);
    info->tensor.name = names;
    names += tensor.name.size + 1;
    if (tensor.rank > 0)
      memcpy(shapes, tensor.shape, tensor.rank * sizeof(int64_t));
    info->tensor.shape = shapes;
    shapes += tensor.rank;
    info->tensor.dtype = tensor.dtype;
    info->tensor.rank = tensor.rank;
    info->tensor.num_elements = tensor.num_elements;
    info->tensor.size_bytes = tensor.size_bytes;
    info->offset = tensor.offset;
    info->role = (kiln_state_role_t)tensor.role;
  }

  *out_model = model;
  clear_error();
  return KILN_STATUS_OK;
}

void kiln_model_close(kiln_model_t *model) {
  if (model == NULL)
    return;
  kiln_pool_destroy(atomic_load(&model->pool));
  kiln_dp_destroy(model->dp);
  free(model);
}

/* ---- data-parallel steps -------------------------------------------------- */

size_t kiln_model_num_buckets(const kiln_model_t *model) { return model ? model->kernels.num_buckets : 0; }

kiln_status_t kiln_model_set_comm(kiln_model_t *model, kiln_comm_t *comm) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->kernels.num_buckets == 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT,
                "model '%s' is not a data-parallel step (compile it with kilnc train --data-parallel)", model->name);
  kiln_dp_t *dp = NULL;
  if (comm != NULL) {
    kiln_status_t st = kiln_dp_create(comm, &model->kernels, &dp);
    if (st != KILN_STATUS_OK)
      return st;
  }
  kiln_dp_destroy(model->dp);
  model->dp = dp;
  clear_error();
  return KILN_STATUS_OK;
}

void kiln_model_comm_times(const kiln_model_t *model, double *blocked_seconds, double *in_flight_seconds) {
  double blocked = 0, in_flight = 0;
  if (model != NULL && model->dp != NULL)
    kiln_dp_times(model->dp, &blocked, &in_flight);
  if (blocked_seconds)
    *blocked_seconds = blocked;
  if (in_flight_seconds)
    *in_flight_seconds = in_flight;
}

/* ---- threads -------------------------------------------------------------- */

static kiln_pool_t *model_pool(const kiln_model_t *cmodel);

kiln_status_t kiln_model_set_num_threads(kiln_model_t *model, size_t num_threads) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  model->num_threads = num_threads;
  kiln_pool_t *pool = atomic_load(&model->pool);
  if (pool != NULL && kiln_pool_num_threads(pool) != kiln_model_num_threads(model)) {
    atomic_store(&model->pool, NULL);
    kiln_pool_destroy(pool);
  }
  /* Start the pool now, so that no run allocates. */
  atomic_store(&model->pool_failed, 0);
  size_t threads = kiln_model_num_threads(model);
  if (model->run_packed_parallel != NULL && threads > 1 && model_pool(model) == NULL)
    return fail(KILN_STATUS_OUT_OF_MEMORY, "cannot start %zu threads; runs use the calling thread", threads);
  clear_error();
  return KILN_STATUS_OK;
}

size_t kiln_model_num_threads(const kiln_model_t *model) {
  if (model == NULL)
    return 0;
  return model->num_threads ? model->num_threads : model->num_cores;
}

/* The handle's pool, started on first use; NULL to run serially. Two first
 * runs racing each start one, and the loser stops its own. */
static kiln_pool_t *model_pool(const kiln_model_t *cmodel) {
  /* The handle is heap memory the runtime owns; only the pool changes. */
  kiln_model_t *model = (kiln_model_t *)cmodel;
  size_t threads = kiln_model_num_threads(model);
  if (model->run_packed_parallel == NULL || threads < 2)
    return NULL;
  kiln_pool_t *pool = atomic_load_explicit(&model->pool, memory_order_acquire);
  if (pool != NULL || atomic_load(&model->pool_failed))
    return pool;
  kiln_pool_t *created = kiln_pool_create(threads);
  if (created == NULL) {
    atomic_store(&model->pool_failed, 1);
    return NULL;
  }
  kiln_pool_t *expected = NULL;
  if (atomic_compare_exchange_strong(&model->pool, &expected, created))
    return created;
  kiln_pool_destroy(created);
  return expected;
}

/* ---- inspection ----------------------------------------------------------- */

const char *kiln_model_name(const kiln_model_t *model) { return model ? model->name : ""; }

int kiln_model_is_cuda(const kiln_model_t *model) { return model ? model->is_cuda : 0; }

size_t kiln_model_num_inputs(const kiln_model_t *model) { return model ? model->num_inputs : 0; }

size_t kiln_model_num_outputs(const kiln_model_t *model) { return model ? model->num_outputs : 0; }

static kiln_status_t tensor_info(const kiln_model_t *model, int is_output, size_t index, kiln_tensor_info_t *out_info) {
  const char *kind = is_output ? "output" : "input";
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (out_info == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "out_info is null");
  size_t count = is_output ? model->num_outputs : model->num_inputs;
  if (index >= count)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "%s index %zu out of range: model '%s' has %zu %ss", kind, index,
                model->name, count, kind);
  *out_info = model->tensors[is_output ? model->num_inputs + index : index];
  clear_error();
  return KILN_STATUS_OK;
}

kiln_status_t kiln_model_input_info(const kiln_model_t *model, size_t index, kiln_tensor_info_t *out_info) {
  return tensor_info(model, 0, index, out_info);
}

kiln_status_t kiln_model_output_info(const kiln_model_t *model, size_t index, kiln_tensor_info_t *out_info) {
  return tensor_info(model, 1, index, out_info);
}

size_t kiln_model_arena_bytes(const kiln_model_t *model) { return model ? model->arena_bytes : 0; }

size_t kiln_model_arena_alignment(const kiln_model_t *model) { return model ? model->arena_alignment : 0; }

size_t kiln_model_arena_lower_bound_bytes(const kiln_model_t *model) {
  return model ? model->arena_lower_bound_bytes : 0;
}

size_t kiln_model_num_state(const kiln_model_t *model) { return model ? model->num_state : 0; }

kiln_status_t kiln_model_state_info(const kiln_model_t *model, size_t index, kiln_state_info_t *out_info) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (out_info == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "out_info is null");
  if (index >= model->num_state)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "state index %zu out of range: model '%s' has %zu state tensors", index,
                model->name, model->num_state);
  *out_info = model->state[index];
  clear_error();
  return KILN_STATUS_OK;
}

size_t kiln_model_state_bytes(const kiln_model_t *model) { return model ? model->state_bytes : 0; }

size_t kiln_model_state_alignment(const kiln_model_t *model) {
  return model ? (model->num_state ? model->state_alignment : 1) : 0;
}

/* The checks on a caller's state buffer shared by init and run. */
static kiln_status_t check_state(const kiln_model_t *model, const void *state, size_t state_bytes) {
  if (model->num_state == 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has no state", model->name);
  if (state == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "state is null, model '%s' needs %zu bytes", model->name,
                model->state_bytes);
  if (state_bytes < model->state_bytes)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "state holds %zu bytes, model '%s' needs %zu", state_bytes, model->name,
                model->state_bytes);
  if ((uintptr_t)state % model->state_alignment != 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "state at %p is not aligned to %zu bytes", state, model->state_alignment);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_model_init_state(const kiln_model_t *model, void *state, size_t state_bytes) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  kiln_status_t st = check_state(model, state, state_bytes);
  if (st != KILN_STATUS_OK)
    return st;
  st = model->init_state(state);
  if (st != KILN_STATUS_OK)
    return fail(st, "compiled code returned %s", kiln_status_string(st));
  clear_error();
  return KILN_STATUS_OK;
}

/* ---- symbolic dimensions ------------------------------------------------- */

size_t kiln_model_num_dims(const kiln_model_t *model) { return model ? model->kernels.num_dims : 0; }

kiln_status_t kiln_model_dim_info(const kiln_model_t *model, size_t index, kiln_dim_info_t *out_info) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (out_info == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "out_info is null");
  if (index >= model->kernels.num_dims)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "dimension index %zu out of range: model '%s' has %zu", index,
                model->name, model->kernels.num_dims);
  kiln_desc_dim_t dim = kiln_desc_dim(&model->kernels, index);
  out_info->name = dim.name.data;
  out_info->min = dim.lo;
  out_info->max = dim.hi;
  out_info->computed = dim.computed;
  clear_error();
  return KILN_STATUS_OK;
}

/* The sizes the inputs' shapes give the symbols: each in its range, and the
 * same in every input axis that has it. Inputs of the wrong rank or without
 * a shape are skipped here (check_tensor refuses them after); a symbol no
 * input gave stays at its upper bound. */
static kiln_status_t dims_of_inputs(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                    int64_t *dims) {
  const kiln_desc_model_t *desc = &model->kernels;
  size_t first[KILN_DESC_MAX_DIMS];
  for (size_t d = 0; d < desc->num_dims; ++d) {
    dims[d] = kiln_desc_dim(desc, d).hi;
    first[d] = SIZE_MAX;
  }
  for (size_t i = 0; i < num_inputs && i < model->num_inputs; ++i) {
    kiln_desc_tensor_t tensor;
    char err[16];
    if (kiln_desc_tensor(desc, 0, i, &tensor, err, sizeof err) != KILN_STATUS_OK)
      return fail(KILN_STATUS_INTERNAL, "cannot read input %zu of a verified descriptor", i);
    if (inputs[i].rank != tensor.rank || (tensor.rank > 0 && inputs[i].shape == NULL))
      continue;
    for (size_t axis = 0; axis < tensor.rank; ++axis) {
      int d = kiln_desc_axis_dim(desc, &tensor, axis);
      if (d < 0)
        continue;
      kiln_desc_dim_t dim = kiln_desc_dim(desc, (size_t)d);
      int64_t size = inputs[i].shape[axis];
      if (size < dim.lo || size > dim.hi)
        return fail(KILN_STATUS_INVALID_ARGUMENT,
                    "input '%s': dimension '%s' (axis %zu) is %" PRId64 ", outside its range %" PRId64 "..%" PRId64,
                    model->tensors[i].name, dim.name.data, axis, size, dim.lo, dim.hi);
      if (first[d] != SIZE_MAX && dims[d] != size)
        return fail(KILN_STATUS_INVALID_ARGUMENT,
                    "dimension '%s' is %" PRId64 " in input '%s' but %" PRId64 " in input '%s' (axis %zu)",
                    dim.name.data, dims[d], model->tensors[first[d]].name, size, model->tensors[i].name, axis);
      if (first[d] == SIZE_MAX)
        first[d] = i;
      dims[d] = size;
    }
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_model_dims_of_inputs(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                        int64_t *dims) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (num_inputs != model->num_inputs)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s': expected %zu inputs, found %zu", model->name,
                model->num_inputs, num_inputs);
  if ((num_inputs > 0 && inputs == NULL) || (model->kernels.num_dims > 0 && dims == NULL))
    return fail(KILN_STATUS_INVALID_ARGUMENT, "inputs or dims is null");
  for (size_t i = 0; i < num_inputs; ++i)
    if (inputs[i].rank != model->tensors[i].rank || (inputs[i].rank > 0 && inputs[i].shape == NULL))
      return fail(KILN_STATUS_INVALID_ARGUMENT, "input '%s': expected rank %zu, found %zu%s", model->tensors[i].name,
                  model->tensors[i].rank, inputs[i].rank, inputs[i].shape == NULL ? " without a shape" : "");
  kiln_status_t st = dims_of_inputs(model, inputs, num_inputs, dims);
  if (st == KILN_STATUS_OK)
    clear_error();
  return st;
}

kiln_status_t kiln_model_last_dims(const kiln_model_t *model, int64_t *dims) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->kernels.num_dims > 0 && dims == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "dims is null");
  if (model->kernels.num_dims > 0)
    memcpy(dims, model->last_dims, model->kernels.num_dims * sizeof dims[0]);
  clear_error();
  return KILN_STATUS_OK;
}

/* Each of `dims` within its dimension's range. */
static kiln_status_t check_dims(const kiln_model_t *model, const int64_t *dims) {
  for (size_t d = 0; d < model->kernels.num_dims; ++d) {
    kiln_desc_dim_t dim = kiln_desc_dim(&model->kernels, d);
    if (dims[d] < dim.lo || dims[d] > dim.hi)
      return fail(KILN_STATUS_INVALID_ARGUMENT,
                  "dimension '%s' is %" PRId64 ", outside its range %" PRId64 "..%" PRId64, dim.name.data, dims[d],
                  dim.lo, dim.hi);
  }
  return KILN_STATUS_OK;
}

/* The shape of input or output `index` at `dims` into `shape` (its rank
 * entries). */
static kiln_status_t shape_at(const kiln_model_t *model, int is_output, size_t index, const int64_t *dims,
                              int64_t *shape) {
  const kiln_tensor_info_t *info = &model->tensors[is_output ? model->num_inputs + index : index];
  if (model->kernels.num_dims == 0 || dims == NULL) {
    if (info->rank > 0)
      memcpy(shape, info->shape, info->rank * sizeof(int64_t));
    return KILN_STATUS_OK;
  }
  kiln_desc_tensor_t tensor;
  char err[16];
  if (kiln_desc_tensor(&model->kernels, is_output, index, &tensor, err, sizeof err) != KILN_STATUS_OK)
    return fail(KILN_STATUS_INTERNAL, "cannot read a tensor of a verified descriptor");
  kiln_status_t st = check_dims(model, dims);
  if (st != KILN_STATUS_OK)
    return st;
  if (!kiln_desc_tensor_shape(&model->kernels, &tensor, dims, shape))
    return fail(KILN_STATUS_INTERNAL, "the sizes of '%s' overflow", info->name);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_model_arena_bytes_at(const kiln_model_t *model, const int64_t *dims, size_t *bytes) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (bytes == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "bytes is null");
  if (model->kernels.num_dims == 0 || dims == NULL) {
    *bytes = model->arena_bytes;
    clear_error();
    return KILN_STATUS_OK;
  }
  kiln_status_t st = check_dims(model, dims);
  if (st != KILN_STATUS_OK)
    return st;
  *bytes = kiln_desc_arena_bytes(&model->kernels, dims);
  clear_error();
  return KILN_STATUS_OK;
}

/* kiln_model_input_shape and kiln_model_output_shape. */
static kiln_status_t public_shape_at(const kiln_model_t *model, int is_output, size_t index, const int64_t *dims,
                                     int64_t *shape) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  size_t count = is_output ? model->num_outputs : model->num_inputs;
  const char *kind = is_output ? "output" : "input";
  if (index >= count)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "%s index %zu out of range: model '%s' has %zu %ss", kind, index,
                model->name, count, kind);
  if (shape == NULL && model->tensors[(is_output ? model->num_inputs : 0) + index].rank > 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "shape is null");
  kiln_status_t st = shape_at(model, is_output, index, dims, shape);
  if (st == KILN_STATUS_OK)
    clear_error();
  return st;
}

kiln_status_t kiln_model_input_shape(const kiln_model_t *model, size_t index, const int64_t *dims, int64_t *shape) {
  return public_shape_at(model, 0, index, dims, shape);
}

kiln_status_t kiln_model_output_shape(const kiln_model_t *model, size_t index, const int64_t *dims, int64_t *shape) {
  return public_shape_at(model, 1, index, dims, shape);
}

/* ---- run ------------------------------------------------------------------ */

/* Writes "[d0,d1,...]" into buf, truncating if it does not fit. */
static void format_shape(char *buf, size_t size, const int64_t *shape, size_t rank) {
  size_t used = 0;
  for (size_t i = 0; i <= rank && used < size; ++i) {
    int n = i == rank ? snprintf(buf + used, size - used, "]")
                      : snprintf(buf + used, size - used, "%s%" PRId64, i == 0 ? "[" : ",", shape[i]);
    if (n < 0)
      break;
    used += (size_t)n;
  }
  if (rank == 0)
    snprintf(buf, size, "[]");
}

/* Checks `got` against `want` at the shape `want_shape` (want->rank sizes:
 * its shape, or its shape at a run's sizes). */
static kiln_status_t check_tensor(const char *kind, const kiln_tensor_info_t *want, const int64_t *want_shape,
                                  const kiln_tensor_t *got) {
  if (got->dtype != want->dtype) {
    if (kiln_dtype_size(got->dtype) == 0)
      return fail(KILN_STATUS_INVALID_ARGUMENT, "%s '%s': expected dtype %s, found invalid dtype %d", kind, want->name,
                  kiln_dtype_name(want->dtype), (int)got->dtype);
    return fail(KILN_STATUS_INVALID_ARGUMENT, "%s '%s': expected dtype %s, found %s", kind, want->name,
                kiln_dtype_name(want->dtype), kiln_dtype_name(got->dtype));
  }
  char expected[96], found[96];
  if (got->rank != want->rank) {
    format_shape(expected, sizeof expected, want_shape, want->rank);
    return fail(KILN_STATUS_INVALID_ARGUMENT, "%s '%s': expected rank %zu (shape %s), found rank %zu", kind, want->name,
                want->rank, expected, got->rank);
  }
  if (got->rank > 0 && got->shape == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "%s '%s': shape is null", kind, want->name);
  for (size_t d = 0; d < want->rank; ++d) {
    if (got->shape[d] != want_shape[d]) {
      format_shape(expected, sizeof expected, want_shape, want->rank);
      format_shape(found, sizeof found, got->shape, got->rank);
      return fail(KILN_STATUS_INVALID_ARGUMENT, "%s '%s': expected shape %s, found %s", kind, want->name, expected,
                  found);
    }
  }
  if (got->data == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "%s '%s': data is null", kind, want->name);
  return KILN_STATUS_OK;
}

/* Whether [a, a + a_size) and [b, b + b_size) share a byte. Compares
 * addresses as integers (relational operators on pointers into different
 * objects are undefined) and stays correct under unsigned wrap-around. */
static int overlaps(const void *a, size_t a_size, const void *b, size_t b_size) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return a_size > 0 && b_size > 0 && (x - y < b_size || y - x < a_size);
}

static kiln_status_t run(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                         const kiln_tensor_t *outputs, size_t num_outputs, void *state, size_t state_bytes, void *arena,
                         size_t arena_bytes, uint64_t *timestamps);

kiln_status_t kiln_model_run(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                             const kiln_tensor_t *outputs, size_t num_outputs, void *arena, size_t arena_bytes) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->is_cuda)
    return fail(KILN_STATUS_UNAVAILABLE,
                "model '%s' was compiled for cuda: run it with kiln_cuda_model_run (kiln/runtime_cuda.h)", model->name);
  if (model->num_state > 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has state: run it with kiln_model_run_with_state",
                model->name);
  return run(model, inputs, num_inputs, outputs, num_outputs, NULL, 0, arena, arena_bytes, NULL);
}

kiln_status_t kiln_model_run_with_state(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                        const kiln_tensor_t *outputs, size_t num_outputs, void *state,
                                        size_t state_bytes, void *arena, size_t arena_bytes) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->num_state == 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has no state: run it with kiln_model_run", model->name);
  return run(model, inputs, num_inputs, outputs, num_outputs, state, state_bytes, arena, arena_bytes, NULL);
}

size_t kiln_model_num_kernels(const kiln_model_t *model) { return model == NULL ? 0 : model->kernels.num_cpu_kernels; }

const char *kiln_model_kernel_name(const kiln_model_t *model, size_t index) {
  if (model == NULL || index >= model->kernels.num_cpu_kernels)
    return NULL;
  return kiln_desc_cpu_kernel(&model->kernels, index).data;
}

uint64_t kiln_model_kernel_flops(const kiln_model_t *model, size_t index) {
  if (model == NULL || index >= model->kernels.num_cpu_kernels)
    return 0;
  return kiln_desc_cpu_kernel_flops(&model->kernels, index);
}

typedef struct profile {
  uint64_t *timestamps; /* NULL: not profiled */
  size_t count;         /* kernels + 1 */
  kiln_dp_t *dp;        /* a data-parallel run's collectives, or NULL */
} profile_t;

static void record_kernel_start(void *ctx, uint32_t kernel) {
  profile_t *p = (profile_t *)ctx;
  /* Between two kernels, MPI may progress the buckets in flight. */
  if (p->dp != NULL)
    kiln_dp_progress(p->dp);
  if (p->timestamps == NULL)
    return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (kernel < p->count)
    p->timestamps[kernel] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

kiln_status_t kiln_model_run_profiled(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                      const kiln_tensor_t *outputs, size_t num_outputs, void *state, size_t state_bytes,
                                      void *arena, size_t arena_bytes, uint64_t *timestamps_ns, size_t num_timestamps) {
  if (model == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model is null");
  if (model->is_cuda)
    return fail(KILN_STATUS_UNAVAILABLE,
                "model '%s' was compiled for cuda: profile it with kiln_cuda_model_profile (kiln/runtime_cuda.h)",
                model->name);
  if (model->run_packed_profiled == NULL)
    return fail(KILN_STATUS_UNAVAILABLE,
                "model '%s' has no kernel probes (compiled by a kilnc older than ABI 5): compile it again",
                model->name);
  size_t needed = model->kernels.num_cpu_kernels + 1;
  if (timestamps_ns == NULL || num_timestamps < needed)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "timestamps_ns holds %zu entries, model '%s' needs %zu",
                timestamps_ns == NULL ? (size_t)0 : num_timestamps, model->name, needed);
  if (model->num_state == 0 && (state != NULL || state_bytes != 0))
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has no state, but a state was given", model->name);
  return run(model, inputs, num_inputs, outputs, num_outputs, state, state_bytes, arena, arena_bytes, timestamps_ns);
}

static kiln_status_t run(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                         const kiln_tensor_t *outputs, size_t num_outputs, void *state, size_t state_bytes, void *arena,
                         size_t arena_bytes, uint64_t *timestamps) {
  if (num_inputs != model->num_inputs)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s': expected %zu inputs, found %zu", model->name,
                model->num_inputs, num_inputs);
  if (num_outputs != model->num_outputs)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "model '%s': expected %zu outputs, found %zu", model->name,
                model->num_outputs, num_outputs);
  if (num_inputs > 0 && inputs == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "inputs is null");
  if (num_outputs > 0 && outputs == NULL)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "outputs is null");

  const kiln_tensor_info_t *in_info = model->tensors;
  const kiln_tensor_info_t *out_info = model->tensors + model->num_inputs;
  kiln_status_t st;
  /* A model with symbolic dimensions runs at the sizes its inputs give;
   * every tensor is checked, and its bytes counted, at those sizes. */
  int64_t dims[KILN_DESC_MAX_DIMS];
  int symbolic = model->kernels.num_dims > 0;
  if (symbolic && (st = dims_of_inputs(model, inputs, num_inputs, dims)) != KILN_STATUS_OK)
    return st;
  size_t in_bytes[KILN_DESC_MAX_TENSORS], out_bytes[KILN_DESC_MAX_TENSORS];
  for (size_t t = 0; t < num_inputs + num_outputs; ++t) {
    int is_output = t >= num_inputs;
    size_t index = is_output ? t - num_inputs : t;
    const kiln_tensor_info_t *info = is_output ? &out_info[index] : &in_info[index];
    int64_t shape[KILN_DESC_MAX_RANK];
    if ((st = shape_at(model, is_output, index, symbolic ? dims : NULL, shape)) != KILN_STATUS_OK ||
        (st = check_tensor(is_output ? "output" : "input", info, shape,
                           is_output ? &outputs[index] : &inputs[index])) != KILN_STATUS_OK)
      return st;
    size_t bytes = info->size_bytes;
    if (symbolic) {
      uint64_t elements = 0;
      kiln_checked_dims_product(shape, info->rank, (uint64_t)PTRDIFF_MAX, &elements);
      bytes = (size_t)elements * kiln_dtype_size(info->dtype);
    }
    (is_output ? out_bytes : in_bytes)[index] = bytes;
  }

  /* At smaller sizes the buffers end sooner: the arena may too. */
  size_t needed = symbolic ? kiln_desc_arena_bytes(&model->kernels, dims) : model->arena_bytes;
  if (arena == NULL && needed > 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "arena is null, model '%s' needs %zu bytes", model->name, needed);
  if (arena_bytes < needed)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "arena holds %zu bytes, model '%s' needs %zu", arena_bytes, model->name,
                needed);
  /* Like the typed entry point, ignore the arena of a model that needs none. */
  if (needed > 0 && (uintptr_t)arena % model->arena_alignment != 0)
    return fail(KILN_STATUS_INVALID_ARGUMENT, "arena at %p is not aligned to %zu bytes", arena, model->arena_alignment);

  if (model->num_state > 0) {
    if ((st = check_state(model, state, state_bytes)) != KILN_STATUS_OK)
      return st;
  }

  /* The compiled code writes outputs and the arena while it may still read
   * inputs, so none of those may share storage. Inputs may alias each other.
   * The state is read and written: it may share storage with nothing. */
  size_t state_size = model->state_bytes;
  if (overlaps(state, state_size, arena, needed))
    return fail(KILN_STATUS_INVALID_ARGUMENT, "the state overlaps the arena");
  for (size_t i = 0; i < num_inputs; ++i)
    if (overlaps(inputs[i].data, in_bytes[i], state, state_size))
      return fail(KILN_STATUS_INVALID_ARGUMENT, "input '%s' overlaps the state", in_info[i].name);
  for (size_t o = 0; o < num_outputs; ++o)
    if (overlaps(outputs[o].data, out_bytes[o], state, state_size))
      return fail(KILN_STATUS_INVALID_ARGUMENT, "output '%s' overlaps the state", out_info[o].name);
  for (size_t i = 0; i < num_inputs; ++i)
    if (overlaps(inputs[i].data, in_bytes[i], arena, needed))
      return fail(KILN_STATUS_INVALID_ARGUMENT, "input '%s' overlaps the arena", in_info[i].name);
  for (size_t o = 0; o < num_outputs; ++o) {
    const void *data = outputs[o].data;
    size_t size = out_bytes[o];
    if (overlaps(data, size, arena, needed))
      return fail(KILN_STATUS_INVALID_ARGUMENT, "output '%s' overlaps the arena", out_info[o].name);
    for (size_t i = 0; i < num_inputs; ++i)
      if (overlaps(data, size, inputs[i].data, in_bytes[i]))
        return fail(KILN_STATUS_INVALID_ARGUMENT, "output '%s' overlaps input '%s'", out_info[o].name, in_info[i].name);
    for (size_t p = 0; p < o; ++p)
      if (overlaps(data, size, outputs[p].data, out_bytes[p]))
        return fail(KILN_STATUS_INVALID_ARGUMENT, "output '%s' overlaps output '%s'", out_info[o].name,
                    out_info[p].name);
  }

  /* kiln_model_open refused more than KILN_DESC_MAX_TENSORS in total. */
  void *buffers[KILN_DESC_MAX_TENSORS];
  for (size_t i = 0; i < num_inputs; ++i)
    buffers[i] = inputs[i].data;
  for (size_t o = 0; o < num_outputs; ++o)
    buffers[num_inputs + o] = outputs[o].data;
  if (model->num_state > 0)
    buffers[num_inputs + num_outputs] = state;

  /* One run at a time uses the pool; a concurrent one runs serially. */
  profile_t profile = {timestamps, model->kernels.num_cpu_kernels + 1, model->dp};
  kiln_profiler_t profiler = {record_kernel_start, &profile};
  kiln_pool_t *pool = model_pool(model);
  int pooled = pool != NULL && kiln_pool_try_acquire(pool);
  kiln_parallel_t parallel = {kiln_pool_parallel_for, pool};
  if (model->run_packed_hooks != NULL) {
    kiln_collectives_t collectives;
    if (model->dp != NULL)
      kiln_dp_begin(model->dp, &collectives);
    /* A data-parallel run's kernel probes drive MPI's progress (Open MPI
     * has no progress thread): the profiler hook is called between kernels. */
    kiln_run_hooks_t hooks = {sizeof hooks, pooled ? &parallel : NULL, timestamps || model->dp ? &profiler : NULL,
                              model->dp != NULL ? &collectives : NULL, symbolic ? dims : NULL};
    st = model->run_packed_hooks(buffers, arena, &hooks);
  } else if (pooled) {
    st = timestamps ? model->run_packed_profiled(buffers, arena, &parallel, &profiler)
                    : model->run_packed_parallel(buffers, arena, &parallel);
  } else {
    st = timestamps ? model->run_packed_profiled(buffers, arena, NULL, &profiler) : model->run_packed(buffers, arena);
  }
  if (pooled)
    kiln_pool_release(pool);
  /* The sizes the run computed are in dims now; a model object's last run
   * is read back with kiln_model_last_dims (not thread-safe, like the rest
   * of a run's state). */
  if (st == KILN_STATUS_OK && symbolic)
    memcpy(((kiln_model_t *)model)->last_dims, dims, model->kernels.num_dims * sizeof dims[0]);
  if (st == KILN_STATUS_COMMUNICATION && model->dp != NULL)
    return fail(st, "model '%s': %s; the state is unchanged", model->name, kiln_dp_error(model->dp));
  if (st != KILN_STATUS_OK)
    return fail(st, "compiled code returned %s", kiln_status_string(st));
  clear_error();
  return KILN_STATUS_OK;
}

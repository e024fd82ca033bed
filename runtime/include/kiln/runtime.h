/*
 * kiln/runtime.h - the one public header of Kiln's runtime.
 *
 * A Kiln artifact (an object file or shared library written by kilnc) holds
 * compiled code, the weights and a model descriptor. Each artifact exports a
 * typed entry point declared in its own generated header
 * (<name>_run(inputs..., outputs..., arena)), and <name>_artifact(), which
 * returns the kiln_artifact_t below. This header is the generic way to use any
 * artifact: open it, inspect its signature, run it with tensor views.
 *
 * Ownership (see docs/runtime-api.md): the caller owns every buffer (inputs,
 * outputs, arena). kiln_model_open allocates the model handle once;
 * kiln_model_run never allocates, never writes to inputs, and touches only the
 * caller's outputs and arena (unless kiln_model_set_num_threads was called
 * first, the first run also starts the handle's thread pool). A model handle
 * may be used from several threads at once if each thread passes its own
 * arena.
 *
 * C11; no symbol outside the kiln_ / KILN_ prefixes.
 */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this header and library: major * 10000 + minor * 100 + patch. */
#define KILN_RUNTIME_VERSION 100 /* 0.1.0 */

/* Version of the artifact ABI (kiln_artifact_t layout and the packed entry's
 * calling convention). The runtime opens artifacts of versions 2 to this
 * one and refuses others. 2 appended init_state and the state pointer of
 * training steps; 3 appended run_packed_parallel; 4 stores the descriptor's
 * checksum in descriptor_checksum (zero before), so a descriptor changed
 * after compilation no longer matches the code it describes; 5 appended
 * run_packed_profiled (per-kernel profiles of CPU artifacts) and the
 * checksum of the constant data the code reads (its weights); 6 appended
 * code_checksum, the checksum of a shared library's code; 7 appended
 * run_packed_hooks, whose hooks include the collectives of data-parallel
 * training steps; 8 appended the dims hook (the run-time sizes of symbolic
 * dimensions, kilnc --dim NAME=LO..HI) and gave the kernel their sizes;
 * 9 lets a CUDA descriptor's cuDNN convolutions pad their input
 * (CudaModule.conv_pads), which a runtime before it would not apply; 10
 * adds dimensions the run computes from data (a NonZero's count, decision
 * 0031), which the run writes into the dims hook, and kiln_dim_info_t's
 * `computed`. */
#define KILN_ABI_VERSION 10

typedef enum kiln_status {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1, /* null pointer, wrong shape/dtype/count, small or misaligned arena */
  KILN_STATUS_INVALID_ARTIFACT = 2, /* descriptor fails verification */
  KILN_STATUS_VERSION_MISMATCH = 3, /* artifact built for another ABI version or descriptor format_version */
  KILN_STATUS_OUT_OF_MEMORY = 4,    /* only kiln_model_open allocates */
  KILN_STATUS_UNAVAILABLE = 5,      /* e.g. the target device is not present */
  KILN_STATUS_INTERNAL = 6,
  KILN_STATUS_COMMUNICATION = 7, /* a data-parallel collective failed or timed out */
} kiln_status_t;

/* Element types; values are stable and equal the descriptor's DType. */
typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_F16 = 2,
  KILN_DTYPE_BF16 = 3,
  KILN_DTYPE_F64 = 4,
  KILN_DTYPE_I8 = 5,
  KILN_DTYPE_I32 = 6,
  KILN_DTYPE_I64 = 7,
  KILN_DTYPE_BOOL = 8, /* one byte per element, 0 or 1 */
  KILN_DTYPE_U8 = 9,
  KILN_DTYPE_U16 = 10,
  KILN_DTYPE_U32 = 11,
  KILN_DTYPE_U64 = 12,
  KILN_DTYPE_I16 = 13,
  /* Narrow types, one byte per element (never packed): the 8-bit floats hold
   * their bit pattern; the 4-bit float holds its pattern in the low nibble;
   * the 4- and 2-bit integers hold their value, sign- or zero-extended. */
  KILN_DTYPE_F8E4M3FN = 14,
  KILN_DTYPE_F8E4M3FNUZ = 15,
  KILN_DTYPE_F8E5M2 = 16,
  KILN_DTYPE_F8E5M2FNUZ = 17,
  KILN_DTYPE_U4 = 18,
  KILN_DTYPE_I4 = 19,
  KILN_DTYPE_F4E2M1 = 20,
  KILN_DTYPE_F8E8M0 = 21,
  KILN_DTYPE_U2 = 22,
  KILN_DTYPE_I2 = 23,
} kiln_dtype_t;

/* How compiled code runs a parallel loop on the caller's threads. The code
 * calls parallel_for(ctx, body, data, n), which must call body(data, begin,
 * end) over ranges [begin, end) that cover [0, n) exactly once, possibly on
 * several threads at once, and return when all have returned. The code
 * itself never creates a thread: the runtime lends them through this
 * struct (kiln_model_set_num_threads). Results do not depend on how the
 * ranges are split. */
typedef void (*kiln_parallel_body_t)(void *data, int64_t begin, int64_t end);
typedef struct kiln_parallel {
  void (*parallel_for)(void *ctx, kiln_parallel_body_t body, void *data, int64_t n);
  void *ctx;
} kiln_parallel_t;

/* Where a profiled run reports: kernel_start(ctx, i) as kernel i starts, on
 * the calling thread, in run order, and kernel_start(ctx, n) after the
 * last of the n kernels (kiln_model_num_kernels). */
typedef struct kiln_profiler {
  void (*kernel_start)(void *ctx, uint32_t kernel);
  void *ctx;
} kiln_profiler_t;

/* How a data-parallel training step (kilnc train --data-parallel) averages
 * its gradients over the ranks of a run. The step hands over its gradients
 * in buckets, in an order fixed at compile time (the descriptor's
 * buckets): start(ctx, b, buffers) as soon as bucket b's gradients are
 * computed, where buffers[i] is the bucket's tensor i (dense, of the
 * descriptor's dtype and element count), then, later in the same step,
 * wait(ctx, b, buffers) with the same buffers, on return from which they
 * must hold the mean over the ranks. Between the two the step computes on;
 * it does not touch the buffers. After the last op it calls finish(ctx):
 * a nonzero kiln_status_t fails the step before its state is updated.
 * start and wait cannot fail themselves: an error is kept for finish.
 * kiln_model_set_comm connects the runtime's own (MPI). */
typedef struct kiln_collectives {
  void (*start)(void *ctx, uint32_t bucket, void *const *buffers);
  void (*wait)(void *ctx, uint32_t bucket, void *const *buffers);
  int32_t (*finish)(void *ctx);
  void *ctx;
} kiln_collectives_t;

/* What run_packed_hooks may be given; each pointer may be NULL. struct_size
 * is sizeof(kiln_run_hooks_t) as the caller knows it: fields past it read
 * as NULL, so fields are only appended. */
typedef struct kiln_run_hooks {
  uint64_t struct_size;
  const kiln_parallel_t *parallel;
  const kiln_profiler_t *profiler;
  const kiln_collectives_t *collectives;
  /* ABI 8. For a model with symbolic dimensions: the run's size of each
   * (kiln_model_num_dims entries, in order), each within its range, else
   * the run fails with KILN_STATUS_INVALID_ARGUMENT; NULL runs at the upper
   * bounds. Ignored by a model of static sizes. ABI 10: the run writes the
   * value of each computed dimension (kiln_dim_info_t.computed) into its
   * entry, whatever the entry held before; with NULL those values are lost. */
  int64_t *dims;
} kiln_run_hooks_t;

/* A block of constant data the compiled code reads (weights, tables). */
typedef struct kiln_data_range {
  const void *data;
  uint64_t size; /* bytes */
} kiln_data_range_t;

/* What kilnc emits for every artifact; reached through <name>_artifact().
 * Fields are only appended, guarded by abi_version. */
typedef struct kiln_artifact {
  uint32_t abi_version;         /* KILN_ABI_VERSION of the compiler that wrote it */
  uint32_t descriptor_checksum; /* ABI 4: kiln_descriptor_checksum(descriptor, descriptor_size); zero before */
  const void *descriptor;       /* FlatBuffers buffer, schema runtime/schema/kiln_model.fbs */
  uint64_t descriptor_size;     /* bytes */
  /* Runs the model. buffers[] holds the inputs' then the outputs' data
   * pointers in signature order, then, for a model with state (a training
   * step, kilnc train), the state buffer; arena is the caller's arena.
   * Performs the same checks as the typed entry point (null pointers, state
   * and arena alignment). */
  kiln_status_t (*run_packed)(void *const *buffers, void *arena);
  /* ABI 2. For a model with state: writes the initial state (the model's
   * parameters, zero moments, step 0) into a buffer of the descriptor's
   * state_bytes. NULL for a model without state. */
  kiln_status_t (*init_state)(void *state);
  /* ABI 3. run_packed whose parallel loops go through `parallel` (NULL runs
   * them on the calling thread, like run_packed). NULL in an artifact
   * without a CPU entry (CUDA). */
  kiln_status_t (*run_packed_parallel)(void *const *buffers, void *arena, const kiln_parallel_t *parallel);
  /* ABI 5. run_packed_parallel that also reports each kernel's start to
   * `profiler` (NULL: none). NULL in an artifact without a CPU entry. */
  kiln_status_t (*run_packed_profiled)(void *const *buffers, void *arena, const kiln_parallel_t *parallel,
                                       const kiln_profiler_t *profiler);
  /* ABI 5. The constant data the code reads, and kiln_data_checksum over
   * those ranges in order; kiln_model_open verifies it, so damaged weights
   * are refused instead of computing wrong outputs. num_data_ranges 0 when
   * there is none (a CUDA artifact's weights are in its descriptor). The
   * code itself is not covered: linking relocates its bytes. */
  const kiln_data_range_t *data_ranges;
  uint64_t num_data_ranges;
  uint64_t data_checksum;
  /* ABI 6. In a shared library linked by kilnc --shared: kiln_data_checksum
   * over the library's executable segment (the PF_X PT_LOAD holding
   * run_packed, p_filesz bytes as loaded), which kilnc writes here after
   * linking; kiln_model_open and kiln_cuda_model_open recompute it and
   * refuse a mismatch, so changed code is refused like changed weights.
   * 0 in an object file: the application's link places and relocates the
   * code, so no checksum of it exists before then (docs/runtime-api.md). */
  uint64_t code_checksum;
  /* ABI 7. run_packed with any of the hooks (NULL: none); the entry point
   * of data-parallel steps' collectives. NULL in an artifact without a
   * CPU entry (CUDA). */
  kiln_status_t (*run_packed_hooks)(void *const *buffers, void *arena, const kiln_run_hooks_t *hooks);
} kiln_artifact_t;

/* The descriptor checksum of ABI 4: 32-bit FNV-1a over the descriptor's
 * bytes (offset basis 2166136261, prime 16777619). Any change of one byte
 * changes it. kilnc stores it next to the code; kiln_model_open and
 * kiln_cuda_model_open recompute it and refuse a mismatch. For programs
 * that build a kiln_artifact_t themselves. */
static inline uint32_t kiln_descriptor_checksum(const void *descriptor, size_t size) {
  const unsigned char *p = (const unsigned char *)descriptor;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

/* The data checksum of ABI 5: 64-bit FNV-1a over the bytes of every range
 * in order, taken 8 bytes (one little-endian word) at a time, the last
 * 1-7 bytes of each range one at a time (offset basis
 * 14695981039346656037, prime 1099511628211). */
static inline uint64_t kiln_data_checksum(const kiln_data_range_t *ranges, size_t num_ranges) {
  uint64_t h = 14695981039346656037ull;
  for (size_t r = 0; r < num_ranges; ++r) {
    const unsigned char *p = (const unsigned char *)ranges[r].data;
    uint64_t n = ranges[r].size, i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w = 0;
      for (int b = 7; b >= 0; --b)
        w = (w << 8) | p[i + (uint64_t)b];
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i)
      h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

/* Name of a status code, e.g. "invalid argument"; never null. */
const char *kiln_status_string(kiln_status_t status);

/* Detailed message of the last failure on this thread. Every kiln_* call
 * that returns a kiln_status_t sets it when it fails and sets it to "" when
 * it succeeds; other calls leave it alone. Valid until the next kiln_* call
 * on the same thread. */
const char *kiln_last_error(void);

/* Library version (KILN_RUNTIME_VERSION it was built with) and as text. */
uint32_t kiln_runtime_version(void);
const char *kiln_runtime_version_string(void);

/* Name of a dtype ("f32", ...) and its size in bytes (0 for invalid). */
const char *kiln_dtype_name(kiln_dtype_t dtype);
size_t kiln_dtype_size(kiln_dtype_t dtype);

typedef struct kiln_model kiln_model_t;

/* Verifies the artifact's descriptor and builds a handle. The artifact must
 * outlive the handle. On failure *out_model is set to NULL. */
kiln_status_t kiln_model_open(const kiln_artifact_t *artifact, kiln_model_t **out_model);

/* Releases a handle from kiln_model_open; NULL is ignored. */
void kiln_model_close(kiln_model_t *model);

/* Signature of one input or output. Pointers stay valid while the model is open. */
typedef struct kiln_tensor_info {
  const char *name;
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *shape; /* rank entries */
  size_t num_elements;
  size_t size_bytes;
} kiln_tensor_info_t;

const char *kiln_model_name(const kiln_model_t *model);
/* Nonzero for a model compiled with --target=cuda: its signature reads here,
 * but it runs through kiln/runtime_cuda.h. 0 for NULL. */
int kiln_model_is_cuda(const kiln_model_t *model);
size_t kiln_model_num_inputs(const kiln_model_t *model);
size_t kiln_model_num_outputs(const kiln_model_t *model);
kiln_status_t kiln_model_input_info(const kiln_model_t *model, size_t index, kiln_tensor_info_t *out_info);
kiln_status_t kiln_model_output_info(const kiln_model_t *model, size_t index, kiln_tensor_info_t *out_info);

/* Bytes and base alignment the arena passed to run must have. */
size_t kiln_model_arena_bytes(const kiln_model_t *model);
size_t kiln_model_arena_alignment(const kiln_model_t *model);
/* The largest number of bytes live at any step of the schedule. */
size_t kiln_model_arena_lower_bound_bytes(const kiln_model_t *model);

/* ---- state (training steps compiled by kilnc train) ----------------------
 *
 * A model with state reads and updates a caller-owned buffer on every run:
 * the trained parameters, the optimizer's moments and a step counter, each
 * at a fixed offset. A model without state has 0 state tensors and
 * kiln_model_state_bytes() == 0. */

/* What a state tensor holds; values equal the descriptor's StateRole. */
typedef enum kiln_state_role {
  KILN_STATE_PARAMETER = 1, /* a trained parameter, named like its ONNX initializer */
  KILN_STATE_MOMENT = 2,    /* an optimizer moment (optimizer.velocity.<p>, optimizer.m.<p>, ...) */
  KILN_STATE_STEP = 3,      /* optimizer.step: f64 count of the steps taken */
} kiln_state_role_t;

typedef struct kiln_state_info {
  kiln_tensor_info_t tensor; /* name, dtype, shape, sizes */
  size_t offset;             /* bytes from the start of the state buffer */
  kiln_state_role_t role;
} kiln_state_info_t;

size_t kiln_model_num_state(const kiln_model_t *model);
kiln_status_t kiln_model_state_info(const kiln_model_t *model, size_t index, kiln_state_info_t *out_info);
/* Bytes and base alignment the state buffer must have (0 for no state). */
size_t kiln_model_state_bytes(const kiln_model_t *model);
size_t kiln_model_state_alignment(const kiln_model_t *model);

/* Writes the initial state into a buffer of state_bytes bytes (at least
 * kiln_model_state_bytes(), aligned to kiln_model_state_alignment()). */
kiln_status_t kiln_model_init_state(const kiln_model_t *model, void *state, size_t state_bytes);

/* A state on disk: a header (a format version, a fingerprint of the state's
 * layout, the payload's size and checksum, the step counter) and the state
 * buffer's bytes (docs/runtime-api.md). Saving writes a temporary beside
 * `path`, flushes it to the disk and renames it over `path`: a crash or a
 * kill leaves the old file or the new one, never a mix.
 * KILN_STATUS_UNAVAILABLE with the system's reason when it cannot be
 * written (a full disk). */
kiln_status_t kiln_model_save_state(const kiln_model_t *model, const void *state, size_t state_bytes, const char *path);
/* Reads a state saved for this model into `state` (at least
 * kiln_model_state_bytes). KILN_STATUS_INVALID_ARGUMENT, and `state`
 * untouched, for a file that is no state file, holds another model's state
 * (the layout differs) or is damaged (size or checksum), saying which. */
kiln_status_t kiln_model_load_state(const kiln_model_t *model, void *state, size_t state_bytes, const char *path);
/* The fingerprint of the state's layout that state files carry: names,
 * dtypes, shapes, offsets and roles of the state tensors, and the size. */
uint64_t kiln_state_fingerprint(const kiln_model_t *model);

/* ---- threads --------------------------------------------------------------
 *
 * A run splits the model's large loops (matmul and convolution tiles, big
 * elementwise nests) over a pool of threads the handle owns. Every output
 * element is computed by one thread, the same way whatever the count, so the
 * results are bit-identical for every thread count. The pool is started by
 * kiln_model_set_num_threads or, if that was never called, by the first run
 * (the only time a run allocates; if that fails, the run uses the calling
 * thread alone), and lives until kiln_model_close. Between runs its threads
 * wait briefly, then sleep.
 * Runs on one handle from several threads at once stay correct: one of them
 * uses the pool, the others run on their own threads. No environment
 * variable is read. */

/* Sets the number of threads a run uses, the calling thread included: 1 runs
 * on the calling thread only, 0 (the default) uses every online core, and
 * starts the pool (so that no run allocates). Must not be called while a run
 * on the same handle is in progress. KILN_STATUS_OUT_OF_MEMORY if the
 * threads cannot be started; runs then use the calling thread. */
kiln_status_t kiln_model_set_num_threads(kiln_model_t *model, size_t num_threads);

/* The number of threads a run uses (0 resolved to the number of cores). */
size_t kiln_model_num_threads(const kiln_model_t *model);

/* A view of caller-owned data: dense, row-major. */
typedef struct kiln_tensor {
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  void *data;
} kiln_tensor_t;

/* ---- symbolic dimensions (kilnc --dim NAME=LO..HI) -----------------------
 *
 * A model compiled with ranges runs any sizes within them, chosen at run
 * time. Its tensor infos give the shapes at the upper bounds (and so
 * num_elements and size_bytes: the buffers a run at any sizes fits in);
 * kiln_model_run reads the sizes from the inputs' shapes, checks each
 * against its range and across the inputs that share it, and expects the
 * outputs at the shapes kiln_model_output_shape gives. Data is dense and
 * row-major at the run's sizes. A model of static sizes has 0 dims. */

typedef struct kiln_dim_info {
  const char *name; /* the ONNX dim_param, or the computing node's name */
  int64_t min, max; /* the range a run may choose from */
  /* ABI 10. 1 for a size the run computes from data (a NonZero's count,
   * decision 0031): its min is 0, its max the largest it can be; the
   * inputs do not give it, and kiln_model_run reports it after the run
   * (kiln_model_last_dims). Outputs are sized for the max, and a run
   * writes each dense and row-major at the shape kiln_model_output_shape
   * gives at the run's dims; the bytes past it are unspecified. */
  int computed;
} kiln_dim_info_t;

size_t kiln_model_num_dims(const kiln_model_t *model);
kiln_status_t kiln_model_dim_info(const kiln_model_t *model, size_t index, kiln_dim_info_t *out_info);

/* The sizes the inputs' shapes give the dims (kiln_model_num_dims entries
 * into dims), checked as kiln_model_run checks them: a size outside its
 * range, or two inputs that disagree, fail naming the dimension. A
 * computed dimension is at its max: the outputs' shapes at these dims are
 * the buffers a run needs. */
kiln_status_t kiln_model_dims_of_inputs(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                        int64_t *dims);

/* The dims of this model object's last successful kiln_model_run
 * (kiln_model_num_dims entries into dims): the sizes its inputs gave and
 * the sizes it computed; before any run, the upper bounds. Not thread-safe
 * against a concurrent run of the same model object. */
kiln_status_t kiln_model_last_dims(const kiln_model_t *model, int64_t *dims);

/* The shape of output `index` at the sizes `dims` (NULL: at the upper
 * bounds) into `shape`, which holds its rank entries. */
kiln_status_t kiln_model_output_shape(const kiln_model_t *model, size_t index, const int64_t *dims, int64_t *shape);
/* The same for input `index`: the shape kiln_model_run expects of it at
 * `dims` (an axis that is a dimension's takes its size, the rest are
 * fixed). */
kiln_status_t kiln_model_input_shape(const kiln_model_t *model, size_t index, const int64_t *dims, int64_t *shape);

/* The arena bytes a run at the sizes `dims` (NULL: at the upper bounds)
 * needs into *bytes: at most kiln_model_arena_bytes(), less where smaller
 * sizes end the last buffers sooner. kiln_model_run checks the arena
 * against this at the sizes the inputs give. */
kiln_status_t kiln_model_arena_bytes_at(const kiln_model_t *model, const int64_t *dims, size_t *bytes);

/* Checks counts, dtypes and shapes against the signature, the arena's size
 * and alignment, then runs. Never allocates; inputs are only read. A model
 * with state is refused: run it with kiln_model_run_with_state. */
kiln_status_t kiln_model_run(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                             const kiln_tensor_t *outputs, size_t num_outputs, void *arena, size_t arena_bytes);

/* kiln_model_run for a model with state: also checks the state buffer's
 * size and alignment and that it overlaps no input, output or the arena,
 * then runs one step, which updates the state in place. */
kiln_status_t kiln_model_run_with_state(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                        const kiln_tensor_t *outputs, size_t num_outputs, void *state,
                                        size_t state_bytes, void *arena, size_t arena_bytes);

/* ---- per-kernel profiles (CPU artifacts) --------------------------------
 * A CPU artifact runs its kernels (kiln-fuse's, in schedule order) one
 * after the other; each may fan out to the model's threads. */

/* How many kernels the artifact runs; 0 for CUDA artifacts and artifacts of
 * ABI 4 or older. */
size_t kiln_model_num_kernels(const kiln_model_t *model);

/* The ONNX nodes kernel `index` computes, comma-separated (e.g.
 * "Conv_0,Relu_1"); NULL when index is out of range. Valid while the model
 * is open. */
const char *kiln_model_kernel_name(const kiln_model_t *model, size_t index);

/* The kernel's matrix-product and convolution flops (two per multiply-add),
 * 0 when it has none or they were not counted. */
uint64_t kiln_model_kernel_flops(const kiln_model_t *model, size_t index);

/* kiln_model_run (state NULL and state_bytes 0) or kiln_model_run_with_state
 * with the same checks, which also writes into timestamps_ns, which holds
 * num_timestamps >= kiln_model_num_kernels(model) + 1 entries, the
 * CLOCK_MONOTONIC time in nanoseconds at which each kernel started and,
 * last, the time the last one ended: kernel i ran from timestamps_ns[i] to
 * timestamps_ns[i + 1]. Costs two clock reads per kernel. */
kiln_status_t kiln_model_run_profiled(const kiln_model_t *model, const kiln_tensor_t *inputs, size_t num_inputs,
                                      const kiln_tensor_t *outputs, size_t num_outputs, void *state, size_t state_bytes,
                                      void *arena, size_t arena_bytes, uint64_t *timestamps_ns, size_t num_timestamps);

/* ---- data-parallel training (kilnc train --data-parallel) ---------------
 * Every rank (process) runs the same step on its own shard of the batch;
 * the step averages the gradients over the ranks before its optimizer
 * reads them, so all ranks keep the same parameters. The runtime reduces
 * through MPI, loaded with dlopen only when a communicator is opened (Open
 * MPI's libmpi.so.40: its ABI is the one this runtime speaks). A step run
 * without a communicator runs as the only rank. */

typedef struct kiln_comm kiln_comm_t;

/* Opens a communicator over MPI. mpi_comm is a pointer to the
 * application's MPI_Comm (Open MPI), or NULL for MPI_COMM_WORLD, in which
 * case MPI is initialized from the environment mpirun set up unless the
 * application did so already (and finalized by kiln_comm_close if this
 * call initialized it). KILN_STATUS_UNAVAILABLE, naming the library, when
 * libmpi.so.40 or one of its functions cannot be loaded. */
kiln_status_t kiln_comm_open_mpi(const void *mpi_comm, kiln_comm_t **out_comm);

/* This process's rank and the number of ranks. */
int kiln_comm_rank(const kiln_comm_t *comm);
int kiln_comm_size(const kiln_comm_t *comm);

/* How long a wait for a bucket may take before the step fails with
 * KILN_STATUS_COMMUNICATION ("timed out") instead of hanging (a rank
 * died, or stopped calling): default 600 s; 0 waits forever. After a
 * timeout the communicator is unusable: close it. */
kiln_status_t kiln_comm_set_timeout(kiln_comm_t *comm, double seconds);

/* The timeout kiln_comm_set_timeout set (600 s unless changed; 0: none);
 * 600 for a NULL communicator. */
double kiln_comm_timeout(const kiln_comm_t *comm);

/* Sum then divide: every rank's `count` values of `dtype` (f32 or f64)
 * replaced by their mean over the ranks, blocking. For what the
 * application averages itself (a loss to print). */
kiln_status_t kiln_comm_allreduce_mean(kiln_comm_t *comm, void *data, size_t count, kiln_dtype_t dtype);

/* Rank `root`'s `bytes` bytes copied to every rank (a state loaded on one
 * rank, given to all), blocking. */
kiln_status_t kiln_comm_broadcast(kiln_comm_t *comm, void *data, size_t bytes, int root);

/* Closes the communicator (NULL is ignored); finalizes MPI if
 * kiln_comm_open_mpi initialized it. No model may still use it. */
void kiln_comm_close(kiln_comm_t *comm);

/* The number of all-reduce buckets of a data-parallel step; 0 for every
 * other artifact. */
size_t kiln_model_num_buckets(const kiln_model_t *model);

/* Makes the model's runs average over `comm`'s ranks (NULL: run as the
 * only rank again). Allocates one staging buffer per bucket (the
 * gradients' bytes in all). KILN_STATUS_INVALID_ARGUMENT for a model with
 * no buckets. Runs of one data-parallel model must not overlap, and every
 * rank must run the same steps in the same order. */
kiln_status_t kiln_model_set_comm(kiln_model_t *model, kiln_comm_t *comm);

/* Seconds the model's last data-parallel run spent blocked in waits
 * for buckets, and seconds between each bucket's start and the end of its
 * wait, summed over the buckets: 1 - blocked / in_flight is the fraction
 * of communication hidden behind compute. Both 0 before any such run. */
void kiln_model_comm_times(const kiln_model_t *model, double *blocked_seconds, double *in_flight_seconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */

/*
 * kiln/runtime_cuda.h - running a model compiled with `kilnc --target=cuda`.
 *
 * The CUDA runtime (libkiln_runtime_cuda.a, built only where the CUDA toolkit
 * is found; link it with libkiln_runtime.a and -ldl) loads the NVIDIA driver
 * at run time with dlopen("libcuda.so.1"), so a program linked with it starts
 * on machines without a GPU and gets KILN_STATUS_UNAVAILABLE from
 * kiln_cuda_model_open instead. Opening loads the artifact's module once (its
 * cubin when the device runs it, else its PTX) into the device's primary
 * context and copies the model's constants to the device; a run only
 * launches the compiled kernels on the caller's stream. Ownership, threads
 * and errors follow docs/runtime-api.md: the caller owns every device buffer,
 * a run never allocates, messages go to kiln_last_error().
 */
#ifndef KILN_RUNTIME_CUDA_H
#define KILN_RUNTIME_CUDA_H

#include "kiln/runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_cuda_model kiln_cuda_model_t;

/* Verifies the artifact (as kiln_model_open does), loads the driver, and
 * loads the model onto CUDA device `device` (an ordinal, 0 for the first).
 * Returns KILN_STATUS_UNAVAILABLE when there is no driver or device, when the
 * device can run neither the cubin nor the PTX, or when a driver call fails;
 * KILN_STATUS_INVALID_ARGUMENT for an artifact of another target. The
 * artifact must outlive the handle. On failure *out_model is NULL. */
kiln_status_t kiln_cuda_model_open(const kiln_artifact_t *artifact, int device, kiln_cuda_model_t **out_model);

/* Unloads the module and frees the handle; NULL is ignored. */
void kiln_cuda_model_close(kiln_cuda_model_t *model);

/* Bytes and base alignment of the device arena a run needs. */
size_t kiln_cuda_model_arena_bytes(const kiln_cuda_model_t *model);
size_t kiln_cuda_model_arena_alignment(const kiln_cuda_model_t *model);

/* Enqueues the model's kernels on `stream` (a CUstream or cudaStream_t of
 * the device's primary context; NULL for the default stream) and returns
 * without waiting. inputs and outputs hold device pointers in signature
 * order; device_arena is device memory of kiln_cuda_model_arena_bytes()
 * bytes at a multiple of kiln_cuda_model_arena_alignment() (may be NULL when
 * that size is 0). Device pointers are not dereferenced on the host, so only
 * null pointers and the arena's alignment are checked. Concurrent runs need
 * their own arena and outputs.
 *
 * CUDA Graphs: when a run has the same stream and device pointers (inputs,
 * outputs, arena) as the run before it on this handle, the steps are
 * captured into a CUDA Graph, and later runs with those pointers replay it
 * with one launch. Other pointers launch the steps one by one again (and
 * become the next candidate). The default stream (NULL, legacy or
 * per-thread) cannot be captured, so runs there always launch step by step;
 * a run into a stream the caller is capturing adds its launches to the
 * caller's graph. The handle's cache is guarded by a mutex. */
kiln_status_t kiln_cuda_model_run(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                  void *const *outputs, size_t num_outputs, void *device_arena, void *stream);

/* A training step (kilnc train --target=cuda): its state lives in a device
 * buffer the caller owns, of kiln_cuda_model_state_bytes() bytes at a
 * multiple of kiln_cuda_model_state_alignment() (both 0 for a model without
 * state). To start, write the initial state into host memory with
 * kiln_model_init_state (kiln/runtime.h, on a handle from kiln_model_open of
 * the same artifact) and copy it to the device. Each run reads the state,
 * writes the new one into the arena and copies it over the state with its
 * last step; the layout is kiln_model_state_info's. */
size_t kiln_cuda_model_state_bytes(const kiln_cuda_model_t *model);
size_t kiln_cuda_model_state_alignment(const kiln_cuda_model_t *model);

/* kiln_cuda_model_run for a model with state (kiln_cuda_model_run refuses
 * one): also checks that device_state is not null and aligned, and graph
 * replay also needs the same state pointer. */
kiln_status_t kiln_cuda_model_run_with_state(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                             void *const *outputs, size_t num_outputs, void *device_arena,
                                             void *device_state, void *stream);

/* A model compiled with symbolic dimensions (kilnc --dim NAME=LO..HI): one
 * run at the sizes `dims`, one per dimension in kiln_model_dim_info's order
 * (NULL: the upper bounds, as kiln_cuda_model_run and
 * kiln_cuda_model_run_with_state run). Inputs and outputs are dense at
 * those sizes (the output shapes are kiln_model_output_shape's), in buffers
 * of at least those bytes; the arena is kiln_cuda_model_arena_bytes()
 * whatever the sizes. A size outside its range is
 * KILN_STATUS_INVALID_ARGUMENT naming the dimension and the range.
 * device_state as in kiln_cuda_model_run_with_state (NULL for a model
 * without state). Graph replay also needs the same sizes. */
kiln_status_t kiln_cuda_model_run_dims(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                       void *const *outputs, size_t num_outputs, void *device_arena, void *device_state,
                                       const int64_t *dims, void *stream);

/* Profiling: a model's steps (kernel launches and library calls, in
 * schedule order; `kilnc --emit=cuda` lists them with the ops they came
 * from) and what each one is: "kernel k3<<<grid, block>>>", "cuBLASLt gemm
 * G: ...", "cuDNN conv C: ..." (written into buffer, truncated to size). */
size_t kiln_cuda_model_num_steps(const kiln_cuda_model_t *model);
kiln_status_t kiln_cuda_model_step_description(const kiln_cuda_model_t *model, size_t index, char *buffer, size_t size);

/* One run (with device_state for a training step, else NULL; at the sizes
 * `dims` as kiln_cuda_model_run_dims takes them, NULL for the bounds) launched step
 * by step on `stream` with a CUDA event before each step and after the
 * last, waited for, and each step's time in milliseconds written to
 * step_ms[0 .. num_steps), num_steps being kiln_cuda_model_num_steps().
 * Unlike a run it creates (and destroys) events and never uses a graph, so
 * the times include no replay savings. KILN_STATUS_UNAVAILABLE when the
 * driver has no events. */
kiln_status_t kiln_cuda_model_profile(const kiln_cuda_model_t *model, void *const *inputs, size_t num_inputs,
                                      void *const *outputs, size_t num_outputs, void *device_arena, void *device_state,
                                      const int64_t *dims, void *stream, float *step_ms, size_t num_steps);

/* Turns graph capture and replay on (the default where the driver has CUDA
 * Graphs) or off (every run launches its steps one by one; a kept graph is
 * destroyed). KILN_STATUS_UNAVAILABLE when enabling on a driver without
 * graphs. */
kiln_status_t kiln_cuda_model_use_graphs(kiln_cuda_model_t *model, int enable);

/* A data-parallel step (kilnc train --target=cuda --data-parallel) averages
 * its gradient buckets over the ranks of `comm` (kiln_comm_open_mpi, which
 * carries NCCL's unique id from rank 0 to the others; NULL: this process
 * alone) with NCCL: libnccl.so.2 is loaded with dlopen (the toolkit's or
 * NVIDIA's wheel, as the vendor libraries), the NCCL communicator is made on
 * the model's device, with a stream for the collectives and two events per
 * bucket. A bucket's all-reduces (ncclAvg, in place) start on that stream
 * once the compute stream has made the bucket's gradients, and the compute
 * stream waits for them only where the optimizer reads them. The model then
 * launches its steps directly (no graph replay). Without it the bucket
 * steps do nothing (one rank). KILN_STATUS_UNAVAILABLE when NCCL cannot be
 * loaded; KILN_STATUS_COMMUNICATION when NCCL fails.
 *
 * A run of such a model returns once its all-reduces are done (the compute
 * after the last wait may still be running on the stream): it watches
 * NCCL's asynchronous error and the communicator's timeout
 * (kiln_comm_timeout, read here; 600 s without a communicator; changed
 * with kiln_cuda_model_set_nccl_timeout). When NCCL
 * reports an error (a rank failed) or a bucket takes longer than the
 * timeout (a rank stopped calling), the run aborts the NCCL communicator,
 * which ends the collectives in flight, and fails with
 * KILN_STATUS_COMMUNICATION naming the bucket; so does every later run of
 * the model: close it. The outputs and state of a failed step are not
 * valid. */
kiln_status_t kiln_cuda_model_use_nccl(kiln_cuda_model_t *model, kiln_comm_t *comm);

/* How long a run of a model using NCCL waits for its all-reduces before it
 * aborts the communicator and fails (seconds; 0 waits forever).
 * KILN_STATUS_INVALID_ARGUMENT before kiln_cuda_model_use_nccl. */
kiln_status_t kiln_cuda_model_set_nccl_timeout(kiln_cuda_model_t *model, double seconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_CUDA_H */

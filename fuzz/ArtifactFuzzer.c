/* ArtifactFuzzer.c - libFuzzer target for the runtime's artifact loader.
 *
 * Bytes -> descriptor -> kiln_model_open: the runtime must verify the
 * FlatBuffers descriptor and refuse it with a status, or open it; an open
 * model's signature is then read back in full. The run function is never
 * called (it would be the fuzzer's, not a compiled model's). */
#include "kiln/runtime.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static kiln_status_t no_run(void *const *buffers, void *arena) {
  (void)buffers;
  (void)arena;
  return KILN_STATUS_INTERNAL;
}

static kiln_status_t no_profiled_run(void *const *buffers, void *arena, const kiln_parallel_t *parallel,
                                     const kiln_profiler_t *profiler) {
  (void)buffers;
  (void)arena;
  (void)parallel;
  (void)profiler;
  return KILN_STATUS_INTERNAL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_artifact_t artifact;
  memset(&artifact, 0, sizeof artifact);
  artifact.abi_version = KILN_ABI_VERSION;
  artifact.descriptor = data;
  artifact.descriptor_size = size;
  /* As kilnc would store it: the fuzzer exercises the descriptor reader,
   * which a wrong checksum would keep it from reaching. */
  artifact.descriptor_checksum = kiln_descriptor_checksum(data, size);
  artifact.run_packed = no_run;
  /* With a profiled entry the model reads its kernels' names and flops. */
  artifact.run_packed_profiled = no_profiled_run;
  kiln_model_t *model = NULL;
  if (kiln_model_open(&artifact, &model) != KILN_STATUS_OK)
    return 0;
  volatile size_t sink = kiln_model_arena_bytes(model) + kiln_model_arena_alignment(model) +
                         kiln_model_arena_lower_bound_bytes(model) + strlen(kiln_model_name(model));
  for (size_t i = 0; i <= kiln_model_num_inputs(model); ++i) {
    kiln_tensor_info_t info;
    if (kiln_model_input_info(model, i, &info) == KILN_STATUS_OK)
      for (size_t d = 0; d < info.rank; ++d)
        sink += (size_t)info.shape[d] + strlen(info.name);
  }
  for (size_t i = 0; i <= kiln_model_num_outputs(model); ++i) {
    kiln_tensor_info_t info;
    if (kiln_model_output_info(model, i, &info) == KILN_STATUS_OK)
      for (size_t d = 0; d < info.rank; ++d)
        sink += (size_t)info.shape[d] + strlen(info.name);
  }
  for (size_t i = 0; i <= kiln_model_num_kernels(model); ++i) {
    const char *name = kiln_model_kernel_name(model, i);
    sink += (name ? strlen(name) : 0) + (size_t)kiln_model_kernel_flops(model, i);
  }
  (void)sink;
  kiln_model_close(model);
  return 0;
}

/* Opens the CUDA artifact of elementwise.mlir with both runtimes and prints
 * what each says. Built by artifact.test. */
#include "model.h"

#include <stdio.h>

int main(void) {
  kiln_model_t *model = NULL;
  kiln_status_t st = kiln_model_open(model_artifact(), &model);
  if (st != KILN_STATUS_OK) {
    printf("kiln_model_open: %s: %s\n", kiln_status_string(st), kiln_last_error());
    return 1;
  }
  kiln_tensor_info_t info;
  kiln_model_input_info(model, 1, &info);
  printf("model %s: %zu inputs, %zu outputs, input 1 '%s' [%lld], arena %zu bytes aligned to %zu\n",
         kiln_model_name(model), kiln_model_num_inputs(model), kiln_model_num_outputs(model), info.name,
         (long long)info.shape[0], kiln_model_arena_bytes(model), kiln_model_arena_alignment(model));
  st = kiln_model_run(model, NULL, 2, NULL, 1, NULL, 0);
  printf("kiln_model_run: %s: %s\n", kiln_status_string(st), kiln_last_error());
  kiln_model_close(model);

  kiln_cuda_model_t *gpu = NULL;
  st = kiln_cuda_model_open(model_artifact(), 0, &gpu);
  printf("kiln_cuda_model_open: %s: %s\n", kiln_status_string(st), kiln_last_error());
  kiln_cuda_model_close(gpu);
  return 0;
}

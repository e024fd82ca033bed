/* The consumer project's program: the typed entry point of the header
 * kiln_add_model made, and the generic API of the installed runtime. Prints
 * the class probabilities of the example MLP on its bundled input, as
 * examples/mlp_demo does. */
#include "mlp.h"

#include <kiln/runtime.h>

#include <stdio.h>

static _Alignas(64) unsigned char arena[MLP_ARENA_BYTES > 0 ? MLP_ARENA_BYTES : 1];

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer INPUT.bin\n");
    return 2;
  }
  float input[MLP_INPUT_ELEMENTS], output[MLP_PROBABILITIES_ELEMENTS];
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(input, sizeof input, 1, f) != 1) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  kiln_status_t s = mlp_run(input, output, arena);
  if (s != KILN_STATUS_OK) {
    fprintf(stderr, "mlp_run: %s\n", kiln_status_string(s));
    return 1;
  }
  kiln_model_t *model = NULL;
  if (kiln_model_open(mlp_artifact(), &model) != KILN_STATUS_OK) {
    fprintf(stderr, "kiln_model_open: %s\n", kiln_last_error());
    return 1;
  }
  printf("model '%s', runtime %s, %zu inputs\n", kiln_model_name(model), kiln_runtime_version_string(),
         kiln_model_num_inputs(model));
  printf("probabilities:");
  for (int i = 0; i < MLP_PROBABILITIES_ELEMENTS; ++i)
    printf(" %.6f", output[i]);
  printf("\n");
  kiln_model_close(model);
  return 0;
}

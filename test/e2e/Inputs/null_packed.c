/* The generated entry points refuse null arguments with a status instead of
 * dereferencing them: the typed entry and run_packed (through the artifact,
 * as the runtime calls it) with a null buffer array. Prints one line per
 * check and exits 1 on a failure. Linked with a model of one input and one
 * output compiled with --name=relu. */
#include "relu.h"

#include <stdio.h>

static _Alignas(64) unsigned char arena[RELU_ARENA_BYTES > 0 ? RELU_ARENA_BYTES : 1];

int main(void) {
  int failures = 0;
  const kiln_artifact_t *a = relu_artifact();
  kiln_status_t s = a->run_packed(NULL, arena);
  printf("run_packed(NULL): %s\n", kiln_status_string(s));
  failures += s != KILN_STATUS_INVALID_ARGUMENT;
  if (a->abi_version >= 3 && a->run_packed_parallel) {
    s = a->run_packed_parallel(NULL, arena, NULL);
    printf("run_packed_parallel(NULL): %s\n", kiln_status_string(s));
    failures += s != KILN_STATUS_INVALID_ARGUMENT;
  }
  float x[RELU_X_ELEMENTS] = {0}, y[RELU_Y_ELEMENTS];
  s = relu_run(NULL, y, arena);
  printf("relu_run(NULL input): %s\n", kiln_status_string(s));
  failures += s != KILN_STATUS_INVALID_ARGUMENT;
  s = relu_run(x, NULL, arena);
  printf("relu_run(NULL output): %s\n", kiln_status_string(s));
  failures += s != KILN_STATUS_INVALID_ARGUMENT;
  return failures ? 1 : 0;
}

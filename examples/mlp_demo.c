/*
 * mlp_demo.c - the bundled example: run the compiled MLP from plain C.
 *
 * kilnc turned examples/mlp.onnx into mlp.h and mlp.o; this program links
 * mlp.o like any other object, owns all memory (input, output, arena), runs
 * the model on the bundled input, prints the probabilities, then times many
 * runs and prints the median time per inference.
 *
 *   mlp_demo [INPUT.bin]   (32 little-endian floats; default: the bundled one)
 */
#include "mlp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KILN_MLP_INPUT
#define KILN_MLP_INPUT "examples/mlp_input.bin"
#endif

/* The arena: sized and aligned as the compiler planned, owned here. */
static _Alignas(64) unsigned char arena[MLP_ARENA_BYTES > 0 ? MLP_ARENA_BYTES : 1];

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  _Static_assert(MLP_ARENA_ALIGNMENT <= 64, "arena declared with 64-byte alignment");
  const char *path = argc > 1 ? argv[1] : KILN_MLP_INPUT;
  float input[MLP_INPUT_ELEMENTS], output[MLP_PROBABILITIES_ELEMENTS];

  FILE *f = fopen(path, "rb");
  if (!f || fread(input, sizeof(float), MLP_INPUT_ELEMENTS, f) != MLP_INPUT_ELEMENTS) {
    fprintf(stderr, "mlp_demo: cannot read %d floats from '%s'\n", MLP_INPUT_ELEMENTS, path);
    return 1;
  }
  fclose(f);

  kiln_status_t status = mlp_run(input, output, arena);
  if (status != KILN_STATUS_OK) {
    fprintf(stderr, "mlp_demo: mlp_run failed: %s\n", kiln_status_string(status));
    return 1;
  }
  int best = 0;
  printf("probabilities:");
  for (int i = 0; i < MLP_PROBABILITIES_ELEMENTS; ++i) {
    printf(" %.6f", output[i]);
    if (output[i] > output[best])
      best = i;
  }
  printf("\nclass: %d\n", best);
  printf("arena: %llu bytes planned (live-set lower bound %llu)\n", (unsigned long long)MLP_ARENA_BYTES,
         (unsigned long long)MLP_ARENA_LOWER_BOUND_BYTES);

  /* Time batches of runs; report the median batch, per inference. */
  enum { kBatches = 31, kRunsPerBatch = 2000 };
  double per_run[kBatches];
  for (int i = 0; i < kRunsPerBatch; ++i) /* warm-up */
    mlp_run(input, output, arena);
  for (int b = 0; b < kBatches; ++b) {
    double t0 = now_us();
    for (int i = 0; i < kRunsPerBatch; ++i)
      mlp_run(input, output, arena);
    per_run[b] = (now_us() - t0) / kRunsPerBatch;
  }
  qsort(per_run, kBatches, sizeof(double), compare_double);
  printf("time per inference: %.3f us (median of %d batches of %d runs)\n", per_run[kBatches / 2], kBatches,
         kRunsPerBatch);
  return 0;
}

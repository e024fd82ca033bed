/* One model handle run from 8 threads at once, each with its own arena and
 * outputs (docs/runtime-api.md, "Threads": what may be shared), must give
 * the single-threaded outputs bit for bit. The handle's own pool has 2
 * threads, so concurrent runs also contend for it (a run that finds the
 * pool busy runs on its own thread). Linked with a model compiled with
 * --name=tm that has one f32 input and one f32 output. Prints one line,
 * exits 1 on a mismatch or an error. */
#include "tm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kThreads = 8, kRuns = 25 };

static kiln_model_t *model;
static kiln_tensor_info_t in_info, out_info;
static float *input, *expected;

static kiln_status_t run_once(float *output, void *arena) {
  kiln_tensor_t in = {KILN_DTYPE_F32, in_info.rank, in_info.shape, input};
  kiln_tensor_t out = {KILN_DTYPE_F32, out_info.rank, out_info.shape, output};
  return kiln_model_run(model, &in, 1, &out, 1, arena, kiln_model_arena_bytes(model));
}

static void *alloc(size_t bytes) {
  size_t align = kiln_model_arena_alignment(model);
  if (align < 64)
    align = 64;
  void *p = aligned_alloc(align, (bytes + align - 1) / align * align + align);
  return p;
}

static void *worker(void *arg) {
  (void)arg;
  float *output = malloc(out_info.size_bytes);
  void *arena = alloc(kiln_model_arena_bytes(model));
  long mismatches = 0;
  for (int r = 0; r < kRuns && output && arena; ++r) {
    memset(output, 0xff, out_info.size_bytes);
    if (run_once(output, arena) != KILN_STATUS_OK || memcmp(output, expected, out_info.size_bytes) != 0)
      ++mismatches;
  }
  if (!output || !arena)
    mismatches = kRuns;
  free(output);
  free(arena);
  return (void *)mismatches;
}

int main(void) {
  if (kiln_model_open(tm_artifact(), &model) != KILN_STATUS_OK ||
      kiln_model_input_info(model, 0, &in_info) != KILN_STATUS_OK ||
      kiln_model_output_info(model, 0, &out_info) != KILN_STATUS_OK) {
    printf("cannot open the model\n");
    return 1;
  }
  input = malloc(in_info.size_bytes);
  expected = malloc(out_info.size_bytes);
  for (size_t i = 0; i < in_info.num_elements; ++i)
    input[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  void *arena = alloc(kiln_model_arena_bytes(model));
  kiln_model_set_num_threads(model, 1);
  if (run_once(expected, arena) != KILN_STATUS_OK) {
    printf("single-threaded run failed\n");
    return 1;
  }
  free(arena);
  if (kiln_model_set_num_threads(model, 2) != KILN_STATUS_OK) {
    printf("cannot start the pool\n");
    return 1;
  }
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t)
    if (pthread_create(&threads[t], NULL, worker, NULL) != 0) {
      printf("cannot start thread %d\n", t);
      return 1;
    }
  long mismatches = 0;
  for (int t = 0; t < kThreads; ++t) {
    void *m;
    pthread_join(threads[t], &m);
    mismatches += (long)m;
  }
  printf("%d threads x %d runs on one handle: %ld mismatches\n", kThreads, kRuns, mismatches);
  kiln_model_close(model);
  free(input);
  free(expected);
  return mismatches ? 1 : 0;
}

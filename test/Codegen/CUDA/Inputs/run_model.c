/* Runs the CUDA artifact of elementwise.mlir on the GPU and compares with
 * the same formula computed here on the host: relu(exp(a + b)). Built by
 * gpu-run.test, which only runs where a GPU is present. */
#include "model.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>

int main(void) {
  float a[6] = {-1.0f, 0.5f, 2.0f, -3.0f, 0.0f, 1.25f}, b[3] = {0.5f, -0.25f, -4.0f}, y[6];
  kiln_cuda_model_t *model = NULL;
  kiln_status_t st = kiln_cuda_model_open(model_artifact(), 0, &model);
  if (st != KILN_STATUS_OK) {
    printf("open: %s: %s\n", kiln_status_string(st), kiln_last_error());
    return 1;
  }
  void *da, *db, *dy, *arena = NULL;
  if (cudaMalloc(&da, sizeof a) || cudaMalloc(&db, sizeof b) || cudaMalloc(&dy, sizeof y) ||
      (MODEL_ARENA_BYTES && cudaMalloc(&arena, MODEL_ARENA_BYTES)) ||
      cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice) || cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice)) {
    printf("cuda: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  st = model_run(model, da, db, dy, arena, NULL);
  if (st != KILN_STATUS_OK || cudaDeviceSynchronize() || cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost)) {
    printf("run: %s: %s / %s\n", kiln_status_string(st), kiln_last_error(), cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < 6; ++i) {
    float want = expf(a[i] + b[i % 3]);
    if (fabsf(y[i] - want) > 1e-5f * fabsf(want))
      printf("y[%d] = %g, expected %g\n", i, y[i], want), ++bad;
  }
  printf("%s\n", bad ? "MISMATCH" : "OK");
  kiln_cuda_model_close(model);
  return bad != 0;
}

/*
 * The training step of train_tiny.mlir (kilnc train --optimizer=momentum
 * --lr=0.25 --momentum=0.5) through its typed entry and the generic API:
 * init_state writes the initial values, every run updates the caller's
 * state buffer in place exactly as momentum SGD computed here in double
 * says (grad w = x, grad v = 2 v), both entries give the same bytes, and bad
 * state arguments are refused without touching the state.
 */
#include "tiny.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static _Alignas(64) unsigned char arena[TINY_ARENA_BYTES];
static _Alignas(64) unsigned char state[TINY_STATE_BYTES + 64];
static _Alignas(64) unsigned char generic_state[TINY_STATE_BYTES];

static const float *at(const unsigned char *s, size_t offset) { return (const float *)(const void *)(s + offset); }

static int failures;

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("FAILED: %s\n", what);
    ++failures;
  }
}

int main(void) {
  const float x[3] = {0.5f, -1.0f, 2.0f};
  const double lr = 0.25, mu = 0.5;
  double w[3] = {1, 2, 3}, v[2] = {0.5, -1.5}, vw[3] = {0, 0, 0}, vv[2] = {0, 0};

  expect(TINY_W_OFFSET == 0 && TINY_V_OFFSET == 64 && TINY_OPTIMIZER_VELOCITY_W_OFFSET == 128 &&
             TINY_OPTIMIZER_VELOCITY_V_OFFSET == 192 && TINY_OPTIMIZER_STEP_OFFSET == 256 &&
             TINY_STATE_BYTES == 320 && TINY_NUM_STATE == 5,
         "state layout");
  memset(state, 0xAB, sizeof state);
  expect(tiny_init_state(state) == KILN_STATUS_OK, "init_state");
  expect(at(state, TINY_W_OFFSET)[2] == 3.0f && at(state, TINY_V_OFFSET)[1] == -1.5f &&
             at(state, TINY_OPTIMIZER_VELOCITY_W_OFFSET)[0] == 0.0f &&
             *(const double *)(const void *)(state + TINY_OPTIMIZER_STEP_OFFSET) == 0.0,
         "initial state");

  double worst = 0;
  for (int step = 1; step <= 3; ++step) {
    float loss;
    expect(tiny_run(x, &loss, state, arena) == KILN_STATUS_OK, "typed run");
    double expected_loss = 0;
    for (int i = 0; i < 3; ++i)
      expected_loss += x[i] * w[i];
    for (int i = 0; i < 2; ++i)
      expected_loss += v[i] * v[i];
    worst = fmax(worst, fabs(loss - expected_loss));
    for (int i = 0; i < 3; ++i) {
      vw[i] = mu * vw[i] + x[i];
      w[i] -= lr * vw[i];
    }
    for (int i = 0; i < 2; ++i) {
      vv[i] = mu * vv[i] + 2 * v[i];
      v[i] -= lr * vv[i];
    }
    for (int i = 0; i < 3; ++i)
      worst = fmax(worst, fmax(fabs(at(state, TINY_W_OFFSET)[i] - w[i]),
                               fabs(at(state, TINY_OPTIMIZER_VELOCITY_W_OFFSET)[i] - vw[i])));
    for (int i = 0; i < 2; ++i)
      worst = fmax(worst, fmax(fabs(at(state, TINY_V_OFFSET)[i] - v[i]),
                               fabs(at(state, TINY_OPTIMIZER_VELOCITY_V_OFFSET)[i] - vv[i])));
    expect(*(const double *)(const void *)(state + TINY_OPTIMIZER_STEP_OFFSET) == step, "step counter");
  }
  printf("typed entry: 3 steps in place, max abs error %.3g\n", worst);
  expect(worst <= 1e-6, "state and loss against the double reference");

  /* The generic API: the same layout, the same bytes. */
  kiln_model_t *model = NULL;
  expect(kiln_model_open(tiny_artifact(), &model) == KILN_STATUS_OK, "open");
  if (!model)
    return 1;
  expect(kiln_model_num_state(model) == TINY_NUM_STATE && kiln_model_state_bytes(model) == TINY_STATE_BYTES &&
             kiln_model_state_alignment(model) == TINY_STATE_ALIGNMENT,
         "generic state size");
  kiln_state_info_t info;
  expect(kiln_model_state_info(model, 3, &info) == KILN_STATUS_OK &&
             strcmp(info.tensor.name, "optimizer.velocity.v") == 0 && info.role == KILN_STATE_MOMENT &&
             info.offset == TINY_OPTIMIZER_VELOCITY_V_OFFSET && info.tensor.num_elements == 2,
         "state info");
  expect(kiln_model_state_info(model, 4, &info) == KILN_STATUS_OK && info.role == KILN_STATE_STEP &&
             info.tensor.dtype == KILN_DTYPE_F64,
         "step info");
  expect(kiln_model_init_state(model, generic_state, sizeof generic_state) == KILN_STATUS_OK, "generic init");
  float loss;
  int64_t x_shape[] = {3};
  kiln_tensor_t in = {KILN_DTYPE_F32, 1, x_shape, (void *)x};
  kiln_tensor_t out = {KILN_DTYPE_F32, 0, NULL, &loss};
  for (int step = 0; step < 3; ++step)
    expect(kiln_model_run_with_state(model, &in, 1, &out, 1, generic_state, sizeof generic_state, arena,
                                      sizeof arena) == KILN_STATUS_OK,
           "generic run");
  printf("typed and generic states %s\n", memcmp(state, generic_state, TINY_STATE_BYTES) ? "differ" : "agree");

  /* Bad state arguments leave the state as it was. */
  unsigned char before[TINY_STATE_BYTES];
  memcpy(before, state, sizeof before);
  printf("null state: %s\n", kiln_status_string(tiny_run(x, &loss, NULL, arena)));
  printf("misaligned state: %s\n", kiln_status_string(tiny_run(x, &loss, state + 8, arena)));
  printf("null init: %s\n", kiln_status_string(tiny_init_state(NULL)));
  kiln_status_t st = kiln_model_run(model, &in, 1, &out, 1, arena, sizeof arena);
  printf("run without state: %s: %s\n", kiln_status_string(st), kiln_last_error());
  st = kiln_model_run_with_state(model, &in, 1, &out, 1, state, TINY_STATE_BYTES - 1, arena, sizeof arena);
  printf("small state: %s: %s\n", kiln_status_string(st), kiln_last_error());
  st = kiln_model_run_with_state(model, &in, 1, &out, 1, arena, TINY_STATE_BYTES, arena, sizeof arena);
  printf("state in the arena: %s: %s\n", kiln_status_string(st), kiln_last_error());
  expect(memcmp(before, state, sizeof before) == 0, "refused runs leave the state alone");
  kiln_model_close(model);
  printf("%s\n", failures ? "FAILED" : "all checks passed");
  return failures != 0;
}

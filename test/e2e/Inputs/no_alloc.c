/*
 * Counts heap allocations while a compiled model runs: this program defines
 * malloc/calloc/realloc/free itself (the executable's definitions win over
 * libc's), counting calls while `counting` is set and forwarding to glibc's
 * __libc_* entry points. It runs the typed entry point and the generic
 * kiln_model_run many times and fails unless both allocated nothing. It also
 * checks that both entry points agree, and that bad arguments are refused.
 */
#include "mlp.h"

#include <stdio.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static volatile int counting;
static volatile long allocations;

void *malloc(size_t n) { if (counting) ++allocations; return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { if (counting) ++allocations; return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { if (counting) ++allocations; return __libc_realloc(p, n); }
void free(void *p) { if (counting) ++allocations; __libc_free(p); }

static _Alignas(64) unsigned char arena[MLP_ARENA_BYTES];

int main(void) {
  float input[MLP_INPUT_ELEMENTS], typed[MLP_PROBABILITIES_ELEMENTS], generic[MLP_PROBABILITIES_ELEMENTS];
  for (int i = 0; i < MLP_INPUT_ELEMENTS; ++i)
    input[i] = (float)i / MLP_INPUT_ELEMENTS - 0.5f;

  kiln_model_t *model = NULL;
  if (kiln_model_open(mlp_artifact(), &model) != KILN_STATUS_OK) {
    printf("open failed: %s\n", kiln_last_error());
    return 1;
  }
  /* Two threads, started here: runs then allocate nothing either. */
  if (kiln_model_set_num_threads(model, 2) != KILN_STATUS_OK) {
    printf("set_num_threads failed: %s\n", kiln_last_error());
    return 1;
  }
  int64_t in_shape[] = {1, MLP_INPUT_ELEMENTS}, out_shape[] = {1, MLP_PROBABILITIES_ELEMENTS};
  kiln_tensor_t in = {KILN_DTYPE_F32, 2, in_shape, input};
  kiln_tensor_t out = {KILN_DTYPE_F32, 2, out_shape, generic};

  counting = 1;
  for (int i = 0; i < 1000; ++i) {
    if (mlp_run(input, typed, arena) != KILN_STATUS_OK)
      return 1;
    if (kiln_model_run(model, &in, 1, &out, 1, arena, sizeof arena) != KILN_STATUS_OK)
      return 1;
  }
  counting = 0;
  printf("allocations during 2000 runs: %ld\n", allocations);
  printf("typed and generic outputs %s\n", memcmp(typed, generic, sizeof typed) ? "DIFFER" : "agree");

  /* The typed entry refuses null pointers and a misaligned arena. */
  printf("null input: %s\n", kiln_status_string(mlp_run(NULL, typed, arena)));
  printf("misaligned arena: %s\n", kiln_status_string(mlp_run(input, typed, arena + 4)));
  /* The generic entry also checks the arena size. */
  kiln_status_t s = kiln_model_run(model, &in, 1, &out, 1, arena, sizeof arena - 1);
  printf("small arena: %s: %s\n", kiln_status_string(s), kiln_last_error());
  kiln_model_close(model);
  return allocations == 0 ? 0 : 1;
}

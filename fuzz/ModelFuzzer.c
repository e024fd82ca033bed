/* ModelFuzzer.c - libFuzzer target for real compiled artifacts.
 *
 * Two models compiled by this build's kilnc are linked in: `mlp`
 * (examples/mlp.onnx) and `tiny` (the training step of
 * test/e2e/Inputs/train_tiny.mlir, with state). The first input byte picks
 * what the rest is:
 *
 *   0, 1  a descriptor (2-byte little-endian length, then the bytes) put in
 *         place of mlp's (0) or tiny's (1) inside a copy of its artifact,
 *         which keeps the checksum compiled next to the code, as a damaged
 *         file would; then input values. Opening must refuse every
 *         descriptor but the compiled one (a damaged descriptor that opens is
 *         a finding: it would size the caller's buffers and arena).
 *   2     a state file for tiny: kiln_model_load_state must refuse it or
 *         load it; a loaded state then runs a step.
 *   3     input values for mlp.
 *
 * Whatever opens runs through the generic API and the typed entry point
 * with buffers of exactly the signature's sizes, each ending at a
 * PROT_NONE page: the compiled code is not instrumented, so a read or
 * write past a buffer by the code is caught by the guard page, by the
 * instrumented runtime by ASan. The two entries must give the same bytes.
 *
 * Seeds: with KILN_FUZZ_SEEDS=DIR set, the first call writes one input per
 * mode into DIR (fuzz/run.sh does this for an empty corpus). */
#include "mlp.h"
#include "tiny.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MODE_MLP_DESCRIPTOR, MODE_TINY_DESCRIPTOR, MODE_TINY_STATE, MODE_MLP_INPUT };

/* A buffer of `bytes` bytes, aligned to `align`, that ends where a
 * PROT_NONE page starts (bytes a multiple of align ends exactly there). */
typedef struct guarded {
  unsigned char *map;
  size_t map_bytes;
  void *data;
} guarded_t;

static void guarded_alloc(guarded_t *g, size_t bytes, size_t align) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t body = (bytes + align + page - 1) / page * page;
  g->map_bytes = body + page;
  g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g->map == MAP_FAILED || mprotect(g->map + body, page, PROT_NONE) != 0)
    abort();
  uintptr_t end = (uintptr_t)(g->map + body);
  g->data = (void *)((end - bytes) / align * align);
}

static void guarded_free(guarded_t *g) { munmap(g->map, g->map_bytes); }

/* Input values from the fuzzer's bytes, repeated (zeros when there are none). */
static void fill(void *dst, size_t bytes, const uint8_t *src, size_t size) {
  unsigned char *d = dst;
  for (size_t i = 0; i < bytes; ++i)
    d[i] = size ? src[i % size] : 0;
}

/* A writable copy of a compiled artifact whose descriptor is `desc`. */
static kiln_artifact_t with_descriptor(const kiln_artifact_t *compiled, const void *desc, size_t size) {
  kiln_artifact_t copy = *compiled;
  copy.descriptor = desc;
  copy.descriptor_size = size;
  return copy;
}

static void check(int ok) {
  if (!ok)
    __builtin_trap();
}

/* mlp through kiln_model_run and mlp_run, exactly sized guarded buffers. */
static void run_mlp(const kiln_model_t *model, const uint8_t *values, size_t size) {
  guarded_t in, out, typed_out, arena;
  guarded_alloc(&in, MLP_INPUT_ELEMENTS * sizeof(float), sizeof(float));
  guarded_alloc(&out, MLP_PROBABILITIES_ELEMENTS * sizeof(float), sizeof(float));
  guarded_alloc(&typed_out, MLP_PROBABILITIES_ELEMENTS * sizeof(float), sizeof(float));
  guarded_alloc(&arena, MLP_ARENA_BYTES, MLP_ARENA_ALIGNMENT);
  fill(in.data, MLP_INPUT_ELEMENTS * sizeof(float), values, size);
  kiln_tensor_info_t ii, oi;
  check(kiln_model_input_info(model, 0, &ii) == KILN_STATUS_OK);
  check(kiln_model_output_info(model, 0, &oi) == KILN_STATUS_OK);
  check(ii.size_bytes == MLP_INPUT_ELEMENTS * sizeof(float));
  check(oi.size_bytes == MLP_PROBABILITIES_ELEMENTS * sizeof(float));
  kiln_tensor_t input = {ii.dtype, ii.rank, ii.shape, in.data};
  kiln_tensor_t output = {oi.dtype, oi.rank, oi.shape, out.data};
  check(kiln_model_run(model, &input, 1, &output, 1, arena.data, MLP_ARENA_BYTES) == KILN_STATUS_OK);
  check(mlp_run(in.data, typed_out.data, arena.data) == KILN_STATUS_OK);
  check(memcmp(out.data, typed_out.data, oi.size_bytes) == 0);
  guarded_free(&in);
  guarded_free(&out);
  guarded_free(&typed_out);
  guarded_free(&arena);
}

/* One training step of tiny from `state` (TINY_STATE_BYTES) through
 * kiln_model_run_with_state, and the same step through tiny_run. */
static void run_tiny(const kiln_model_t *model, const void *state, const uint8_t *values, size_t size) {
  guarded_t x, loss, typed_loss, st, typed_st, arena;
  guarded_alloc(&x, 3 * sizeof(float), sizeof(float));
  guarded_alloc(&loss, sizeof(float), sizeof(float));
  guarded_alloc(&typed_loss, sizeof(float), sizeof(float));
  guarded_alloc(&st, TINY_STATE_BYTES, TINY_STATE_ALIGNMENT);
  guarded_alloc(&typed_st, TINY_STATE_BYTES, TINY_STATE_ALIGNMENT);
  guarded_alloc(&arena, TINY_ARENA_BYTES, TINY_ARENA_ALIGNMENT);
  fill(x.data, 3 * sizeof(float), values, size);
  memcpy(st.data, state, TINY_STATE_BYTES);
  memcpy(typed_st.data, state, TINY_STATE_BYTES);
  kiln_tensor_info_t ii, oi;
  check(kiln_model_input_info(model, 0, &ii) == KILN_STATUS_OK);
  check(kiln_model_output_info(model, 0, &oi) == KILN_STATUS_OK);
  check(ii.size_bytes == 3 * sizeof(float) && oi.size_bytes == sizeof(float));
  kiln_tensor_t input = {ii.dtype, ii.rank, ii.shape, x.data};
  kiln_tensor_t output = {oi.dtype, oi.rank, oi.shape, loss.data};
  check(kiln_model_run_with_state(model, &input, 1, &output, 1, st.data, TINY_STATE_BYTES, arena.data,
                                  TINY_ARENA_BYTES) == KILN_STATUS_OK);
  check(tiny_run(x.data, typed_loss.data, typed_st.data, arena.data) == KILN_STATUS_OK);
  check(memcmp(loss.data, typed_loss.data, sizeof(float)) == 0);
  check(memcmp(st.data, typed_st.data, TINY_STATE_BYTES) == 0);
  guarded_free(&x);
  guarded_free(&loss);
  guarded_free(&typed_loss);
  guarded_free(&st);
  guarded_free(&typed_st);
  guarded_free(&arena);
}

static void fuzz_descriptor(int mode, const uint8_t *data, size_t size) {
  const kiln_artifact_t *compiled = mode == MODE_MLP_DESCRIPTOR ? mlp_artifact() : tiny_artifact();
  size_t length = size >= 2 ? (size_t)data[0] | (size_t)data[1] << 8 : 0;
  data += size >= 2 ? 2 : size;
  size -= size >= 2 ? 2 : size;
  if (length > size)
    length = size;
  kiln_artifact_t artifact = with_descriptor(compiled, data, length);
  kiln_model_t *model = NULL;
  if (kiln_model_open(&artifact, &model) != KILN_STATUS_OK)
    return;
  check(kiln_model_set_num_threads(model, 1) == KILN_STATUS_OK);
  /* Only the descriptor the code was compiled with may open. */
  check(length == compiled->descriptor_size && memcmp(data, compiled->descriptor, length) == 0);
  if (mode == MODE_MLP_DESCRIPTOR) {
    run_mlp(model, data + length, size - length);
  } else {
    guarded_t state;
    guarded_alloc(&state, TINY_STATE_BYTES, TINY_STATE_ALIGNMENT);
    check(kiln_model_init_state(model, state.data, TINY_STATE_BYTES) == KILN_STATUS_OK);
    run_tiny(model, state.data, data + length, size - length);
    guarded_free(&state);
  }
  kiln_model_close(model);
}

/* The state file goes through a file: that is the API's only reader. */
static char state_path[64];

static void fuzz_state_file(const uint8_t *data, size_t size) {
  FILE *f = fopen(state_path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    abort();
  kiln_model_t *model = NULL;
  check(kiln_model_open(tiny_artifact(), &model) == KILN_STATUS_OK);
  check(kiln_model_set_num_threads(model, 1) == KILN_STATUS_OK);
  guarded_t state;
  guarded_alloc(&state, TINY_STATE_BYTES, TINY_STATE_ALIGNMENT);
  memset(state.data, 0x5A, TINY_STATE_BYTES);
  if (kiln_model_load_state(model, state.data, TINY_STATE_BYTES, state_path) == KILN_STATUS_OK) {
    static const uint8_t x[12] = {0, 0, 0, 0x3f, 0, 0, 0x80, 0xbf, 0, 0, 0, 0x40};
    run_tiny(model, state.data, x, sizeof x);
  } else {
    /* A refused file leaves the caller's buffer untouched. */
    for (size_t i = 0; i < TINY_STATE_BYTES; ++i)
      check(((const unsigned char *)state.data)[i] == 0x5A);
  }
  guarded_free(&state);
  kiln_model_close(model);
}

static void write_seed(const char *dir, const char *name, const void *a, size_t na, const void *b, size_t nb) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  fwrite(a, 1, na, f);
  fwrite(b, 1, nb, f);
  fclose(f);
}

static void write_descriptor_seed(const char *dir, const char *name, int mode, const kiln_artifact_t *compiled) {
  size_t n = (size_t)compiled->descriptor_size;
  unsigned char *seed = malloc(3 + n);
  if (!seed || n > 0xFFFF)
    abort();
  seed[0] = (unsigned char)mode;
  seed[1] = (unsigned char)(n & 0xFF);
  seed[2] = (unsigned char)(n >> 8);
  memcpy(seed + 3, compiled->descriptor, n);
  static const float values[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  write_seed(dir, name, seed, 3 + n, values, sizeof values);
  free(seed);
}

static void write_seeds(const char *dir) {
  write_descriptor_seed(dir, "mlp-descriptor", MODE_MLP_DESCRIPTOR, mlp_artifact());
  write_descriptor_seed(dir, "tiny-descriptor", MODE_TINY_DESCRIPTOR, tiny_artifact());
  static const unsigned char input_mode = MODE_MLP_INPUT;
  static const float values[2] = {1.5f, -3.0f};
  write_seed(dir, "mlp-input", &input_mode, 1, values, sizeof values);
  /* A valid state file: tiny's initial state, saved by the runtime. */
  kiln_model_t *model = NULL;
  guarded_t state;
  guarded_alloc(&state, TINY_STATE_BYTES, TINY_STATE_ALIGNMENT);
  if (kiln_model_open(tiny_artifact(), &model) == KILN_STATUS_OK &&
      kiln_model_init_state(model, state.data, TINY_STATE_BYTES) == KILN_STATUS_OK &&
      kiln_model_save_state(model, state.data, TINY_STATE_BYTES, state_path) == KILN_STATUS_OK) {
    FILE *f = fopen(state_path, "rb");
    unsigned char file[4096];
    size_t n = f ? fread(file, 1, sizeof file, f) : 0;
    if (f)
      fclose(f);
    static const unsigned char state_mode = MODE_TINY_STATE;
    write_seed(dir, "tiny-state", &state_mode, 1, file, n);
  }
  kiln_model_close(model);
  guarded_free(&state);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(state_path, sizeof state_path, "%s/kiln-fuzz-state-%ld", tmp && strlen(tmp) < 32 ? tmp : "/tmp",
           (long)getpid());
  const char *seeds = getenv("KILN_FUZZ_SEEDS");
  if (seeds)
    write_seeds(seeds);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int mode = data[0] & 3;
  ++data;
  --size;
  switch (mode) {
  case MODE_MLP_DESCRIPTOR:
  case MODE_TINY_DESCRIPTOR:
    fuzz_descriptor(mode, data, size);
    break;
  case MODE_TINY_STATE:
    fuzz_state_file(data, size);
    break;
  case MODE_MLP_INPUT: {
    kiln_model_t *model = NULL;
    check(kiln_model_open(mlp_artifact(), &model) == KILN_STATUS_OK);
    check(kiln_model_set_num_threads(model, 1) == KILN_STATUS_OK);
    run_mlp(model, data, size);
    kiln_model_close(model);
    break;
  }
  }
  return 0;
}

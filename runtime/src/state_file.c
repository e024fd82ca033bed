/*
 * state_file.c - kiln_model_save_state and kiln_model_load_state: a training
 * step's state on disk, written atomically and checked when read back.
 *
 * The file is a 48-byte header, then the state buffer's bytes:
 *
 *   offset  size  field
 *        0     8  magic "KILNSTAT"
 *        8     4  format version (1), little-endian like every field
 *       12     4  zero
 *       16     8  the layout's fingerprint: FNV-1a 64 of every state
 *                 tensor's name, dtype, shape, offset and role, and the
 *                 state's size (kiln_state_fingerprint)
 *       24     8  the payload's size in bytes (the model's state_bytes)
 *       32     8  FNV-1a 64 of the payload
 *       40     8  the optimizer's step counter (the state tensor of role
 *                 step, as an integer; 0 where there is none)
 *
 * Saving writes a temporary beside the target, fsyncs it and renames it over
 * the target, so a crash or kill at any moment leaves the old file or the
 * new one. Loading refuses a file of another model (fingerprint), a
 * damaged one (checksum, size) and anything that is no state file (magic),
 * saying which, and leaves the caller's buffer untouched then.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fsync, getpid with -std=c11 */
#endif

#include "kiln/runtime.h"

#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HEADER_BYTES = 48, FORMAT_VERSION = 1 };
static const char kMagic[8] = {'K', 'I', 'L', 'N', 'S', 'T', 'A', 'T'};

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static uint64_t fnv1a_u64(uint64_t h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = (unsigned char)(v >> (8 * i));
  return fnv1a(h, b, 8);
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

uint64_t kiln_state_fingerprint(const kiln_model_t *model) {
  uint64_t h = 1469598103934665603ull;
  size_t n = kiln_model_num_state(model);
  h = fnv1a_u64(h, n);
  for (size_t i = 0; i < n; ++i) {
    kiln_state_info_t s;
    if (kiln_model_state_info(model, i, &s) != KILN_STATUS_OK)
      return 0;
    h = fnv1a(h, s.tensor.name, strlen(s.tensor.name) + 1);
    h = fnv1a_u64(h, (uint64_t)s.tensor.dtype);
    h = fnv1a_u64(h, s.tensor.rank);
    for (size_t d = 0; d < s.tensor.rank; ++d)
      h = fnv1a_u64(h, (uint64_t)s.tensor.shape[d]);
    h = fnv1a_u64(h, s.offset);
    h = fnv1a_u64(h, (uint64_t)s.role);
  }
  return fnv1a_u64(h, kiln_model_state_bytes(model));
}

/* The step counter stored in the state, or 0. */
static uint64_t step_count(const kiln_model_t *model, const unsigned char *state) {
  for (size_t i = 0; i < kiln_model_num_state(model); ++i) {
    kiln_state_info_t s;
    if (kiln_model_state_info(model, i, &s) != KILN_STATUS_OK || s.role != KILN_STATE_STEP ||
        s.tensor.num_elements != 1)
      continue;
    double d;
    float f;
    if (s.tensor.dtype == KILN_DTYPE_F64) {
      memcpy(&d, state + s.offset, sizeof d);
      return d >= 0 && d < 1.8e19 ? (uint64_t)d : 0;
    }
    if (s.tensor.dtype == KILN_DTYPE_F32) {
      memcpy(&f, state + s.offset, sizeof f);
      return f >= 0 && f < 1.8e19f ? (uint64_t)f : 0;
    }
  }
  return 0;
}

static kiln_status_t check_args(const kiln_model_t *model, const void *state, size_t state_bytes, const char *path) {
  if (model == NULL || state == NULL || path == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model, state or path is null");
  if (kiln_model_num_state(model) == 0)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "model '%s' has no state", kiln_model_name(model));
  if (state_bytes < kiln_model_state_bytes(model))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "state holds %zu bytes, model '%s' needs %zu", state_bytes,
                          kiln_model_name(model), kiln_model_state_bytes(model));
  return KILN_STATUS_OK;
}

static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

kiln_status_t kiln_model_save_state(const kiln_model_t *model, const void *state, size_t state_bytes,
                                    const char *path) {
  kiln_status_t st = check_args(model, state, state_bytes, path);
  if (st != KILN_STATUS_OK)
    return st;
  size_t bytes = kiln_model_state_bytes(model);
  unsigned char header[HEADER_BYTES] = {0};
  memcpy(header, kMagic, sizeof kMagic);
  header[8] = FORMAT_VERSION;
  put_u64(header + 16, kiln_state_fingerprint(model));
  put_u64(header + 24, bytes);
  put_u64(header + 32, fnv1a(1469598103934665603ull, state, bytes));
  put_u64(header + 40, step_count(model, state));

  static unsigned counter;
  char temp[4096];
  if (snprintf(temp, sizeof temp, "%s.tmp-%ld-%u", path, (long)getpid(),
               __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED)) >= (int)sizeof temp)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "path '%s' is too long", path);
  int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cannot write '%s': %s", path, strerror(errno));
  int failed = write_all(fd, header, sizeof header) != 0 || write_all(fd, state, bytes) != 0 || fsync(fd) != 0;
  int saved = errno;
  if (close(fd) != 0 && !failed) {
    failed = 1;
    saved = errno;
  }
  if (!failed && rename(temp, path) != 0) {
    failed = 1;
    saved = errno;
  }
  if (failed) {
    unlink(temp);
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cannot write '%s': %s", path, strerror(saved));
  }
  kiln_error_clear();
  return KILN_STATUS_OK;
}

kiln_status_t kiln_model_load_state(const kiln_model_t *model, void *state, size_t state_bytes, const char *path) {
  kiln_status_t st = check_args(model, state, state_bytes, path);
  if (st != KILN_STATUS_OK)
    return st;
  const char *name = kiln_model_name(model);
  size_t bytes = kiln_model_state_bytes(model);
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "cannot read '%s': %s", path, strerror(errno));
  unsigned char header[HEADER_BYTES];
  size_t got = fread(header, 1, sizeof header, f);
  if (got < sizeof kMagic || memcmp(header, kMagic, sizeof kMagic) != 0) {
    fclose(f);
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "'%s' is not a Kiln state file (no KILNSTAT header)", path);
  }
  if (got < sizeof header || header[8] != FORMAT_VERSION) {
    fclose(f);
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "'%s' is a state file of format %u, this runtime reads %d",
                          path, got < sizeof header ? 0u : (unsigned)header[8], FORMAT_VERSION);
  }
  uint64_t fingerprint = get_u64(header + 16), want = kiln_state_fingerprint(model);
  if (fingerprint != want) {
    fclose(f);
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                          "'%s' holds the state of another model (layout %016" PRIx64 "; model '%s' has %016" PRIx64
                          ")",
                          path, fingerprint, name, want);
  }
  if (get_u64(header + 24) != bytes) {
    fclose(f);
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "'%s' declares %" PRIu64 " bytes of state, model '%s' has %zu",
                          path, get_u64(header + 24), name, bytes);
  }
  /* Read into a scratch buffer: a damaged file leaves the state untouched. */
  unsigned char *payload = malloc(bytes ? bytes : 1);
  if (payload == NULL) {
    fclose(f);
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes to read '%s'", bytes, path);
  }
  size_t read = fread(payload, 1, bytes, f);
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (read != bytes || extra) {
    free(payload);
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "'%s' is damaged: %s", path,
                          read != bytes ? "it is shorter than its header says" : "it is longer than its header says");
  }
  if (fnv1a(1469598103934665603ull, payload, bytes) != get_u64(header + 32)) {
    free(payload);
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "'%s' is damaged: the checksum of its state does not match",
                          path);
  }
  memcpy(state, payload, bytes);
  free(payload);
  kiln_error_clear();
  return KILN_STATUS_OK;
}

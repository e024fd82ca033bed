/*
 * descriptor.c - bounds-checked FlatBuffers reader for kiln_model.fbs.
 *
 * The descriptor comes from an artifact the runtime did not build, so nothing
 * in it is trusted: every offset is checked against the buffer before it is
 * followed, with 64-bit arithmetic on positions that are known to be at most
 * 2 GiB (the FlatBuffers limit), so no sum here can wrap. Scalars are read
 * byte by byte as little-endian, which needs no alignment and works on any
 * host. The checks mirror flatbuffers::Verifier (offsets non-zero, inside the
 * buffer; vtables even-sized and inside; vectors and strings inside, strings
 * NUL-terminated) and are a little stricter where a well-formed buffer never
 * differs: a field must lie inside its table's inline size, and strings may
 * not contain NUL bytes because the runtime hands them out as C strings. On
 * top come the schema's own rules (format_version, dtypes, ranks, dims,
 * names, arena alignment, sizes that fit in size_t).
 *
 * Only two table shapes nest here (Model -> [Tensor] -> string / [long], and
 * Model -> CudaModule -> [string] / [struct] / [ubyte]), so
 * the reader is a handful of straight-line functions and needs no depth or
 * table-count limits beyond the tensor count: its work is linear in the
 * buffer size.
 */
#include "descriptor.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked_math.h"
#include "descriptor_layout.h"

/* FLATBUFFERS_MAX_BUFFER_SIZE: offsets are 32-bit and signed offsets must
 * reach the whole buffer. */
#define MAX_BUFFER_SIZE ((uint64_t)0x7FFFFFFF)

#if defined(__GNUC__) || defined(__clang__)
#define KILN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KILN_PRINTF(fmt, args)
#endif

typedef struct reader {
  const uint8_t *buf;
  uint64_t size;
  char *err;
  size_t err_size;
  /* The model's symbolic dimensions, once read: tensors' size programs
   * refer to them. */
  size_t num_dims;
  uint64_t dim_ranges_at;
} reader_t;

/* Whether a target string names the cuda target. */
static int is_cuda_target(const kiln_desc_string_t *target) {
  return target->size == 4 && memcmp(target->data, "cuda", 4) == 0;
}

/* Deepest stack a size program may need. */
#define MAX_PROGRAM_STACK 32

/* A table whose vtable and inline part were checked to lie in the buffer. */
typedef struct table {
  uint64_t pos;   /* offset of the table (its soffset to the vtable) */
  uint64_t vt;    /* offset of its vtable */
  uint16_t vsize; /* vtable bytes, even, >= 4 */
  uint16_t tsize; /* inline table bytes, >= 4 */
  const char *what;
} table_t;

static const char kEmpty[] = "";

KILN_PRINTF(2, 3)
static kiln_status_t bad(const reader_t *r, const char *fmt, ...) {
  if (r->err_size > 0) {
    int n = snprintf(r->err, r->err_size, "descriptor: ");
    if (n > 0 && (size_t)n < r->err_size) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(r->err + n, r->err_size - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return KILN_STATUS_INVALID_ARTIFACT;
}

/* Whether [pos, pos + len) lies inside the buffer. pos and len may each be
 * anything; the subtraction happens only once pos <= size. */
static int fits(const reader_t *r, uint64_t pos, uint64_t len) { return pos <= r->size && len <= r->size - pos; }

static uint16_t load_u16(const reader_t *r, uint64_t pos) {
  const uint8_t *p = r->buf + pos;
  return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t load_u32(const reader_t *r, uint64_t pos) {
  const uint8_t *p = r->buf + pos;
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t load_u64(const reader_t *r, uint64_t pos) {
  return (uint64_t)load_u32(r, pos) | ((uint64_t)load_u32(r, pos + 4) << 32);
}

/* Follows the uoffset stored at pos (4 bytes known to be inside the buffer). */
static kiln_status_t follow(const reader_t *r, uint64_t pos, const char *what, uint64_t *target) {
  uint32_t off = load_u32(r, pos);
  *target = 0;
  if (off == 0 || off > INT32_MAX || !fits(r, pos + off, 1))
    return bad(r, "%s: offset %" PRIu32 " at byte %" PRIu64 " points outside the buffer of %" PRIu64 " bytes", what,
               off, pos, r->size);
  *target = pos + off;
  return KILN_STATUS_OK;
}

static kiln_status_t open_table(const reader_t *r, uint64_t pos, const char *what, table_t *t) {
  if (!fits(r, pos, 4))
    return bad(r, "%s table at byte %" PRIu64 " lies outside the buffer of %" PRIu64 " bytes", what, pos, r->size);
  uint32_t raw = load_u32(r, pos);
  int64_t soff = raw <= INT32_MAX ? (int64_t)raw : (int64_t)raw - ((int64_t)1 << 32);
  int64_t vt = (int64_t)pos - soff;
  if (vt < 0 || !fits(r, (uint64_t)vt, 4))
    return bad(r, "vtable of %s table at byte %" PRIu64 " lies outside the buffer of %" PRIu64 " bytes", what, pos,
               r->size);
  uint16_t vsize = load_u16(r, (uint64_t)vt);
  uint16_t tsize = load_u16(r, (uint64_t)vt + 2);
  if (vsize < 4 || vsize % 2 != 0)
    return bad(r, "vtable of %s table at byte %" PRIu64 " has invalid size %u", what, pos, (unsigned)vsize);
  if (!fits(r, (uint64_t)vt, vsize))
    return bad(r, "vtable of %s table at byte %" PRIu64 " extends past the end of the buffer", what, pos);
  if (tsize < 4 || !fits(r, pos, tsize))
    return bad(r, "%s table at byte %" PRIu64 " has invalid size %u", what, pos, (unsigned)tsize);
  t->pos = pos;
  t->vt = (uint64_t)vt;
  t->vsize = vsize;
  t->tsize = tsize;
  t->what = what;
  return KILN_STATUS_OK;
}

/* Sets *pos to the offset of field index (width bytes), or 0 if absent. */
static kiln_status_t find_field(const reader_t *r, const table_t *t, unsigned index, unsigned width, const char *field,
                                uint64_t *pos) {
  unsigned slot = 4 + 2 * index;
  *pos = 0;
  if (slot + 2 > t->vsize)
    return KILN_STATUS_OK; /* written by an older compiler: default */
  uint16_t vo = load_u16(r, t->vt + slot);
  if (vo == 0)
    return KILN_STATUS_OK;
  if (vo < 4 || (unsigned)vo + width > t->tsize)
    return bad(r, "field %s of %s table at byte %" PRIu64 " lies outside its table", field, t->what, t->pos);
  *pos = t->pos + vo;
  return KILN_STATUS_OK;
}

static kiln_status_t read_u64_field(const reader_t *r, const table_t *t, unsigned index, const char *field,
                                    uint64_t *value) {
  uint64_t pos;
  kiln_status_t st = find_field(r, t, index, 8, field, &pos);
  if (st != KILN_STATUS_OK)
    return st;
  *value = pos ? load_u64(r, pos) : 0;
  return KILN_STATUS_OK;
}

/* Reads the string whose uoffset is stored at pos. */
static kiln_status_t read_string_at(const reader_t *r, uint64_t pos, const char *field, const char *what,
                                    kiln_desc_string_t *out) {
  uint64_t s;
  kiln_status_t st;
  if ((st = follow(r, pos, field, &s)) != KILN_STATUS_OK)
    return st;
  if (!fits(r, s, 4))
    return bad(r, "string %s of %s at byte %" PRIu64 " lies outside the buffer", field, what, s);
  uint32_t len = load_u32(r, s);
  if (!fits(r, s + 4, (uint64_t)len + 1))
    return bad(r, "string %s of %s at byte %" PRIu64 " (%" PRIu32 " bytes) extends past the end of the buffer", field,
               what, s, len);
  const char *data = (const char *)(r->buf + s + 4);
  if (data[len] != '\0')
    return bad(r, "string %s of %s at byte %" PRIu64 " is not NUL-terminated", field, what, s);
  if (memchr(data, '\0', len) != NULL)
    return bad(r, "string %s of %s at byte %" PRIu64 " contains a NUL byte", field, what, s);
  out->data = data;
  out->size = len;
  return KILN_STATUS_OK;
}

static kiln_status_t read_string(const reader_t *r, const table_t *t, unsigned index, const char *field,
                                 kiln_desc_string_t *out) {
  uint64_t pos;
  out->data = kEmpty;
  out->size = 0;
  kiln_status_t st = find_field(r, t, index, 4, field, &pos);
  if (st != KILN_STATUS_OK || pos == 0)
    return st;
  return read_string_at(r, pos, field, t->what, out);
}

/* Sets *at to the offset of the vector's first element and *count to its
 * length (0 and 0 if absent), after checking count * elem_size bytes fit. */
static kiln_status_t read_vector(const reader_t *r, const table_t *t, unsigned index, unsigned elem_size,
                                 const char *field, uint64_t *at, uint32_t *count) {
  uint64_t pos, v;
  *at = 0;
  *count = 0;
  kiln_status_t st = find_field(r, t, index, 4, field, &pos);
  if (st != KILN_STATUS_OK || pos == 0)
    return st;
  if ((st = follow(r, pos, field, &v)) != KILN_STATUS_OK)
    return st;
  if (!fits(r, v, 4))
    return bad(r, "vector %s of %s at byte %" PRIu64 " lies outside the buffer", field, t->what, v);
  uint32_t n = load_u32(r, v);
  if (!fits(r, v + 4, (uint64_t)n * elem_size))
    return bad(r, "vector %s of %s at byte %" PRIu64 " holds %" PRIu32 " elements, more than the buffer", field,
               t->what, v, n);
  *at = v + 4;
  *count = n;
  return KILN_STATUS_OK;
}

static int64_t load_i64(const reader_t *r, uint64_t pos) {
  uint64_t bits = load_u64(r, pos);
  int64_t v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* a + b and a * b, 0 when they leave int64. */
static int add_i64(int64_t a, int64_t b, int64_t *out) {
  if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
    return 0;
  *out = a + b;
  return 1;
}

static int mul_i64(int64_t a, int64_t b, int64_t *out) {
  if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
            : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))
    return 0;
  *out = a * b;
  return 1;
}

/* Size program opcodes (kiln_model.fbs, Tensor.dims). */
enum { DIM_CONST = 0, DIM_SYMBOL = 1, DIM_ADD = 2, DIM_MUL = 3, DIM_FLOOR_DIV = 4, DIM_CEIL_DIV = 5 };

/* Runs the size program of n codes at `at`, which check_program accepted,
 * with the symbols' values `dims`. 0 when a step leaves int64. */
static int run_program(const reader_t *r, uint64_t at, uint64_t n, const int64_t *dims, int64_t *value) {
  int64_t stack[MAX_PROGRAM_STACK];
  size_t depth = 0;
  for (uint64_t k = 0; k < n;) {
    int64_t op = load_i64(r, at + 8 * k++);
    if (op == DIM_CONST || op == DIM_SYMBOL) {
      int64_t arg = load_i64(r, at + 8 * k++);
      stack[depth++] = op == DIM_CONST ? arg : dims[arg];
    } else if (op == DIM_ADD || op == DIM_MUL) {
      int64_t b = stack[--depth], a = stack[depth - 1];
      if (!(op == DIM_ADD ? add_i64(a, b, &stack[depth - 1]) : mul_i64(a, b, &stack[depth - 1])))
        return 0;
    } else {
      int64_t d = load_i64(r, at + 8 * k++), a = stack[depth - 1];
      int64_t q = a / d, rem = a % d; /* rounds toward zero */
      if (op == DIM_FLOOR_DIV && rem != 0 && a < 0)
        q -= 1;
      if (op == DIM_CEIL_DIV && rem != 0 && a > 0)
        q += 1;
      stack[depth - 1] = q;
    }
  }
  *value = stack[0];
  return 1;
}

/* Checks the size program of n codes at `at` (axis `axis` of a tensor):
 * known opcodes with their operands, symbols that exist, divisors > 0, a
 * stack that never runs dry or deeper than MAX_PROGRAM_STACK, and one
 * value at the end. */
static kiln_status_t check_program(const reader_t *r, uint64_t at, uint64_t n, const char *kind, const char *name,
                                   size_t axis) {
  size_t depth = 0;
  for (uint64_t k = 0; k < n;) {
    int64_t op = load_i64(r, at + 8 * k++);
    int has_arg = op == DIM_CONST || op == DIM_SYMBOL || op == DIM_FLOOR_DIV || op == DIM_CEIL_DIV;
    if (op < DIM_CONST || op > DIM_CEIL_DIV)
      return bad(r, "%s '%s': the size program of axis %zu has unknown opcode %" PRId64, kind, name, axis, op);
    if (has_arg && k == n)
      return bad(r, "%s '%s': the size program of axis %zu ends inside an instruction", kind, name, axis);
    int64_t arg = has_arg ? load_i64(r, at + 8 * k++) : 0;
    if (op == DIM_SYMBOL && (arg < 0 || (uint64_t)arg >= r->num_dims))
      return bad(r, "%s '%s': the size program of axis %zu reads symbol %" PRId64 " of %zu", kind, name, axis, arg,
                 r->num_dims);
    if ((op == DIM_FLOOR_DIV || op == DIM_CEIL_DIV) && arg <= 0)
      return bad(r, "%s '%s': the size program of axis %zu divides by %" PRId64, kind, name, axis, arg);
    size_t needs = op == DIM_ADD || op == DIM_MUL ? 2 : op >= DIM_FLOOR_DIV ? 1 : 0;
    if (depth < needs)
      return bad(r, "%s '%s': the size program of axis %zu pops an empty stack", kind, name, axis);
    depth = depth - needs + 1;
    if (depth > MAX_PROGRAM_STACK)
      return bad(r, "%s '%s': the size program of axis %zu needs a stack deeper than %d", kind, name, axis,
                 MAX_PROGRAM_STACK);
  }
  if (depth != 1)
    return bad(r, "%s '%s': the size program of axis %zu leaves %zu values", kind, name, axis, depth);
  return KILN_STATUS_OK;
}

/* The symbols' ranges: lo[d] and hi[d] for each of r->num_dims. */
static void load_ranges(const reader_t *r, int64_t *lo, int64_t *hi) {
  for (size_t d = 0; d < r->num_dims; ++d) {
    lo[d] = load_i64(r, r->dim_ranges_at + 16 * (uint64_t)d);
    hi[d] = load_i64(r, r->dim_ranges_at + 16 * (uint64_t)d + 8);
  }
}

/* Model.arena_terms: size programs (a count, then the codes, per term) of
 * a model with symbolic dimensions, each at most arena_bytes at the upper
 * bounds and at least 0 at the lower ones. */
static kiln_status_t read_arena_terms(const reader_t *r, const table_t *t, uint64_t arena_bytes,
                                      kiln_desc_model_t *out) {
  uint64_t at;
  uint32_t count;
  kiln_status_t st = read_vector(r, t, MODEL_ARENA_TERMS, 8, "arena_terms", &at, &count);
  if (st != KILN_STATUS_OK)
    return st;
  out->num_arena_codes = count;
  out->arena_terms_at = (size_t)at;
  if (count == 0)
    return KILN_STATUS_OK;
  if (r->num_dims == 0)
    return bad(r, "arena_terms, but the model has no symbolic dimensions");
  int64_t lo[KILN_DESC_MAX_DIMS], hi[KILN_DESC_MAX_DIMS];
  load_ranges(r, lo, hi);
  size_t term = 0;
  for (uint64_t k = 0; k < count; ++term) {
    int64_t n = load_i64(r, at + 8 * k++);
    if (n <= 0 || (uint64_t)n > count - k)
      return bad(r, "arena term %zu has %" PRId64 " codes", term, n);
    if ((st = check_program(r, at + 8 * k, (uint64_t)n, "arena term", "arena_terms", term)) != KILN_STATUS_OK)
      return st;
    int64_t at_hi, at_lo;
    if (!run_program(r, at + 8 * k, (uint64_t)n, hi, &at_hi) || !run_program(r, at + 8 * k, (uint64_t)n, lo, &at_lo) ||
        at_lo < 0 || (uint64_t)at_hi > arena_bytes)
      return bad(r, "arena term %zu is outside 0..%" PRIu64 " over the symbols' ranges", term, arena_bytes);
    k += (uint64_t)n;
  }
  return KILN_STATUS_OK;
}

size_t kiln_desc_arena_bytes(const kiln_desc_model_t *model, const int64_t *dims) {
  if (model->num_arena_codes == 0)
    return model->arena_bytes;
  reader_t r = {model->buf, model->size, NULL, 0, model->num_dims, model->dim_ranges_at};
  int64_t most = 0;
  for (uint64_t k = 0; k < model->num_arena_codes;) {
    uint64_t n = (uint64_t)load_i64(&r, model->arena_terms_at + 8 * k++);
    int64_t value;
    /* Checked at open over the ranges; sizes in range cannot overflow. */
    if (!run_program(&r, model->arena_terms_at + 8 * k, n, dims, &value))
      return model->arena_bytes;
    if (value > most)
      most = value;
    k += n;
  }
  return (uint64_t)most < model->arena_bytes ? (size_t)most : model->arena_bytes;
}

/* Reads element index of a [Tensor] vector whose first element is at vec_at. */
static kiln_status_t read_tensor(const reader_t *r, uint64_t vec_at, size_t index, const char *kind,
                                 kiln_desc_tensor_t *out) {
  char what[48];
  snprintf(what, sizeof what, "%s %zu", kind, index);
  uint64_t tpos, pos, at;
  uint32_t rank;
  table_t t;
  kiln_status_t st;
  if ((st = follow(r, vec_at + 4 * (uint64_t)index, what, &tpos)) != KILN_STATUS_OK ||
      (st = open_table(r, tpos, what, &t)) != KILN_STATUS_OK ||
      (st = read_string(r, &t, TENSOR_NAME, "name", &out->name)) != KILN_STATUS_OK)
    return st;
  if (out->name.size == 0)
    return bad(r, "%s has an empty name", what);
  const char *name = out->name.data;

  if ((st = find_field(r, &t, TENSOR_DTYPE, 1, "dtype", &pos)) != KILN_STATUS_OK)
    return st;
  int dtype = pos ? (int)(int8_t)r->buf[pos] : 0;
  if (dtype < KILN_DTYPE_F32 || dtype > KILN_DTYPE_I2)
    return bad(r, "%s '%s': dtype %d is not a valid dtype", kind, name, dtype);
  out->dtype = (kiln_dtype_t)dtype;

  if ((st = read_vector(r, &t, TENSOR_SHAPE, 8, "shape", &at, &rank)) != KILN_STATUS_OK)
    return st;
  if (rank > KILN_DESC_MAX_RANK)
    return bad(r, "%s '%s': rank %" PRIu32 " exceeds the maximum of %d", kind, name, rank, KILN_DESC_MAX_RANK);
  out->rank = rank;
  for (uint32_t i = 0; i < rank; ++i) {
    uint64_t bits = load_u64(r, at + 8 * (uint64_t)i);
    int64_t dim;
    memcpy(&dim, &bits, sizeof dim);
    if (dim < 0)
      return bad(r, "%s '%s': dim %" PRIu32 " is %" PRId64 ", dims must be >= 0", kind, name, i, dim);
    out->shape[i] = dim;
  }

  /* No object may be larger than PTRDIFF_MAX bytes; refusing sooner keeps
   * every size the runtime derives from these (and their sums) exact. */
  const uint64_t limit = (uint64_t)PTRDIFF_MAX;
  uint64_t elements, bytes;
  if (!kiln_checked_dims_product(out->shape, rank, limit, &elements))
    return bad(r, "%s '%s': element count overflows", kind, name);
  if (!kiln_checked_mul(elements, kiln_dtype_size(out->dtype), limit, &bytes))
    return bad(r, "%s '%s': size in bytes overflows", kind, name);
  out->num_elements = (size_t)elements;
  out->size_bytes = (size_t)bytes;

  /* offset and role belong to state tensors; inputs and outputs have none. */
  uint64_t offset;
  if ((st = read_u64_field(r, &t, TENSOR_OFFSET, "offset", &offset)) != KILN_STATUS_OK ||
      (st = find_field(r, &t, TENSOR_ROLE, 1, "role", &pos)) != KILN_STATUS_OK)
    return st;
  int role = pos ? (int)(int8_t)r->buf[pos] : 0;
  int is_state = strcmp(kind, "state") == 0;
  if (is_state && (role < KILN_STATE_PARAMETER || role > KILN_STATE_STEP))
    return bad(r, "%s '%s': role %d is not a valid state role", kind, name, role);
  if (!is_state && (role != 0 || offset != 0))
    return bad(r, "%s '%s': only state tensors have a role and an offset", kind, name);
  if (offset > limit)
    return bad(r, "%s '%s': offset %" PRIu64 " exceeds the address space", kind, name, offset);
  out->offset = (size_t)offset;
  out->role = role;

  /* Size programs: one per axis, each giving the shape at the upper bounds
   * and no negative size at the lower ones. */
  uint32_t count;
  if ((st = read_vector(r, &t, TENSOR_DIMS, 8, "dims", &at, &count)) != KILN_STATUS_OK)
    return st;
  out->dims_at = (size_t)at;
  out->dims_count = count;
  if (count == 0)
    return KILN_STATUS_OK;
  if (is_state)
    return bad(r, "%s '%s': a state tensor has no symbolic sizes", kind, name);
  if (r->num_dims == 0)
    return bad(r, "%s '%s': has size programs, but the model has no symbolic dimensions", kind, name);
  int64_t lo[KILN_DESC_MAX_DIMS], hi[KILN_DESC_MAX_DIMS];
  load_ranges(r, lo, hi);
  uint64_t k = 0;
  for (size_t axis = 0; axis < rank; ++axis) {
    if (k == count)
      return bad(r, "%s '%s': size programs for %zu of %" PRIu32 " axes", kind, name, axis, rank);
    int64_t n = load_i64(r, at + 8 * k++);
    if (n <= 0 || (uint64_t)n > count - k)
      return bad(r, "%s '%s': the size program of axis %zu has %" PRId64 " codes", kind, name, axis, n);
    if ((st = check_program(r, at + 8 * k, (uint64_t)n, kind, name, axis)) != KILN_STATUS_OK)
      return st;
    int64_t at_hi, at_lo;
    if (!run_program(r, at + 8 * k, (uint64_t)n, hi, &at_hi) || !run_program(r, at + 8 * k, (uint64_t)n, lo, &at_lo))
      return bad(r, "%s '%s': the size of axis %zu overflows in the symbols' ranges", kind, name, axis);
    if (at_hi != out->shape[axis] || at_lo < 0)
      return bad(r,
                 "%s '%s': axis %zu is %" PRId64 " at the upper bounds and %" PRId64
                 " at the lower ones, expected %" PRId64 " and at least 0",
                 kind, name, axis, at_hi, at_lo, out->shape[axis]);
    k += (uint64_t)n;
  }
  if (k != count)
    return bad(r, "%s '%s': %" PRIu64 " codes after the size programs of its %" PRIu32 " axes", kind, name,
               (uint64_t)count - k, rank);
  return KILN_STATUS_OK;
}

int kiln_desc_axis_dim(const kiln_desc_model_t *model, const kiln_desc_tensor_t *tensor, size_t axis) {
  reader_t r = {model->buf, model->size, NULL, 0, model->num_dims, model->dim_ranges_at};
  if (tensor->dims_count == 0 || axis >= tensor->rank)
    return -1;
  uint64_t k = 0;
  for (size_t a = 0; a < axis; ++a)
    k += 1 + (uint64_t)load_i64(&r, tensor->dims_at + 8 * k);
  uint64_t at = tensor->dims_at + 8 * k;
  if (load_i64(&r, at) != 2 || load_i64(&r, at + 8) != DIM_SYMBOL)
    return -1;
  return (int)load_i64(&r, at + 16);
}

int kiln_desc_tensor_shape(const kiln_desc_model_t *model, const kiln_desc_tensor_t *tensor, const int64_t *dims,
                           int64_t *shape) {
  reader_t r = {model->buf, model->size, NULL, 0, model->num_dims, model->dim_ranges_at};
  uint64_t k = 0;
  for (size_t axis = 0; axis < tensor->rank; ++axis) {
    if (tensor->dims_count == 0) {
      shape[axis] = tensor->shape[axis];
      continue;
    }
    uint64_t n = (uint64_t)load_i64(&r, tensor->dims_at + 8 * k++);
    if (!run_program(&r, tensor->dims_at + 8 * k, n, dims, &shape[axis]) || shape[axis] < 0)
      return 0;
    k += n;
  }
  return 1;
}

kiln_desc_dim_t kiln_desc_dim(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, model->num_dims, model->dim_ranges_at};
  kiln_desc_dim_t dim;
  uint64_t s = 0;
  follow(&r, model->dim_names_at + 4 * (uint64_t)index, "symbol_names", &s);
  dim.name.size = load_u32(&r, s);
  dim.name.data = (const char *)r.buf + s + 4;
  dim.lo = load_i64(&r, model->dim_ranges_at + 16 * (uint64_t)index);
  dim.hi = load_i64(&r, model->dim_ranges_at + 16 * (uint64_t)index + 8);
  dim.computed = index >= model->num_dims - model->num_computed_dims;
  return dim;
}

/* "sm_<digits>", at most 6 digits. */
static int is_gpu_arch(const kiln_desc_string_t *arch) {
  return arch->size >= 4 && arch->size <= 9 && strncmp(arch->data, "sm_", 3) == 0 &&
         strspn(arch->data + 3, "0123456789") == arch->size - 3;
}

int kiln_desc_gpu_arch_number(const kiln_desc_string_t *arch) { return (int)strtol(arch->data + 3, NULL, 10); }

/* Reads the more_cubins vector of the CudaModule table t. */
static kiln_status_t read_more_cubins(const reader_t *r, const table_t *t, kiln_desc_model_t *out) {
  uint64_t at;
  uint32_t n;
  kiln_status_t st;
  if ((st = read_vector(r, t, CUDA_MORE_CUBINS, 4, "more_cubins", &at, &n)) != KILN_STATUS_OK)
    return st;
  if (n > KILN_DESC_MAX_CUBINS)
    return bad(r, "cuda: %" PRIu32 " more cubins, at most %d", n, KILN_DESC_MAX_CUBINS);
  out->num_more_cubins = n;
  const kiln_desc_string_t *below = &out->gpu_arch;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t tpos, cat;
    uint32_t size;
    table_t c;
    if ((st = follow(r, at + 4 * (uint64_t)i, "more_cubins", &tpos)) != KILN_STATUS_OK ||
        (st = open_table(r, tpos, "cuda cubin", &c)) != KILN_STATUS_OK ||
        (st = read_string(r, &c, CUBIN_GPU_ARCH, "gpu_arch", &out->more_arch[i])) != KILN_STATUS_OK ||
        (st = read_vector(r, &c, CUBIN_CUBIN, 1, "cubin", &cat, &size)) != KILN_STATUS_OK)
      return st;
    if (!is_gpu_arch(&out->more_arch[i]) ||
        kiln_desc_gpu_arch_number(&out->more_arch[i]) <= kiln_desc_gpu_arch_number(below))
      return bad(r, "cuda: more cubin %" PRIu32 " is for \"%s\", expected sm_<digits> above %s", i,
                 out->more_arch[i].data, below->data);
    if (size == 0)
      return bad(r, "cuda: more cubin %" PRIu32 " (%s) is empty", i, out->more_arch[i].data);
    out->more_cubin[i] = r->buf + cat;
    out->more_cubin_size[i] = size;
    below = &out->more_arch[i];
  }
  return KILN_STATUS_OK;
}

/* The bytes argument a may reach past its base (0 for a size), or
 * UINT64_MAX when its space and index name nothing. */
static uint64_t arg_limit(const kiln_desc_model_t *m, const kiln_desc_cuda_arg_t *a, const size_t *tensor_bytes) {
  if (a->space == KILN_DESC_CUDA_INPUT && a->index < m->num_inputs)
    return tensor_bytes[a->index];
  if (a->space == KILN_DESC_CUDA_OUTPUT && a->index < m->num_outputs)
    return tensor_bytes[m->num_inputs + a->index];
  if (a->space == KILN_DESC_CUDA_ARENA && a->index == 0)
    return m->arena_bytes;
  if (a->space == KILN_DESC_CUDA_CONSTANTS && a->index == 0)
    return m->constants_size;
  if (a->space == KILN_DESC_CUDA_STATE && a->index == 0 && m->num_state > 0)
    return m->state_bytes;
  if (a->space == KILN_DESC_CUDA_DIM && a->index < m->num_dims)
    return 0; /* a size, not a buffer: offset 0, and no library step takes it */
  return UINT64_MAX;
}

/* Whether a cols x ld matrix (rows <= ld) batch times, stride apart, of
 * elements of size bytes fits in the limit bytes from offset: the element
 * furthest from the start is ((batch-1)*stride + (cols-1)*ld + rows-1). */
static int matrix_fits(int64_t rows, int64_t cols, int64_t ld, uint32_t batch, int64_t stride, size_t size,
                       uint64_t offset, uint64_t limit) {
  /* Each factor below 2^31 (and batch below 2^32): the sum stays below 2^64. */
  const int64_t big = (int64_t)1 << 31;
  if (rows < 1 || cols < 1 || ld < rows || stride < 0 || cols >= big || ld >= big || stride >= big)
    return 0;
  uint64_t last = (uint64_t)(batch - 1) * (uint64_t)stride + (uint64_t)(cols - 1) * (uint64_t)ld + (uint64_t)rows;
  return offset <= limit && last <= (limit - offset) / size;
}

/* Checks step i, which calls gemm s->kernel - num_kernels: its shape and
 * layouts, and that every matrix lies inside the buffer its argument names. */
static kiln_status_t check_gemm_step(const reader_t *r, const kiln_desc_model_t *m, uint32_t i,
                                     const kiln_desc_cuda_step_t *s, const size_t *tensor_bytes) {
  uint32_t g = s->kernel - (uint32_t)m->num_kernels;
  kiln_desc_cuda_gemm_t gm = kiln_desc_cuda_gemm(m, g);
  size_t size = kiln_dtype_size(gm.dtype), d_size = kiln_dtype_size(gm.d_dtype);
  int has_bias = (gm.epilogue & KILN_DESC_GEMM_BIAS) != 0;
  if ((gm.dtype != KILN_DTYPE_F32 && gm.dtype != KILN_DTYPE_F16 && gm.dtype != KILN_DTYPE_BF16) ||
      (gm.d_dtype != gm.dtype && gm.d_dtype != KILN_DTYPE_F32))
    return bad(r, "cuda: gemm %" PRIu32 " has dtypes %d and %d, expected f32, f16 or bf16, and it or f32", g,
               (int)gm.dtype, (int)gm.d_dtype);
  if (gm.trans_a > 1 || gm.trans_b > 1 || gm.epilogue > 3 || gm.accumulate > 1 || gm.tf32 > 1 || gm.batch == 0 ||
      (gm.accumulate && gm.epilogue != 0))
    return bad(r, "cuda: gemm %" PRIu32 " has an invalid flag, epilogue or batch count", g);
  if (s->grid != 1 || s->block != 1 || s->num_args != 4u + (uint32_t)has_bias)
    return bad(r,
               "cuda: step %" PRIu32 " calls gemm %" PRIu32 " with grid %" PRIu32 ", block %" PRIu32 " and %" PRIu32
               " arguments, expected 1, 1 and %d",
               i, g, s->grid, s->block, s->num_args, 4 + has_bias);
  kiln_desc_cuda_arg_t a[5];
  uint64_t limit[5];
  for (uint32_t k = 0; k < s->num_args; ++k) {
    a[k] = kiln_desc_cuda_arg(m, s->first_arg + k);
    limit[k] = arg_limit(m, &a[k], tensor_bytes);
  }
  /* Stored shapes: op(A) is m x k, so A is k x m when transposed. */
  int ok = matrix_fits(gm.trans_a ? gm.k : gm.m, gm.trans_a ? gm.m : gm.k, gm.lda, gm.batch, gm.stride_a, size,
                       a[0].offset, limit[0]) &&
           matrix_fits(gm.trans_b ? gm.n : gm.k, gm.trans_b ? gm.k : gm.n, gm.ldb, gm.batch, gm.stride_b, size,
                       a[1].offset, limit[1]) &&
           matrix_fits(gm.m, gm.n, gm.ldd, gm.batch, gm.stride_d, d_size, a[2].offset, limit[2]) &&
           a[2].space != KILN_DESC_CUDA_CONSTANTS && a[3].space == KILN_DESC_CUDA_ARENA &&
           gm.workspace_bytes <= limit[3] - a[3].offset &&
           (!has_bias || matrix_fits(gm.m, 1, gm.m, 1, 0, d_size, a[4].offset, limit[4]));
  if (!ok)
    return bad(r,
               "cuda: gemm %" PRIu32 " (step %" PRIu32 ", %" PRId64 "x%" PRId64 "x%" PRId64
               ") has a matrix outside its buffer or an invalid leading dimension",
               g, i, gm.m, gm.n, gm.k);
  return KILN_STATUS_OK;
}

/* Whether a tensor of dims[4] with strides[4] (elements of size bytes) lies
 * in the limit bytes from offset: its furthest element is sum (d-1)*stride. */
static int tensor_fits(const int64_t dims[4], const int64_t strides[4], size_t size, uint64_t offset, uint64_t limit) {
  /* Each factor below 2^31: the sum of four products stays below 2^64. */
  const int64_t big = (int64_t)1 << 31;
  uint64_t last = 1;
  for (int i = 0; i < 4; ++i) {
    if (dims[i] < 1 || dims[i] >= big || strides[i] < 0 || strides[i] >= big)
      return 0;
    last += (uint64_t)(dims[i] - 1) * (uint64_t)strides[i];
  }
  return offset <= limit && last <= (limit - offset) / size;
}

/* Checks step i, which calls conv s->kernel - num_kernels - num_gemms: its
 * shape, and that x, w and y lie inside the buffers their arguments name. */
/* A bucket call: a bucket of the model, its tensors as the arguments, each
 * inside its buffer and not the constants. */
static kiln_status_t check_collective_step(const reader_t *r, const kiln_desc_model_t *m, uint32_t i,
                                           const kiln_desc_cuda_step_t *s, const size_t *tensor_bytes) {
  uint32_t c = s->kernel - (uint32_t)(m->num_kernels + m->num_gemms + m->num_convs);
  kiln_desc_cuda_collective_t col = kiln_desc_cuda_collective(m, c);
  if (col.bucket >= m->num_buckets || col.wait > 1)
    return bad(r, "cuda: collective %" PRIu32 " names bucket %" PRIu32 " (wait %" PRIu32 ") of %zu", c, col.bucket,
               col.wait, m->num_buckets);
  kiln_desc_bucket_t b = kiln_desc_bucket(m, col.bucket);
  if (s->grid != 1 || s->block != 1 || s->num_args != b.num_tensors)
    return bad(r,
               "cuda: step %" PRIu32 " calls collective %" PRIu32 " with grid %" PRIu32 ", block %" PRIu32
               " and %" PRIu32 " arguments, expected 1, 1 and %zu",
               i, c, s->grid, s->block, s->num_args, b.num_tensors);
  for (uint32_t k = 0; k < s->num_args; ++k) {
    kiln_desc_cuda_arg_t a = kiln_desc_cuda_arg(m, s->first_arg + k);
    uint64_t limit = arg_limit(m, &a, tensor_bytes);
    uint64_t bytes = kiln_desc_bucket_elements(m, b.first + k) * kiln_dtype_size(b.dtype);
    if (a.space == KILN_DESC_CUDA_CONSTANTS || a.offset > limit || bytes > limit - a.offset)
      return bad(r, "cuda: step %" PRIu32 " passes bucket %" PRIu32 " tensor %" PRIu32 " outside a writable buffer", i,
                 col.bucket, k);
  }
  return KILN_STATUS_OK;
}

static kiln_status_t check_conv_step(const reader_t *r, const kiln_desc_model_t *m, uint32_t i,
                                     const kiln_desc_cuda_step_t *s, const size_t *tensor_bytes) {
  uint32_t c = s->kernel - (uint32_t)(m->num_kernels + m->num_gemms);
  kiln_desc_cuda_conv_t cv = kiln_desc_cuda_conv(m, c);
  if (cv.dtype != KILN_DTYPE_F32 && cv.dtype != KILN_DTYPE_F16 && cv.dtype != KILN_DTYPE_BF16)
    return bad(r, "cuda: conv %" PRIu32 " has dtype %d, expected f32, f16 or bf16", c, (int)cv.dtype);
  int residual = cv.epilogue == (KILN_DESC_GEMM_BIAS | KILN_DESC_GEMM_RELU | KILN_DESC_CONV_RESIDUAL);
  if (cv.epilogue != 0 && cv.epilogue != KILN_DESC_GEMM_BIAS &&
      cv.epilogue != (KILN_DESC_GEMM_BIAS | KILN_DESC_GEMM_RELU) && !residual)
    return bad(r, "cuda: conv %" PRIu32 " has epilogue %u, expected 0, 1, 3 or 7", c, (unsigned)cv.epilogue);
  uint32_t num_args = residual ? 6 : cv.epilogue ? 5 : 4;
  if (s->grid != 1 || s->block != 1 || s->num_args != num_args)
    return bad(r,
               "cuda: step %" PRIu32 " calls conv %" PRIu32 " with grid %" PRIu32 ", block %" PRIu32 " and %" PRIu32
               " arguments, expected 1, 1 and %" PRIu32,
               i, c, s->grid, s->block, s->num_args, num_args);
  int ok = cv.groups >= 1 && cv.stride_h >= 1 && cv.stride_w >= 1 && cv.dilation_h >= 1 && cv.dilation_w >= 1 &&
           cv.tf32 <= 1 && cv.c >= 1 && cv.k >= 1 && cv.c % cv.groups == 0 && cv.k % cv.groups == 0 &&
           cv.c < ((int64_t)1 << 31) && cv.k < ((int64_t)1 << 31) && cv.h < ((int64_t)1 << 31) &&
           cv.w < ((int64_t)1 << 31) && cv.r >= 1 && cv.s >= 1 && cv.r < ((int64_t)1 << 15) &&
           cv.s < ((int64_t)1 << 15) && cv.pad_h >= 0 && cv.pad_w >= 0 && cv.pad_h < (1 << 15) &&
           cv.pad_w < (1 << 15) && cv.h + 2 * cv.pad_h >= (int64_t)cv.dilation_h * (cv.r - 1) + 1 &&
           cv.w + 2 * cv.pad_w >= (int64_t)cv.dilation_w * (cv.s - 1) + 1 &&
           cv.p == (cv.h + 2 * cv.pad_h - (int64_t)cv.dilation_h * (cv.r - 1) - 1) / cv.stride_h + 1 &&
           cv.q == (cv.w + 2 * cv.pad_w - (int64_t)cv.dilation_w * (cv.s - 1) - 1) / cv.stride_w + 1;
  if (ok) {
    kiln_desc_cuda_arg_t a[6];
    uint64_t limit[6];
    for (uint32_t k = 0; k < num_args; ++k) {
      a[k] = kiln_desc_cuda_arg(m, s->first_arg + k);
      limit[k] = arg_limit(m, &a[k], tensor_bytes);
    }
    size_t size = kiln_dtype_size(cv.dtype);
    int64_t cg = cv.c / cv.groups;
    int64_t xd[4] = {cv.n, cv.c, cv.h, cv.w}, yd[4] = {cv.n, cv.k, cv.p, cv.q};
    int64_t wd[4] = {cv.k, cg, cv.r, cv.s}, ws[4] = {cg * cv.r * cv.s, cv.r * cv.s, cv.s, 1};
    ok = tensor_fits(xd, cv.x_stride, size, a[0].offset, limit[0]) &&
         tensor_fits(wd, ws, size, a[1].offset, limit[1]) &&
         tensor_fits(yd, cv.y_stride, size, a[2].offset, limit[2]) && a[2].space != KILN_DESC_CUDA_CONSTANTS &&
         a[3].space == KILN_DESC_CUDA_ARENA && cv.workspace_bytes <= limit[3] - a[3].offset;
    int64_t bd[4] = {1, cv.k, 1, 1}, bs[4] = {0, 1, 0, 0};
    ok = ok && (!cv.epilogue || tensor_fits(bd, bs, size, a[4].offset, limit[4]));
    /* The residual z has y's shape and strides. */
    ok = ok && (!residual || tensor_fits(yd, cv.y_stride, size, a[5].offset, limit[5]));
  }
  if (!ok)
    return bad(r, "cuda: conv %" PRIu32 " (step %" PRIu32 ") has an invalid shape or a tensor outside its buffer", c,
               i);
  return KILN_STATUS_OK;
}

/* Reads and checks the CudaModule table at tpos; tensor_bytes holds the byte
 * sizes of the inputs, then the outputs. */
static kiln_status_t read_cuda(const reader_t *r, uint64_t field_pos, kiln_desc_model_t *out,
                               const size_t *tensor_bytes) {
  uint64_t tpos, at;
  uint32_t n;
  table_t t;
  kiln_status_t st;
  if ((st = follow(r, field_pos, "cuda", &tpos)) != KILN_STATUS_OK ||
      (st = open_table(r, tpos, "cuda", &t)) != KILN_STATUS_OK ||
      (st = read_string(r, &t, CUDA_GPU_ARCH, "gpu_arch", &out->gpu_arch)) != KILN_STATUS_OK ||
      (st = read_string(r, &t, CUDA_PTX, "ptx", &out->ptx)) != KILN_STATUS_OK)
    return st;
  if (!is_gpu_arch(&out->gpu_arch))
    return bad(r, "cuda: gpu_arch is \"%s\", expected sm_<digits>", out->gpu_arch.data);

  if ((st = read_vector(r, &t, CUDA_KERNELS, 4, "kernels", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->kernels_at = (size_t)at;
  out->num_kernels = n;
  for (uint32_t i = 0; i < n; ++i) {
    kiln_desc_string_t name;
    if ((st = read_string_at(r, at + 4 * (uint64_t)i, "kernels", "cuda", &name)) != KILN_STATUS_OK)
      return st;
    if (name.size == 0)
      return bad(r, "cuda: kernel %" PRIu32 " has an empty name", i);
  }

  if ((st = read_vector(r, &t, CUDA_CONSTANTS, 1, "constants", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->constants = r->buf + at;
  out->constants_size = n;

  if ((st = read_vector(r, &t, CUDA_ARGS, CUDA_ARG_SIZE, "args", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->args_at = (size_t)at;
  out->num_args = n;
  for (uint32_t i = 0; i < n; ++i) {
    kiln_desc_cuda_arg_t a = kiln_desc_cuda_arg(out, i);
    uint64_t limit = arg_limit(out, &a, tensor_bytes);
    if (limit == UINT64_MAX)
      return bad(r, "cuda: argument %" PRIu32 " names space %u index %" PRIu32 ", which does not exist", i,
                 (unsigned)a.space, a.index);
    if (a.offset > limit)
      return bad(r, "cuda: argument %" PRIu32 " has offset %" PRIu64 " past its buffer of %" PRIu64 " bytes", i,
                 a.offset, limit);
  }

  if ((st = read_vector(r, &t, CUDA_GEMMS, CUDA_GEMM_SIZE, "gemms", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->gemms_at = (size_t)at;
  out->num_gemms = n;

  if ((st = read_vector(r, &t, CUDA_CONVS, CUDA_CONV_SIZE, "convs", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->convs_at = (size_t)at;
  out->num_convs = n;
  /* Absent, or one padding per conv (ABI 9). */
  if ((st = read_vector(r, &t, CUDA_CONV_PADS, CUDA_CONV_PAD_SIZE, "conv_pads", &at, &n)) != KILN_STATUS_OK)
    return st;
  if (n != 0 && n != out->num_convs)
    return bad(r, "cuda: %" PRIu32 " conv paddings for %zu convs", n, out->num_convs);
  out->conv_pads_at = n != 0 ? (size_t)at : 0;

  if ((st = read_vector(r, &t, CUDA_COLLECTIVES, CUDA_COLLECTIVE_SIZE, "collectives", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->collectives_at = (size_t)at;
  out->num_collectives = n;

  if ((st = read_vector(r, &t, CUDA_STEPS, CUDA_STEP_SIZE, "steps", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->steps_at = (size_t)at;
  out->num_steps = n;
  size_t num_library = out->num_kernels + out->num_gemms + out->num_convs;
  size_t num_calls = num_library + out->num_collectives;
  for (uint32_t i = 0; i < n; ++i) {
    kiln_desc_cuda_step_t s = kiln_desc_cuda_step(out, i);
    if (s.kernel >= num_calls)
      return bad(r, "cuda: step %" PRIu32 " launches kernel %" PRIu32 " of %zu", i, s.kernel, num_calls);
    if (s.grid == 0 || s.grid > INT32_MAX || s.block == 0 || s.block > 1024)
      return bad(r, "cuda: step %" PRIu32 " has grid %" PRIu32 " and block %" PRIu32 ", expected 1..2^31-1 and 1..1024",
                 i, s.grid, s.block);
    if (s.num_args > KILN_DESC_MAX_TENSORS + 1 || (uint64_t)s.first_arg + s.num_args > out->num_args)
      return bad(r, "cuda: step %" PRIu32 " takes arguments %" PRIu32 "..%" PRIu64 " of %zu", i, s.first_arg,
                 (uint64_t)s.first_arg + s.num_args, out->num_args);
    for (uint32_t a = 0; a < s.num_args; ++a) {
      kiln_desc_cuda_arg_t arg = kiln_desc_cuda_arg(out, s.first_arg + a);
      if (s.kernel < out->num_kernels && arg.space == KILN_DESC_CUDA_CONSTANTS)
        return bad(r, "cuda: step %" PRIu32 " passes the constants to a kernel, which reads them itself", i);
      if (arg.space > KILN_DESC_CUDA_DIM ||
          (arg.space == KILN_DESC_CUDA_DIM && (s.kernel >= out->num_kernels || arg.index >= out->num_dims)))
        return bad(r, "cuda: step %" PRIu32 " argument %" PRIu32 " has space %u index %" PRIu32, i, a,
                   (unsigned)arg.space, arg.index);
    }
    if (s.kernel >= out->num_kernels && s.kernel < out->num_kernels + out->num_gemms &&
        (st = check_gemm_step(r, out, i, &s, tensor_bytes)) != KILN_STATUS_OK)
      return st;
    if (s.kernel >= out->num_kernels + out->num_gemms && s.kernel < num_library &&
        (st = check_conv_step(r, out, i, &s, tensor_bytes)) != KILN_STATUS_OK)
      return st;
    if (s.kernel >= num_library && (st = check_collective_step(r, out, i, &s, tensor_bytes)) != KILN_STATUS_OK)
      return st;
  }

  if ((st = read_vector(r, &t, CUDA_CUBIN, 1, "cubin", &at, &n)) != KILN_STATUS_OK)
    return st;
  out->cubin = r->buf + at;
  out->cubin_size = n;
  if (out->cubin_size == 0 && out->ptx.size == 0)
    return bad(r, "cuda: the module has neither a cubin nor PTX");
  if ((st = read_more_cubins(r, &t, out)) != KILN_STATUS_OK)
    return st;
  uint64_t pos;
  if ((st = find_field(r, &t, CUDA_IO_ALIGNMENT, 4, "io_alignment", &pos)) != KILN_STATUS_OK)
    return st;
  uint32_t io = pos ? load_u32(r, pos) : 0;
  if (io > 256 || (io & (io - 1)) != 0)
    return bad(r, "cuda: io_alignment is %" PRIu32 ", expected a power of two up to 256", io);
  out->io_alignment = io ? io : 1;
  out->has_cuda = 1;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_desc_check_checksum(const kiln_artifact_t *artifact, char *err, size_t err_size) {
  uint32_t stored = artifact->descriptor_checksum;
  if (artifact->abi_version < 4) {
    if (stored == 0)
      return KILN_STATUS_OK;
    snprintf(err, err_size, "artifact of ABI version %u has a nonzero reserved field", (unsigned)artifact->abi_version);
    return KILN_STATUS_INVALID_ARTIFACT;
  }
  uint32_t actual = kiln_descriptor_checksum(artifact->descriptor, (size_t)artifact->descriptor_size);
  if (actual == stored)
    return KILN_STATUS_OK;
  snprintf(err, err_size,
           "descriptor: checksum 0x%08x does not match the 0x%08x compiled into the artifact: the descriptor "
           "(%zu bytes) was changed after compilation, or belongs to other code",
           (unsigned)actual, (unsigned)stored, (size_t)artifact->descriptor_size);
  return KILN_STATUS_INVALID_ARTIFACT;
}

kiln_status_t kiln_desc_check_data(const kiln_artifact_t *artifact, char *err, size_t err_size) {
  if (artifact->abi_version < 5 || artifact->num_data_ranges == 0)
    return KILN_STATUS_OK;
  if (artifact->data_ranges == NULL || artifact->num_data_ranges > SIZE_MAX) {
    snprintf(err, err_size, "artifact lists %" PRIu64 " data ranges but no table of them", artifact->num_data_ranges);
    return KILN_STATUS_INVALID_ARTIFACT;
  }
  for (uint64_t i = 0; i < artifact->num_data_ranges; ++i)
    if (artifact->data_ranges[i].data == NULL && artifact->data_ranges[i].size != 0) {
      snprintf(err, err_size, "artifact data range %" PRIu64 " is null", i);
      return KILN_STATUS_INVALID_ARTIFACT;
    }
  uint64_t actual = kiln_data_checksum(artifact->data_ranges, (size_t)artifact->num_data_ranges);
  if (actual == artifact->data_checksum)
    return KILN_STATUS_OK;
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < artifact->num_data_ranges; ++i)
    bytes += artifact->data_ranges[i].size;
  snprintf(err, err_size,
           "artifact: the checksum of its constant data (%" PRIu64 " bytes of weights) is 0x%016" PRIx64
           ", the compiler recorded 0x%016" PRIx64 ": the file was damaged after compilation",
           bytes, actual, artifact->data_checksum);
  return KILN_STATUS_INVALID_ARTIFACT;
}

kiln_status_t kiln_desc_read(const void *buf, size_t size, kiln_desc_model_t *out, char *err, size_t err_size) {
  reader_t r = {(const uint8_t *)buf, size, err, err_size, 0, 0};
  kiln_status_t st;
  if (buf == NULL)
    return bad(&r, "buffer is null");
  if (size < 8)
    return bad(&r, "%zu bytes is too small for a FlatBuffers buffer", size);
  if ((uint64_t)size > MAX_BUFFER_SIZE)
    return bad(&r, "%zu bytes exceeds the FlatBuffers limit of 2 GiB", size);
  if (memcmp(r.buf + 4, "KILN", 4) != 0) {
    char id[5];
    for (int i = 0; i < 4; ++i) {
      uint8_t c = r.buf[4 + i];
      id[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    id[4] = '\0';
    return bad(&r, "file identifier is \"%s\", expected \"KILN\"", id);
  }

  uint64_t root;
  table_t t;
  if ((st = follow(&r, 0, "root", &root)) != KILN_STATUS_OK ||
      (st = open_table(&r, root, "model", &t)) != KILN_STATUS_OK)
    return st;

  uint64_t pos;
  if ((st = find_field(&r, &t, MODEL_FORMAT_VERSION, 4, "format_version", &pos)) != KILN_STATUS_OK)
    return st;
  out->format_version = pos ? load_u32(&r, pos) : 0;
  if (out->format_version == 0)
    return bad(&r, "format_version is missing");
  if (out->format_version != KILN_DESC_FORMAT_VERSION) {
    bad(&r, "format_version is %" PRIu32 ", this runtime reads %u", out->format_version, KILN_DESC_FORMAT_VERSION);
    return KILN_STATUS_VERSION_MISMATCH;
  }

  if ((st = read_string(&r, &t, MODEL_NAME, "name", &out->name)) != KILN_STATUS_OK ||
      (st = read_string(&r, &t, MODEL_TARGET, "target", &out->target)) != KILN_STATUS_OK ||
      (st = read_string(&r, &t, MODEL_CPU, "cpu", &out->cpu)) != KILN_STATUS_OK ||
      (st = read_string(&r, &t, MODEL_PRODUCER, "producer", &out->producer)) != KILN_STATUS_OK)
    return st;
  if (out->name.size == 0)
    return bad(&r, "model name is empty");

  uint64_t inputs_at, outputs_at;
  uint32_t num_inputs, num_outputs;
  if ((st = read_vector(&r, &t, MODEL_INPUTS, 4, "inputs", &inputs_at, &num_inputs)) != KILN_STATUS_OK ||
      (st = read_vector(&r, &t, MODEL_OUTPUTS, 4, "outputs", &outputs_at, &num_outputs)) != KILN_STATUS_OK)
    return st;
  if ((uint64_t)num_inputs + num_outputs > KILN_DESC_MAX_TENSORS)
    return bad(&r, "%" PRIu32 " inputs and %" PRIu32 " outputs exceed this runtime's limit of %d in total", num_inputs,
               num_outputs, KILN_DESC_MAX_TENSORS);

  uint64_t arena_bytes, arena_alignment, arena_lower_bound_bytes;
  if ((st = read_u64_field(&r, &t, MODEL_ARENA_BYTES, "arena_bytes", &arena_bytes)) != KILN_STATUS_OK ||
      (st = read_u64_field(&r, &t, MODEL_ARENA_ALIGNMENT, "arena_alignment", &arena_alignment)) != KILN_STATUS_OK ||
      (st = read_u64_field(&r, &t, MODEL_ARENA_LOWER_BOUND_BYTES, "arena_lower_bound_bytes",
                           &arena_lower_bound_bytes)) != KILN_STATUS_OK)
    return st;
  if (arena_alignment == 0)
    arena_alignment = 1;
  if ((arena_alignment & (arena_alignment - 1)) != 0)
    return bad(&r, "arena_alignment %" PRIu64 " is not a power of two", arena_alignment);
  if (arena_bytes > (uint64_t)PTRDIFF_MAX || arena_alignment > (uint64_t)PTRDIFF_MAX ||
      arena_lower_bound_bytes > (uint64_t)PTRDIFF_MAX)
    return bad(&r, "arena sizes exceed the address space");

  out->buf = r.buf;
  out->size = size;
  out->num_inputs = num_inputs;
  out->num_outputs = num_outputs;
  out->inputs_at = (size_t)inputs_at;
  out->outputs_at = (size_t)outputs_at;
  out->arena_bytes = (size_t)arena_bytes;
  out->arena_alignment = (size_t)arena_alignment;
  out->arena_lower_bound_bytes = (size_t)arena_lower_bound_bytes;

  /* The state of a training step: tensors in offset order, each aligned and
   * inside state_bytes, none overlapping the next. */
  uint64_t state_at, state_bytes, state_alignment;
  uint32_t num_state;
  if ((st = read_vector(&r, &t, MODEL_STATE, 4, "state", &state_at, &num_state)) != KILN_STATUS_OK ||
      (st = read_u64_field(&r, &t, MODEL_STATE_BYTES, "state_bytes", &state_bytes)) != KILN_STATUS_OK ||
      (st = read_u64_field(&r, &t, MODEL_STATE_ALIGNMENT, "state_alignment", &state_alignment)) != KILN_STATUS_OK)
    return st;
  if (num_state > KILN_DESC_MAX_TENSORS)
    return bad(&r, "%" PRIu32 " state tensors exceed this runtime's limit of %d", num_state, KILN_DESC_MAX_TENSORS);
  if (num_state > 0 && (uint64_t)num_inputs + num_outputs + 1 > KILN_DESC_MAX_TENSORS)
    return bad(&r, "%" PRIu32 " inputs, %" PRIu32 " outputs and a state buffer exceed this runtime's limit of %d",
               num_inputs, num_outputs, KILN_DESC_MAX_TENSORS);
  if (num_state == 0 && (state_bytes != 0 || state_alignment != 0))
    return bad(&r, "state_bytes and state_alignment are set but there are no state tensors");
  if (state_alignment == 0)
    state_alignment = 1;
  if ((state_alignment & (state_alignment - 1)) != 0)
    return bad(&r, "state_alignment %" PRIu64 " is not a power of two", state_alignment);
  if (state_bytes > (uint64_t)PTRDIFF_MAX || state_alignment > (uint64_t)PTRDIFF_MAX)
    return bad(&r, "state sizes exceed the address space");
  out->num_state = num_state;
  out->state_at = (size_t)state_at;
  out->state_bytes = (size_t)state_bytes;
  out->state_alignment = (size_t)state_alignment;

  /* Symbolic dimensions, before the tensors whose sizes refer to them. */
  uint64_t dim_names_at, dim_ranges_at;
  uint32_t num_dim_names, num_dim_ranges;
  if ((st = read_vector(&r, &t, MODEL_SYMBOL_NAMES, 4, "symbol_names", &dim_names_at, &num_dim_names)) !=
          KILN_STATUS_OK ||
      (st = read_vector(&r, &t, MODEL_SYMBOL_RANGES, 8, "symbol_ranges", &dim_ranges_at, &num_dim_ranges)) !=
          KILN_STATUS_OK)
    return st;
  if (num_dim_names > KILN_DESC_MAX_DIMS)
    return bad(&r, "%" PRIu32 " symbolic dimensions exceed this runtime's limit of %d", num_dim_names,
               KILN_DESC_MAX_DIMS);
  if ((uint64_t)num_dim_ranges != 2 * (uint64_t)num_dim_names)
    return bad(&r, "%" PRIu32 " symbol_ranges for %" PRIu32 " symbol_names, expected two each", num_dim_ranges,
               num_dim_names);
  for (uint32_t d = 0; d < num_dim_names; ++d) {
    kiln_desc_string_t name;
    if ((st = read_string_at(&r, dim_names_at + 4 * (uint64_t)d, "symbol_names", "model", &name)) != KILN_STATUS_OK)
      return st;
    int64_t lo = load_i64(&r, dim_ranges_at + 16 * (uint64_t)d),
            hi = load_i64(&r, dim_ranges_at + 16 * (uint64_t)d + 8);
    if (name.size == 0)
      return bad(&r, "symbolic dimension %" PRIu32 " has an empty name", d);
    if (lo < 0 || lo > hi)
      return bad(&r, "symbolic dimension '%s' has the range %" PRId64 "..%" PRId64 ", expected 0 <= lo <= hi",
                 name.data, lo, hi);
  }
  /* The last computed_symbols of them are computed by the run. */
  if ((st = find_field(&r, &t, MODEL_COMPUTED_SYMBOLS, 4, "computed_symbols", &pos)) != KILN_STATUS_OK)
    return st;
  uint32_t num_computed = pos ? load_u32(&r, pos) : 0;
  if (num_computed > num_dim_names)
    return bad(&r, "%" PRIu32 " computed_symbols of %" PRIu32 " symbolic dimensions", num_computed, num_dim_names);
  for (uint32_t d = num_dim_names - num_computed; d < num_dim_names; ++d)
    if (load_i64(&r, dim_ranges_at + 16 * (uint64_t)d) != 0)
      return bad(&r, "computed symbolic dimension %" PRIu32 " has a lowest size other than 0", d);
  out->num_computed_dims = num_computed;
  r.num_dims = num_dim_names;
  r.dim_ranges_at = dim_ranges_at;
  out->num_dims = num_dim_names;
  out->dim_names_at = (size_t)dim_names_at;
  out->dim_ranges_at = (size_t)dim_ranges_at;
  if ((st = read_arena_terms(&r, &t, arena_bytes, out)) != KILN_STATUS_OK)
    return st;
  int dim_in_input[KILN_DESC_MAX_DIMS] = {0};

  /* Tensors may share strings (a FlatBuffers DAG), so the name total can
   * exceed the buffer size; it is bounded by 256 * 2 GiB and summed in 64 bits. */
  uint64_t total_rank = 0, total_name_bytes = 0;
  size_t tensor_bytes[KILN_DESC_MAX_TENSORS];
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    kiln_desc_tensor_t tensor;
    int is_output = i >= num_inputs;
    st = read_tensor(&r, is_output ? outputs_at : inputs_at, is_output ? i - num_inputs : i,
                     is_output ? "output" : "input", &tensor);
    if (st != KILN_STATUS_OK)
      return st;
    total_rank += tensor.rank;
    total_name_bytes += tensor.name.size;
    tensor_bytes[i] = tensor.size_bytes;
    for (size_t axis = 0; !is_output && axis < tensor.rank; ++axis) {
      int d = kiln_desc_axis_dim(out, &tensor, axis);
      if (d >= 0)
        dim_in_input[d] = 1;
    }
  }
  for (uint32_t d = 0; d < num_dim_names; ++d) {
    if (!dim_in_input[d] && !kiln_desc_dim(out, d).computed)
      return bad(&r, "symbolic dimension '%s' is the size of no input axis", kiln_desc_dim(out, d).name.data);
    if (dim_in_input[d] && kiln_desc_dim(out, d).computed)
      return bad(&r, "computed symbolic dimension '%s' is the size of an input axis", kiln_desc_dim(out, d).name.data);
  }
  uint64_t state_end = 0;
  for (uint32_t i = 0; i < num_state; ++i) {
    kiln_desc_tensor_t tensor;
    if ((st = read_tensor(&r, state_at, i, "state", &tensor)) != KILN_STATUS_OK)
      return st;
    if (tensor.offset % state_alignment != 0)
      return bad(&r, "state '%s': offset %zu is not a multiple of the state alignment %" PRIu64, tensor.name.data,
                 tensor.offset, state_alignment);
    if (tensor.offset < state_end)
      return bad(&r, "state '%s': offset %zu overlaps the previous state tensor, which ends at %" PRIu64,
                 tensor.name.data, tensor.offset, state_end);
    /* Both terms are at most PTRDIFF_MAX: the sum cannot wrap in 64 bits. */
    state_end = (uint64_t)tensor.offset + tensor.size_bytes;
    if (state_end > state_bytes)
      return bad(&r, "state '%s': bytes [%zu, %" PRIu64 ") lie outside the state of %" PRIu64 " bytes",
                 tensor.name.data, tensor.offset, state_end, state_bytes);
    total_rank += tensor.rank;
    total_name_bytes += tensor.name.size;
  }
  if (total_name_bytes > (uint64_t)PTRDIFF_MAX / 2)
    return bad(&r, "tensor names exceed the address space");
  out->total_rank = (size_t)total_rank;
  out->total_name_bytes = (size_t)total_name_bytes;

  /* The CPU kernels' names (a profile's slices) and flops. */
  uint64_t kernels_at, flops_at;
  uint32_t num_kernels, num_flops;
  if ((st = read_vector(&r, &t, MODEL_KERNEL_NAMES, 4, "kernel_names", &kernels_at, &num_kernels)) != KILN_STATUS_OK ||
      (st = read_vector(&r, &t, MODEL_KERNEL_FLOPS, 8, "kernel_flops", &flops_at, &num_flops)) != KILN_STATUS_OK)
    return st;
  if (num_flops != 0 && num_flops != num_kernels)
    return bad(&r, "%" PRIu32 " kernel_flops for %" PRIu32 " kernel_names", num_flops, num_kernels);
  for (uint32_t i = 0; i < num_kernels; ++i) {
    kiln_desc_string_t name;
    if ((st = read_string_at(&r, kernels_at + 4 * (uint64_t)i, "kernel_names", "model", &name)) != KILN_STATUS_OK)
      return st;
    if (name.size == 0)
      return bad(&r, "kernel %" PRIu32 " has an empty name", i);
  }
  out->num_cpu_kernels = num_kernels;
  out->cpu_kernels_at = (size_t)kernels_at;
  out->cpu_flops_at = num_flops ? (size_t)flops_at : 0;

  /* A data-parallel step's buckets: sizes and dtypes one per bucket, the
   * element counts of all their tensors in order. */
  uint64_t sizes_at, dtypes_at, elements_at;
  uint32_t num_sizes, num_dtypes, num_elements;
  if ((st = read_vector(&r, &t, MODEL_BUCKET_SIZES, 4, "bucket_sizes", &sizes_at, &num_sizes)) != KILN_STATUS_OK ||
      (st = read_vector(&r, &t, MODEL_BUCKET_DTYPES, 1, "bucket_dtypes", &dtypes_at, &num_dtypes)) != KILN_STATUS_OK ||
      (st = read_vector(&r, &t, MODEL_BUCKET_ELEMENTS, 8, "bucket_elements", &elements_at, &num_elements)) !=
          KILN_STATUS_OK)
    return st;
  if (num_dtypes != num_sizes)
    return bad(&r, "%" PRIu32 " bucket_dtypes for %" PRIu32 " bucket_sizes", num_dtypes, num_sizes);
  uint64_t next_element = 0;
  for (uint32_t b = 0; b < num_sizes; ++b) {
    uint32_t size = load_u32(&r, sizes_at + 4 * (uint64_t)b);
    uint8_t dtype = r.buf[dtypes_at + b];
    if (size == 0)
      return bad(&r, "bucket %" PRIu32 " holds no tensors", b);
    if (dtype != KILN_DTYPE_F32 && dtype != KILN_DTYPE_F64)
      return bad(&r, "bucket %" PRIu32 " has dtype %u, expected f32 or f64", b, (unsigned)dtype);
    if (size > num_elements - next_element)
      return bad(&r, "bucket %" PRIu32 " holds %" PRIu32 " tensors, more than bucket_elements lists", b, size);
    uint64_t bytes = 0, width = dtype == KILN_DTYPE_F64 ? 8 : 4;
    for (uint32_t i = 0; i < size; ++i) {
      uint64_t n = load_u64(&r, elements_at + 8 * (next_element + i));
      if (n == 0 || n > ((uint64_t)PTRDIFF_MAX - bytes) / width)
        return bad(&r, "bucket %" PRIu32 " tensor %" PRIu32 " has %" PRIu64 " elements", b, i, n);
      bytes += n * width;
    }
    next_element += size;
  }
  if (next_element != num_elements)
    return bad(&r, "bucket_elements lists %" PRIu32 " tensors, the buckets hold %" PRIu64, num_elements, next_element);
  out->num_buckets = num_sizes;
  out->bucket_sizes_at = (size_t)sizes_at;
  out->bucket_dtypes_at = (size_t)dtypes_at;
  out->num_bucket_elements = num_elements;
  out->bucket_elements_at = (size_t)elements_at;

  /* A CUDA artifact says so in its target and carries its module; no other
   * artifact has one. */
  memset(&out->gpu_arch, 0, sizeof *out - offsetof(kiln_desc_model_t, gpu_arch));
  out->has_cuda = 0;
  out->gpu_arch.data = out->ptx.data = kEmpty;
  if ((st = find_field(&r, &t, MODEL_CUDA, 4, "cuda", &pos)) != KILN_STATUS_OK)
    return st;
  int is_cuda = is_cuda_target(&out->target);
  if (pos == 0 && is_cuda)
    return bad(&r, "target is cuda but the cuda module is missing");
  if (pos != 0 && !is_cuda)
    return bad(&r, "target is \"%s\" but a cuda module is present", out->target.data);
  if (pos != 0 && (st = read_cuda(&r, pos, out, tensor_bytes)) != KILN_STATUS_OK)
    return st;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_desc_tensor(const kiln_desc_model_t *model, int is_output, size_t index, kiln_desc_tensor_t *out,
                               char *err, size_t err_size) {
  reader_t r = {model->buf, model->size, err, err_size, model->num_dims, model->dim_ranges_at};
  size_t count = is_output ? model->num_outputs : model->num_inputs;
  if (index >= count) {
    if (err_size > 0)
      snprintf(err, err_size, "descriptor: %s index %zu out of range (%zu %ss)", is_output ? "output" : "input", index,
               count, is_output ? "output" : "input");
    return KILN_STATUS_INVALID_ARGUMENT;
  }
  return read_tensor(&r, is_output ? model->outputs_at : model->inputs_at, index, is_output ? "output" : "input", out);
}

kiln_status_t kiln_desc_state(const kiln_desc_model_t *model, size_t index, kiln_desc_tensor_t *out, char *err,
                              size_t err_size) {
  reader_t r = {model->buf, model->size, err, err_size, model->num_dims, model->dim_ranges_at};
  if (index >= model->num_state) {
    if (err_size > 0)
      snprintf(err, err_size, "descriptor: state index %zu out of range (%zu state tensors)", index, model->num_state);
    return KILN_STATUS_INVALID_ARGUMENT;
  }
  return read_tensor(&r, model->state_at, index, "state", out);
}

/* String `index` of a [string] vector whose elements start at `at`, in a
 * buffer kiln_desc_read verified. */
static kiln_desc_string_t string_in_vector(const kiln_desc_model_t *model, size_t at, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  uint64_t pos = at + 4 * (uint64_t)index;
  uint64_t s = pos + load_u32(&r, pos);
  kiln_desc_string_t out = {(const char *)(model->buf + s + 4), load_u32(&r, s)};
  return out;
}

kiln_desc_string_t kiln_desc_cuda_kernel(const kiln_desc_model_t *model, size_t index) {
  return string_in_vector(model, model->kernels_at, index);
}

kiln_desc_cuda_collective_t kiln_desc_cuda_collective(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  uint64_t pos = model->collectives_at + CUDA_COLLECTIVE_SIZE * (uint64_t)index;
  kiln_desc_cuda_collective_t out = {load_u32(&r, pos), load_u32(&r, pos + 4)};
  return out;
}

kiln_desc_bucket_t kiln_desc_bucket(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  kiln_desc_bucket_t out = {KILN_DTYPE_INVALID, 0, 0};
  for (size_t b = 0; b <= index && b < model->num_buckets; ++b) {
    out.first += out.num_tensors;
    out.num_tensors = load_u32(&r, model->bucket_sizes_at + 4 * (uint64_t)b);
    out.dtype = (kiln_dtype_t)model->buf[model->bucket_dtypes_at + b];
  }
  return out;
}

uint64_t kiln_desc_bucket_elements(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  return load_u64(&r, model->bucket_elements_at + 8 * (uint64_t)index);
}

kiln_desc_string_t kiln_desc_cpu_kernel(const kiln_desc_model_t *model, size_t index) {
  return string_in_vector(model, model->cpu_kernels_at, index);
}

uint64_t kiln_desc_cpu_kernel_flops(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  return model->cpu_flops_at ? load_u64(&r, model->cpu_flops_at + 8 * (uint64_t)index) : 0;
}

kiln_desc_cuda_step_t kiln_desc_cuda_step(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  uint64_t pos = model->steps_at + CUDA_STEP_SIZE * (uint64_t)index;
  kiln_desc_cuda_step_t s = {load_u32(&r, pos), load_u32(&r, pos + 4), load_u32(&r, pos + 8), load_u32(&r, pos + 12),
                             load_u32(&r, pos + 16)};
  return s;
}

kiln_desc_cuda_gemm_t kiln_desc_cuda_gemm(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  uint64_t pos = model->gemms_at + CUDA_GEMM_SIZE * (uint64_t)index;
  kiln_desc_cuda_gemm_t g;
  int64_t *fields[] = {&g.m, &g.n, &g.k, &g.lda, &g.ldb, &g.ldd, &g.stride_a, &g.stride_b, &g.stride_d};
  for (size_t f = 0; f < sizeof fields / sizeof fields[0]; ++f) {
    uint64_t bits = load_u64(&r, pos + 8 * f);
    memcpy(fields[f], &bits, sizeof bits);
  }
  g.batch = load_u32(&r, pos + 72);
  g.dtype = (kiln_dtype_t)(int8_t)model->buf[pos + 76];
  g.trans_a = model->buf[pos + 77];
  g.trans_b = model->buf[pos + 78];
  g.epilogue = model->buf[pos + 79];
  g.accumulate = model->buf[pos + 80];
  g.tf32 = model->buf[pos + 81];
  g.d_dtype = (kiln_dtype_t)(int8_t)model->buf[pos + 82];
  g.workspace_bytes = load_u64(&r, pos + 88);
  return g;
}

kiln_desc_cuda_conv_t kiln_desc_cuda_conv(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  uint64_t pos = model->convs_at + CUDA_CONV_SIZE * (uint64_t)index;
  kiln_desc_cuda_conv_t cv;
  int64_t *fields[] = {
      &cv.n, &cv.c, &cv.h, &cv.w, &cv.x_stride[0], &cv.x_stride[1], &cv.x_stride[2], &cv.x_stride[3], &cv.k,
      &cv.r, &cv.s, &cv.p, &cv.q, &cv.y_stride[0], &cv.y_stride[1], &cv.y_stride[2], &cv.y_stride[3]};
  for (size_t f = 0; f < sizeof fields / sizeof fields[0]; ++f) {
    uint64_t bits = load_u64(&r, pos + 8 * f);
    memcpy(fields[f], &bits, sizeof bits);
  }
  int32_t *ints[] = {&cv.stride_h, &cv.stride_w, &cv.dilation_h, &cv.dilation_w, &cv.groups};
  for (size_t f = 0; f < sizeof ints / sizeof ints[0]; ++f) {
    uint32_t bits = load_u32(&r, pos + 136 + 4 * f);
    memcpy(ints[f], &bits, sizeof bits);
  }
  cv.dtype = (kiln_dtype_t)(int8_t)model->buf[pos + 156];
  cv.tf32 = model->buf[pos + 157];
  cv.epilogue = model->buf[pos + 158];
  cv.workspace_bytes = load_u64(&r, pos + 160);
  cv.pad_h = cv.pad_w = 0;
  if (model->conv_pads_at != 0) {
    uint64_t at = model->conv_pads_at + CUDA_CONV_PAD_SIZE * (uint64_t)index;
    uint32_t h = load_u32(&r, at), w = load_u32(&r, at + 4);
    memcpy(&cv.pad_h, &h, sizeof h);
    memcpy(&cv.pad_w, &w, sizeof w);
  }
  return cv;
}

kiln_desc_cuda_arg_t kiln_desc_cuda_arg(const kiln_desc_model_t *model, size_t index) {
  reader_t r = {model->buf, model->size, NULL, 0, 0, 0};
  uint64_t pos = model->args_at + CUDA_ARG_SIZE * (uint64_t)index;
  kiln_desc_cuda_arg_t a = {model->buf[pos], load_u32(&r, pos + 4), load_u64(&r, pos + 8)};
  return a;
}

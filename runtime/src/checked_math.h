/* checked_math.h - sizes from untrusted numbers, without wrapping.
 *
 * The one copy of the overflow rules for numbers read from files: the
 * runtime's descriptor reader and handle layout, and kiln-run's .npy and
 * .pb readers (KilnTensorFile) compute every product or sum of such
 * numbers through these. Each returns 1 and writes *out when the exact
 * result is at most `limit`, else returns 0 and leaves *out alone; nothing
 * wraps, whatever the inputs. Header-only, C99 and C++. Internal. */
#ifndef KILN_RUNTIME_CHECKED_MATH_H
#define KILN_RUNTIME_CHECKED_MATH_H

#include <stddef.h>
#include <stdint.h>

static inline int kiln_checked_add(uint64_t a, uint64_t b, uint64_t limit, uint64_t *out) {
  if (a > limit || b > limit - a)
    return 0;
  *out = a + b;
  return 1;
}

static inline int kiln_checked_mul(uint64_t a, uint64_t b, uint64_t limit, uint64_t *out) {
  if (a != 0 && b > limit / a)
    return 0;
  if (a * b > limit) /* a == 0 or the quotient test held: exact */
    return 0;
  *out = a * b;
  return 1;
}

/* The element count of a shape: refuses negative dims; a zero dim makes the
 * count 0 whatever the others are (as numpy and ONNX define it). */
static inline int kiln_checked_dims_product(const int64_t *dims, size_t rank, uint64_t limit, uint64_t *out) {
  int has_zero = 0;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return 0;
    has_zero |= dims[i] == 0;
  }
  if (has_zero) {
    *out = 0;
    return 1;
  }
  uint64_t count = 1;
  for (size_t i = 0; i < rank; ++i)
    if (!kiln_checked_mul(count, (uint64_t)dims[i], limit, &count))
      return 0;
  if (count > limit)
    return 0;
  *out = count;
  return 1;
}

/* size_t sums, for layouts in memory. */
static inline int kiln_checked_add_size(size_t a, size_t b, size_t *out) {
  uint64_t sum;
  if (!kiln_checked_add(a, b, SIZE_MAX, &sum))
    return 0;
  *out = (size_t)sum;
  return 1;
}

#endif /* KILN_RUNTIME_CHECKED_MATH_H */

/*
 * ImageHash.h - a name for a cubin that needs no length: FNV-1a (64 bits)
 * over the ELF image up to the end of its section and program header tables.
 * The GPU pack names each artifact's host-built kernels by the hash of its
 * cubin, and the fake driver's emulation (test/unit/runtime/FakeCudaDriver.c)
 * finds them by the image the runtime loads. C and C++.
 */
#ifndef KILN_TOOLS_COMMON_IMAGEHASH_H
#define KILN_TOOLS_COMMON_IMAGEHASH_H

#include <stdint.h>
#include <string.h>

static inline uint64_t kiln_image_read_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/* The bytes of a 64-bit little-endian ELF image the hash covers; 0 for
 * anything else. */
static inline uint64_t kiln_image_length(const void *image) {
  const unsigned char *b = (const unsigned char *)image;
  if (memcmp(b,
             "\x7f"
             "ELF",
             4) != 0 ||
      b[4] != 2 || b[5] != 1)
    return 0;
  uint64_t phoff = kiln_image_read_le(b + 0x20, 8), shoff = kiln_image_read_le(b + 0x28, 8);
  uint64_t phsize = kiln_image_read_le(b + 0x36, 2) * kiln_image_read_le(b + 0x38, 2);
  uint64_t shsize = kiln_image_read_le(b + 0x3A, 2) * kiln_image_read_le(b + 0x3C, 2);
  uint64_t end = 64;
  if (phoff + phsize > end)
    end = phoff + phsize;
  if (shoff + shsize > end)
    end = shoff + shsize;
  return end;
}

static inline uint64_t kiln_image_hash(const void *image) {
  const unsigned char *b = (const unsigned char *)image;
  uint64_t n = kiln_image_length(image), h = 1469598103934665603ull;
  for (uint64_t i = 0; i < n; ++i)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

#endif /* KILN_TOOLS_COMMON_IMAGEHASH_H */

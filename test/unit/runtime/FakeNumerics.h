/*
 * FakeNumerics.h - what the fake cuBLASLt and cuDNN compute with when the
 * fake driver emulates (KILN_FAKE_CUDA_KERNELS): f32, f16 and bf16 elements
 * read as double and written back rounded to nearest even.
 */
#ifndef KILN_TEST_FAKENUMERICS_H
#define KILN_TEST_FAKENUMERICS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

enum fake_elem { FAKE_F32, FAKE_F16, FAKE_BF16 };

static inline float fake_f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  float f;
  if (exp == 31) {
    uint32_t bits = sign | 0x7f800000u | (man << 13);
    memcpy(&f, &bits, 4);
    return f;
  }
  f = exp == 0 ? ldexpf((float)man, -24) : ldexpf((float)(man | 1024), (int)exp - 25);
  return sign ? -f : f;
}

static inline uint16_t fake_float_to_f16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  if (isnan(f))
    return sign | 0x7e00;
  float a = fabsf(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < ldexpf(1.0f, -14)) { /* subnormal: units of 2^-24, ties to even */
    float units = nearbyintf(a * 16777216.0f);
    return sign | (uint16_t)units;
  }
  int e;
  float m = frexpf(a, &e);                 /* a = m * 2^e, m in [0.5, 1) */
  float units = nearbyintf(ldexpf(m, 11)); /* 11 significant bits */
  if (units >= 2048.0f) {
    units /= 2;
    ++e;
  }
  return sign | (uint16_t)((uint16_t)(e + 14) << 10) | (uint16_t)((uint32_t)units & 1023);
}

static inline float fake_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t fake_float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if (isnan(f))
    return (uint16_t)((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return (uint16_t)(bits >> 16);
}

static inline double fake_load(enum fake_elem t, const void *base, int64_t i) {
  if (t == FAKE_F32)
    return ((const float *)base)[i];
  uint16_t h = ((const uint16_t *)base)[i];
  return t == FAKE_F16 ? fake_f16_to_float(h) : fake_bf16_to_float(h);
}

static inline void fake_store(enum fake_elem t, void *base, int64_t i, double v) {
  if (t == FAKE_F32)
    ((float *)base)[i] = (float)v;
  else if (t == FAKE_F16)
    ((uint16_t *)base)[i] = fake_float_to_f16((float)v);
  else
    ((uint16_t *)base)[i] = fake_float_to_bf16((float)v);
}

#endif /* KILN_TEST_FAKENUMERICS_H */

//===- EmulatedLibraries.cpp - cuBLASLt and cuDNN on the host -------------===//

#include "EmulatedLibraries.h"

#include <cmath>
#include <cstdint>
#include <cstring>

using namespace kiln;

namespace {
float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
// IEEE binary16 by hand: _Float16 is not available on x86-64 before clang 15
// (the compiler of make sanitize) and GCC 12 without SSE2 math.
/// An f16 as f32 (exact).
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) // inf, nan (payload kept)
    return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) { // zero, subnormal: mantissa * 2^-24
    float f = std::ldexp(float(mantissa), -24);
    return sign ? -f : f;
  }
  return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}
/// An f32 rounded to the nearest f16, ties to even (as the hardware does).
uint16_t floatToHalf(float f) {
  uint32_t u = floatToBits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // nan: quiet, the payload's top bits kept
    return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // 65520 and above (inf included) round to inf
    return uint16_t(sign | 0x7c00u);
  if (a < 0x38800000u) // below 2^-14: a multiple of 2^-24, or 2^-14 itself
    return uint16_t(sign | uint32_t(std::nearbyint(bitsToFloat(a) * 16777216.0f)));
  uint32_t r = a - 0x38000000u; // the exponent rebiased from 127 to 15
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}
/// Element i of a matrix of kiln_dtype_t `dtype` as float.
float load(const char *base, int64_t i, uint8_t dtype) {
  if (dtype == 1) {
    float f;
    std::memcpy(&f, base + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, base + 2 * i, 2);
  if (dtype == 3)
    return bitsToFloat(uint32_t(h) << 16);
  return halfToFloat(h);
}
void store(char *base, int64_t i, uint8_t dtype, float v) {
  if (dtype == 1) {
    std::memcpy(base + 4 * i, &v, 4);
    return;
  }
  uint16_t h;
  if (dtype == 3) {
    uint32_t u = floatToBits(v);
    h = std::isnan(v) ? uint16_t((u >> 16) | 0x40) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  } else {
    h = floatToHalf(v);
  }
  std::memcpy(base + 2 * i, &h, 2);
}
/// f32 rounded to TF32 (1 sign, 8 exponent, 10 mantissa bits), to nearest.
float toTf32(float f) {
  if (!std::isfinite(f))
    return f;
  uint32_t u = floatToBits(f);
  u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  return bitsToFloat(u);
}
} // namespace

void kiln::runGemmOnHost(const CudaGemm &g, char *const *args) {
  const char *a = args[0], *b = args[1];
  char *d = args[2];
  const char *bias = (g.epilogue & CudaGemm::Bias) ? args[4] : nullptr;
  auto in = [&](const char *base, int64_t i) {
    float v = load(base, i, g.dtype);
    return g.tf32 ? toTf32(v) : v;
  };
  for (int64_t batch = 0; batch < g.batch; ++batch)
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        float acc = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          // op(A)(i, l) and op(B)(l, j), column-major with leading dims.
          int64_t ia = batch * g.strideA + (g.transA ? l + i * g.lda : i + l * g.lda);
          int64_t ib = batch * g.strideB + (g.transB ? j + l * g.ldb : l + j * g.ldb);
          acc += in(a, ia) * in(b, ib);
        }
        int64_t id = batch * g.strideD + i + j * g.ldd;
        if (g.accumulate)
          acc += load(d, id, g.dDtype);
        if (bias)
          acc += load(bias, i, g.dDtype);
        if (g.epilogue & CudaGemm::Relu)
          acc = acc > 0 ? acc : 0;
        store(d, id, g.dDtype, acc);
      }
}

void kiln::runConvOnHost(const CudaConv &c, char *const *args) {
  const char *x = args[0], *w = args[1];
  char *y = args[2];
  auto in = [&](const char *base, int64_t i) {
    float v = load(base, i, c.dtype);
    return c.tf32 ? toTf32(v) : v;
  };
  const char *bias = c.epilogue ? args[4] : nullptr;
  int64_t cg = c.c / c.groups, kg = c.k / c.groups;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t p = 0; p < c.p; ++p)
        for (int64_t q = 0; q < c.q; ++q) {
          int64_t g = k / kg;
          float acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t r = 0; r < c.r; ++r)
              for (int64_t s = 0; s < c.s; ++s) {
                int64_t ih = p * c.strideH - c.padH + r * c.dilationH, iw = q * c.strideW - c.padW + s * c.dilationW;
                // The padding reads zeros.
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w)
                  continue;
                int64_t ix = n * c.xStride[0] + (g * cg + ci) * c.xStride[1] + ih * c.xStride[2] + iw * c.xStride[3];
                // w is packed [k, c / groups, r, s].
                int64_t iwt = ((k * cg + ci) * c.r + r) * c.s + s;
                acc += in(x, ix) * in(w, iwt);
              }
          // cudnnConvolutionBiasActivationForward: + bias[k], then relu.
          int64_t iy = n * c.yStride[0] + k * c.yStride[1] + p * c.yStride[2] + q * c.yStride[3];
          if (bias)
            acc += load(bias, k, c.dtype);
          // The residual z, in y's layout.
          if (c.residual)
            acc += load(args[5], iy, c.dtype);
          if (c.epilogue & CudaGemm::Relu)
            acc = acc > 0 ? acc : 0;
          store(y, iy, c.dtype, acc);
        }
}

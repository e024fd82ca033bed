/*
 * dtype.c - element types: their names and byte sizes.
 *
 * Public (kiln_dtype_name, kiln_dtype_size in kiln/runtime.h) and used by
 * both the descriptor reader and the model API, which otherwise do not
 * call each other's code back: descriptor.c reads, runtime.c uses what it
 * read.
 */
#include "kiln/runtime.h"

#include <stddef.h>

const char *kiln_dtype_name(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return "f32";
  case KILN_DTYPE_F16:
    return "f16";
  case KILN_DTYPE_BF16:
    return "bf16";
  case KILN_DTYPE_F64:
    return "f64";
  case KILN_DTYPE_I8:
    return "i8";
  case KILN_DTYPE_I32:
    return "i32";
  case KILN_DTYPE_I64:
    return "i64";
  case KILN_DTYPE_BOOL:
    return "bool";
  case KILN_DTYPE_U8:
    return "u8";
  case KILN_DTYPE_U16:
    return "u16";
  case KILN_DTYPE_U32:
    return "u32";
  case KILN_DTYPE_U64:
    return "u64";
  case KILN_DTYPE_I16:
    return "i16";
  case KILN_DTYPE_F8E4M3FN:
    return "f8e4m3fn";
  case KILN_DTYPE_F8E4M3FNUZ:
    return "f8e4m3fnuz";
  case KILN_DTYPE_F8E5M2:
    return "f8e5m2";
  case KILN_DTYPE_F8E5M2FNUZ:
    return "f8e5m2fnuz";
  case KILN_DTYPE_U4:
    return "u4";
  case KILN_DTYPE_I4:
    return "i4";
  case KILN_DTYPE_F4E2M1:
    return "f4e2m1";
  case KILN_DTYPE_F8E8M0:
    return "f8e8m0";
  case KILN_DTYPE_U2:
    return "u2";
  case KILN_DTYPE_I2:
    return "i2";
  case KILN_DTYPE_INVALID:
    break;
  }
  return "invalid";
}

size_t kiln_dtype_size(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
  case KILN_DTYPE_I32:
  case KILN_DTYPE_U32:
    return 4;
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16:
  case KILN_DTYPE_U16:
  case KILN_DTYPE_I16:
    return 2;
  case KILN_DTYPE_F64:
  case KILN_DTYPE_I64:
  case KILN_DTYPE_U64:
    return 8;
  case KILN_DTYPE_I8:
  case KILN_DTYPE_BOOL:
  case KILN_DTYPE_U8:
  case KILN_DTYPE_F8E4M3FN:
  case KILN_DTYPE_F8E4M3FNUZ:
  case KILN_DTYPE_F8E5M2:
  case KILN_DTYPE_F8E5M2FNUZ:
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4:
  case KILN_DTYPE_F4E2M1:
  case KILN_DTYPE_F8E8M0:
  case KILN_DTYPE_U2:
  case KILN_DTYPE_I2:
    return 1;
  case KILN_DTYPE_INVALID:
    break;
  }
  return 0;
}

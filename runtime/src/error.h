/*
 * error.h - the thread-local kiln_last_error() buffer, shared by the parts of
 * the runtime that live in separate libraries (kiln_runtime_cuda).
 */
#ifndef KILN_RUNTIME_ERROR_H
#define KILN_RUNTIME_ERROR_H

#include "descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KILN_ERROR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KILN_ERROR_PRINTF(fmt, args)
#endif

/* Writes the message of a failure and returns status. */
KILN_INTERNAL KILN_ERROR_PRINTF(2, 3) kiln_status_t kiln_error_set(kiln_status_t status, const char *fmt, ...);
/* Sets the message to "" (after a success). */
KILN_INTERNAL void kiln_error_clear(void);
/* The buffer itself, for kiln_desc_read; *size receives its size. */
KILN_INTERNAL char *kiln_error_buffer(size_t *size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_ERROR_H */

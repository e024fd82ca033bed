/*
 * cublaslt_steps.h - the CUDA runtime's cuBLASLt steps (internal).
 *
 * libcublasLt is opened with dlopen when a model has gemm steps, like the
 * driver: a program linked with kiln_runtime_cuda starts, and runs models
 * without matrix products, on machines without it. Opening creates the
 * handle, and per gemm its descriptor, layouts and algorithm (cuBLASLt's
 * heuristic, for the operands' alignments); a run only sets the bias
 * pointer and calls cublasLtMatmul on the caller's stream, which a CUDA
 * Graph capture records like a launch.
 */
#ifndef KILN_RUNTIME_CUBLASLT_STEPS_H
#define KILN_RUNTIME_CUBLASLT_STEPS_H

#include "descriptor.h"

#include <cuda.h>

typedef struct kiln_cublaslt kiln_cublaslt_t;

/* Loads cuBLASLt and prepares every gemm of `desc` (which must outlive the
 * result); the model's context is current. */
KILN_INTERNAL kiln_status_t kiln_cublaslt_open(const kiln_desc_model_t *desc, kiln_cublaslt_t **out);

/* Runs gemm `index` on `stream` with the operands A, B, D, workspace and
 * bias (NULL without a bias epilogue); the model's context is current. */
KILN_INTERNAL kiln_status_t kiln_cublaslt_run(kiln_cublaslt_t *lt, size_t index, void *const operands[5],
                                              CUstream stream);

/* Frees everything; the model's context is current. NULL is ignored. */
KILN_INTERNAL void kiln_cublaslt_close(kiln_cublaslt_t *lt);

#endif /* KILN_RUNTIME_CUBLASLT_STEPS_H */

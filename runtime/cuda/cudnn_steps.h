/*
 * cudnn_steps.h - the CUDA runtime's cuDNN convolution steps (internal).
 *
 * libcudnn.so.9 is opened with dlopen when a model has conv steps. Opening
 * creates the handle and, per convolution, the tensor, filter and
 * convolution descriptors and the algorithm (the fastest cuDNN's heuristic
 * offers within the workspace); a run binds the caller's stream and calls
 * cudnnConvolutionForward, which a CUDA Graph capture records like a
 * launch.
 */
#ifndef KILN_RUNTIME_CUDNN_STEPS_H
#define KILN_RUNTIME_CUDNN_STEPS_H

#include "descriptor.h"

#include <cuda.h>

typedef struct kiln_cudnn kiln_cudnn_t;

/* Loads cuDNN and prepares every conv of `desc` (which must outlive the
 * result); the model's context is current. */
KILN_INTERNAL kiln_status_t kiln_cudnn_open(const kiln_desc_model_t *desc, kiln_cudnn_t **out);

/* Runs conv `index` on `stream` with x, w, y, the workspace, (with an
 * epilogue) the bias and (with a residual, KILN_DESC_CONV_RESIDUAL) z; the
 * model's context is current. */
KILN_INTERNAL kiln_status_t kiln_cudnn_run(kiln_cudnn_t *dnn, size_t index, void *const operands[6], CUstream stream);

/* Frees everything; the model's context is current. NULL is ignored. */
KILN_INTERNAL void kiln_cudnn_close(kiln_cudnn_t *dnn);

#endif /* KILN_RUNTIME_CUDNN_STEPS_H */

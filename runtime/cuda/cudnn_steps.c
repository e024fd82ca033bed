/*
 * cudnn_steps.c - the CUDA runtime's cuDNN convolution steps; see cudnn_steps.h.
 *
 * A conv of the descriptor is a 2-d grouped cross-correlation on NCHW x
 * (kiln_model.fbs, CudaConv) with zero padding of its own (CudaConvPad, or
 * none when x comes padded). It uses cuDNN's v8-style API, which cuDNN 9 keeps: one call per
 * step. f32 convolutions use FMA math unless the model was compiled with
 * --tf32 (cuDNN's default math would use TF32 on Ampere and newer), f16 and
 * bf16 accumulate in f32.
 */
#include "cudnn_steps.h"

#include "error.h"
#include "vendor_library.h"

#include <cudnn.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dnn_api {
  void *library;
  __typeof__(cudnnCreate) *create;
  __typeof__(cudnnDestroy) *destroy;
  __typeof__(cudnnSetStream) *set_stream;
  __typeof__(cudnnGetErrorString) *error_string;
  __typeof__(cudnnCreateTensorDescriptor) *tensor_create;
  __typeof__(cudnnSetTensor4dDescriptorEx) *tensor_set;
  __typeof__(cudnnDestroyTensorDescriptor) *tensor_destroy;
  __typeof__(cudnnCreateFilterDescriptor) *filter_create;
  __typeof__(cudnnSetFilter4dDescriptor) *filter_set;
  __typeof__(cudnnDestroyFilterDescriptor) *filter_destroy;
  __typeof__(cudnnCreateConvolutionDescriptor) *conv_create;
  __typeof__(cudnnSetConvolution2dDescriptor) *conv_set;
  __typeof__(cudnnSetConvolutionGroupCount) *conv_groups;
  __typeof__(cudnnSetConvolutionMathType) *conv_math;
  __typeof__(cudnnDestroyConvolutionDescriptor) *conv_destroy;
  __typeof__(cudnnGetConvolutionForwardAlgorithm_v7) *algorithms;
  __typeof__(cudnnConvolutionForward) *forward;
  __typeof__(cudnnCreateActivationDescriptor) *activation_create;
  __typeof__(cudnnSetActivationDescriptor) *activation_set;
  __typeof__(cudnnDestroyActivationDescriptor) *activation_destroy;
  __typeof__(cudnnConvolutionBiasActivationForward) *forward_bias_activation;
  __typeof__(cudnnAddTensor) *add_tensor;
  /* Optional: the measured ranking (KILN_CUDNN_ALGO_SEARCH=measure). */
  __typeof__(cudnnFindConvolutionForwardAlgorithm) *find;
} dnn_api_t;

typedef struct dnn_conv {
  kiln_desc_cuda_conv_t c;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnConvolutionFwdAlgo_t algo;
  /* With an epilogue: the bias [1, k, 1, 1] and relu or identity. */
  cudnnTensorDescriptor_t bias;
  cudnnActivationDescriptor_t activation;
  /* A bias alone whose precomputed implicit GEMM needs more workspace than
   * there is: a plain convolution, then cudnnAddTensor adds the bias. */
  int separate_bias;
} dnn_conv_t;

struct kiln_cudnn {
  dnn_api_t api;
  cudnnHandle_t handle;
  const kiln_desc_model_t *model;
  size_t num_convs;
  dnn_conv_t convs[];
};

static const char *status_text(const dnn_api_t *api, cudnnStatus_t st) {
  const char *s = api->error_string ? api->error_string(st) : NULL;
  return s ? s : "unknown cuDNN status";
}

static kiln_status_t load_api(dnn_api_t *api, const char *model) {
  /* Where kiln_open_library looks: the library path, the toolkit's folder
   * (where NVIDIA's tarball installs put cuDNN), NVIDIA's Python wheels
   * (nvidia-cudnn-cu13). */
  static const char *const names[] = {"libcudnn.so.9"};
  const kiln_symbol_t symbols[] = {
      {(void **)&api->create, "cudnnCreate"},
      {(void **)&api->destroy, "cudnnDestroy"},
      {(void **)&api->set_stream, "cudnnSetStream"},
      {(void **)&api->error_string, "cudnnGetErrorString"},
      {(void **)&api->tensor_create, "cudnnCreateTensorDescriptor"},
      {(void **)&api->tensor_set, "cudnnSetTensor4dDescriptorEx"},
      {(void **)&api->tensor_destroy, "cudnnDestroyTensorDescriptor"},
      {(void **)&api->filter_create, "cudnnCreateFilterDescriptor"},
      {(void **)&api->filter_set, "cudnnSetFilter4dDescriptor"},
      {(void **)&api->filter_destroy, "cudnnDestroyFilterDescriptor"},
      {(void **)&api->conv_create, "cudnnCreateConvolutionDescriptor"},
      {(void **)&api->conv_set, "cudnnSetConvolution2dDescriptor"},
      {(void **)&api->conv_groups, "cudnnSetConvolutionGroupCount"},
      {(void **)&api->conv_math, "cudnnSetConvolutionMathType"},
      {(void **)&api->conv_destroy, "cudnnDestroyConvolutionDescriptor"},
      {(void **)&api->algorithms, "cudnnGetConvolutionForwardAlgorithm_v7"},
      {(void **)&api->forward, "cudnnConvolutionForward"},
      {(void **)&api->activation_create, "cudnnCreateActivationDescriptor"},
      {(void **)&api->activation_set, "cudnnSetActivationDescriptor"},
      {(void **)&api->activation_destroy, "cudnnDestroyActivationDescriptor"},
      {(void **)&api->forward_bias_activation, "cudnnConvolutionBiasActivationForward"},
      {(void **)&api->add_tensor, "cudnnAddTensor"},
  };
  char what[160];
  snprintf(what, sizeof what, "model '%s' calls cuDNN (kilnc --no-cudnn compiles without it)", model);
  api->library =
      kiln_open_library(names, sizeof names / sizeof names[0], symbols, sizeof symbols / sizeof symbols[0], what);
  if (api->library != NULL) {
    void *find = dlsym(api->library, "cudnnFindConvolutionForwardAlgorithm");
    memcpy(&api->find, &find, sizeof find);
  }
  return api->library != NULL ? KILN_STATUS_OK : KILN_STATUS_UNAVAILABLE;
}

static cudnnDataType_t data_type(kiln_dtype_t t) {
  return t == KILN_DTYPE_F16 ? CUDNN_DATA_HALF : t == KILN_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* Creates conv index's descriptors and picks its algorithm. The reader
 * bounded every size and stride below 2^31, so they fit cuDNN's ints. */
static kiln_status_t prepare(kiln_cudnn_t *dnn, size_t index) {
  const dnn_api_t *api = &dnn->api;
  dnn_conv_t *e = &dnn->convs[index];
  const kiln_desc_cuda_conv_t *c = &e->c;
  cudnnDataType_t type = data_type(c->dtype);
  cudnnMathType_t math = c->dtype != KILN_DTYPE_F32 ? CUDNN_TENSOR_OP_MATH
                         : c->tf32                  ? CUDNN_DEFAULT_MATH
                                                    : CUDNN_FMA_MATH;
  cudnnStatus_t st = api->tensor_create(&e->x);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->tensor_set(e->x, type, (int)c->n, (int)c->c, (int)c->h, (int)c->w, (int)c->x_stride[0],
                         (int)c->x_stride[1], (int)c->x_stride[2], (int)c->x_stride[3]);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->tensor_create(&e->y);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->tensor_set(e->y, type, (int)c->n, (int)c->k, (int)c->p, (int)c->q, (int)c->y_stride[0],
                         (int)c->y_stride[1], (int)c->y_stride[2], (int)c->y_stride[3]);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->filter_create(&e->w);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->filter_set(e->w, type, CUDNN_TENSOR_NCHW, (int)c->k, (int)(c->c / c->groups), (int)c->r, (int)c->s);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->conv_create(&e->conv);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->conv_set(e->conv, c->pad_h, c->pad_w, c->stride_h, c->stride_w, c->dilation_h, c->dilation_w,
                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->conv_groups(e->conv, c->groups);
  if (st == CUDNN_STATUS_SUCCESS)
    st = api->conv_math(e->conv, math);
  /* The epilogue's bias and activation; relu propagates NaN as ONNX's
   * Relu does. */
  int relu = (c->epilogue & KILN_DESC_GEMM_RELU) != 0;
  if (st == CUDNN_STATUS_SUCCESS && c->epilogue) {
    st = api->tensor_create(&e->bias);
    if (st == CUDNN_STATUS_SUCCESS)
      st = api->tensor_set(e->bias, type, 1, (int)c->k, 1, 1, (int)c->k, 1, 1, 1);
    if (st == CUDNN_STATUS_SUCCESS)
      st = api->activation_create(&e->activation);
    if (st == CUDNN_STATUS_SUCCESS)
      st = api->activation_set(e->activation, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                               CUDNN_PROPAGATE_NAN, 0.0);
  }
  if (st != CUDNN_STATUS_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cuDNN refused conv %zu of model '%s': %s", index,
                          dnn->model->name.data, status_text(api, st));
  /* The heuristic's ranking, best first: the first that works within the
   * workspace (implicit GEMM needs none, so one always does). A bias
   * without relu (identity activation) runs only with precomputed implicit
   * GEMM; where that needs more workspace than there is (large batches),
   * the bias becomes a cudnnAddTensor after a plain convolution. */
  int identity = c->epilogue && !relu;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  /* The heuristic's ranking by default (the same choice on every open);
   * with KILN_CUDNN_ALGO_SEARCH=measure, cuDNN times every algorithm at
   * open (on buffers of its own) and ranks them by that. */
  const char *search = getenv("KILN_CUDNN_ALGO_SEARCH");
  if (search != NULL && strcmp(search, "measure") == 0 && api->find != NULL)
    st = api->find(dnn->handle, e->x, e->w, e->conv, e->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
  else
    st = api->algorithms(dnn->handle, e->x, e->w, e->conv, e->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
  for (int pass = 0; pass < (identity ? 2 : 1); ++pass)
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < found; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= c->workspace_bytes &&
          (!identity || pass == 1 || perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)) {
        e->algo = perf[i].algo;
        e->separate_bias = pass == 1;
        return KILN_STATUS_OK;
      }
  return kiln_error_set(KILN_STATUS_UNAVAILABLE,
                        "cuda: cuDNN has no algorithm for conv %zu of model '%s' within %llu bytes of workspace: %s",
                        index, dnn->model->name.data, (unsigned long long)c->workspace_bytes,
                        st != CUDNN_STATUS_SUCCESS ? status_text(api, st) : "none found");
}

kiln_status_t kiln_cudnn_open(const kiln_desc_model_t *desc, kiln_cudnn_t **out) {
  *out = NULL;
  kiln_cudnn_t *dnn = calloc(1, sizeof *dnn + desc->num_convs * sizeof(dnn_conv_t));
  if (dnn == NULL)
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the cuDNN state");
  dnn->model = desc;
  dnn->num_convs = desc->num_convs;
  kiln_status_t st = load_api(&dnn->api, desc->name.data);
  if (st != KILN_STATUS_OK) {
    free(dnn);
    return st;
  }
  cudnnStatus_t cst = dnn->api.create(&dnn->handle);
  if (cst != CUDNN_STATUS_SUCCESS) {
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cudnnCreate failed: %s", status_text(&dnn->api, cst));
    dnn->handle = NULL;
    kiln_cudnn_close(dnn);
    return st;
  }
  for (size_t c = 0; c < desc->num_convs; ++c)
    dnn->convs[c].c = kiln_desc_cuda_conv(desc, c);
  for (size_t c = 0; c < desc->num_convs && st == KILN_STATUS_OK; ++c)
    st = prepare(dnn, c);
  if (st != KILN_STATUS_OK) {
    kiln_cudnn_close(dnn);
    return st;
  }
  *out = dnn;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_cudnn_run(kiln_cudnn_t *dnn, size_t index, void *const operands[6], CUstream stream) {
  const dnn_api_t *api = &dnn->api;
  const dnn_conv_t *e = &dnn->convs[index];
  const float alpha = 1.0f, beta = 0.0f;
  cudnnStatus_t st = api->set_stream(dnn->handle, (cudaStream_t)stream);
  /* y = act(conv(x) + alpha2 * z + bias): z the residual (y's layout) with
   * alpha2 1, else z = y with alpha2 0. */
  int residual = (e->c.epilogue & KILN_DESC_CONV_RESIDUAL) != 0;
  if (st == CUDNN_STATUS_SUCCESS && e->c.epilogue && !e->separate_bias)
    st = api->forward_bias_activation(dnn->handle, &alpha, e->x, operands[0], e->w, operands[1], e->conv, e->algo,
                                      operands[3], (size_t)e->c.workspace_bytes, residual ? &alpha : &beta, e->y,
                                      residual ? operands[5] : operands[2], e->bias, operands[4], e->activation, e->y,
                                      operands[2]);
  else if (st == CUDNN_STATUS_SUCCESS)
    st = api->forward(dnn->handle, &alpha, e->x, operands[0], e->w, operands[1], e->conv, e->algo, operands[3],
                      (size_t)e->c.workspace_bytes, &beta, e->y, operands[2]);
  /* y = 1 * bias + 1 * y, the bias broadcast over n, h and w. */
  if (st == CUDNN_STATUS_SUCCESS && e->separate_bias)
    st = api->add_tensor(dnn->handle, &alpha, e->bias, operands[4], &alpha, e->y, operands[2]);
  if (st != CUDNN_STATUS_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cudnnConvolutionForward failed on conv %zu of model '%s': %s",
                          index, dnn->model->name.data, status_text(api, st));
  return KILN_STATUS_OK;
}

void kiln_cudnn_close(kiln_cudnn_t *dnn) {
  if (dnn == NULL)
    return;
  const dnn_api_t *api = &dnn->api;
  for (size_t c = 0; c < dnn->num_convs && api->library != NULL; ++c) {
    dnn_conv_t *e = &dnn->convs[c];
    if (e->x != NULL)
      api->tensor_destroy(e->x);
    if (e->y != NULL)
      api->tensor_destroy(e->y);
    if (e->w != NULL)
      api->filter_destroy(e->w);
    if (e->conv != NULL)
      api->conv_destroy(e->conv);
    if (e->bias != NULL)
      api->tensor_destroy(e->bias);
    if (e->activation != NULL)
      api->activation_destroy(e->activation);
  }
  if (dnn->handle != NULL)
    api->destroy(dnn->handle);
  if (api->library != NULL)
    dlclose(api->library);
  free(dnn);
}

/*
 * FakeCudnn.c - a stand-in for libcudnn.so.9 beside the fake driver
 * (FakeCudaDriver.c), for the CUDA runtime's unit tests without a GPU. It
 * implements the entry points runtime/cuda/cudnn_steps.c loads, on the host:
 * descriptors keep what is set on them, the algorithm query offers an
 * algorithm that needs more workspace than any model has before implicit
 * GEMM, and cudnnConvolutionForward puts one line on the handle's stream
 * through the fake driver naming everything cuDNN would compute with. When
 * the fake driver emulates (KILN_FAKE_CUDA_KERNELS), that work also computes
 * the convolution, in double, as cuDNN's documentation defines it.
 */
#include "FakeNumerics.h"

#include <cuda.h>
#include <cudnn.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kiln_fake_cuda_enqueue(const char *line, CUstream stream);
void kiln_fake_cuda_enqueue_work(const char *line, CUstream stream, void (*run)(void *), const void *ctx,
                                 size_t ctx_bytes);
void kiln_fake_cuda_say(const char *line);
int kiln_fake_cuda_emulating(void);

typedef struct fake_tensor {
  int type, dims[4], strides[4];
} fake_tensor;
typedef struct fake_conv {
  int pad_h, pad_w, u, v, dil_h, dil_w, mode, compute, groups, math;
} fake_conv;
typedef struct fake_handle {
  cudaStream_t stream;
} fake_handle;

static int live_objects;

static void *make(size_t size) {
  ++live_objects;
  return calloc(1, size);
}
static cudnnStatus_t drop(void *p) {
  free(p);
  --live_objects;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  *handle = (cudnnHandle_t)make(sizeof(fake_handle));
  kiln_fake_cuda_say("cudnn create");
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  drop(handle);
  char line[64];
  snprintf(line, sizeof line, "cudnn destroy (%d objects left)", live_objects);
  kiln_fake_cuda_say(line);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  ((fake_handle *)handle)->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}
const char *cudnnGetErrorString(cudnnStatus_t status) {
  return status == CUDNN_STATUS_SUCCESS ? "success" : "fake failure";
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *desc) {
  *desc = (cudnnTensorDescriptor_t)make(sizeof(fake_tensor));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int n, int c, int h,
                                           int w, int ns, int cs, int hs, int ws) {
  *(fake_tensor *)desc = (fake_tensor){(int)type, {n, c, h, w}, {ns, cs, hs, ws}};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) { return drop(desc); }
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *desc) {
  *desc = (cudnnFilterDescriptor_t)make(sizeof(fake_tensor));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW)
    return CUDNN_STATUS_NOT_SUPPORTED;
  *(fake_tensor *)desc = (fake_tensor){(int)type, {k, c, h, w}, {c * h * w, h * w, w, 1}};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) { return drop(desc); }
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *desc) {
  fake_conv *c = make(sizeof *c);
  c->groups = 1;
  *desc = (cudnnConvolutionDescriptor_t)c;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h, int pad_w, int u, int v,
                                              int dil_h, int dil_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  fake_conv *c = (fake_conv *)desc;
  c->pad_h = pad_h, c->pad_w = pad_w, c->u = u, c->v = v, c->dil_h = dil_h, c->dil_w = dil_w;
  c->mode = (int)mode, c->compute = (int)compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  ((fake_conv *)desc)->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  ((fake_conv *)desc)->math = (int)math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) { return drop(desc); }

typedef struct fake_activation {
  int mode, nan;
} fake_activation;
cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *desc) {
  *desc = (cudnnActivationDescriptor_t)make(sizeof(fake_activation));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t desc, cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t nan, double coef) {
  (void)coef;
  *(fake_activation *)desc = (fake_activation){(int)mode, (int)nan};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t desc) { return drop(desc); }

/* The workspace precomputed implicit GEMM asks for (tests raise it). */
static size_t precomp_bytes = 64;
void kiln_fake_cudnn_set_precomp_bytes(size_t bytes) { precomp_bytes = bytes; }

/* Offers FFT first, needing 1 GiB (more than any model's workspace), then
 * implicit GEMM, needing none, then precomputed implicit GEMM, needing 64
 * bytes (or what the test set). */
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t conv,
                                                     const cudnnTensorDescriptor_t y, const int requested,
                                                     int *returned, cudnnConvolutionFwdAlgoPerf_t *perf) {
  (void)handle, (void)x, (void)w, (void)conv, (void)y;
  if (requested < 3)
    return CUDNN_STATUS_BAD_PARAM;
  memset(perf, 0, 3 * sizeof *perf);
  perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_FFT;
  perf[0].memory = (size_t)1 << 30;
  perf[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  perf[2].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  /* KILN_FAKE_CUDNN_PRECOMP_BYTES overrides it for whole programs. */
  const char *env = getenv("KILN_FAKE_CUDNN_PRECOMP_BYTES");
  perf[2].memory = env ? (size_t)strtoull(env, NULL, 10) : precomp_bytes;
  *returned = 3;
  kiln_fake_cuda_say("cudnn algorithms");
  return CUDNN_STATUS_SUCCESS;
}

/* One emulated convolution: everything the call named, by value. */
typedef struct fake_conv_call {
  fake_tensor x, w, y, b, z;
  fake_conv c;
  const void *xp, *wp, *bp, *zp;
  void *yp;
  double alpha, beta;
  int bias, relu;
} fake_conv_call;

static enum fake_elem elem_of(int cudnn_type) {
  return cudnn_type == CUDNN_DATA_HALF ? FAKE_F16 : cudnn_type == CUDNN_DATA_BFLOAT16 ? FAKE_BF16 : FAKE_F32;
}

/* y[n, k, p, q] = act(alpha * sum_{c, r, s} x[n, g * C + c, p * u - pad_h +
 * r * dil_h, q * v - pad_w + s * dil_w] * w[k, c, r, s] + beta * z (+ bias[k])),
 * z = y unless cudnnConvolutionBiasActivationForward was given another,
 * g = k / (K / groups), C the filter's channels; out-of-range x is 0; mode
 * CUDNN_CONVOLUTION flips the filter. */
static void run_conv(void *ctx) {
  const fake_conv_call *cc = ctx;
  const fake_tensor *x = &cc->x, *w = &cc->w, *y = &cc->y;
  const fake_conv *c = &cc->c;
  enum fake_elem tx = elem_of(x->type), tw = elem_of(w->type), ty = elem_of(y->type), tb = elem_of(cc->b.type);
  int K = w->dims[0], C = w->dims[1], R = w->dims[2], S = w->dims[3];
  int perGroup = K / (c->groups > 0 ? c->groups : 1);
  for (int n = 0; n < y->dims[0]; ++n)
    for (int k = 0; k < y->dims[1]; ++k)
      for (int p = 0; p < y->dims[2]; ++p)
        for (int q = 0; q < y->dims[3]; ++q) {
          double sum = 0;
          int g = k / perGroup;
          for (int ci = 0; ci < C; ++ci)
            for (int r = 0; r < R; ++r)
              for (int t = 0; t < S; ++t) {
                int h = p * c->u - c->pad_h + r * c->dil_h, wi = q * c->v - c->pad_w + t * c->dil_w;
                if (h < 0 || h >= x->dims[2] || wi < 0 || wi >= x->dims[3])
                  continue;
                int fr = c->mode == CUDNN_CONVOLUTION ? R - 1 - r : r;
                int ft = c->mode == CUDNN_CONVOLUTION ? S - 1 - t : t;
                int64_t ix = (int64_t)n * x->strides[0] + (int64_t)(g * C + ci) * x->strides[1] +
                             (int64_t)h * x->strides[2] + (int64_t)wi * x->strides[3];
                int64_t iw = (((int64_t)k * C + ci) * R + fr) * S + ft;
                sum += fake_load(tx, cc->xp, ix) * fake_load(tw, cc->wp, iw);
              }
          int64_t iy = (int64_t)n * y->strides[0] + (int64_t)k * y->strides[1] + (int64_t)p * y->strides[2] +
                       (int64_t)q * y->strides[3];
          double v = cc->alpha * sum;
          if (cc->beta != 0 && cc->zp != cc->yp)
            v += cc->beta * fake_load(elem_of(cc->z.type), cc->zp,
                                      (int64_t)n * cc->z.strides[0] + (int64_t)k * cc->z.strides[1] +
                                          (int64_t)p * cc->z.strides[2] + (int64_t)q * cc->z.strides[3]);
          else if (cc->beta != 0)
            v += cc->beta * fake_load(ty, cc->yp, iy);
          if (cc->bias)
            v += fake_load(tb, cc->bp, k);
          if (cc->relu && v < 0)
            v = 0;
          fake_store(ty, cc->yp, iy, v);
        }
}

static cudnnStatus_t convolve(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xdesc,
                              const void *x, const cudnnFilterDescriptor_t wdesc, const void *w,
                              const cudnnConvolutionDescriptor_t cdesc, cudnnConvolutionFwdAlgo_t algo, void *workspace,
                              size_t workspace_bytes, const void *beta, const cudnnTensorDescriptor_t ydesc, void *y,
                              const fake_tensor *bdesc, const void *bias, int relu, const fake_tensor *zdesc,
                              const void *z) {
  const fake_tensor *xt = (const fake_tensor *)xdesc, *wt = (const fake_tensor *)wdesc,
                    *yt = (const fake_tensor *)ydesc;
  const fake_conv *c = (const fake_conv *)cdesc;
  float al, be;
  memcpy(&al, alpha, sizeof al);
  memcpy(&be, beta, sizeof be);
  char line[512];
  snprintf(line, sizeof line,
           "conv type %d x %p [%d,%d,%d,%d] strides [%d,%d,%d,%d] w %p [%d,%d,%d,%d] y %p [%d,%d,%d,%d] strides "
           "[%d,%d,%d,%d] pad %d,%d stride %d,%d dilation %d,%d mode %d compute %d groups %d math %d algo %d "
           "alpha %g beta %g workspace %p %zu",
           xt->type, x, xt->dims[0], xt->dims[1], xt->dims[2], xt->dims[3], xt->strides[0], xt->strides[1],
           xt->strides[2], xt->strides[3], w, wt->dims[0], wt->dims[1], wt->dims[2], wt->dims[3], y, yt->dims[0],
           yt->dims[1], yt->dims[2], yt->dims[3], yt->strides[0], yt->strides[1], yt->strides[2], yt->strides[3],
           c->pad_h, c->pad_w, c->u, c->v, c->dil_h, c->dil_w, c->mode, c->compute, c->groups, c->math, (int)algo, al,
           be, workspace, workspace_bytes);
  CUstream stream = (CUstream)((fake_handle *)handle)->stream;
  if (!kiln_fake_cuda_emulating()) {
    kiln_fake_cuda_enqueue(line, stream);
    return CUDNN_STATUS_SUCCESS;
  }
  fake_conv_call call = {*xt, *wt, *yt, {0}, *yt, *c, x, w, bias, y, y, al, be, bias != NULL, relu};
  if (bdesc)
    call.b = *bdesc;
  if (zdesc) {
    call.z = *zdesc;
    call.zp = z;
  }
  kiln_fake_cuda_enqueue_work(line, stream, run_conv, &call, sizeof call);
  return CUDNN_STATUS_SUCCESS;
}

/* The measured ranking (KILN_CUDNN_ALGO_SEARCH=measure): precomputed
 * implicit GEMM first, then implicit GEMM, so a test sees which was used. */
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
                                                   const cudnnFilterDescriptor_t w,
                                                   const cudnnConvolutionDescriptor_t conv,
                                                   const cudnnTensorDescriptor_t y, const int requested, int *returned,
                                                   cudnnConvolutionFwdAlgoPerf_t *perf) {
  (void)handle, (void)x, (void)w, (void)conv, (void)y;
  if (requested < 2)
    return CUDNN_STATUS_BAD_PARAM;
  memset(perf, 0, 2 * sizeof *perf);
  perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  perf[0].memory = 64;
  perf[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  *returned = 2;
  kiln_fake_cuda_say("cudnn find");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xdesc,
                                      const void *x, const cudnnFilterDescriptor_t wdesc, const void *w,
                                      const cudnnConvolutionDescriptor_t cdesc, cudnnConvolutionFwdAlgo_t algo,
                                      void *workspace, size_t workspace_bytes, const void *beta,
                                      const cudnnTensorDescriptor_t ydesc, void *y) {
  return convolve(handle, alpha, xdesc, x, wdesc, w, cdesc, algo, workspace, workspace_bytes, beta, ydesc, y, NULL,
                  NULL, 0, NULL, NULL);
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xdesc, const void *x,
    const cudnnFilterDescriptor_t wdesc, const void *w, const cudnnConvolutionDescriptor_t cdesc,
    cudnnConvolutionFwdAlgo_t algo, void *workspace, size_t workspace_bytes, const void *alpha2,
    const cudnnTensorDescriptor_t zdesc, const void *z, const cudnnTensorDescriptor_t bdesc, const void *bias,
    const cudnnActivationDescriptor_t adesc, const cudnnTensorDescriptor_t ydesc, void *y) {
  const fake_activation *a = (const fake_activation *)adesc;
  const fake_tensor *b = (const fake_tensor *)bdesc;
  if (a->mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED; /* as the real one */
  char prefix[200];
  float a2;
  memcpy(&a2, alpha2, sizeof a2);
  snprintf(prefix, sizeof prefix, "bias %p [%d,%d,%d,%d] activation %d nan %d z %s alpha2 %g ", bias, b->dims[0],
           b->dims[1], b->dims[2], b->dims[3], a->mode, a->nan, z == y ? "y" : "apart", a2);
  kiln_fake_cuda_say(prefix);
  return convolve(handle, alpha1, xdesc, x, wdesc, w, cdesc, algo, workspace, workspace_bytes, alpha2, ydesc, y, b,
                  bias, a->mode == CUDNN_ACTIVATION_RELU, (const fake_tensor *)zdesc, z);
}

/* y = alpha * b + beta * y, b broadcast where its dims are 1. */
typedef struct fake_add_call {
  fake_tensor b, y;
  const void *bp;
  void *yp;
  double alpha, beta;
} fake_add_call;

static void run_add(void *ctx) {
  const fake_add_call *a = ctx;
  enum fake_elem tb = elem_of(a->b.type), ty = elem_of(a->y.type);
  for (int n = 0; n < a->y.dims[0]; ++n)
    for (int c = 0; c < a->y.dims[1]; ++c)
      for (int h = 0; h < a->y.dims[2]; ++h)
        for (int w = 0; w < a->y.dims[3]; ++w) {
          int at[4] = {n, c, h, w};
          int64_t ib = 0, iy = 0;
          for (int d = 0; d < 4; ++d) {
            ib += (int64_t)(a->b.dims[d] == 1 ? 0 : at[d]) * a->b.strides[d];
            iy += (int64_t)at[d] * a->y.strides[d];
          }
          fake_store(ty, a->yp, iy, a->alpha * fake_load(tb, a->bp, ib) + a->beta * fake_load(ty, a->yp, iy));
        }
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t bdesc,
                             const void *b, const void *beta, const cudnnTensorDescriptor_t ydesc, void *y) {
  const fake_tensor *bt = (const fake_tensor *)bdesc, *yt = (const fake_tensor *)ydesc;
  float al, be;
  memcpy(&al, alpha, sizeof al);
  memcpy(&be, beta, sizeof be);
  char line[256];
  snprintf(line, sizeof line, "add tensor b %p [%d,%d,%d,%d] y %p [%d,%d,%d,%d] alpha %g beta %g", b, bt->dims[0],
           bt->dims[1], bt->dims[2], bt->dims[3], y, yt->dims[0], yt->dims[1], yt->dims[2], yt->dims[3], al, be);
  CUstream stream = (CUstream)((fake_handle *)handle)->stream;
  if (!kiln_fake_cuda_emulating()) {
    kiln_fake_cuda_enqueue(line, stream);
    return CUDNN_STATUS_SUCCESS;
  }
  fake_add_call call = {*bt, *yt, b, y, al, be};
  kiln_fake_cuda_enqueue_work(line, stream, run_add, &call, sizeof call);
  return CUDNN_STATUS_SUCCESS;
}

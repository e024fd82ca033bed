/*
 * FakeCublasLt.c - a stand-in for libcublasLt.so.13 beside the fake driver
 * (FakeCudaDriver.c), for the CUDA runtime's unit tests without a GPU. It
 * implements the entry points runtime/cuda/cublaslt_steps.c loads, on the host:
 * descriptors and layouts keep the attributes set on them, the heuristic
 * logs the alignments and workspace it was asked for and always finds an
 * algorithm, and cublasLtMatmul puts one line on the stream through the
 * fake driver (logged as launched, or recorded by a capture) naming
 * everything cuBLASLt would compute with. When the fake driver emulates
 * (KILN_FAKE_CUDA_KERNELS), that work also computes the product, in double,
 * as cuBLASLt's documentation defines it.
 */
#include "FakeNumerics.h"

#include <cublasLt.h>
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From the fake driver, which this library links. */
void kiln_fake_cuda_enqueue(const char *line, CUstream stream);
void kiln_fake_cuda_enqueue_work(const char *line, CUstream stream, void (*run)(void *), const void *ctx,
                                 size_t ctx_bytes);
void kiln_fake_cuda_say(const char *line);
int kiln_fake_cuda_emulating(void);

typedef struct fake_desc {
  int compute, scale;
  int trans_a, trans_b, epilogue;
  int bias_type;
  const void *bias;
} fake_desc;

typedef struct fake_layout {
  int type;
  uint64_t rows, cols;
  int64_t ld, stride;
  int32_t batch;
} fake_layout;

typedef struct fake_pref {
  uint64_t workspace;
  uint32_t align[4];
} fake_pref;

static int live_objects; /* created and not yet destroyed */

static void *make(size_t size) {
  ++live_objects;
  return calloc(1, size);
}
static cublasStatus_t drop(void *p) {
  free(p);
  --live_objects;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = (cublasLtHandle_t)make(1);
  kiln_fake_cuda_say("cublasLt create");
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  drop(handle);
  char line[64];
  snprintf(line, sizeof line, "cublasLt destroy (%d objects left)", live_objects);
  kiln_fake_cuda_say(line);
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasLtGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "success" : "fake failure";
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute, cudaDataType_t scale) {
  fake_desc *d = make(sizeof *d);
  d->bias_type = -1; /* unset: D's type */
  d->compute = (int)compute;
  d->scale = (int)scale;
  *desc = (cublasLtMatmulDesc_t)d;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return drop(desc); }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size) {
  fake_desc *d = (fake_desc *)desc;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
  case CUBLASLT_MATMUL_DESC_TRANSB:
  case CUBLASLT_MATMUL_DESC_EPILOGUE: {
    int32_t v;
    if (size != sizeof v)
      return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&v, buf, sizeof v);
    *(attr == CUBLASLT_MATMUL_DESC_TRANSA   ? &d->trans_a
      : attr == CUBLASLT_MATMUL_DESC_TRANSB ? &d->trans_b
                                            : &d->epilogue) = v;
    return CUBLAS_STATUS_SUCCESS;
  }
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    if (size != sizeof(int32_t))
      return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&d->bias_type, buf, sizeof(int32_t));
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    if (size != sizeof d->bias)
      return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&d->bias, buf, sizeof d->bias);
    return CUBLAS_STATUS_SUCCESS;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  fake_layout *l = make(sizeof *l);
  *l = (fake_layout){(int)type, rows, cols, ld, 0, 1};
  *layout = (cublasLtMatrixLayout_t)l;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) { return drop(layout); }
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
  fake_layout *l = (fake_layout *)layout;
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && size == sizeof l->batch)
    memcpy(&l->batch, buf, size);
  else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && size == sizeof l->stride)
    memcpy(&l->stride, buf, size);
  else
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  *pref = (cublasLtMatmulPreference_t)make(sizeof(fake_pref));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) { return drop(pref); }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t size) {
  fake_pref *p = (fake_pref *)pref;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof p->workspace)
    memcpy(&p->workspace, buf, size);
  else if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES &&
           size == sizeof(uint32_t))
    memcpy(&p->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, size);
  else
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

/* The algorithm found is numbered by the heuristic call that found it. */
static int heuristic_calls;

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int *found) {
  (void)handle, (void)desc, (void)a, (void)b, (void)c, (void)d;
  const fake_pref *p = (const fake_pref *)pref;
  char line[128];
  snprintf(line, sizeof line, "heuristic align %u,%u,%u,%u workspace %llu", p->align[0], p->align[1], p->align[2],
           p->align[3], (unsigned long long)p->workspace);
  kiln_fake_cuda_say(line);
  if (requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  memset(&results[0], 0, sizeof results[0]);
  results[0].algo.data[0] = (uint64_t)++heuristic_calls;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

/* One emulated product: everything the call named, by value. */
typedef struct fake_gemm {
  fake_desc desc;
  fake_layout a, b, d;
  float alpha, beta;
  const void *A, *B;
  void *D;
} fake_gemm;

static enum fake_elem elem_of(int cuda_type) {
  return cuda_type == CUDA_R_16F ? FAKE_F16 : cuda_type == CUDA_R_16BF ? FAKE_BF16 : FAKE_F32;
}

/* D[i, j] (column-major, per batch) = epilogue(alpha * sum_p op(A)[i, p] *
 * op(B)[p, j] + beta * D[i, j] (+ bias[i])), relu last. */
static void run_gemm(void *ctx) {
  const fake_gemm *g = ctx;
  const fake_desc *d = &g->desc;
  uint64_t m = g->d.rows, n = g->d.cols, k = d->trans_a ? g->a.rows : g->a.cols;
  enum fake_elem ta = elem_of(g->a.type), tb = elem_of(g->b.type), td = elem_of(g->d.type);
  enum fake_elem tbias = elem_of(d->bias_type < 0 ? g->d.type : d->bias_type);
  int bias = d->epilogue == CUBLASLT_EPILOGUE_BIAS || d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  int relu = d->epilogue == CUBLASLT_EPILOGUE_RELU || d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  for (int32_t batch = 0; batch < g->d.batch; ++batch) {
    const char *A = (const char *)g->A, *B = (const char *)g->B;
    int64_t offA = batch * g->a.stride, offB = batch * g->b.stride, offD = batch * g->d.stride;
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (uint64_t p = 0; p < k; ++p) {
          int64_t ia = d->trans_a ? (int64_t)(p + i * g->a.ld) : (int64_t)(i + p * g->a.ld);
          int64_t ib = d->trans_b ? (int64_t)(j + p * g->b.ld) : (int64_t)(p + j * g->b.ld);
          sum += fake_load(ta, A, offA + ia) * fake_load(tb, B, offB + ib);
        }
        int64_t id = offD + (int64_t)(i + j * g->d.ld);
        double v = g->alpha * sum;
        if (g->beta != 0)
          v += g->beta * fake_load(td, g->D, id);
        if (bias)
          v += fake_load(tbias, d->bias, (int64_t)i);
        if (relu && v < 0)
          v = 0;
        fake_store(td, g->D, id, v);
      }
  }
}

static const char *type_name(int t) {
  return t == CUDA_R_32F ? "f32" : t == CUDA_R_16F ? "f16" : t == CUDA_R_16BF ? "bf16" : "?";
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t adesc, const void *B, cublasLtMatrixLayout_t bdesc,
                              const void *beta, const void *C, cublasLtMatrixLayout_t cdesc, void *D,
                              cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  (void)handle;
  const fake_desc *d = (const fake_desc *)desc;
  const fake_layout *a = (const fake_layout *)adesc, *b = (const fake_layout *)bdesc, *c = (const fake_layout *)cdesc,
                    *dl = (const fake_layout *)ddesc;
  float al, be;
  memcpy(&al, alpha, sizeof al);
  memcpy(&be, beta, sizeof be);
  if (C != D || c != dl)
    return CUBLAS_STATUS_NOT_SUPPORTED; /* the runtime always accumulates into D */
  uint64_t k = d->trans_a ? a->rows : a->cols;
  char line[512];
  snprintf(line, sizeof line,
           "gemm %s->%s%s %llux%llux%llu batch %d A %p%s ld %lld stride %lld B %p%s ld %lld stride %lld D %p ld %lld "
           "stride %lld alpha %g beta %g epilogue %d bias %p workspace %p %zu algo %llu",
           type_name(a->type), type_name(dl->type), d->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? " tf32" : "",
           (unsigned long long)dl->rows, (unsigned long long)dl->cols, (unsigned long long)k, (int)dl->batch, A,
           d->trans_a ? "^T" : "", (long long)a->ld, (long long)a->stride, B, d->trans_b ? "^T" : "", (long long)b->ld,
           (long long)b->stride, D, (long long)dl->ld, (long long)dl->stride, al, be, d->epilogue, d->bias, workspace,
           workspace_bytes, (unsigned long long)algo->data[0]);
  if (!kiln_fake_cuda_emulating()) {
    kiln_fake_cuda_enqueue(line, (CUstream)stream);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (a->batch != dl->batch || b->batch != dl->batch)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  fake_gemm g = {*d, *a, *b, *dl, al, be, A, B, D};
  kiln_fake_cuda_enqueue_work(line, (CUstream)stream, run_gemm, &g, sizeof g);
  return CUBLAS_STATUS_SUCCESS;
}

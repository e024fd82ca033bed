/*
 * cublaslt_steps.c - the CUDA runtime's cuBLASLt steps; see cublaslt_steps.h.
 *
 * A gemm of the descriptor is already in cuBLASLt's column-major terms
 * (kiln_model.fbs, CudaGemm): D = epilogue(op(A) op(B) (+ D) (+ bias)),
 * alpha 1, beta 0 or 1, C = D. cuBLASLt picks its algorithm for the
 * alignment of the operands' addresses, so opening assumes what the
 * descriptor guarantees (arena and constants offsets from 256-byte aligned
 * bases; 16 bytes for the caller's buffers, which cudaMalloc aligns to 256)
 * and a run whose pointers are less aligned asks the heuristic again for
 * that run.
 */
#include "cublaslt_steps.h"

#include "error.h"
#include "vendor_library.h"

#include <cublasLt.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry points used, with the types cublasLt.h declares. */
typedef struct lt_api {
  void *library;
  __typeof__(cublasLtCreate) *create;
  __typeof__(cublasLtDestroy) *destroy;
  __typeof__(cublasLtGetStatusString) *status_string;
  __typeof__(cublasLtMatmulDescCreate) *desc_create;
  __typeof__(cublasLtMatmulDescDestroy) *desc_destroy;
  __typeof__(cublasLtMatmulDescSetAttribute) *desc_set;
  __typeof__(cublasLtMatrixLayoutCreate) *layout_create;
  __typeof__(cublasLtMatrixLayoutDestroy) *layout_destroy;
  __typeof__(cublasLtMatrixLayoutSetAttribute) *layout_set;
  __typeof__(cublasLtMatmulPreferenceCreate) *pref_create;
  __typeof__(cublasLtMatmulPreferenceDestroy) *pref_destroy;
  __typeof__(cublasLtMatmulPreferenceSetAttribute) *pref_set;
  __typeof__(cublasLtMatmulAlgoGetHeuristic) *heuristic;
  __typeof__(cublasLtMatmul) *matmul;
} lt_api_t;

/* Operands whose alignment the algorithm depends on: A, B, C (= D), D. */
enum { OP_A, OP_B, OP_C, OP_D, NUM_ALIGNED };

typedef struct lt_gemm {
  kiln_desc_cuda_gemm_t g;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
  uint32_t align[NUM_ALIGNED]; /* bytes the algorithm assumes */
} lt_gemm_t;

struct kiln_cublaslt {
  lt_api_t api;
  cublasLtHandle_t handle;
  const kiln_desc_model_t *model;
  size_t num_gemms;
  lt_gemm_t gemms[];
};

static const char *status_text(const lt_api_t *api, cublasStatus_t st) {
  const char *s = api->status_string ? api->status_string(st) : NULL;
  return s ? s : "unknown cuBLASLt status";
}

static kiln_status_t load_api(lt_api_t *api, const char *model) {
  /* Where kiln_open_library looks: the library path, the toolkit's folder,
   * NVIDIA's Python wheels. */
  static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12"};
  const kiln_symbol_t symbols[] = {
      {(void **)&api->create, "cublasLtCreate"},
      {(void **)&api->destroy, "cublasLtDestroy"},
      {(void **)&api->status_string, "cublasLtGetStatusString"},
      {(void **)&api->desc_create, "cublasLtMatmulDescCreate"},
      {(void **)&api->desc_destroy, "cublasLtMatmulDescDestroy"},
      {(void **)&api->desc_set, "cublasLtMatmulDescSetAttribute"},
      {(void **)&api->layout_create, "cublasLtMatrixLayoutCreate"},
      {(void **)&api->layout_destroy, "cublasLtMatrixLayoutDestroy"},
      {(void **)&api->layout_set, "cublasLtMatrixLayoutSetAttribute"},
      {(void **)&api->pref_create, "cublasLtMatmulPreferenceCreate"},
      {(void **)&api->pref_destroy, "cublasLtMatmulPreferenceDestroy"},
      {(void **)&api->pref_set, "cublasLtMatmulPreferenceSetAttribute"},
      {(void **)&api->heuristic, "cublasLtMatmulAlgoGetHeuristic"},
      {(void **)&api->matmul, "cublasLtMatmul"},
  };
  char what[160];
  snprintf(what, sizeof what, "model '%s' calls cuBLASLt (kilnc --no-cublaslt compiles without it)", model);
  api->library =
      kiln_open_library(names, sizeof names / sizeof names[0], symbols, sizeof symbols / sizeof symbols[0], what);
  return api->library != NULL ? KILN_STATUS_OK : KILN_STATUS_UNAVAILABLE;
}

/* The largest power of two up to 256 that divides x (256 for 0). */
static uint32_t alignment_of(uint64_t x) {
  uint32_t a = 1;
  while (a < 256 && x % (2u * a) == 0)
    a *= 2;
  return a;
}

static cudaDataType_t data_type(kiln_dtype_t t) {
  return t == KILN_DTYPE_F16 ? CUDA_R_16F : t == KILN_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Picks the algorithm of gemm `e` for operands aligned to align[]. */
static kiln_status_t pick_algo(const kiln_cublaslt_t *lt, const lt_gemm_t *e, size_t index,
                               const uint32_t align[NUM_ALIGNED], cublasLtMatmulAlgo_t *algo) {
  const lt_api_t *api = &lt->api;
  cublasLtMatmulPreference_t pref = NULL;
  uint64_t workspace = e->g.workspace_bytes;
  static const cublasLtMatmulPreferenceAttributes_t which[NUM_ALIGNED] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasStatus_t st = api->pref_create(&pref);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  for (int k = 0; k < NUM_ALIGNED && st == CUBLAS_STATUS_SUCCESS; ++k)
    st = api->pref_set(pref, which[k], &align[k], sizeof align[k]);
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api->heuristic(lt->handle, e->desc, e->a, e->b, e->d, e->d, pref, 1, &result, &found);
  if (pref != NULL)
    api->pref_destroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found < 1)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE,
                          "cuda: cuBLASLt has no algorithm for gemm %zu of model '%s' (m %lld, n %lld, k %lld, "
                          "batch %u): %s",
                          index, lt->model->name.data, (long long)e->g.m, (long long)e->g.n, (long long)e->g.k,
                          (unsigned)e->g.batch, st != CUBLAS_STATUS_SUCCESS ? status_text(api, st) : "none found");
  *algo = result.algo;
  return KILN_STATUS_OK;
}

/* A column-major rows x cols layout with leading dimension ld, batched. */
static cublasStatus_t make_layout(const lt_api_t *api, cublasLtMatrixLayout_t *out, const kiln_desc_cuda_gemm_t *g,
                                  kiln_dtype_t type, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  cublasStatus_t st = api->layout_create(out, data_type(type), (uint64_t)rows, (uint64_t)cols, ld);
  if (st != CUBLAS_STATUS_SUCCESS || g->batch == 1)
    return st;
  int32_t count = (int32_t)g->batch;
  st = api->layout_set(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api->layout_set(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  return st;
}

/* Creates gemm index's descriptor and layouts and picks its algorithm. */
static kiln_status_t prepare(kiln_cublaslt_t *lt, size_t index) {
  const lt_api_t *api = &lt->api;
  lt_gemm_t *e = &lt->gemms[index];
  const kiln_desc_cuda_gemm_t *g = &e->g;
  cublasComputeType_t compute = g->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasOperation_t ta = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = g->epilogue == 1   ? CUBLASLT_EPILOGUE_BIAS
                                : g->epilogue == 2 ? CUBLASLT_EPILOGUE_RELU
                                : g->epilogue == 3 ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                   : CUBLASLT_EPILOGUE_DEFAULT;
  cublasStatus_t st = api->desc_create(&e->desc, compute, CUDA_R_32F);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api->desc_set(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api->desc_set(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api->desc_set(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  /* Stored shapes: op(A) is m x k, so A is k x m when transposed. */
  if (st == CUBLAS_STATUS_SUCCESS)
    st = make_layout(api, &e->a, g, g->dtype, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->lda, g->stride_a);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = make_layout(api, &e->b, g, g->dtype, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->ldb, g->stride_b);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = make_layout(api, &e->d, g, g->d_dtype, g->m, g->n, g->ldd, g->stride_d);
  cudaDataType_t bias_type = data_type(g->d_dtype);
  if (st == CUBLAS_STATUS_SUCCESS && (g->epilogue & KILN_DESC_GEMM_BIAS))
    st = api->desc_set(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
  if (st != CUBLAS_STATUS_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cuBLASLt refused gemm %zu of model '%s': %s", index,
                          lt->model->name.data, status_text(api, st));
  return pick_algo(lt, e, index, e->align, &e->algo);
}

kiln_status_t kiln_cublaslt_open(const kiln_desc_model_t *desc, kiln_cublaslt_t **out) {
  *out = NULL;
  kiln_cublaslt_t *lt = calloc(1, sizeof *lt + desc->num_gemms * sizeof(lt_gemm_t));
  if (lt == NULL)
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the cuBLASLt state");
  lt->model = desc;
  lt->num_gemms = desc->num_gemms;
  kiln_status_t st = load_api(&lt->api, desc->name.data);
  if (st != KILN_STATUS_OK) {
    free(lt);
    return st;
  }
  cublasStatus_t cst = lt->api.create(&lt->handle);
  if (cst != CUBLAS_STATUS_SUCCESS) {
    st = kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cublasLtCreate failed: %s", status_text(&lt->api, cst));
    lt->handle = NULL;
    kiln_cublaslt_close(lt);
    return st;
  }
  /* What the descriptor guarantees of each operand's alignment: its offset
   * from a 256-byte aligned base (arena, constants), or from the caller's
   * buffer, assumed 16-byte aligned. */
  for (size_t g = 0; g < desc->num_gemms; ++g) {
    lt->gemms[g].g = kiln_desc_cuda_gemm(desc, g);
    for (int k = 0; k < NUM_ALIGNED; ++k)
      lt->gemms[g].align[k] = 256;
  }
  for (size_t s = 0; s < desc->num_steps; ++s) {
    kiln_desc_cuda_step_t step = kiln_desc_cuda_step(desc, s);
    /* Only gemm steps: kernels come before them, convolutions after. */
    if (step.kernel < desc->num_kernels || step.kernel >= desc->num_kernels + desc->num_gemms)
      continue;
    lt_gemm_t *e = &lt->gemms[step.kernel - desc->num_kernels];
    static const int operand_of[NUM_ALIGNED] = {0, 1, 2, 2};
    for (int k = 0; k < NUM_ALIGNED; ++k) {
      kiln_desc_cuda_arg_t a = kiln_desc_cuda_arg(desc, step.first_arg + (uint32_t)operand_of[k]);
      uint32_t base = a.space == KILN_DESC_CUDA_ARENA || a.space == KILN_DESC_CUDA_CONSTANTS ? 256 : 16;
      uint32_t align = alignment_of(a.offset) < base ? alignment_of(a.offset) : base;
      if (align < e->align[k])
        e->align[k] = align;
    }
  }
  for (size_t g = 0; g < desc->num_gemms && st == KILN_STATUS_OK; ++g)
    st = prepare(lt, g);
  if (st != KILN_STATUS_OK) {
    kiln_cublaslt_close(lt);
    return st;
  }
  *out = lt;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_cublaslt_run(kiln_cublaslt_t *lt, size_t index, void *const operands[5], CUstream stream) {
  const lt_api_t *api = &lt->api;
  lt_gemm_t *e = &lt->gemms[index];
  /* Operands less aligned than the algorithm assumes get one for this run. */
  static const int operand_of[NUM_ALIGNED] = {0, 1, 2, 2};
  uint32_t align[NUM_ALIGNED];
  int less = 0;
  for (int k = 0; k < NUM_ALIGNED; ++k) {
    align[k] = alignment_of((uint64_t)(uintptr_t)operands[operand_of[k]]);
    if (align[k] > e->align[k])
      align[k] = e->align[k];
    less |= align[k] < e->align[k];
  }
  cublasLtMatmulAlgo_t algo = e->algo;
  kiln_status_t st;
  if (less && (st = pick_algo(lt, e, index, align, &algo)) != KILN_STATUS_OK)
    return st;
  cublasStatus_t cst = CUBLAS_STATUS_SUCCESS;
  if (e->g.epilogue & KILN_DESC_GEMM_BIAS)
    cst = api->desc_set(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &operands[4], sizeof operands[4]);
  const float alpha = 1.0f, beta = e->g.accumulate ? 1.0f : 0.0f;
  if (cst == CUBLAS_STATUS_SUCCESS)
    cst = api->matmul(lt->handle, e->desc, &alpha, operands[0], e->a, operands[1], e->b, &beta, operands[2], e->d,
                      operands[2], e->d, &algo, operands[3], (size_t)e->g.workspace_bytes, (cudaStream_t)stream);
  if (cst != CUBLAS_STATUS_SUCCESS)
    return kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: cublasLtMatmul failed on gemm %zu of model '%s': %s", index,
                          lt->model->name.data, status_text(api, cst));
  return KILN_STATUS_OK;
}

void kiln_cublaslt_close(kiln_cublaslt_t *lt) {
  if (lt == NULL)
    return;
  const lt_api_t *api = &lt->api;
  for (size_t g = 0; g < lt->num_gemms && api->library != NULL; ++g) {
    lt_gemm_t *e = &lt->gemms[g];
    if (e->a != NULL)
      api->layout_destroy(e->a);
    if (e->b != NULL)
      api->layout_destroy(e->b);
    if (e->d != NULL)
      api->layout_destroy(e->d);
    if (e->desc != NULL)
      api->desc_destroy(e->desc);
  }
  if (lt->handle != NULL)
    api->destroy(lt->handle);
  if (api->library != NULL)
    dlclose(api->library);
  free(lt);
}

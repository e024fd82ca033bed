/*
 * descriptor.h - the runtime's reader of the model descriptor.
 *
 * An artifact embeds a FlatBuffers buffer (schema runtime/schema/kiln_model.fbs)
 * that the runtime must not trust: it may be truncated, corrupted or written
 * by a newer compiler. kiln_desc_read verifies the whole buffer once (every
 * offset, vtable, vector and string inside it, and the schema's own rules)
 * and kiln_desc_tensor then reads single tensors of a verified buffer. Both
 * are hand-written in C because the runtime must stay C11 and flatcc is not a
 * dependency; neither allocates. Strings and shapes returned point into the
 * caller's buffer, so the buffer must outlive what was read from it.
 */
#ifndef KILN_RUNTIME_DESCRIPTOR_H
#define KILN_RUNTIME_DESCRIPTOR_H

#include "kiln/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal symbols stay out of a shared object's dynamic symbol table when
 * the static runtime is linked into one (--shared artifacts, kiln-run). */
#if defined(__GNUC__) || defined(__clang__)
#define KILN_INTERNAL __attribute__((visibility("hidden")))
#else
#define KILN_INTERNAL
#endif

/* The only format_version this reader understands. */
#define KILN_DESC_FORMAT_VERSION 1u
/* Largest rank accepted; larger ranks are refused rather than truncated. */
#define KILN_DESC_MAX_RANK 16
/* Largest number of inputs plus outputs (plus one for a state buffer), and
 * of state tensors. kiln_model_run passes the data pointers to the compiled
 * code in an array on its stack of this size. */
#define KILN_DESC_MAX_TENSORS 256
/* Largest number of symbolic dimensions: kilnc --dim NAME=LO..HI, and the
 * sizes a run computes from data (decision 0031; SSDlite has 273). The
 * runtime keeps arrays of this size on its stack (4 KiB each). */
#define KILN_DESC_MAX_DIMS 512
/* Cubins a CUDA module may carry beside its first (kilnc --gpu-arch lists). */
#define KILN_DESC_MAX_CUBINS 8

/* A NUL-terminated string inside the descriptor buffer (or a static "").
 * size excludes the terminator; the string holds no other NUL byte. */
typedef struct kiln_desc_string {
  const char *data;
  size_t size;
} kiln_desc_string_t;

typedef struct kiln_desc_tensor {
  kiln_desc_string_t name;           /* never empty */
  kiln_dtype_t dtype;                /* a valid dtype, never KILN_DTYPE_INVALID */
  size_t rank;                       /* <= KILN_DESC_MAX_RANK */
  int64_t shape[KILN_DESC_MAX_RANK]; /* rank entries, each >= 0 */
  size_t num_elements;               /* product of shape, 1 for rank 0 */
  size_t size_bytes;                 /* num_elements * dtype size, <= PTRDIFF_MAX */
  size_t offset;                     /* state tensors: in the state buffer; 0 otherwise */
  int role;                          /* state tensors: a kiln_state_role_t; 0 otherwise */
  /* An input or output whose sizes depend on the symbols: its size
   * programs (kiln_model.fbs, Tensor.dims; checked well formed, each
   * giving `shape` at the upper bounds), dims_count codes at dims_at; 0 and
   * 0 for static sizes, whose shape is the only one. */
  size_t dims_at, dims_count;
} kiln_desc_tensor_t;

typedef struct kiln_desc_model {
  const uint8_t *buf;
  size_t size;
  uint32_t format_version;
  kiln_desc_string_t name; /* never empty */
  kiln_desc_string_t target;
  kiln_desc_string_t cpu;
  kiln_desc_string_t producer;
  size_t num_inputs;
  size_t num_outputs;      /* num_inputs + num_outputs <= KILN_DESC_MAX_TENSORS */
  size_t inputs_at;        /* offset of the inputs vector's first element */
  size_t outputs_at;       /* offset of the outputs vector's first element */
  size_t total_rank;       /* sum of the ranks of all inputs and outputs */
  size_t total_name_bytes; /* sum of all tensor name sizes, terminators excluded */
  size_t arena_bytes;
  size_t arena_alignment; /* a power of two; an absent or 0 field reads as 1 */
  size_t arena_lower_bound_bytes;
  size_t num_state;       /* <= KILN_DESC_MAX_TENSORS */
  size_t state_at;        /* offset of the state vector's first element */
  size_t state_bytes;     /* every state tensor lies inside */
  size_t state_alignment; /* a power of two; 1 when there is no state */
  /* A CPU artifact's kernels in run order (0 when absent): names never
   * empty; flops absent (flops_at 0) or one per kernel. */
  size_t num_cpu_kernels, cpu_kernels_at, cpu_flops_at;
  /* Target "cuda" only (has_cuda is 0 otherwise): the CudaModule, with every
   * step's kernel and argument range and every argument's base checked. */
  /* A data-parallel step's all-reduce buckets (0 when absent): bucket b
   * holds bucket_size(b) >= 1 tensors of dtype f32 or f64, each of at least
   * one element; num_bucket_elements entries in all, their bytes summed in
   * bucket_bytes (each bucket's <= PTRDIFF_MAX). */
  size_t num_buckets, bucket_sizes_at, bucket_dtypes_at;
  size_t num_bucket_elements, bucket_elements_at;
  /* Symbolic dimensions (0 when absent): names never empty; a range
   * 0 <= lo <= hi each; every one but the last num_computed_dims is the
   * whole size of some input axis, so the inputs' shapes decide them. The
   * computed ones (decision 0031) have lo 0 and are no input axis' size: a
   * run computes them. */
  size_t num_dims, dim_names_at, dim_ranges_at, num_computed_dims;
  /* arena_terms (0 codes when absent): per term a count then its size
   * program, each checked; at the upper bounds none exceeds arena_bytes. */
  size_t num_arena_codes, arena_terms_at;
  int has_cuda;
  kiln_desc_string_t gpu_arch;    /* "sm_<digits>" */
  size_t num_kernels, kernels_at; /* [string], names never empty */
  size_t num_steps, steps_at;     /* [CudaStep], 20 bytes each */
  size_t num_args, args_at;       /* [CudaArg], 16 bytes each */
  const uint8_t *cubin;           /* may be empty when ptx is not */
  size_t cubin_size;
  kiln_desc_string_t ptx;
  const uint8_t *constants;
  size_t constants_size;
  /* Cubins for further architectures, ascending, each above gpu_arch. */
  size_t num_more_cubins;
  kiln_desc_string_t more_arch[KILN_DESC_MAX_CUBINS];
  const uint8_t *more_cubin[KILN_DESC_MAX_CUBINS];
  size_t more_cubin_size[KILN_DESC_MAX_CUBINS];
  /* cuBLASLt calls; step kernel index num_kernels + g runs gemm g. */
  size_t num_gemms, gemms_at; /* [CudaGemm], 96 bytes each */
  /* cuDNN calls; step kernel index num_kernels + num_gemms + c runs conv c. */
  size_t num_convs, convs_at; /* [CudaConv], 168 bytes each */
  size_t conv_pads_at;        /* [CudaConvPad] of num_convs, or 0: no padding */
  /* A data-parallel step's bucket calls; step kernel index num_kernels +
   * num_gemms + num_convs + c runs collective c. */
  size_t num_collectives, collectives_at; /* [CudaCollective], 8 bytes each */
  size_t io_alignment; /* what kernels assume of inputs and outputs: 1 (absent) or a power of two <= 256 */
} kiln_desc_model_t;

/* The number of an architecture the reader accepted: 90 for "sm_90". */
int kiln_desc_gpu_arch_number(const kiln_desc_string_t *arch);

/* Spaces of a CUDA kernel argument (CudaArg.space). */
enum {
  KILN_DESC_CUDA_INPUT = 0,
  KILN_DESC_CUDA_OUTPUT = 1,
  KILN_DESC_CUDA_ARENA = 2,
  KILN_DESC_CUDA_CONSTANTS = 3,
  KILN_DESC_CUDA_STATE = 4, /* a training step's state buffer */
  KILN_DESC_CUDA_DIM = 5    /* a kernel's int64_t: the run's size of dimension `index` */
};

/* CudaGemm.epilogue: bit 0 adds the bias, bit 1 applies relu after it. */
enum { KILN_DESC_GEMM_BIAS = 1, KILN_DESC_GEMM_RELU = 2 };
/* A conv epilogue's third flag: + z, the sixth argument, laid out as y (a
 * residual), with bias and relu (epilogue 7). */
enum { KILN_DESC_CONV_RESIDUAL = 4 };

/* A cuBLASLt matrix product in column-major terms (kiln_model.fbs). */
typedef struct kiln_desc_cuda_gemm {
  int64_t m, n, k, lda, ldb, ldd, stride_a, stride_b, stride_d;
  uint32_t batch;
  kiln_dtype_t dtype;
  uint8_t trans_a, trans_b, epilogue, accumulate, tf32;
  kiln_dtype_t d_dtype; /* of D and the bias: dtype or f32 */
  uint64_t workspace_bytes;
} kiln_desc_cuda_gemm_t;

typedef struct kiln_desc_cuda_step {
  uint32_t kernel, grid, block, first_arg, num_args;
} kiln_desc_cuda_step_t;

typedef struct kiln_desc_cuda_arg {
  uint8_t space;
  uint32_t index;
  uint64_t offset;
} kiln_desc_cuda_arg_t;

/* A cuDNN convolution (kiln_model.fbs, CudaConv): NCHW x with strides, read
 * as if padded by pad_h and pad_w zeros on each side (CudaConvPad), packed
 * w [k, c / groups, r, s], y [n, k, p, q] with strides. */
typedef struct kiln_desc_cuda_conv {
  int64_t n, c, h, w, x_stride[4], k, r, s, p, q, y_stride[4];
  int32_t stride_h, stride_w, dilation_h, dilation_w, groups, pad_h, pad_w;
  kiln_dtype_t dtype;
  uint8_t tf32;
  uint8_t epilogue; /* KILN_DESC_GEMM_BIAS, optionally with KILN_DESC_GEMM_RELU, or all three flags */
  uint64_t workspace_bytes;
} kiln_desc_cuda_conv_t;

/* Verifies buf[0, size) and fills *out. On failure returns
 * KILN_STATUS_INVALID_ARTIFACT (or KILN_STATUS_VERSION_MISMATCH for a
 * format_version other than 1) and writes a message starting with
 * "descriptor: " into err (err_size bytes, may be 0); *out is then undefined.
 * On success err is left untouched. */
KILN_INTERNAL kiln_status_t kiln_desc_read(const void *buf, size_t size, kiln_desc_model_t *out, char *err,
                                           size_t err_size);

/* From ABI 4: whether the artifact's descriptor_checksum matches its
 * descriptor's bytes (KILN_STATUS_INVALID_ARTIFACT and a message in err
 * when not). Before ABI 4 the field must be zero. The caller has checked
 * the ABI version, the descriptor pointer and its size. */
KILN_INTERNAL kiln_status_t kiln_desc_check_checksum(const kiln_artifact_t *artifact, char *err, size_t err_size);

/* From ABI 5: recomputes kiln_data_checksum over the artifact's data ranges
 * and refuses a mismatch (damaged weights) with KILN_STATUS_INVALID_ARTIFACT. */
KILN_INTERNAL kiln_status_t kiln_desc_check_data(const kiln_artifact_t *artifact, char *err, size_t err_size);

/* From ABI 6, when code_checksum is nonzero: finds the loaded object whose
 * executable segment holds run_packed and recomputes kiln_data_checksum over
 * that segment; KILN_STATUS_INVALID_ARTIFACT on a mismatch (changed code) or
 * when no loaded object holds run_packed. */
KILN_INTERNAL kiln_status_t kiln_desc_check_code(const kiln_artifact_t *artifact, char *err, size_t err_size);

/* Reads input (is_output == 0) or output number index of a model that
 * kiln_desc_read accepted. Cannot fail for such a model and an index below
 * the count; returns KILN_STATUS_INVALID_ARGUMENT for an index out of range. */
KILN_INTERNAL kiln_status_t kiln_desc_tensor(const kiln_desc_model_t *model, int is_output, size_t index,
                                             kiln_desc_tensor_t *out, char *err, size_t err_size);

/* Symbolic dimension `index` < num_dims of a verified model. */
typedef struct kiln_desc_dim {
  kiln_desc_string_t name;
  int64_t lo, hi;
  int computed; /* a size the run computes (decision 0031) */
} kiln_desc_dim_t;
KILN_INTERNAL kiln_desc_dim_t kiln_desc_dim(const kiln_desc_model_t *model, size_t index);
/* The shape of `tensor` (read from `model`) at the symbols' sizes `dims`
 * (num_dims entries, each in its range): its size programs evaluated, or
 * its shape when static. 0 when a size overflows int64 or comes out
 * negative (sizes outside the ranges); 1 otherwise. */
KILN_INTERNAL int kiln_desc_tensor_shape(const kiln_desc_model_t *model, const kiln_desc_tensor_t *tensor,
                                         const int64_t *dims, int64_t *shape);
/* The arena bytes a run at `dims` (each in its range) reaches: the largest
 * arena term, or arena_bytes for a model without terms. */
KILN_INTERNAL size_t kiln_desc_arena_bytes(const kiln_desc_model_t *model, const int64_t *dims);
/* If axis `axis` of `tensor` is exactly symbol i (its program pushes
 * symbol i and nothing else), returns i; -1 otherwise. */
KILN_INTERNAL int kiln_desc_axis_dim(const kiln_desc_model_t *model, const kiln_desc_tensor_t *tensor, size_t axis);
/* Reads state tensor number index of a model that kiln_desc_read accepted,
 * like kiln_desc_tensor. */
KILN_INTERNAL kiln_status_t kiln_desc_state(const kiln_desc_model_t *model, size_t index, kiln_desc_tensor_t *out,
                                            char *err, size_t err_size);
/* Entries of a verified model's CudaModule; index must be below the count. */
KILN_INTERNAL kiln_desc_string_t kiln_desc_cuda_kernel(const kiln_desc_model_t *model, size_t index);
typedef struct kiln_desc_cuda_collective {
  uint32_t bucket, wait; /* wait: 0 starts the bucket, 1 waits for it */
} kiln_desc_cuda_collective_t;
KILN_INTERNAL kiln_desc_cuda_collective_t kiln_desc_cuda_collective(const kiln_desc_model_t *model, size_t index);
/* Bucket `index` of a verified descriptor: its dtype, its number of
 * tensors and the index of its first tensor in the element counts. */
typedef struct kiln_desc_bucket {
  kiln_dtype_t dtype;
  size_t num_tensors, first;
} kiln_desc_bucket_t;
KILN_INTERNAL kiln_desc_bucket_t kiln_desc_bucket(const kiln_desc_model_t *model, size_t index);
/* Element count of bucket tensor `index` (over all buckets, in order). */
KILN_INTERNAL uint64_t kiln_desc_bucket_elements(const kiln_desc_model_t *model, size_t index);
/* Name and flops (0 when not counted) of CPU kernel index < num_cpu_kernels. */
KILN_INTERNAL kiln_desc_string_t kiln_desc_cpu_kernel(const kiln_desc_model_t *model, size_t index);
KILN_INTERNAL uint64_t kiln_desc_cpu_kernel_flops(const kiln_desc_model_t *model, size_t index);
KILN_INTERNAL kiln_desc_cuda_step_t kiln_desc_cuda_step(const kiln_desc_model_t *model, size_t index);
KILN_INTERNAL kiln_desc_cuda_arg_t kiln_desc_cuda_arg(const kiln_desc_model_t *model, size_t index);
KILN_INTERNAL kiln_desc_cuda_gemm_t kiln_desc_cuda_gemm(const kiln_desc_model_t *model, size_t index);
KILN_INTERNAL kiln_desc_cuda_conv_t kiln_desc_cuda_conv(const kiln_desc_model_t *model, size_t index);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_DESCRIPTOR_H */

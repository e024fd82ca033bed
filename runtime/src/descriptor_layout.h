/* descriptor_layout.h - where the descriptor reader looks in the buffer.
 *
 * The hand-written reader (descriptor.c) addresses the schema
 * (runtime/schema/kiln_model.fbs) by field index and struct size. These are
 * the only copies of those numbers; RuntimeTest.cpp checks each against
 * flatc's generated C++ at compile time, so a schema change that moves a
 * field or resizes a struct fails the build instead of misreading
 * descriptors. Internal to the runtime. */
#ifndef KILN_RUNTIME_DESCRIPTOR_LAYOUT_H
#define KILN_RUNTIME_DESCRIPTOR_LAYOUT_H

/* Field indices in schema order; a field's vtable slot is 4 + 2 * index. */
enum {
  MODEL_FORMAT_VERSION = 0,
  MODEL_NAME = 1,
  MODEL_TARGET = 2,
  MODEL_CPU = 3,
  MODEL_PRODUCER = 4,
  MODEL_INPUTS = 5,
  MODEL_OUTPUTS = 6,
  MODEL_ARENA_BYTES = 7,
  MODEL_ARENA_ALIGNMENT = 8,
  MODEL_ARENA_LOWER_BOUND_BYTES = 9,
  MODEL_STATE = 10,
  MODEL_STATE_BYTES = 11,
  MODEL_STATE_ALIGNMENT = 12,
  MODEL_CUDA = 13,
  MODEL_KERNEL_NAMES = 14,
  MODEL_KERNEL_FLOPS = 15,
  MODEL_BUCKET_SIZES = 16,
  MODEL_BUCKET_DTYPES = 17,
  MODEL_BUCKET_ELEMENTS = 18,
  MODEL_SYMBOL_NAMES = 19,
  MODEL_SYMBOL_RANGES = 20,
  MODEL_ARENA_TERMS = 21,
  MODEL_COMPUTED_SYMBOLS = 22,
};
enum {
  CUDA_GPU_ARCH = 0,
  CUDA_KERNELS = 1,
  CUDA_STEPS = 2,
  CUDA_ARGS = 3,
  CUDA_CUBIN = 4,
  CUDA_PTX = 5,
  CUDA_CONSTANTS = 6,
  CUDA_MORE_CUBINS = 7,
  CUDA_GEMMS = 8,
  CUDA_CONVS = 9,
  CUDA_IO_ALIGNMENT = 10,
  CUDA_COLLECTIVES = 11,
  CUDA_CONV_PADS = 12,
};
enum {
  CUBIN_GPU_ARCH = 0,
  CUBIN_CUBIN = 1,
};
#define CUDA_STEP_SIZE 20
#define CUDA_ARG_SIZE 16
#define CUDA_GEMM_SIZE 96
#define CUDA_CONV_SIZE 168
#define CUDA_COLLECTIVE_SIZE 8
#define CUDA_CONV_PAD_SIZE 8
enum {
  TENSOR_NAME = 0,
  TENSOR_DTYPE = 1,
  TENSOR_SHAPE = 2,
  TENSOR_OFFSET = 3,
  TENSOR_ROLE = 4,
  TENSOR_DIMS = 5,
};

#endif /* KILN_RUNTIME_DESCRIPTOR_LAYOUT_H */

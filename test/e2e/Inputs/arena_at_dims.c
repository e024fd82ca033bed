/* A model compiled over ranges runs in the arena its sizes need, no more.
 *
 * Built with -DHEADER=name.h -DPREFIX=name against an artifact whose
 * every input has the first symbolic dimension on axis 0 (the models of
 * dims.test). For each batch size on the command line: the arena
 * kiln_model_arena_bytes_at gives must equal the header's
 * <name>_arena_bytes and be at most the bound; the model then runs
 * through kiln_model_run in exactly that many bytes, placed so that they
 * end at a page that may not be touched (any write past them faults), and
 * its outputs must equal, bit for bit, those of a run in a separate arena
 * of the bound's size. A run in one byte less is refused. */
#define STR2(x) #x
#define STR(x) STR2(x)
#include STR(HEADER)

#include <kiln/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static int fail(const char *what) {
  fprintf(stderr, "arena_at_dims: %s: %s\n", what, kiln_last_error());
  return 1;
}

int main(int argc, char **argv) {
  kiln_model_t *model;
  if (kiln_model_open(CAT(PREFIX, _artifact)(), &model) != KILN_STATUS_OK)
    return fail("open");
  size_t num_in = kiln_model_num_inputs(model), num_out = kiln_model_num_outputs(model);
  size_t bound = kiln_model_arena_bytes(model), align = kiln_model_arena_alignment(model);
  long page = sysconf(_SC_PAGESIZE);
  for (int a = 1; a < argc; ++a) {
    int64_t dims[8] = {0};
    for (size_t d = 0; d < kiln_model_num_dims(model) && d < 8; ++d) {
      kiln_dim_info_t info;
      kiln_model_dim_info(model, d, &info);
      dims[d] = info.max;
    }
    dims[0] = atoll(argv[a]);
    size_t bytes = 0;
    if (kiln_model_arena_bytes_at(model, dims, &bytes) != KILN_STATUS_OK)
      return fail("arena_bytes_at");
    uint64_t typed = CAT(PREFIX, _arena_bytes)(dims);
    if (typed != bytes || bytes > bound) {
      printf("batch %s: MISMATCH runtime %zu, header %llu, bound %zu\n", argv[a], bytes, (unsigned long long)typed,
             bound);
      return 1;
    }
    kiln_tensor_t in[16], out_small[16], out_full[16];
    int64_t in_shapes[16][8], out_shapes[16][8];
    for (size_t i = 0; i < num_in; ++i) {
      kiln_tensor_info_t info;
      kiln_model_input_info(model, i, &info);
      memcpy(in_shapes[i], info.shape, info.rank * sizeof(int64_t));
      in_shapes[i][0] = dims[0];
      size_t n = kiln_dtype_size(info.dtype);
      for (size_t d = 0; d < info.rank; ++d)
        n *= (size_t)in_shapes[i][d];
      unsigned char *data = malloc(n + 1);
      for (size_t k = 0; k < n; ++k)
        data[k] = (unsigned char)(k * 37 % 61); /* small finite floats or ints */
      if (info.dtype == KILN_DTYPE_F32)
        for (size_t k = 0; k < n / 4; ++k)
          ((float *)data)[k] = (float)((int)(k * 7919 % 200) - 100) / 50.0f;
      in[i] = (kiln_tensor_t){info.dtype, info.rank, in_shapes[i], data};
    }
    for (size_t o = 0; o < num_out; ++o) {
      kiln_tensor_info_t info;
      kiln_model_output_info(model, o, &info);
      kiln_model_output_shape(model, o, dims, out_shapes[o]);
      size_t n = kiln_dtype_size(info.dtype);
      for (size_t d = 0; d < info.rank; ++d)
        n *= (size_t)out_shapes[o][d];
      out_small[o] = (kiln_tensor_t){info.dtype, info.rank, out_shapes[o], calloc(n + 1, 1)};
      out_full[o] = (kiln_tensor_t){info.dtype, info.rank, out_shapes[o], calloc(n + 1, 1)};
    }
    /* The arena's last byte just before a page without access. */
    size_t padded = (bytes + align - 1) / align * align;
    size_t pages = (padded + (size_t)page - 1) / (size_t)page + 1;
    unsigned char *region = mmap(NULL, pages * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || mprotect(region + (pages - 1) * (size_t)page, (size_t)page, PROT_NONE) != 0) {
      perror("mmap");
      return 1;
    }
    unsigned char *arena = region + (pages - 1) * (size_t)page - padded;
    if (kiln_model_run(model, in, num_in, out_small, num_out, arena, bytes) != KILN_STATUS_OK)
      return fail("run in the sized arena");
    if (bytes > 0 && kiln_model_run(model, in, num_in, out_full, num_out, arena, bytes - 1) == KILN_STATUS_OK) {
      printf("batch %s: MISMATCH a run in %zu bytes was not refused\n", argv[a], bytes - 1);
      return 1;
    }
    void *full = aligned_alloc(align, (bound + align - 1) / align * align);
    if (kiln_model_run(model, in, num_in, out_full, num_out, full, bound) != KILN_STATUS_OK)
      return fail("run in the bound's arena");
    for (size_t o = 0; o < num_out; ++o) {
      size_t n = kiln_dtype_size(out_full[o].dtype);
      for (size_t d = 0; d < out_full[o].rank; ++d)
        n *= (size_t)out_shapes[o][d];
      if (memcmp(out_small[o].data, out_full[o].data, n) != 0) {
        printf("batch %s: MISMATCH output %zu differs from the run in the bound's arena\n", argv[a], o);
        return 1;
      }
      free(out_small[o].data);
      free(out_full[o].data);
    }
    for (size_t i = 0; i < num_in; ++i)
      free(in[i].data);
    free(full);
    munmap(region, pages * (size_t)page);
    printf("batch %s: ok, arena %zu of %zu bytes%s\n", argv[a], bytes, bound, bytes < bound ? " (smaller)" : "");
  }
  kiln_model_close(model);
  return 0;
}

/*
 * vendor_library.h - opening a vendor library (cuBLASLt, cuDNN) at run time
 * (internal to the CUDA runtime).
 */
#ifndef KILN_RUNTIME_VENDOR_LIBRARY_H
#define KILN_RUNTIME_VENDOR_LIBRARY_H

#include "kiln/runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An entry point to look up and where to store it. */
typedef struct kiln_symbol {
  void **slot;
  const char *name;
} kiln_symbol_t;

/* Opens the first of `names` (sonames, most wanted first) that loads, looking
 * on the library path, then in the folders of KILN_CUDA_LIBRARY_PATH (colon
 * separated), the CUDA toolkit's (/usr/local/cuda/lib64) and those of
 * NVIDIA's Python wheels (site-packages/nvidia/<package>/lib of the virtual
 * or conda environment, of each environment whose bin folder is on PATH, of
 * /usr/local and /usr), and fills every slot of `symbols`. On failure returns NULL with every slot
 * NULL and sets the error (KILN_STATUS_UNAVAILABLE): `what` says who needs
 * the library, e.g. "model 'mlp' calls cuBLASLt". */
void *kiln_open_library(const char *const *names, size_t num_names, const kiln_symbol_t *symbols, size_t num_symbols,
                        const char *what);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_VENDOR_LIBRARY_H */

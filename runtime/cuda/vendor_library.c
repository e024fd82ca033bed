/*
 * vendor_library.c - opening a vendor library at run time; see vendor_library.h.
 */
#include "vendor_library.h"

#include "error.h"

#include <dlfcn.h>
#include <string.h>

void *kiln_open_library(const char *const *names, size_t num_names, const kiln_symbol_t *symbols,
                        size_t num_symbols, const char *what) {
  for (size_t i = 0; i < num_symbols; ++i)
    *symbols[i].slot = NULL;
  void *library = NULL;
  char why[160] = "not found";
  for (size_t i = 0; i < num_names && library == NULL; ++i) {
    library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    const char *e = library == NULL && i == 0 ? dlerror() : NULL;
    if (e != NULL) {
      strncpy(why, e, sizeof why - 1);
      why[sizeof why - 1] = '\0';
    }
  }
  if (library == NULL) {
    kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: %s, but %s cannot be loaded (%s)", what, names[0], why);
    return NULL;
  }
  for (size_t i = 0; i < num_symbols; ++i) {
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    void *fn = dlsym(library, symbols[i].name);
    if (fn == NULL) {
      for (size_t j = 0; j < num_symbols; ++j)
        *symbols[j].slot = NULL;
      dlclose(library);
      kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: %s, but %s lacks %s (too old?)", what, names[0],
                     symbols[i].name);
      return NULL;
    }
    *symbols[i].slot = fn;
  }
  return library;
}

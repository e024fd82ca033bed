/*
 * vendor_library.c - opening a vendor library at run time; see vendor_library.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtok_r, glob's GLOB_ONLYDIR */
#endif

#include "vendor_library.h"

#include "error.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends to `out` (capacity `size`) as much of `text` as fits. */
static void append(char *out, size_t size, const char *text) {
  size_t used = strlen(out);
  if (used + 1 < size)
    snprintf(out + used, size - used, "%s", text);
}

/* Tries `dir`/`name` for each name; records `dir` in `looked`. */
static void *open_in(const char *dir, const char *const *names, size_t num_names, char *looked, size_t looked_size) {
  append(looked, looked_size, ", ");
  append(looked, looked_size, dir);
  for (size_t i = 0; i < num_names; ++i) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
      continue;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library != NULL)
      return library;
  }
  return NULL;
}

/* Tries every folder matching `pattern`. */
static void *open_in_glob(const char *pattern, const char *const *names, size_t num_names, char *looked,
                          size_t looked_size) {
  glob_t found;
  void *library = NULL;
  if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &found) != 0)
    return NULL;
  /* Sorted here so that the same machine always gives the same library. */
  qsort(found.gl_pathv, found.gl_pathc, sizeof found.gl_pathv[0], (int (*)(const void *, const void *))(void *)strcmp);
  for (size_t i = 0; i < found.gl_pathc && library == NULL; ++i)
    library = open_in(found.gl_pathv[i], names, num_names, looked, looked_size);
  globfree(&found);
  return library;
}

/* Python environments whose NVIDIA wheels (site-packages/nvidia/<pkg>/lib,
 * e.g. nvidia/cudnn/lib or nvidia/cu13/lib) may hold the library: the
 * active virtual or conda environment, every environment whose bin folder
 * is on PATH, and the system's. */
static void *open_in_wheels(const char *const *names, size_t num_names, char *looked, size_t looked_size) {
  static const char *const layouts[] = {"lib/python3*/site-packages/nvidia/*/lib",
                                        "lib/python3*/dist-packages/nvidia/*/lib",
                                        "lib64/python3*/site-packages/nvidia/*/lib"};
  char prefixes[4096] = "";
  const char *env[] = {getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX")};
  for (size_t i = 0; i < 2; ++i)
    if (env[i] != NULL && *env[i] != '\0') {
      append(prefixes, sizeof prefixes, env[i]);
      append(prefixes, sizeof prefixes, ":");
    }
  const char *path = getenv("PATH");
  if (path != NULL) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
      size_t n = strlen(dir);
      while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
      if (n > 4 && strcmp(dir + n - 4, "/bin") == 0) {
        dir[n - 4] = '\0';
        append(prefixes, sizeof prefixes, dir);
        append(prefixes, sizeof prefixes, ":");
      }
    }
  }
  append(prefixes, sizeof prefixes, "/usr/local:/usr");
  char *save = NULL;
  for (char *prefix = strtok_r(prefixes, ":", &save); prefix != NULL; prefix = strtok_r(NULL, ":", &save))
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; ++l) {
      char pattern[1024];
      if (snprintf(pattern, sizeof pattern, "%s/%s", prefix, layouts[l]) >= (int)sizeof pattern)
        continue;
      void *library = open_in_glob(pattern, names, num_names, looked, looked_size);
      if (library != NULL)
        return library;
    }
  return NULL;
}

void *kiln_open_library(const char *const *names, size_t num_names, const kiln_symbol_t *symbols, size_t num_symbols,
                        const char *what) {
  for (size_t i = 0; i < num_symbols; ++i)
    *symbols[i].slot = NULL;
  void *library = NULL;
  char why[160] = "not found";
  char looked[640] = "";
  /* 1. The library path (LD_LIBRARY_PATH, the ld.so cache, the program's
   *    run path). */
  for (size_t i = 0; i < num_names && library == NULL; ++i) {
    library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    const char *e = library == NULL && i == 0 ? dlerror() : NULL;
    if (e != NULL) {
      strncpy(why, e, sizeof why - 1);
      why[sizeof why - 1] = '\0';
    }
  }
  /* 2. Folders named by KILN_CUDA_LIBRARY_PATH. */
  const char *extra = getenv("KILN_CUDA_LIBRARY_PATH");
  if (library == NULL && extra != NULL) {
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", extra);
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir != NULL && library == NULL; dir = strtok_r(NULL, ":", &save))
      library = open_in(dir, names, num_names, looked, sizeof looked);
  }
  /* 3. The toolkit's folders, which are often not on the library path. */
  static const char *const toolkit[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"};
  for (size_t i = 0; i < sizeof toolkit / sizeof toolkit[0] && library == NULL; ++i)
    library = open_in(toolkit[i], names, num_names, looked, sizeof looked);
  /* 4. NVIDIA's Python wheels (nvidia-cudnn-cu13, nvidia-cublas, ...). */
  if (library == NULL)
    library = open_in_wheels(names, num_names, looked, sizeof looked);
  if (library == NULL) {
    kiln_error_set(KILN_STATUS_UNAVAILABLE,
                   "cuda: %s, but %s cannot be loaded (%s); looked on the library path%s, and in "
                   "site-packages/nvidia/*/lib of the Python environments on PATH (set "
                   "KILN_CUDA_LIBRARY_PATH to its folder)",
                   what, names[0], why, looked);
    return NULL;
  }
  for (size_t i = 0; i < num_symbols; ++i) {
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    void *fn = dlsym(library, symbols[i].name);
    if (fn == NULL) {
      for (size_t j = 0; j < num_symbols; ++j)
        *symbols[j].slot = NULL;
      dlclose(library);
      kiln_error_set(KILN_STATUS_UNAVAILABLE, "cuda: %s, but %s lacks %s (too old?)", what, names[0], symbols[i].name);
      return NULL;
    }
    *symbols[i].slot = fn;
  }
  return library;
}

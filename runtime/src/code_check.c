/*
 * code_check.c - the code checksum of ABI 6.
 *
 * kilnc --shared links the model into a shared library, then writes into
 * its kiln_artifact_t the checksum of the library's executable segment as
 * the loader maps it (position-independent code: no byte of it is changed
 * by loading). Opening finds that segment again through the loader's list
 * of loaded objects (dl_iterate_phdr: the object and PF_X PT_LOAD that
 * contain run_packed) and recomputes the checksum over the mapped bytes,
 * so a changed instruction is refused before it runs, as changed weights
 * and a changed descriptor are.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include "descriptor.h"

#include <inttypes.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>

typedef struct code_search {
  uintptr_t address; /* run_packed */
  const void *segment;
  uint64_t size;
} code_search_t;

static int find_segment(struct dl_phdr_info *info, size_t info_size, void *arg) {
  (void)info_size;
  code_search_t *search = arg;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    if (search->address >= start && search->address - start < (uintptr_t)ph->p_filesz) {
      search->segment = (const void *)start;
      search->size = (uint64_t)ph->p_filesz;
      return 1;
    }
  }
  return 0;
}

kiln_status_t kiln_desc_check_code(const kiln_artifact_t *artifact, char *err, size_t err_size) {
  if (artifact->abi_version < 6 || artifact->code_checksum == 0)
    return KILN_STATUS_OK;
  code_search_t search = {(uintptr_t)artifact->run_packed, NULL, 0};
  if (artifact->run_packed == NULL || !dl_iterate_phdr(find_segment, &search)) {
    snprintf(err, err_size,
             "artifact: it carries a code checksum, but no loaded object's code holds its run_packed entry");
    return KILN_STATUS_INVALID_ARTIFACT;
  }
  kiln_data_range_t range = {search.segment, search.size};
  uint64_t actual = kiln_data_checksum(&range, 1);
  if (actual == artifact->code_checksum)
    return KILN_STATUS_OK;
  snprintf(err, err_size,
           "artifact: the checksum of its code (%" PRIu64 " bytes) is 0x%016" PRIx64
           ", the compiler recorded 0x%016" PRIx64 ": the library was changed after compilation",
           search.size, actual, artifact->code_checksum);
  return KILN_STATUS_INVALID_ARTIFACT;
}

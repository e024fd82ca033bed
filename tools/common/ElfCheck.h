//===- ElfCheck.h - is a shared object whole before dlopen maps it? -*- C++ -*-===//
//
// dlopen maps a shared object by its ELF headers; a file truncated past its
// first page then faults (SIGBUS) inside the loader instead of failing. The
// tools check that the file holds at least what its ELF and section headers
// span (the section header table comes last in what linkers write) before
// they load it. Header-only; no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_COMMON_ELFCHECK_H
#define KILN_TOOLS_COMMON_ELFCHECK_H

#include "ImageHash.h"

#include <fstream>
#include <string>

namespace kiln {

/// Empty when `path` is a whole 64-bit little-endian ELF file, else why not.
inline std::string elfIncomplete(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return "cannot be read";
  std::streamoff size = in.tellg();
  unsigned char header[64] = {0};
  in.seekg(0);
  if (size < 64 || !in.read(reinterpret_cast<char *>(header), sizeof header))
    return "is not an ELF shared object (" + std::to_string(size) + " bytes)";
  uint64_t need = kiln_image_length(header);
  if (need == 0)
    return "is not a 64-bit little-endian ELF shared object";
  if (static_cast<uint64_t>(size) < need)
    return "is truncated: " + std::to_string(size) + " bytes, its ELF headers span " + std::to_string(need);
  return "";
}

} // namespace kiln

#endif // KILN_TOOLS_COMMON_ELFCHECK_H

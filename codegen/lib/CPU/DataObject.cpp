//===- DataObject.cpp - Detached constant data as an ELF object -----------===//
//
// The weights' own object (decision 0021, update of 2026-12-01): an ELF
// relocatable file with one read-only section of the detached globals and
// a hidden global symbol for each, written from the blobs in one pass. What
// LLVM's object writer would make of the same constants (one .rodata
// section, the same alignments) minus two copies of every byte on the way.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CpuCodegen.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace kiln;

bool kiln::canDetachData(const llvm::Triple &triple) {
  return triple.isOSBinFormatELF() && triple.isArch64Bit() &&
         triple.isLittleEndian() &&
         (triple.getArch() == llvm::Triple::x86_64 ||
          triple.getArch() == llvm::Triple::aarch64);
}

namespace {
/// Little-endian fields appended to a byte string.
struct Fields {
  std::string bytes;
  template <typename T> void put(T value) {
    char raw[sizeof(T)];
    llvm::support::endian::write<T, llvm::endianness::little>(raw, value);
    bytes.append(raw, sizeof(T));
  }
};
} // namespace

llvm::Error kiln::writeDataObject(const DetachedData &data,
                                  const llvm::Triple &triple,
                                  llvm::StringRef path) {
  using namespace llvm::ELF;
  if (!canDetachData(triple))
    return llvm::createStringError("no data object for " + triple.str());

  // Section indices and the section-name table.
  enum : uint16_t { kNull, kData, kStack, kSymtab, kStrtab, kShstrtab, kCount };
  std::string shstrtab(1, '\0');
  auto addName = [](std::string &table, llvm::StringRef name) {
    uint32_t offset = table.size();
    table.append(name.data(), name.size());
    table.push_back('\0');
    return offset;
  };
  uint32_t dataName = addName(shstrtab, ".rodata");
  uint32_t stackName = addName(shstrtab, ".note.GNU-stack");
  uint32_t symtabName = addName(shstrtab, ".symtab");
  uint32_t strtabName = addName(shstrtab, ".strtab");
  uint32_t shstrtabName = addName(shstrtab, ".shstrtab");

  // The data section's layout and the symbols (the null one, then one
  // global each).
  uint64_t dataAlign = 1, dataSize = 0;
  std::vector<uint64_t> offsets;
  std::string strtab(1, '\0');
  Fields symtab;
  symtab.bytes.append(sizeof(Elf64_Sym), '\0');
  for (const DetachedData::Global &global : data.globals) {
    dataAlign = std::max(dataAlign, global.alignment);
    dataSize = llvm::alignTo(dataSize, global.alignment);
    offsets.push_back(dataSize);
    symtab.put<uint32_t>(addName(strtab, global.name));
    symtab.put<uint8_t>((STB_GLOBAL << 4) | STT_OBJECT);
    symtab.put<uint8_t>(STV_HIDDEN);
    symtab.put<uint16_t>(kData);
    symtab.put<uint64_t>(dataSize);
    symtab.put<uint64_t>(global.bytes.size());
    dataSize += global.bytes.size();
  }

  // File: header, data, symtab, strtab, shstrtab, section headers.
  uint64_t dataOffset = llvm::alignTo(sizeof(Elf64_Ehdr), dataAlign);
  uint64_t symtabOffset = llvm::alignTo(dataOffset + dataSize, 8);
  uint64_t strtabOffset = symtabOffset + symtab.bytes.size();
  uint64_t shstrtabOffset = strtabOffset + strtab.size();
  uint64_t headersOffset = llvm::alignTo(shstrtabOffset + shstrtab.size(), 8);

  Fields header;
  const char ident[EI_NIDENT] = {
      0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_NONE};
  header.bytes.append(ident, EI_NIDENT);
  header.put<uint16_t>(ET_REL);
  header.put<uint16_t>(triple.getArch() == llvm::Triple::x86_64 ? EM_X86_64
                                                                : EM_AARCH64);
  header.put<uint32_t>(EV_CURRENT);
  header.put<uint64_t>(0); // e_entry
  header.put<uint64_t>(0); // e_phoff
  header.put<uint64_t>(headersOffset);
  header.put<uint32_t>(0); // e_flags
  header.put<uint16_t>(sizeof(Elf64_Ehdr));
  header.put<uint16_t>(0); // e_phentsize
  header.put<uint16_t>(0); // e_phnum
  header.put<uint16_t>(sizeof(Elf64_Shdr));
  header.put<uint16_t>(kCount);
  header.put<uint16_t>(kShstrtab);

  Fields sections;
  auto section = [&](uint32_t name, uint32_t type, uint64_t flags,
                     uint64_t offset, uint64_t size, uint32_t link,
                     uint32_t info, uint64_t align, uint64_t entsize) {
    sections.put<uint32_t>(name);
    sections.put<uint32_t>(type);
    sections.put<uint64_t>(flags);
    sections.put<uint64_t>(0); // sh_addr
    sections.put<uint64_t>(offset);
    sections.put<uint64_t>(size);
    sections.put<uint32_t>(link);
    sections.put<uint32_t>(info);
    sections.put<uint64_t>(align);
    sections.put<uint64_t>(entsize);
  };
  section(0, SHT_NULL, 0, 0, 0, 0, 0, 0, 0);
  section(dataName, SHT_PROGBITS, SHF_ALLOC, dataOffset, dataSize, 0, 0,
          dataAlign, 0);
  // No executable stack asked for (the linker warns of an object without
  // this note, and may make the stack executable).
  section(stackName, SHT_PROGBITS, 0, dataOffset + dataSize, 0, 0, 0, 1, 0);
  // sh_info: one past the last local symbol (only the null one is local).
  section(symtabName, SHT_SYMTAB, 0, symtabOffset, symtab.bytes.size(), kStrtab,
          1, 8, sizeof(Elf64_Sym));
  section(strtabName, SHT_STRTAB, 0, strtabOffset, strtab.size(), 0, 0, 1, 0);
  section(shstrtabName, SHT_STRTAB, 0, shstrtabOffset, shstrtab.size(), 0, 0, 1,
          0);

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::errorCodeToError(ec);
  uint64_t written = 0;
  auto padTo = [&](uint64_t offset) {
    os.write_zeros(offset - written);
    written = offset;
  };
  auto write = [&](llvm::StringRef bytes) {
    os.write(bytes.data(), bytes.size());
    written += bytes.size();
  };
  write(header.bytes);
  for (auto [global, offset] : llvm::zip_equal(data.globals, offsets)) {
    padTo(dataOffset + offset);
    write(global.bytes);
  }
  padTo(symtabOffset);
  write(symtab.bytes);
  write(strtab);
  write(shstrtab);
  padTo(headersOffset);
  write(sections.bytes);
  os.close();
  if (std::error_code error = os.error()) {
    os.clear_error();
    return llvm::errorCodeToError(error);
  }
  return llvm::Error::success();
}

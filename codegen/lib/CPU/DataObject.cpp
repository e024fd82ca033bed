//===- DataObject.cpp - Detached constant data added to the code's object -===//
//
// The weights' section (decision 0021, updates of 2026-12-01): the code's
// ELF relocatable object, as LLVM or `ld -r` wrote it with the detached
// globals only declared, is written out again with one more read-only
// section that holds them. The code's undefined symbols of those names
// become defined in it, so no linker copies the weights on their way into
// the object (on ResNet-50 the join with a separate data object was a
// tenth of the compile: a second 100 MB file written and read back).
//
// The code object's bytes are kept as they are; after them come the data,
// new copies of the symbol and string tables (the old ones stay, unused)
// and a new section header table: the old headers with the tables'
// offsets updated, then the data section's. Symbol and section indices
// are unchanged, so relocations, groups and the address-significance
// table still hold.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CpuCodegen.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace kiln;

bool kiln::canDetachData(const llvm::Triple &triple) {
  return triple.isOSBinFormatELF() && triple.isArch64Bit() &&
         triple.isLittleEndian() &&
         (triple.getArch() == llvm::Triple::x86_64 ||
          triple.getArch() == llvm::Triple::aarch64);
}

/// Appends `name` and its terminator to the string table `table`; returns
/// its offset.
static uint32_t addName(std::string &table, llvm::StringRef name) {
  uint32_t offset = table.size();
  table.append(name.data(), name.size());
  table.push_back('\0');
  return offset;
}

llvm::Error kiln::writeObjectWithData(llvm::StringRef code,
                                      const DetachedData &data,
                                      llvm::StringRef path) {
  using namespace llvm::ELF;
  using ELFT = llvm::object::ELF64LE;
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError("cannot add the weights to the object: " +
                                   why);
  };
  auto file = llvm::object::ELFFile<ELFT>::create(code);
  if (!file)
    return file.takeError();
  const ELFT::Ehdr &oldHeader = file->getHeader();
  if (oldHeader.e_ident[EI_CLASS] != ELFCLASS64 ||
      oldHeader.e_ident[EI_DATA] != ELFDATA2LSB || oldHeader.e_type != ET_REL)
    return fail("not a 64-bit little-endian relocatable object");
  auto sectionsOr = file->sections();
  if (!sectionsOr)
    return sectionsOr.takeError();
  std::vector<ELFT::Shdr> sections(sectionsOr->begin(), sectionsOr->end());
  // One more section must fit the header's 16-bit fields, without the
  // extended numbering (SHT_SYMTAB_SHNDX) this does not rewrite.
  if (sections.empty() || sections.size() + 1 >= SHN_LORESERVE ||
      oldHeader.e_shstrndx >= sections.size())
    return fail("unexpected section count");
  unsigned symtabIndex = 0;
  for (auto [index, section] : llvm::enumerate(sections)) {
    if (section.sh_type == SHT_SYMTAB_SHNDX)
      return fail("extended section indices");
    if (section.sh_type != SHT_SYMTAB)
      continue;
    if (symtabIndex)
      return fail("two symbol tables");
    symtabIndex = index;
  }
  if (!symtabIndex)
    return fail("no symbol table");
  ELFT::Shdr &symtabHeader = sections[symtabIndex];
  unsigned strtabIndex = symtabHeader.sh_link;
  unsigned shstrtabIndex = oldHeader.e_shstrndx;
  if (strtabIndex == 0 || strtabIndex >= sections.size())
    return fail("bad symbol string table");

  auto symbolsOr = file->symbols(&symtabHeader);
  if (!symbolsOr)
    return symbolsOr.takeError();
  std::vector<ELFT::Sym> symbols(symbolsOr->begin(), symbolsOr->end());
  if (symtabHeader.sh_info > symbols.size())
    return fail("bad symbol table");
  auto strtabOr = file->getStringTable(sections[strtabIndex]);
  if (!strtabOr)
    return strtabOr.takeError();
  std::string strtab = strtabOr->str();
  std::string shstrtab;
  if (shstrtabIndex != strtabIndex) {
    auto names = file->getStringTable(sections[shstrtabIndex]);
    if (!names)
      return names.takeError();
    shstrtab = names->str();
  }
  // Section names go wherever the header says they are (LLVM's writer
  // shares one table with the symbols' names, `ld -r` keeps two).
  std::string &sectionNames = shstrtabIndex == strtabIndex ? strtab : shstrtab;

  // The data section's layout: each global at the next offset of its
  // alignment, in order.
  uint16_t dataIndex = sections.size();
  uint64_t dataAlign = 1, dataSize = 0;
  std::vector<uint64_t> offsets;
  llvm::StringMap<size_t> globalOf;
  for (auto [index, global] : llvm::enumerate(data.globals)) {
    dataAlign = std::max(dataAlign, global.alignment);
    dataSize = llvm::alignTo(dataSize, global.alignment);
    offsets.push_back(dataSize);
    dataSize += global.bytes.size();
    globalOf[global.name] = index;
  }

  // The code's undefined symbols of the globals' names become defined;
  // a global the code does not reference gets a symbol of its own, after
  // the others (globals follow locals, so every index stays).
  auto define = [&](ELFT::Sym &symbol, size_t global) {
    symbol.setBindingAndType(STB_GLOBAL, STT_OBJECT);
    symbol.st_other = STV_HIDDEN;
    symbol.st_shndx = dataIndex;
    symbol.st_value = offsets[global];
    symbol.st_size = data.globals[global].bytes.size();
  };
  std::vector<bool> defined(data.globals.size(), false);
  for (ELFT::Sym &symbol : llvm::drop_begin(symbols, symtabHeader.sh_info)) {
    if (symbol.st_name >= strtab.size())
      return fail("bad symbol name");
    auto it = globalOf.find(llvm::StringRef(strtab.c_str() + symbol.st_name));
    if (it == globalOf.end())
      continue;
    if (symbol.st_shndx != SHN_UNDEF || defined[it->second])
      return fail("'" + it->first() + "' is already defined");
    define(symbol, it->second);
    defined[it->second] = true;
  }
  for (auto [index, global] : llvm::enumerate(data.globals)) {
    if (defined[index])
      continue;
    ELFT::Sym symbol = {};
    symbol.st_name = addName(strtab, global.name);
    define(symbol, index);
    symbols.push_back(symbol);
  }
  uint32_t dataName = addName(sectionNames, ".rodata");

  // After the code's bytes: the data, the tables, the section headers.
  uint64_t dataOffset = llvm::alignTo(code.size(), dataAlign);
  uint64_t symtabOffset = llvm::alignTo(dataOffset + dataSize, 8);
  uint64_t symtabSize = symbols.size() * sizeof(ELFT::Sym);
  uint64_t strtabOffset = symtabOffset + symtabSize;
  uint64_t shstrtabOffset = strtabOffset + strtab.size();
  uint64_t headersOffset = llvm::alignTo(shstrtabOffset + shstrtab.size(), 8);
  symtabHeader.sh_offset = symtabOffset;
  symtabHeader.sh_size = symtabSize;
  sections[strtabIndex].sh_offset = strtabOffset;
  sections[strtabIndex].sh_size = strtab.size();
  if (shstrtabIndex != strtabIndex) {
    sections[shstrtabIndex].sh_offset = shstrtabOffset;
    sections[shstrtabIndex].sh_size = shstrtab.size();
  }
  ELFT::Shdr dataHeader = {};
  dataHeader.sh_name = dataName;
  dataHeader.sh_type = SHT_PROGBITS;
  dataHeader.sh_flags = SHF_ALLOC;
  dataHeader.sh_offset = dataOffset;
  dataHeader.sh_size = dataSize;
  dataHeader.sh_addralign = dataAlign;
  sections.push_back(dataHeader);
  ELFT::Ehdr header = oldHeader;
  header.e_shoff = headersOffset;
  header.e_shnum = sections.size();

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::errorCodeToError(ec);
  uint64_t written = 0;
  auto write = [&](const void *bytes, uint64_t size) {
    os.write(static_cast<const char *>(bytes), size);
    written += size;
  };
  auto padTo = [&](uint64_t offset) {
    os.write_zeros(offset - written);
    written = offset;
  };
  write(&header, sizeof(header));
  write(code.data() + sizeof(header), code.size() - sizeof(header));
  for (auto [global, offset] : llvm::zip_equal(data.globals, offsets)) {
    padTo(dataOffset + offset);
    write(global.bytes.data(), global.bytes.size());
  }
  padTo(symtabOffset);
  write(symbols.data(), symtabSize);
  write(strtab.data(), strtab.size());
  write(shstrtab.data(), shstrtab.size());
  padTo(headersOffset);
  write(sections.data(), sections.size() * sizeof(ELFT::Shdr));
  os.close();
  if (std::error_code error = os.error()) {
    os.clear_error();
    return llvm::errorCodeToError(error);
  }
  return llvm::Error::success();
}

//===- Artifact.cpp - header and descriptor of an artifact ----------------===//
//
// Writes the two user-visible descriptions of a compiled model: the C header
// (typed entry point, arena macros) and the FlatBuffers descriptor the
// runtime verifies. Both depend only on ArtifactInfo, so they are
// byte-identical for the same model and flags.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Artifact.h"
#include "kiln/Codegen/CudaProgram.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"

#include "kiln/kiln_model_generated.h"
#include "kiln/runtime.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>

using namespace mlir;
using namespace kiln;

std::string kiln::sanitizeIdentifier(StringRef name) {
  static const llvm::StringSet<> keywords = {
      "auto",     "break",    "case",     "char",    "const",   "continue",
      "default",  "do",       "double",   "else",    "enum",    "extern",
      "float",    "for",      "goto",     "if",      "inline",  "int",
      "long",     "register", "restrict", "return",  "short",   "signed",
      "sizeof",   "static",   "struct",   "switch",  "typedef", "union",
      "unsigned", "void",     "volatile", "while",   "bool",    "true",
      "false",    "arena",    "class",    "new",     "delete",  "this",
      "template", "private",  "public",   "operator"};
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "t_" + id;
  if (keywords.contains(id))
    id += "_";
  return id;
}

namespace {
struct DTypeInfo {
  int code;
  const char *cType;
  unsigned bytes;
};
} // namespace

/// kiln_dtype_t code and C type of an element type, or nullopt.
static std::optional<DTypeInfo> dtypeOf(Type t) {
  if (t.isF32())
    return DTypeInfo{1, "float", 4};
  if (t.isF16())
    return DTypeInfo{2, "uint16_t", 2};
  if (t.isBF16())
    return DTypeInfo{3, "uint16_t", 2};
  if (t.isF64())
    return DTypeInfo{4, "double", 8};
  if (t.isSignlessInteger(8))
    return DTypeInfo{5, "int8_t", 1};
  if (t.isSignlessInteger(32))
    return DTypeInfo{6, "int32_t", 4};
  if (t.isSignlessInteger(64))
    return DTypeInfo{7, "int64_t", 8};
  if (t.isInteger(1))
    return DTypeInfo{8, "uint8_t", 1};
  if (t.isUnsignedInteger(8))
    return DTypeInfo{9, "uint8_t", 1};
  if (t.isUnsignedInteger(16))
    return DTypeInfo{10, "uint16_t", 2};
  if (t.isUnsignedInteger(32))
    return DTypeInfo{11, "uint32_t", 4};
  if (t.isUnsignedInteger(64))
    return DTypeInfo{12, "uint64_t", 8};
  if (t.isSignlessInteger(16))
    return DTypeInfo{13, "int16_t", 2};
  // Narrow types: one byte per element, never packed.
  if (isa<Float8E4M3FNType>(t))
    return DTypeInfo{14, "uint8_t", 1};
  if (isa<Float8E4M3FNUZType>(t))
    return DTypeInfo{15, "uint8_t", 1};
  if (isa<Float8E5M2Type>(t))
    return DTypeInfo{16, "uint8_t", 1};
  if (isa<Float8E5M2FNUZType>(t))
    return DTypeInfo{17, "uint8_t", 1};
  if (t.isUnsignedInteger(4))
    return DTypeInfo{18, "uint8_t", 1};
  if (t.isSignlessInteger(4))
    return DTypeInfo{19, "int8_t", 1};
  if (isa<Float4E2M1FNType>(t))
    return DTypeInfo{20, "uint8_t", 1};
  if (isa<Float8E8M0FNUType>(t))
    return DTypeInfo{21, "uint8_t", 1};
  if (t.isUnsignedInteger(2))
    return DTypeInfo{22, "uint8_t", 1};
  if (t.isSignlessInteger(2))
    return DTypeInfo{23, "int8_t", 1};
  return std::nullopt;
}

LogicalResult kiln::collectSignature(func::FuncOp func, ArtifactInfo &info) {
  llvm::StringSet<> used;
  auto describe = [&](Type type, DictionaryAttr attrs, StringRef fallback,
                      TensorSignature &sig) -> LogicalResult {
    auto tensorTy = dyn_cast<RankedTensorType>(type);
    std::optional<DTypeInfo> dt =
        tensorTy ? dtypeOf(tensorTy.getElementType()) : std::nullopt;
    if (!tensorTy || !tensorTy.hasStaticShape() || !dt)
      return func.emitOpError(
                 "expects statically shaped tensors of a supported "
                 "element type in the signature, got ")
             << type;
    auto name = attrs ? attrs.getAs<StringAttr>(kNameAttr) : StringAttr();
    sig.name = name ? name.str() : fallback.str();
    std::string base = sanitizeIdentifier(sig.name), id = base;
    for (int n = 2; used.contains(id); ++n)
      id = base + "_" + std::to_string(n);
    used.insert(id);
    sig.cName = id;
    sig.dtype = dt->code;
    sig.cType = dt->cType;
    sig.shape.assign(tensorTy.getShape().begin(), tensorTy.getShape().end());
    sig.sizeBytes = dt->bytes * tensorTy.getNumElements();
    if (hasSymbolicDims(tensorTy))
      for (const DimExpr &e : dimExprs(tensorTy))
        sig.dims.push_back(e.str());
    return success();
  };
  if (auto ranges = func->getAttrOfType<DictionaryAttr>(kSymbolsAttr)) {
    auto computed = func->getAttrOfType<ArrayAttr>(kComputedSymbolsAttr);
    auto isComputed = [&](StringAttr name) {
      return computed && llvm::is_contained(computed, name);
    };
    for (NamedAttribute range : ranges) {
      auto bounds = dyn_cast<DenseI64ArrayAttr>(range.getValue());
      if (!bounds || bounds.size() != 2)
        return func.emitOpError("expects each of '")
               << kSymbolsAttr << "' to be [lo, hi]";
      if (!isComputed(range.getName()))
        info.symbols.push_back(
            DimSymbol{range.getName().str(), bounds[0], bounds[1]});
    }
    // The computed sizes last, in the order their ops made them.
    for (Attribute name :
         computed ? computed.getValue() : ArrayRef<Attribute>()) {
      auto bounds = ranges.getAs<DenseI64ArrayAttr>(cast<StringAttr>(name));
      if (!bounds || bounds.size() != 2)
        return func.emitOpError("expects each of '")
               << kComputedSymbolsAttr << "' in '" << kSymbolsAttr << "'";
      info.symbols.push_back(DimSymbol{cast<StringAttr>(name).str(), bounds[0],
                                       bounds[1], /*computed=*/true});
    }
    // The runtime's KILN_DESC_MAX_DIMS (runtime/src/descriptor.h).
    constexpr size_t kMaxSymbols = 512;
    if (info.symbols.size() > kMaxSymbols)
      return func.emitOpError()
             << info.symbols.size() << " symbolic dimensions ("
             << (computed ? computed.size() : 0)
             << " computed from data) pass the runtime's limit of "
             << kMaxSymbols;
  }
  FunctionType fnTy = func.getFunctionType();
  // State arguments and results (a training step) come last, one result per
  // argument in the same order; the kernel's signature relies on it.
  auto roleOf = [](DictionaryAttr attrs) -> std::optional<StateRole> {
    auto role = attrs ? attrs.getAs<StringAttr>(kStateAttr) : StringAttr();
    if (!role)
      return std::nullopt;
    if (role.getValue() == "parameter")
      return StateRole::Parameter;
    if (role.getValue() == "moment")
      return StateRole::Moment;
    if (role.getValue() == "step")
      return StateRole::Step;
    return StateRole(0);
  };
  for (unsigned i = 0; i < fnTy.getNumInputs(); ++i) {
    std::optional<StateRole> role = roleOf(func.getArgAttrDict(i));
    if (role && *role == StateRole(0))
      return func.emitOpError("expects '")
             << kStateAttr << "' to be parameter, moment or step on argument #"
             << i;
    if (!role && !info.state.empty())
      return func.emitOpError("expects the state arguments after all "
                              "others, found argument #")
             << i << " after them";
    if (role) {
      StateTensor st;
      if (failed(describe(fnTy.getInput(i), func.getArgAttrDict(i),
                          "state" + std::to_string(info.state.size()), st)))
        return failure();
      st.role = *role;
      if (auto init =
              func.getArgAttrOfType<ElementsAttr>(i, kInitialValueAttr)) {
        if (init.getType() != fnTy.getInput(i))
          return func.emitOpError("expects the initial value of '")
                 << st.name << "' to have type " << fnTy.getInput(i)
                 << ", found " << init.getType();
        if (auto dense = dyn_cast<DenseElementsAttr>(init)) {
          ArrayRef<char> raw = dense.getRawData();
          if (dense.isSplat() &&
              raw.size() * init.getNumElements() == st.sizeBytes)
            for (int64_t e = 0; e < init.getNumElements(); ++e)
              st.initialData.append(raw.begin(), raw.end());
          else
            st.initialData.assign(raw.begin(), raw.end());
        } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
          if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
            st.initialData.assign(blob->getData().begin(),
                                  blob->getData().end());
        }
        if (st.initialData.size() != st.sizeBytes)
          return func.emitOpError("cannot read the initial value of '")
                 << st.name << "' as " << st.sizeBytes << " bytes";
      }
      info.state.push_back(std::move(st));
      continue;
    }
    TensorSignature sig;
    if (failed(describe(fnTy.getInput(i), func.getArgAttrDict(i),
                        "input" + std::to_string(i), sig)))
      return failure();
    info.inputs.push_back(std::move(sig));
  }
  size_t stateResults = 0;
  for (unsigned i = 0; i < fnTy.getNumResults(); ++i) {
    if (roleOf(func.getResultAttrDict(i))) {
      // The k-th state result is the new value of the k-th state argument.
      const StateTensor *st = stateResults < info.state.size()
                                  ? &info.state[stateResults]
                                  : nullptr;
      auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
      if (!st ||
          fnTy.getResult(i) !=
              fnTy.getInput(fnTy.getNumInputs() - info.state.size() +
                            stateResults) ||
          !name || name.getValue() != st->name)
        return func.emitOpError("expects state result #")
               << i << " to be the new value of state argument '"
               << (st ? st->name : std::string("?"))
               << "', with its name and type";
      ++stateResults;
      continue;
    }
    if (stateResults > 0)
      return func.emitOpError("expects the state results after all others, "
                              "found result #")
             << i << " after them";
    TensorSignature sig;
    if (failed(describe(fnTy.getResult(i), func.getResultAttrDict(i),
                        "output" + std::to_string(i), sig)))
      return failure();
    info.outputs.push_back(std::move(sig));
  }
  if (stateResults != info.state.size())
    return func.emitOpError("expects a state result for each of the ")
           << info.state.size() << " state arguments, found " << stateResults;
  // The layout: each tensor at the next multiple of the alignment.
  uint64_t end = 0;
  for (StateTensor &st : info.state) {
    st.offset = llvm::alignTo(end, info.stateAlignment);
    end = st.offset + st.sizeBytes;
  }
  info.stateBytes = llvm::alignTo(end, info.stateAlignment);
  return success();
}

std::vector<int64_t> kiln::dimsProgram(const TensorSignature &t,
                                       const std::vector<DimSymbol> &symbols) {
  return sizePrograms(t.dims, symbols);
}

std::vector<int64_t> kiln::sizePrograms(const std::vector<std::string> &sizes,
                                        const std::vector<DimSymbol> &symbols) {
  std::vector<int64_t> program;
  auto index = [&](const std::string &name) {
    for (auto [i, s] : llvm::enumerate(symbols))
      if (s.name == name)
        return static_cast<int64_t>(i);
    return int64_t(-1); // refused by the runtime's reader
  };
  using Codes = std::vector<int64_t>;
  auto join = [](Codes a, const Codes &b, int64_t op) {
    a.insert(a.end(), b.begin(), b.end());
    a.push_back(op);
    return a;
  };
  for (const std::string &text : sizes) {
    std::optional<DimExpr> e = DimExpr::parse(text);
    Codes codes =
        e ? e->fold<Codes>(
                [](int64_t c) {
                  return Codes{0, c};
                },
                [&](const std::string &name) {
                  return Codes{1, index(name)};
                },
                [&](Codes a, Codes b) { return join(std::move(a), b, 2); },
                [&](Codes a, Codes b) { return join(std::move(a), b, 3); },
                [](Codes a, int64_t divisor, bool ceiling) {
                  a.push_back(ceiling ? 5 : 4);
                  a.push_back(divisor);
                  return a;
                })
          : Codes{};
    program.push_back(static_cast<int64_t>(codes.size()));
    program.insert(program.end(), codes.begin(), codes.end());
  }
  return program;
}

/// A size expression as C over `dims[i]` (sizes are not negative, so
/// floor division is C's).
static std::string cSizeExpr(const DimExpr &e,
                             const std::vector<DimSymbol> &symbols) {
  return e.fold<std::string>(
      [](int64_t c) { return "(int64_t)" + std::to_string(c); },
      [&](const std::string &name) {
        for (auto [i, s] : llvm::enumerate(symbols))
          if (s.name == name)
            return "dims[" + std::to_string(i) + "]";
        return std::string("0");
      },
      [](std::string a, std::string b) { return "(" + a + " + " + b + ")"; },
      [](std::string a, std::string b) { return "(" + a + " * " + b + ")"; },
      [](std::string a, int64_t d, bool ceiling) {
        std::string divisor = "(int64_t)" + std::to_string(d);
        return ceiling ? "((" + a + " + " + divisor + " - 1) / " + divisor + ")"
                       : "(" + a + " / " + divisor + ")";
      });
}

/// `<name>_arena_bytes(dims)`: the largest arena term at the run's sizes
/// (decision 0027, step 4), for callers who allocate per size.
static void printArenaBytesFunction(llvm::raw_ostream &os,
                                    const ArtifactInfo &info,
                                    const std::string &macro) {
  os << "/* The arena bytes a run at dims needs (at most " << macro
     << "_ARENA_BYTES; the plan's\n"
     << " * buffers keep their offsets and end sooner at smaller sizes). "
        "dims must lie in\n"
     << " * the ranges. */\n"
     << "static inline uint64_t " << info.name
     << "_arena_bytes(const int64_t *dims) {\n"
     << "  int64_t most = 0, term;\n";
  for (const std::string &text : info.arenaTerms) {
    std::optional<DimExpr> e = DimExpr::parse(text);
    os << "  term = " << (e ? cSizeExpr(*e, info.symbols) : "0") << ";\n"
       << "  most = term > most ? term : most;\n";
  }
  os << "  return (uint64_t)most;\n}\n\n";
}

static std::string shapeText(const std::vector<int64_t> &shape, char sep) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? std::string(1, sep) : "") + std::to_string(shape[i]);
  return s;
}

static const char *dtypeName(int code) {
  static const char *names[] = {
      "invalid", "f32", "f16",      "bf16",       "f64",    "i8",
      "i32",     "i64", "bool",     "u8",         "u16",    "u32",
      "u64",     "i16", "f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz",
      "u4",      "i4",  "f4e2m1",   "f8e8m0",     "u2",     "i2"};
  return code >= 0 && code < static_cast<int>(std::size(names)) ? names[code]
                                                                : "invalid";
}

std::string kiln::emitHeader(const ArtifactInfo &info,
                             const CudaProgram *cuda) {
  std::string out;
  llvm::raw_string_ostream os(out);
  std::string macro = llvm::StringRef(info.name).upper();
  // The header names the descriptor it goes with: a header and an object
  // (or library) from different compiles are told apart at run time.
  std::string descriptor = buildDescriptor(info, cuda);
  auto matchCheck = [&] {
    os << "/* kiln_artifact_t.descriptor_checksum of the " << info.name
       << ".o / " << info.name << ".so this header was generated with,\n"
       << " * and whether the linked or loaded one is it (kilnc renames the "
          "header into place\n * last, so a header present means its object is "
          "there; a different compile's\n * object makes this 0). */\n"
       << "#define " << macro << "_DESCRIPTOR_CHECKSUM 0x"
       << llvm::format_hex_no_prefix(
              kiln_descriptor_checksum(descriptor.data(), descriptor.size()), 8)
       << "u\n"
       << "static inline int " << info.name
       << "_artifact_matches_header(void) {\n"
       << "  return " << info.name
       << "_artifact()->descriptor_checksum == " << macro
       << "_DESCRIPTOR_CHECKSUM;\n}\n\n";
  };
  os << "/* " << info.name << ".h - generated by kilnc; do not edit.\n"
     << " *\n";
  if (cuda) {
    std::string archs = cuda->gpuArch;
    for (const std::string &a : cuda->moreGpuArchs)
      archs += ", " + a;
    os << " * Target cuda, " << archs << " (cubin"
       << (cuda->moreGpuArchs.empty() ? "" : "s") << ") and newer than "
       << cuda->gpuArch << " (PTX). Link " << info.name
       << ".o, libkiln_runtime_cuda.a,\n"
       << " * libkiln_runtime.a and -ldl. Open the model once with\n"
       << " * kiln_cuda_model_open(" << info.name
       << "_artifact(), device, &model); every pointer below is\n"
       << " * device memory the caller owns: inputs are only read, outputs are "
          "written, and the\n"
       << " * device arena is scratch memory of " << macro
       << "_ARENA_BYTES bytes aligned to " << macro << "_ARENA_ALIGNMENT.\n"
       << " * A run enqueues its kernels on `stream` (replayed as a CUDA "
          "Graph from the\n"
       << " * second run with the same buffers) and allocates no device "
          "memory.\n"
       << " */\n";
  } else
    os << " * Link " << info.name << ".o (or " << info.name
       << ".so) and libm. The caller owns every buffer:\n"
       << " * inputs are only read, outputs are written, and the arena is "
          "scratch memory of\n"
       << " * " << macro << "_ARENA_BYTES bytes aligned to " << macro
       << "_ARENA_ALIGNMENT. Running never allocates.\n"
       << " * Several threads may run at once, each with its own arena.\n"
       << " */\n";
  os << "#ifndef KILN_GENERATED_" << macro << "_H\n"
     << "#define KILN_GENERATED_" << macro << "_H\n\n"
     << "#include <stdint.h>\n\n"
     << "#include <kiln/runtime.h>\n"
     << (cuda ? "#include <kiln/runtime_cuda.h>\n" : "") << "\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "#define " << macro << "_ARENA_BYTES " << info.arenaBytes
     << "ull /* planned at compile time */\n"
     << "#define " << macro << "_ARENA_LOWER_BOUND_BYTES "
     << info.arenaLowerBoundBytes
     << "ull /* max bytes live at any step, each buffer aligned */\n"
     << "#define " << macro << "_ARENA_ALIGNMENT " << info.arenaAlignment
     << "ull\n"
     << "#define " << macro << "_NUM_INPUTS " << info.inputs.size() << "\n"
     << "#define " << macro << "_NUM_OUTPUTS " << info.outputs.size() << "\n";
  if (cuda) {
    // The lowest architecture; a list names the others too.
    os << "#define " << macro << "_GPU_ARCH \"" << cuda->gpuArch << "\"\n";
    if (!cuda->moreGpuArchs.empty()) {
      os << "#define " << macro << "_GPU_ARCHS \"" << cuda->gpuArch;
      for (const std::string &a : cuda->moreGpuArchs)
        os << "," << a;
      os << "\"\n";
    }
  }
  os << "\n";

  if (!info.symbols.empty()) {
    os << "/* Symbolic dimensions: a run chooses each size within its range "
          "("
       << info.name << "_run_dims).\n"
       << " * Buffers and the arena are sized for the upper bounds; a run at "
          "smaller sizes\n"
       << " * reads and writes the leading elements of each buffer, dense "
          "and row-major\n"
       << " * at the run's sizes. */\n"
       << "#define " << macro << "_NUM_DIMS " << info.symbols.size() << "\n";
    if (llvm::any_of(info.symbols,
                     [](const DimSymbol &s) { return s.computed; }))
      os << "/* A computed dimension is a size the run computes from data "
            "(its MIN is 0):\n"
         << " * " << info.name
         << "_run_dims writes its value into its dims entry, and each "
            "output that\n"
         << " * uses it is written dense at that size. */\n";
    for (auto [i, sym] : llvm::enumerate(info.symbols)) {
      std::string id = llvm::StringRef(sanitizeIdentifier(sym.name)).upper();
      os << "#define " << macro << "_DIM_" << id << " " << i << " /* '"
         << sym.name << "', dims[" << i << "]"
         << (sym.computed ? ", computed by the run" : "") << " */\n"
         << "#define " << macro << "_DIM_" << id << "_MIN " << sym.lo << "\n"
         << "#define " << macro << "_DIM_" << id << "_MAX " << sym.hi << "\n";
    }
    os << "\n";
    if (!info.arenaTerms.empty())
      printArenaBytesFunction(os, info, macro);
  }

  auto describe = [&](const char *kind, size_t index, const TensorSignature &t,
                      const char *role = nullptr) {
    uint64_t elements = 1;
    for (int64_t d : t.shape)
      elements *= d;
    std::string dims;
    for (const std::string &d : t.dims)
      dims += (dims.empty() ? "" : ",") + d;
    os << "/* " << kind << " " << index << ": '" << t.name << "', "
       << dtypeName(t.dtype) << " ["
       << (dims.empty() ? shapeText(t.shape, ',') : dims) << "]"
       << (dims.empty() ? "" : ", at most [" + shapeText(t.shape, ',') + "]")
       << (role ? ", " : "") << (role ? role : "") << " */\n"
       << "#define " << macro << "_" << llvm::StringRef(t.cName).upper()
       << "_ELEMENTS " << elements << "\n";
  };
  for (size_t i = 0; i < info.inputs.size(); ++i)
    describe("input", i, info.inputs[i]);
  for (size_t i = 0; i < info.outputs.size(); ++i)
    describe("output", i, info.outputs[i]);
  if (!info.state.empty()) {
    os << "\n/* The training state: one caller-owned "
       << (cuda ? "device " : "") << "buffer of " << macro
       << "_STATE_BYTES bytes aligned to\n"
       << " * " << macro
       << "_STATE_ALIGNMENT, read and updated in place by every run. "
       << info.name << "_init_state\n"
       << " * fills " << (cuda ? "host memory" : "it")
       << " with the initial parameters, zero moments and step 0"
       << (cuda ? " (copy it to\n * the device)" : "") << ". Each tensor is\n"
       << " * dense, row-major, at its _OFFSET in bytes. */\n"
       << "#define " << macro << "_STATE_BYTES " << info.stateBytes << "ull\n"
       << "#define " << macro << "_STATE_ALIGNMENT " << info.stateAlignment
       << "ull\n"
       << "#define " << macro << "_NUM_STATE " << info.state.size() << "\n";
    static const char *roles[] = {"", "parameter", "moment", "step"};
    for (size_t i = 0; i < info.state.size(); ++i) {
      const StateTensor &t = info.state[i];
      describe("state", i, t, roles[static_cast<int>(t.role)]);
      os << "#define " << macro << "_" << llvm::StringRef(t.cName).upper()
         << "_OFFSET " << t.offset << "ull /* " << t.cType << " */\n";
    }
  }
  if (!info.buckets.empty())
    os << "\n/* A data-parallel step (kilnc --data-parallel): its gradients "
          "are "
          "averaged\n * over the ranks of an MPI run in "
       << info.buckets.size() << " bucket(s). Run through "
       << (cuda ? "kiln_cuda_model_run after\n * kiln_cuda_model_use_nccl"
                : "kiln_model_run_with_state after\n * kiln_model_set_comm")
       << " (docs/runtime-api.md); the typed entry runs it as the\n * only "
          "rank. */\n"
       << "#define " << macro << "_NUM_BUCKETS " << info.buckets.size() << "\n";

  if (cuda) {
    os << "\n/* The artifact, for kiln_cuda_model_open (kiln/runtime_cuda.h) "
          "and "
          "for\n * inspecting the signature with kiln_model_open. */\n"
       << "const kiln_artifact_t *" << info.name << "_artifact(void);\n\n"
       << "/* Enqueues the model on `stream` (a CUstream or cudaStream_t; NULL "
          "is the\n * default stream). Pointers are device pointers. Returns "
          "KILN_STATUS_OK, or the\n * status and kiln_last_error() of "
          "kiln_cuda_model_run. */\n";
    bool training = !info.state.empty();
    // The typed run; with symbols also the one at chosen sizes.
    auto entry = [&](bool withDims) {
      os << "static inline kiln_status_t " << info.name
         << (withDims ? "_run_dims" : "_run")
         << "(\n    kiln_cuda_model_t *model"
         << (withDims ? ", const int64_t *dims" : "");
      auto param = [&](const TensorSignature &t, bool isConst) {
        os << ",\n    " << (isConst ? "const " : "") << t.cType << " *"
           << t.cName << " /* " << shapeText(t.shape, 'x') << " */";
      };
      for (const TensorSignature &t : info.inputs)
        param(t, true);
      for (const TensorSignature &t : info.outputs)
        param(t, false);
      os << (training ? ",\n    void *device_state" : "")
         << ",\n    void *device_arena, void *stream) {\n";
      auto array = [&](const char *var,
                       const std::vector<TensorSignature> &ts) {
        if (ts.empty()) {
          os << "  void *const *" << var << " = 0;\n";
          return;
        }
        os << "  void *const " << var << "[] = {";
        for (size_t i = 0; i < ts.size(); ++i)
          os << (i ? ", " : "") << "(void *)" << ts[i].cName;
        os << "};\n";
      };
      array("inputs", info.inputs);
      array("outputs", info.outputs);
      std::string counts = std::to_string(info.inputs.size()) + ", outputs, " +
                           std::to_string(info.outputs.size());
      if (withDims)
        os << "  return kiln_cuda_model_run_dims(model, inputs, " << counts
           << ", device_arena, " << (training ? "device_state" : "0")
           << ", dims, stream);\n}\n\n";
      else if (training)
        os << "  return kiln_cuda_model_run_with_state(model, inputs, "
           << counts << ", device_arena, device_state, stream);\n}\n\n";
      else
        os << "  return kiln_cuda_model_run(model, inputs, " << counts
           << ", device_arena, stream);\n}\n\n";
    };
    entry(false);
    if (!info.symbols.empty()) {
      os << "/* The same at the sizes `dims` (" << macro
         << "_NUM_DIMS of them, each in its range; the\n * run above runs "
            "at the upper bounds): kiln_cuda_model_run_dims. */\n";
      entry(true);
    }
    if (training)
      os << "/* Writes the initial state into `state`, host memory of " << macro
         << "_STATE_BYTES bytes\n * aligned to " << macro
         << "_STATE_ALIGNMENT: the model's parameters, zero moments, step 0.\n"
         << " * Returns KILN_STATUS_INVALID_ARGUMENT when state is null or "
            "misaligned. */\n"
         << "kiln_status_t " << info.name << "_init_state(void *state);\n\n";
    matchCheck();
    os << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n"
       << "#endif /* KILN_GENERATED_" << macro << "_H */\n";
    return out;
  }
  if (info.state.empty())
    os << "\n/* Runs the model"
       << (info.symbols.empty() ? "" : " at the dimensions' upper bounds")
       << ". Returns KILN_STATUS_OK, or "
          "KILN_STATUS_INVALID_ARGUMENT when a\n"
       << " * pointer is null or the arena is misaligned. */\n";
  else
    os << "\n/* Runs one training step: reads the state, writes the outputs "
          "and the new state\n"
       << " * over the old one (in place where the step no longer reads it, "
          "else through\n"
       << " * the arena). Returns KILN_STATUS_OK, or\n"
       << " * KILN_STATUS_INVALID_ARGUMENT when a pointer is null or the "
          "state or arena is\n"
       << " * misaligned; the state is then untouched. */\n";
  // The typed entry; with symbols, also the one that takes their sizes.
  auto entry = [&](bool withDims) {
    os << "kiln_status_t " << info.name << (withDims ? "_run_dims(" : "_run(");
    bool first = true;
    if (withDims) {
      bool computed = llvm::any_of(
          info.symbols, [](const DimSymbol &s) { return s.computed; });
      os << "\n    " << (computed ? "" : "const ") << "int64_t *dims /* "
         << macro << "_NUM_DIMS sizes */";
      first = false;
    }
    auto param = [&](const TensorSignature &t, bool isConst) {
      std::string shape = shapeText(t.shape, 'x');
      if (!t.dims.empty()) {
        shape.clear();
        for (const std::string &d : t.dims)
          shape += (shape.empty() ? "" : " x ") + d;
      }
      os << (first ? "" : ",") << "\n    " << (isConst ? "const " : "")
         << t.cType << " *" << t.cName << " /* " << shape << " */";
      first = false;
    };
    for (const TensorSignature &t : info.inputs)
      param(t, true);
    for (const TensorSignature &t : info.outputs)
      param(t, false);
    if (!info.state.empty())
      os << (first ? "" : ",") << "\n    void *state";
    first = first && info.state.empty();
    os << (first ? "" : ",") << "\n    void *arena);\n\n";
  };
  entry(false);
  if (!info.symbols.empty()) {
    os << "/* Runs the model at the sizes dims[" << macro
       << "_DIM_...] (the _run above runs it at the\n"
       << " * upper bounds). Returns KILN_STATUS_INVALID_ARGUMENT, computing "
          "nothing, when\n"
       << " * dims is null or a size lies outside its range. */\n";
    entry(true);
  }
  if (!info.state.empty())
    os << "/* Writes the initial state: the model's parameters, zero moments, "
          "step 0.\n"
       << " * Returns KILN_STATUS_INVALID_ARGUMENT when state is null or "
          "misaligned. */\n"
       << "kiln_status_t " << info.name << "_init_state(void *state);\n\n";
  os << "/* The artifact for the generic API in kiln/runtime.h "
        "(kiln_model_open). */\n"
     << "const kiln_artifact_t *" << info.name << "_artifact(void);\n\n";
  matchCheck();
  os << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n"
     << "#endif /* KILN_GENERATED_" << macro << "_H */\n";
  return out;
}

void kiln::recordMemoryPlan(const MemoryPlan &plan, ArtifactInfo &info) {
  info.arenaBytes = plan.arenaBytes;
  info.arenaAlignment = plan.arenaAlignment;
  info.arenaLowerBoundBytes = plan.lowerBoundBytes;
  info.arenaNoReuseBytes = plan.noReuseBytes;
  info.planSteps = plan.steps;
  info.planPeakStep = plan.peakStep;
  info.plan = plan.buffers;
  info.arenaTerms = plan.arenaTerms;
  if (info.state.empty())
    return;
  // A training step writes the new state into the arena, past the planned
  // intermediates, and copies it over the state buffer at the end: the old
  // values may be read until the last op (docs/decisions/0008).
  info.stateScratchOffset =
      llvm::alignTo(info.arenaBytes, std::max<uint64_t>(info.arenaAlignment,
                                                        info.stateAlignment));
  info.arenaBytes = info.stateScratchOffset + info.stateBytes;
  info.arenaLowerBoundBytes += info.stateBytes;
  info.arenaNoReuseBytes += info.stateBytes;
  info.arenaAlignment =
      std::max<uint64_t>(info.arenaAlignment, info.stateAlignment);
  PlannedBuffer scratch;
  scratch.name = "new state";
  scratch.offset = info.stateScratchOffset;
  scratch.size = info.stateBytes;
  scratch.first = 0;
  scratch.last = info.planSteps ? info.planSteps - 1 : 0;
  info.plan.push_back(scratch);
  // The new state lies past the planned buffers: a run at any sizes
  // reaches its end.
  if (!info.arenaTerms.empty())
    info.arenaTerms = {std::to_string(info.arenaBytes)};
}

LogicalResult kiln::collectBuckets(func::FuncOp func, ArtifactInfo &info) {
  info.buckets.clear();
  WalkResult walked = func.walk([&](AllReduceOp op) {
    auto index = op->getAttrOfType<IntegerAttr>(kBucketAttr);
    if (!index || index.getInt() != static_cast<int64_t>(info.buckets.size())) {
      op.emitOpError("expects '")
          << kBucketAttr << "' = " << info.buckets.size()
          << " (buckets numbered in schedule order by kiln-bucket-all-reduce)";
      return WalkResult::interrupt();
    }
    AllReduceBucket bucket;
    for (Type type : op.getInputs().getTypes()) {
      auto tensor = cast<RankedTensorType>(type);
      bucket.dtype = tensor.getElementType().isF64() ? 4 : 1; // f64 : f32
      bucket.elements.push_back(static_cast<uint64_t>(tensor.getNumElements()));
    }
    info.buckets.push_back(std::move(bucket));
    return WalkResult::advance();
  });
  return failure(walked.wasInterrupted());
}

std::string kiln::buildDescriptor(const ArtifactInfo &info,
                                  const CudaProgram *cuda) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  auto tensors = [&](const std::vector<TensorSignature> &sigs) {
    std::vector<flatbuffers::Offset<fb::Tensor>> out;
    for (const TensorSignature &t : sigs) {
      // Static sizes leave the field out, as before it existed.
      std::vector<int64_t> dims = dimsProgram(t, info.symbols);
      out.push_back(fb::CreateTensorDirect(
          fbb, t.name.c_str(), static_cast<fb::DType>(t.dtype), &t.shape, 0,
          fb::StateRole::none, dims.empty() ? nullptr : &dims));
    }
    return out;
  };
  auto inputs = tensors(info.inputs);
  auto outputs = tensors(info.outputs);
  std::vector<flatbuffers::Offset<fb::Tensor>> state;
  for (const StateTensor &t : info.state)
    state.push_back(fb::CreateTensorDirect(
        fbb, t.name.c_str(), static_cast<fb::DType>(t.dtype), &t.shape,
        t.offset, static_cast<fb::StateRole>(t.role)));
  flatbuffers::Offset<fb::CudaModule> cudaModule;
  if (cuda) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> kernels;
    for (const CudaKernel &k : cuda->kernels)
      kernels.push_back(fbb.CreateString(k.name));
    std::vector<fb::CudaStep> steps;
    std::vector<fb::CudaArg> args;
    for (const CudaStep &s : cuda->steps) {
      // A gemm step names the gemm after the kernels (the schema's rule).
      uint32_t libraryCalls = uint32_t(cuda->kernels.size() +
                                       cuda->gemms.size() + cuda->convs.size());
      uint32_t kernel =
          s.gemm ? uint32_t(cuda->kernels.size()) + *s.gemm
          : s.conv
              ? uint32_t(cuda->kernels.size() + cuda->gemms.size()) + *s.conv
          : s.collective ? libraryCalls + *s.collective
                         : s.kernel;
      steps.emplace_back(kernel, s.grid, s.block, uint32_t(args.size()),
                         uint32_t(s.args.size()));
      for (const CudaArg &a : s.args)
        args.emplace_back(uint8_t(a.space), a.index, a.offset);
    }
    std::vector<uint8_t> cubin(cuda->cubin.begin(), cuda->cubin.end());
    std::vector<uint8_t> constants(cuda->constants.begin(),
                                   cuda->constants.end());
    // A single architecture leaves more_cubins out: the descriptor stays
    // what it was before the field existed.
    std::vector<flatbuffers::Offset<fb::CudaCubin>> more;
    for (size_t i = 0; i < cuda->moreCubins.size(); ++i) {
      std::vector<uint8_t> bytes(cuda->moreCubins[i].begin(),
                                 cuda->moreCubins[i].end());
      more.push_back(fb::CreateCudaCubinDirect(
          fbb, cuda->moreGpuArchs[i].c_str(), &bytes));
    }
    // Without gemm steps the field is left out, as before it existed.
    std::vector<fb::CudaGemm> gemms;
    for (const CudaGemm &g : cuda->gemms)
      gemms.emplace_back(g.m, g.n, g.k, g.lda, g.ldb, g.ldd, g.strideA,
                         g.strideB, g.strideD, g.batch,
                         static_cast<fb::DType>(g.dtype), g.transA, g.transB,
                         uint8_t(g.epilogue), g.accumulate, g.tf32,
                         static_cast<fb::DType>(g.dDtype), g.workspaceBytes);
    std::vector<fb::CudaConv> convs;
    for (const CudaConv &c : cuda->convs)
      convs.emplace_back(
          c.n, c.c, c.h, c.w, c.xStride[0], c.xStride[1], c.xStride[2],
          c.xStride[3], c.k, c.r, c.s, c.p, c.q, c.yStride[0], c.yStride[1],
          c.yStride[2], c.yStride[3], c.strideH, c.strideW, c.dilationH,
          c.dilationW, c.groups, static_cast<fb::DType>(c.dtype), c.tf32,
          uint8_t(c.epilogue | (c.residual ? 4 : 0)), c.workspaceBytes);
    // Likewise the paddings, unless a conv has one.
    std::vector<fb::CudaConvPad> convPads;
    if (llvm::any_of(cuda->convs, [](const CudaConv &c) {
          return c.padH != 0 || c.padW != 0;
        }))
      for (const CudaConv &c : cuda->convs)
        convPads.emplace_back(c.padH, c.padW);
    std::vector<fb::CudaCollective> collectives;
    for (const CudaCollective &c : cuda->collectives)
      collectives.emplace_back(c.bucket, c.wait ? 1u : 0u);
    cudaModule = fb::CreateCudaModuleDirect(
        fbb, cuda->gpuArch.c_str(), &kernels, &steps, &args, &cubin,
        cuda->ptx.c_str(), &constants, more.empty() ? nullptr : &more,
        gemms.empty() ? nullptr : &gemms, convs.empty() ? nullptr : &convs,
        cuda->ioAlignment, collectives.empty() ? nullptr : &collectives,
        convPads.empty() ? nullptr : &convPads);
  }
  // A model without state leaves the state fields out, so its descriptor
  // is the same as before they existed; likewise the kernel list.
  std::vector<flatbuffers::Offset<flatbuffers::String>> kernelNames;
  for (const std::string &k : info.kernelNames)
    kernelNames.push_back(fbb.CreateString(k));
  // Likewise the buckets, for anything but a data-parallel step.
  std::vector<uint32_t> bucketSizes;
  std::vector<fb::DType> bucketDtypes;
  std::vector<uint64_t> bucketElements;
  for (const AllReduceBucket &bucket : info.buckets) {
    bucketSizes.push_back(static_cast<uint32_t>(bucket.elements.size()));
    bucketDtypes.push_back(static_cast<fb::DType>(bucket.dtype));
    llvm::append_range(bucketElements, bucket.elements);
  }
  // Likewise the symbols, for a model of static sizes.
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbolNames;
  std::vector<int64_t> symbolRanges;
  for (const DimSymbol &s : info.symbols) {
    symbolNames.push_back(fbb.CreateString(s.name));
    symbolRanges.push_back(s.lo);
    symbolRanges.push_back(s.hi);
  }
  std::vector<int64_t> arenaTerms = sizePrograms(info.arenaTerms, info.symbols);
  auto model = fb::CreateModelDirect(
      fbb, /*format_version=*/1, info.name.c_str(), info.triple.c_str(),
      info.cpu.c_str(), "kilnc 0.1.0", &inputs, &outputs, info.arenaBytes,
      info.arenaAlignment, info.arenaLowerBoundBytes,
      info.state.empty() ? nullptr : &state, info.stateBytes,
      info.state.empty() ? 0 : info.stateAlignment, cudaModule,
      kernelNames.empty() ? nullptr : &kernelNames,
      info.kernelFlops.empty() ? nullptr : &info.kernelFlops,
      bucketSizes.empty() ? nullptr : &bucketSizes,
      bucketDtypes.empty() ? nullptr : &bucketDtypes,
      bucketElements.empty() ? nullptr : &bucketElements,
      symbolNames.empty() ? nullptr : &symbolNames,
      symbolRanges.empty() ? nullptr : &symbolRanges,
      arenaTerms.empty() ? nullptr : &arenaTerms,
      static_cast<uint32_t>(llvm::count_if(
          info.symbols, [](const DimSymbol &s) { return s.computed; })));
  fb::FinishModelBuffer(fbb, model);
  return std::string(reinterpret_cast<const char *>(fbb.GetBufferPointer()),
                     fbb.GetSize());
}

llvm::Function *kiln::emitInitState(llvm::Module &m, const ArtifactInfo &info) {
  if (info.state.empty())
    return nullptr;
  llvm::LLVMContext &context = m.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  llvm::PointerType *ptr = b.getPtrTy();
  llvm::Function *init = llvm::Function::Create(
      llvm::FunctionType::get(i32, {ptr}, false),
      llvm::GlobalValue::ExternalLinkage, info.name + "_init_state", &m);
  auto *entry = llvm::BasicBlock::Create(context, "entry", init);
  auto *bad = llvm::BasicBlock::Create(context, "invalid_argument", init);
  auto *good = llvm::BasicBlock::Create(context, "init", init);
  b.SetInsertPoint(entry);
  llvm::Value *state = init->getArg(0);
  llvm::Value *isNull = b.CreateIsNull(state);
  llvm::Value *low = b.CreateAnd(b.CreatePtrToInt(state, i64),
                                 b.getInt64(info.stateAlignment - 1));
  llvm::Value *misaligned = b.CreateICmpNE(low, b.getInt64(0));
  b.CreateCondBr(b.CreateOr(isNull, misaligned), bad, good);
  b.SetInsertPoint(bad);
  b.CreateRet(b.getInt32(1)); // KILN_STATUS_INVALID_ARGUMENT
  b.SetInsertPoint(good);
  b.CreateMemSet(state, b.getInt8(0), info.stateBytes,
                 llvm::Align(info.stateAlignment));
  for (auto [k, t] : llvm::enumerate(info.state)) {
    if (t.initialData.empty())
      continue;
    auto *data = llvm::ConstantDataArray::getRaw(
        t.initialData, t.initialData.size(), b.getInt8Ty());
    auto *global = new llvm::GlobalVariable(
        m, data->getType(), /*isConstant=*/true,
        llvm::GlobalValue::PrivateLinkage, data,
        info.name + "_initial_state_" + std::to_string(k));
    global->setAlignment(llvm::Align(64));
    llvm::Value *dst =
        b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), state, t.offset);
    b.CreateMemCpy(dst, llvm::Align(info.stateAlignment), global,
                   llvm::Align(64), t.initialData.size());
  }
  b.CreateRet(b.getInt32(0));
  return init;
}

void kiln::emitArtifactAccessor(llvm::Module &m, llvm::StringRef name,
                                llvm::StringRef descriptor,
                                llvm::Function *runPacked,
                                llvm::Constant *initState,
                                llvm::Function *runPackedParallel,
                                llvm::Function *runPackedProfiled,
                                llvm::Function *runPackedHooks) {
  llvm::LLVMContext &context = m.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  llvm::PointerType *ptr = b.getPtrTy();
  auto *descInit = llvm::ConstantDataArray::getRaw(
      descriptor, descriptor.size(), b.getInt8Ty());
  auto *descGlobal = new llvm::GlobalVariable(
      m, descInit->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, descInit, name + "_descriptor");
  descGlobal->setAlignment(llvm::Align(16));
  // kiln_artifact_t: abi_version, descriptor_checksum, descriptor,
  // descriptor_size, run_packed, init_state, run_packed_parallel,
  // run_packed_profiled, data_ranges, num_data_ranges, data_checksum
  // (attachDataChecksum fills these three once the module is optimized),
  // code_checksum (written into a linked shared library by sealSharedLibrary),
  // run_packed_hooks.
  llvm::StructType *artifactTy =
      llvm::StructType::get(context, {i32, i32, ptr, i64, ptr, ptr, ptr, ptr,
                                      ptr, i64, i64, i64, ptr});
  llvm::Constant *null = llvm::ConstantPointerNull::get(ptr);
  llvm::Constant *init = initState ? initState : null;
  llvm::Constant *parallel =
      runPackedParallel ? static_cast<llvm::Constant *>(runPackedParallel)
                        : null;
  auto *artifactInit = llvm::ConstantStruct::get(
      artifactTy,
      {b.getInt32(KILN_ABI_VERSION),
       b.getInt32(
           kiln_descriptor_checksum(descriptor.data(), descriptor.size())),
       descGlobal, b.getInt64(descriptor.size()), runPacked, init, parallel,
       runPackedProfiled ? static_cast<llvm::Constant *>(runPackedProfiled)
                         : null,
       null, b.getInt64(0), b.getInt64(0), b.getInt64(0),
       runPackedHooks ? static_cast<llvm::Constant *>(runPackedHooks) : null});
  // Internal, not private: the local symbol stays in the object's symbol
  // table, where sealSharedLibrary finds the struct after linking.
  auto *artifact = new llvm::GlobalVariable(
      m, artifactTy, /*isConstant=*/true, llvm::GlobalValue::InternalLinkage,
      artifactInit, name + "_artifact_data");
  artifact->setAlignment(llvm::Align(8));
  llvm::Function *getArtifact = llvm::Function::Create(
      llvm::FunctionType::get(ptr, false), llvm::GlobalValue::ExternalLinkage,
      name + "_artifact", &m);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", getArtifact));
  b.CreateRet(artifact);
}

/// The bytes of `c` as it lies in memory, for arrays (nested or not) of
/// numbers and zero-initialized aggregates; false for anything else
/// (pointers, structs with padding), which the checksum then leaves out.
static bool constantBytes(const llvm::Constant *c,
                          const llvm::DataLayout &layout, std::string &out) {
  if (auto *data = llvm::dyn_cast<llvm::ConstantDataSequential>(c)) {
    llvm::StringRef raw = data->getRawDataValues();
    out.append(raw.data(), raw.size());
    return true;
  }
  if (llvm::isa<llvm::ConstantAggregateZero>(c)) {
    out.append(layout.getTypeAllocSize(c->getType()).getFixedValue(), '\0');
    return true;
  }
  if (auto *array = llvm::dyn_cast<llvm::ConstantArray>(c)) {
    for (const llvm::Use &element : array->operands())
      if (!constantBytes(llvm::cast<llvm::Constant>(element.get()), layout,
                         out))
        return false;
    return true;
  }
  return false;
}

void kiln::attachDataChecksum(
    llvm::Module &m, llvm::StringRef name,
    const llvm::StringMap<llvm::StringRef> *declared) {
  llvm::GlobalVariable *artifact =
      m.getNamedGlobal((name + "_artifact_data").str());
  if (!artifact || !artifact->hasInitializer())
    return;
  auto *init = llvm::dyn_cast<llvm::ConstantStruct>(artifact->getInitializer());
  // Fields 8..10 are the ranges, their count and their checksum (ABI 5);
  // the fields after them (ABI 6 on) are kept as they are.
  if (!init || init->getNumOperands() < 12)
    return;
  const llvm::DataLayout &layout = m.getDataLayout();
  llvm::LLVMContext &context = m.getContext();
  llvm::IRBuilder<> b(context);
  llvm::PointerType *ptr = b.getPtrTy();
  llvm::StructType *rangeTy =
      llvm::StructType::get(context, {ptr, b.getInt64Ty()});
  std::string descriptorName = (name + "_descriptor").str();
  std::vector<llvm::Constant *> ranges;
  std::vector<kiln_data_range_t> views;
  // Bytes of initializers that are not one flat array; a flat one (the
  // weights) is hashed where LLVM holds it.
  std::deque<std::string> assembled;
  for (llvm::GlobalVariable &g : m.globals()) {
    if (!g.isConstant() || &g == artifact || g.getName() == descriptorName)
      continue;
    llvm::StringRef data;
    if (!g.hasInitializer()) {
      if (!declared || !declared->contains(g.getName()))
        continue;
      data = declared->lookup(g.getName());
    } else if (auto *flat = llvm::dyn_cast<llvm::ConstantDataSequential>(
                   g.getInitializer())) {
      data = flat->getRawDataValues();
    } else {
      std::string &copy = assembled.emplace_back();
      if (!constantBytes(g.getInitializer(), layout, copy))
        continue;
      data = copy;
    }
    if (data.empty() ||
        data.size() !=
            layout.getTypeAllocSize(g.getValueType()).getFixedValue())
      continue;
    ranges.push_back(
        llvm::ConstantStruct::get(rangeTy, {&g, b.getInt64(data.size())}));
    views.push_back({data.data(), data.size()});
  }
  if (ranges.empty())
    return;
  uint64_t checksum = kiln_data_checksum(views.data(), views.size());
  auto *tableTy = llvm::ArrayType::get(rangeTy, ranges.size());
  auto *table = new llvm::GlobalVariable(
      m, tableTy, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantArray::get(tableTy, ranges), name + "_data_ranges");
  table->setAlignment(llvm::Align(8));
  std::vector<llvm::Constant *> fields;
  for (unsigned i = 0; i < 8; ++i)
    fields.push_back(init->getOperand(i));
  fields.push_back(table);
  fields.push_back(b.getInt64(ranges.size()));
  fields.push_back(b.getInt64(checksum));
  for (unsigned i = 11; i < init->getNumOperands(); ++i)
    fields.push_back(init->getOperand(i));
  artifact->setInitializer(llvm::ConstantStruct::get(init->getType(), fields));
}

llvm::Error kiln::sealSharedLibrary(llvm::StringRef path,
                                    llvm::StringRef name) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot seal '" + path + "': " + why);
  };
  // Mapped, not copied: only the headers, the symbol table and the code
  // are read, not the weights (a model's size in memory).
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  auto file = llvm::object::ELF64LEFile::create(bytes);
  if (!file)
    return fail(llvm::toString(file.takeError()));
  auto headers = file->program_headers();
  if (!headers)
    return fail(llvm::toString(headers.takeError()));
  // The code: the one executable PT_LOAD (the runtime hashes the one that
  // holds run_packed, so there must be no choice).
  const llvm::object::ELF64LE::Phdr *code = nullptr;
  for (const auto &ph : *headers) {
    if (ph.p_type != llvm::ELF::PT_LOAD || !(ph.p_flags & llvm::ELF::PF_X))
      continue;
    if (code)
      return fail("the linker wrote more than one executable segment");
    code = &ph;
  }
  if (!code || code->p_offset + code->p_filesz > bytes.size())
    return fail("no executable segment inside the file");
  // The struct, by its local symbol.
  auto sections = file->sections();
  if (!sections)
    return fail(llvm::toString(sections.takeError()));
  std::string symbol = (name + "_artifact_data").str();
  std::optional<uint64_t> structOffset;
  for (const auto &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_SYMTAB)
      continue;
    auto symbols = file->symbols(&section);
    auto strings = file->getStringTableForSymtab(section);
    if (!symbols || !strings)
      return fail("unreadable symbol table");
    for (const auto &sym : *symbols) {
      auto symName = sym.getName(*strings);
      if (!symName || *symName != symbol)
        continue;
      auto home = file->getSection(sym.st_shndx);
      if (!home || (*home)->sh_type == llvm::ELF::SHT_NOBITS ||
          sym.st_value < (*home)->sh_addr ||
          sym.st_size < sizeof(kiln_artifact_t))
        return fail("'" + symbol + "' is not a kiln_artifact_t in the file");
      structOffset = (*home)->sh_offset + (sym.st_value - (*home)->sh_addr);
    }
  }
  if (!structOffset)
    return fail("no symbol '" + symbol + "'");
  uint64_t field = *structOffset + offsetof(kiln_artifact_t, code_checksum);
  if (field + 8 > bytes.size() ||
      (field + 8 > code->p_offset && field < code->p_offset + code->p_filesz))
    return fail("the artifact's code_checksum field is not outside the code");
  kiln_data_range_t range = {bytes.data() + code->p_offset, code->p_filesz};
  // (A checksum of 0 reads as "not sealed": one code in 2^64 goes unchecked.)
  uint64_t checksum = kiln_data_checksum(&range, 1);
  char value[8];
  llvm::support::endian::write64le(value, checksum);
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForReadWrite(
          path, fd, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_None))
    return fail(ec.message());
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out.seek(field);
  out.write(value, sizeof value);
  out.close();
  if (out.has_error()) {
    std::string why = out.error().message();
    out.clear_error();
    return fail(why);
  }
  return llvm::Error::success();
}

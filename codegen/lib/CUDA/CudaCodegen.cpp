//===- CudaCodegen.cpp - kiln dialect to CUDA C kernels and steps ---------===//
//
// Lowering shares the CPU path up to the memory plan (kiln -> linalg on
// tensors -> one-shot bufferization with out-params -> kiln-plan-memory), then
// generalizes every named linalg op so that each top-level op is a
// linalg.generic on memrefs. A direct printer (docs/decisions/0011) turns
// each into one CUDA C kernel: the parallel loops become a grid-stride loop
// over their flattened index, reduction loops run inside each thread, and the
// payload is printed statement by statement. Top-level loops that are not
// linalg (scatter, top-k) become single-thread kernels. Every memref is traced
// to its root (an input, an output, the arena or a constant) with a static
// offset and strides, so kernels take plain base pointers and the step list
// is fixed at compile time.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Codegen/Passes.h"
#include "kiln/Codegen/Pipelines.h"

#include "CudaLibraryCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>

using namespace mlir;
using namespace kiln;

bool kiln::isValidGpuArch(StringRef arch) {
  if (!arch.consume_front("sm_") || arch.empty() || arch.size() > 4)
    return false;
  unsigned value;
  // NVRTC 12 and 13 compile for sm_75 and newer.
  return !arch.getAsInteger(10, value) && value >= 75;
}

bool kiln::parseGpuArchs(StringRef list, std::vector<std::string> &archs,
                         std::string &bad) {
  SmallVector<StringRef> items;
  list.split(items, ',');
  archs.clear();
  for (StringRef item : items) {
    item = item.trim();
    if (!isValidGpuArch(item)) {
      bad = item.str();
      return false;
    }
    archs.push_back(item.str());
  }
  auto number = [](const std::string &a) {
    unsigned v = 0;
    StringRef(a).drop_front(3).getAsInteger(10, v);
    return v;
  };
  llvm::sort(archs, [&](const std::string &a, const std::string &b) {
    return number(a) < number(b);
  });
  archs.erase(std::unique(archs.begin(), archs.end(),
                          [&](const std::string &a, const std::string &b) {
                            return number(a) == number(b);
                          }),
              archs.end());
  return true;
}

namespace {

/// A memref traced to its root: element (i0, ..., in) lives at
/// base + byteOffset + sizeof(T) * (offset + sum(ik * strides[k])).
struct BufferRef {
  CudaSpace space = CudaSpace::Input;
  bool constant = false; ///< in kiln_constants, not a kernel parameter
  uint32_t index = 0;
  int64_t byteOffset = 0;
  int64_t offset = 0;
  SmallVector<int64_t> strides;
  Type elementType;
};

/// The C type of a value of type `t`, or "" if the CUDA printer lacks it.
/// f16 and bf16 values compute in float, rounded after every op as LLVM
/// promotes them; only their storage is 16 bits (storageType).
std::string cType(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16())
    return "float";
  if (t.isF64())
    return "double";
  if (t.isIndex())
    return "int64_t";
  if (auto i = dyn_cast<IntegerType>(t)) {
    unsigned w = i.getWidth();
    if (w == 1)
      return "bool";
    if (w != 8 && w != 16 && w != 32 && w != 64)
      return "";
    return (i.isUnsigned() ? "uint" : "int") + std::to_string(w) + "_t";
  }
  return "";
}

/// The C type of a stored element.
std::string storageType(Type t) {
  return t.isF16() || t.isBF16() ? "uint16_t" : cType(t);
}

/// Wraps an expression of type `t` computed in float so that it rounds to t.
std::string rounded(Type t, const std::string &expr) {
  if (t.isF16())
    return "kiln_round_f16(" + expr + ")";
  if (t.isBF16())
    return "kiln_round_bf16(" + expr + ")";
  return expr;
}

/// A stored element read as a value, and a value as it is stored.
std::string loaded(Type t, const std::string &element) {
  if (t.isF16())
    return "kiln_f16_to_f32(" + element + ")";
  if (t.isBF16())
    return "kiln_bf16_to_f32(" + element + ")";
  return element;
}
std::string toStored(Type t, const std::string &value) {
  if (t.isF16())
    return "kiln_f32_to_f16(" + value + ")";
  if (t.isBF16())
    return "kiln_f32_to_bf16(" + value + ")";
  return value;
}

/// The unsigned C type of the same width (for wrapping arithmetic).
std::string unsignedType(Type t) {
  if (t.isIndex())
    return "uint64_t";
  if (auto i = dyn_cast<IntegerType>(t))
    return i.getWidth() == 1 ? "bool" : "uint" + std::to_string(i.getWidth()) + "_t";
  return cType(t);
}

std::string floatLiteral(const APFloat &value, Type type) {
  bool isF32 = !type.isF64();
  if (value.isFinite()) {
    double d = value.convertToDouble();
    char buf[64];
    snprintf(buf, sizeof buf, isF32 ? "%.9g" : "%.17g", d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos)
      s += ".0";
    return isF32 ? s + "f" : s;
  }
  // inf and nan by their bits: the printed form would not round-trip.
  APInt bits = value.bitcastToAPInt();
  if (isF32) {
    bool lossy;
    APFloat single = value;
    single.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lossy);
    bits = single.bitcastToAPInt();
    return "__int_as_float(0x" + llvm::utohexstr(bits.getZExtValue()) + ")";
  }
  return "__longlong_as_double(0x" + llvm::utohexstr(bits.getZExtValue()) + "LL)";
}

std::string intLiteral(const APInt &value, Type type) {
  std::string ty = cType(type);
  if (type.isInteger(1))
    return value.isZero() ? "false" : "true";
  if (isa<IntegerType>(type) && cast<IntegerType>(type).isUnsigned())
    return "((" + ty + ")" + std::to_string(value.getZExtValue()) + "ULL)";
  int64_t v = value.getSExtValue();
  if (v == INT64_MIN)
    return "((" + ty + ")(-9223372036854775807LL - 1))";
  return "((" + ty + ")" + std::to_string(v) + "LL)";
}

/// Launch geometry of `total` independent work items.
constexpr uint32_t kBlock = 256;
constexpr int64_t kMaxGrid = 4096;
/// Reductions of at least this many elements per output element get a
/// block of threads each (a warp's worth); shorter ones run in one thread.
constexpr int64_t kMinBlockReduction = 32;
/// ... unless there are this many output elements: a thread each then
/// fills the GPU already (a quarter of an H100's resident threads), and a
/// contraction's neighbouring threads read neighbouring weights.
constexpr int64_t kMaxBlockReductionPoints = 65536;

/// How the iterations of a linalg.generic map to threads.
enum class Mapping {
  Serial,  ///< one thread runs every loop
  Threads, ///< one thread per point of the parallel dims; inner loops inside
  Block,   ///< one block per point of the parallel dims: its threads split
           ///< the reduction and combine partials in shared memory
};

/// One kernel's launch: grid x block threads over `work` iterations (none:
/// no launch).
struct Launch {
  int64_t work = 0;
  uint32_t grid = 1, block = 1;
  bool synchronizes = false;
};

/// Bytes [lo, hi) of one root (an input, an output, the arena, or the
/// constants).
struct ByteRange {
  CudaSpace space;
  uint32_t index;
  bool constant;
  int64_t lo, hi;
  bool overlaps(const ByteRange &o) const {
    return space == o.space && index == o.index && constant == o.constant &&
           lo < o.hi && o.lo < hi;
  }
};

struct GenericPlan;

/// Prints the kernels of one function and records the steps.
class CudaPrinter {
public:
  CudaPrinter(func::FuncOp func, const ArtifactInfo &info, CudaProgram &program,
              const CudaCodegenOptions &options)
      : func(func), info(info), numInputs(info.inputs.size()),
        numOutputs(info.outputs.size()), numState(info.state.size()),
        program(program), options(options),
        line(1 + llvm::count(program.source, '\n')) {}

  LogicalResult run();

private:
  // --- buffers ---------------------------------------------------------
  FailureOr<BufferRef> resolve(Value memref, Operation *user);
  FailureOr<int64_t> constantOffset(memref::GetGlobalOp get);
  std::string pointer(const BufferRef &ref);
  std::string element(const BufferRef &ref, ArrayRef<std::string> indices);

  // --- statements ------------------------------------------------------
  std::string fresh() { return "v" + std::to_string(nextValue++); }
  std::string name(Value v);
  LogicalResult printOp(Operation *op, llvm::raw_ostream &os, int indent);
  LogicalResult printBlock(Block &block, llvm::raw_ostream &os, int indent);
  LogicalResult printExpr(Operation *op, std::string &expr);
  std::string affine(AffineExpr e, ArrayRef<std::string> dims);

  // --- kernels ---------------------------------------------------------
  LogicalResult printGeneric(linalg::GenericOp op);
  /// The literal a fill (a generic storing one constant everywhere) stores,
  /// or "" for any other generic.
  std::string fillValue(linalg::GenericOp op);
  /// Whether `consumer`, the next generic after `producer`, can run in
  /// producer's kernel on each output element instead of its store.
  bool isEpilogue(linalg::GenericOp producer, linalg::GenericOp consumer);
  std::optional<ByteRange> byteRange(Value memref, Operation *user);
  /// Whether no memref input of `op` shares bytes with `written` (a kernel
  /// or library call writing there while `op`'s inputs are still read).
  bool inputsApartFrom(linalg::GenericOp op, const ByteRange &written);
  /// Reads `input` of `op` at the point `dims` into a fresh variable (a
  /// scalar operand is named where it is used).
  LogicalResult loadInput(linalg::GenericOp op, OpOperand *input,
                          ArrayRef<std::string> dims, llvm::raw_ostream &os,
                          const std::string &pad);
  /// Stores output `output` of `op` (value `value` at index `idx`), or runs
  /// the epilogue on it.
  LogicalResult storeResult(linalg::GenericOp op, unsigned output,
                            const BufferRef &ref, ArrayRef<std::string> idx,
                            const std::string &value, llvm::raw_ostream &os,
                            int indent);
  LogicalResult printSerial(Operation *op);
  /// How many consecutive points of the innermost parallel loop one thread
  /// of `op` takes, so that its accesses can be 16-byte vectors; 1 when
  /// they cannot.
  unsigned vectorWidth(linalg::GenericOp op, const GenericPlan &plan);
  /// Prints elementwise `op` with `width` consecutive points a thread: every
  /// point's loads first, then every point's payload, then every store, so
  /// that NVRTC merges each operand's loads and stores into 16-byte ones.
  LogicalResult printVectorized(linalg::GenericOp op, const GenericPlan &plan,
                                unsigned width);
  /// Records `op` as a cuBLASLt step when it is a matrix product cuBLASLt
  /// runs, with `epilogue` as cuBLASLt's epilogue when it has that one
  /// (else `epilogue` is cleared, to be printed as a kernel of its own):
  /// true when it did, false (`epilogue` kept) to print `op` as a kernel.
  bool emitGemm(linalg::GenericOp op);
  /// Records `op` as a cuDNN step when it is a 2-d convolution cuDNN runs,
  /// starting from a +0.0 fill, with `next` (the generic after it) as its
  /// epilogue when that is a bias (+ relu) only it reads: true when it did
  /// (and `epilogue` is `next` when taken).
  bool emitConv(linalg::GenericOp op, linalg::GenericOp next);
  /// The bias (+ relu) `next` applies to conv `op`'s output, as cuDNN's
  /// epilogue: its kind, and `y` and `bias` set to where it writes and what
  /// it adds; nothing when `next` is not such an epilogue.
  std::optional<CudaGemm::Epilogue> convEpilogue(linalg::GenericOp op,
                                                 linalg::GenericOp next,
                                                 int64_t channels, BufferRef &y,
                                                 BufferRef &bias);
  /// A traced buffer as a library call's argument.
  static CudaArg argOf(const BufferRef &ref);
  void finishKernel(Operation *op, const std::string &body,
                    const Launch &launch);

  func::FuncOp func;
  const ArtifactInfo &info;
  size_t numInputs, numOutputs, numState;
  CudaProgram &program;
  const CudaCodegenOptions &options;
  llvm::MapVector<Attribute, int64_t> constantOffsets;

  /// A fill left out because the next kernel starts its output from the
  /// fill's value instead of reading it (startsFromFill).
  struct {
    Value buffer;
    std::string value;
    bool zero = false; ///< the value is +0.0 (a product may start from beta 0)
  } fill;
  /// The generic printed inside the current kernel on each output element
  /// (isEpilogue), or null.
  linalg::GenericOp epilogue;

  // Per-kernel state.
  /// The kernel's accesses are vectorized: its parameters are 16-byte
  /// aligned (the arena 256), which the runtime checks of the caller's.
  bool alignedParams = false;
  DenseMap<Value, std::string> names;
  std::set<std::pair<CudaSpace, uint32_t>> params;
  unsigned nextValue = 0;
  std::string kernelSource;
  unsigned line = 1;
};

} // namespace

FailureOr<int64_t> CudaPrinter::constantOffset(memref::GetGlobalOp get) {
  // Keyed by the global: several get_globals of one constant share its bytes.
  auto it = constantOffsets.find(get.getNameAttr());
  if (it != constantOffsets.end())
    return it->second;
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  if (!global || !global.getInitialValue())
    return get.emitOpError("expects a global with an initial value"), failure();
  auto type = global.getType();
  Type elt = type.getElementType();
  std::string bytes;
  Attribute init = *global.getInitialValue();
  int64_t n = type.getNumElements();
  if (elt.isInteger(1)) {
    auto dense = dyn_cast<DenseElementsAttr>(init);
    if (!dense)
      return get.emitOpError("cuda: unsupported boolean constant"), failure();
    for (bool b : dense.getValues<bool>())
      bytes += char(b ? 1 : 0);
  } else if (auto dense = dyn_cast<DenseElementsAttr>(init)) {
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat())
      for (int64_t i = 0; i < n; ++i)
        bytes.append(raw.data(), raw.size());
    else
      bytes.assign(raw.data(), raw.size());
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return get.emitOpError("cuda: constant data is missing"), failure();
    ArrayRef<char> raw = blob->getData();
    bytes.assign(raw.data(), raw.size());
  } else {
    return get.emitOpError("cuda: unsupported constant ") << init, failure();
  }
  // 256-byte pieces: any vector access the kernels make stays aligned.
  program.constants.resize(llvm::alignTo(program.constants.size(), 256), '\0');
  int64_t offset = program.constants.size();
  program.constants += bytes;
  constantOffsets[get.getNameAttr()] = offset;
  return offset;
}

FailureOr<BufferRef> CudaPrinter::resolve(Value memref, Operation *user) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || !type.hasStaticShape())
    return user->emitOpError("cuda: expects statically shaped memrefs, found ")
               << memref.getType(),
           failure();
  BufferRef ref;
  ref.elementType = type.getElementType();
  if (cType(ref.elementType).empty())
    return user->emitOpError("cuda: element type ")
               << ref.elementType << " is not supported yet",
           failure();
  if (failed(type.getStridesAndOffset(ref.strides, ref.offset)) ||
      ref.offset == ShapedType::kDynamic ||
      llvm::is_contained(ref.strides, ShapedType::kDynamic))
    return user->emitOpError("cuda: expects a static layout, found ") << type,
           failure();
  // Views keep their base and state their offset in the layout; a
  // memref.view starts a new base at a byte shift of the arena.
  Value v = memref;
  while (true) {
    Operation *def = v.getDefiningOp();
    if (!def)
      break;
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
      if (!shift)
        return user->emitOpError("cuda: expects a constant arena offset"),
               failure();
      ref.byteOffset += *shift;
      v = view.getSource();
      continue;
    }
    if (auto get = dyn_cast<memref::GetGlobalOp>(def)) {
      auto offset = constantOffset(get);
      if (failed(offset))
        return failure();
      ref.constant = true;
      ref.byteOffset += *offset;
      return ref;
    }
    if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::ReinterpretCastOp, memref::CastOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    return user->emitOpError("cuda: cannot trace a buffer through '")
               << def->getName() << "'",
           failure();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner()->getParentOp() != func.getOperation())
    return user->emitOpError("cuda: buffer is not an argument of the function"),
           failure();
  // The arguments: inputs, old state, outputs, new state, arena. The old
  // state is the state buffer; the new state is written into the arena
  // past the planned buffers (stateScratchOffset), laid out like it.
  unsigned n = arg.getArgNumber();
  if (n < numInputs) {
    ref.space = CudaSpace::Input;
    ref.index = n;
  } else if (n < numInputs + numState) {
    ref.space = CudaSpace::State;
    ref.byteOffset += info.state[n - numInputs].offset;
  } else if (n < numInputs + numState + numOutputs) {
    ref.space = CudaSpace::Output;
    ref.index = n - numInputs - numState;
  } else if (n < numInputs + 2 * numState + numOutputs) {
    ref.space = CudaSpace::Arena;
    ref.byteOffset += info.stateScratchOffset +
                      info.state[n - numInputs - numState - numOutputs].offset;
  } else {
    ref.space = CudaSpace::Arena;
    ref.index = 0;
  }
  return ref;
}

static std::string paramName(CudaSpace space, uint32_t index) {
  switch (space) {
  case CudaSpace::Input: return "in" + std::to_string(index);
  case CudaSpace::Output: return "out" + std::to_string(index);
  case CudaSpace::Arena: return "arena";
  case CudaSpace::Constants: return "kiln_constants";
  case CudaSpace::State: return "state";
  }
  return "";
}

std::string CudaPrinter::pointer(const BufferRef &ref) {
  // A root becomes a kernel parameter where an address in it is printed
  // (a result an epilogue consumes in registers never is).
  if (!ref.constant)
    params.insert({ref.space, ref.index});
  std::string base = ref.constant ? "kiln_constants"
                                  : paramName(ref.space, ref.index);
  std::string p = "(" + storageType(ref.elementType) + " *)(" + base;
  if (ref.byteOffset)
    p += " + " + std::to_string(ref.byteOffset);
  return "(" + p + "))";
}

std::string CudaPrinter::element(const BufferRef &ref,
                                 ArrayRef<std::string> indices) {
  std::string index = std::to_string(ref.offset);
  for (size_t k = 0; k < indices.size(); ++k) {
    if (ref.strides[k] == 0)
      continue;
    index += " + " + indices[k];
    if (ref.strides[k] != 1)
      index += " * " + std::to_string(ref.strides[k]);
  }
  return pointer(ref) + "[" + index + "]";
}

std::string CudaPrinter::name(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  // Constants defined outside the kernel (index constants at the top
  // level) are printed where they are used.
  if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
    if (auto i = dyn_cast<IntegerAttr>(cst.getValue()))
      return intLiteral(i.getValue(), i.getType());
    if (auto f = dyn_cast<FloatAttr>(cst.getValue()))
      return floatLiteral(f.getValue(), f.getType());
  }
  return "";
}

std::string CudaPrinter::affine(AffineExpr e, ArrayRef<std::string> dims) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dims[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return "(int64_t)" + std::to_string(c.getValue());
  auto bin = cast<AffineBinaryOpExpr>(e);
  std::string l = affine(bin.getLHS(), dims), r = affine(bin.getRHS(), dims);
  switch (e.getKind()) {
  case AffineExprKind::Add: return "(" + l + " + " + r + ")";
  case AffineExprKind::Mul: return "(" + l + " * " + r + ")";
  case AffineExprKind::Mod: return "kiln_mod(" + l + ", " + r + ")";
  case AffineExprKind::FloorDiv: return "kiln_floordiv(" + l + ", " + r + ")";
  case AffineExprKind::CeilDiv: return "kiln_ceildiv(" + l + ", " + r + ")";
  default: return "";
  }
}

static const char *cmpfText(arith::CmpFPredicate p) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse: return "false";
  case P::OEQ: return "(A == B)";
  case P::OGT: return "(A > B)";
  case P::OGE: return "(A >= B)";
  case P::OLT: return "(A < B)";
  case P::OLE: return "(A <= B)";
  case P::ONE: return "(A < B || A > B)";
  case P::ORD: return "(A == A && B == B)";
  case P::UEQ: return "!(A < B || A > B)";
  case P::UGT: return "!(A <= B)";
  case P::UGE: return "!(A < B)";
  case P::ULT: return "!(A >= B)";
  case P::ULE: return "!(A > B)";
  case P::UNE: return "(A != B)";
  case P::UNO: return "(A != A || B != B)";
  case P::AlwaysTrue: return "true";
  }
  return "false";
}

static std::string substitute(StringRef pattern, const std::string &a,
                              const std::string &b) {
  std::string out;
  for (char c : pattern)
    out += c == 'A' ? a : c == 'B' ? b : std::string(1, c);
  return out;
}

/// The C expression of a pure scalar op, or failure if it has none.
LogicalResult CudaPrinter::printExpr(Operation *op, std::string &expr) {
  auto arg = [&](unsigned i) { return name(op->getOperand(i)); };
  Type resTy = op->getNumResults() ? op->getResult(0).getType() : Type();
  std::string ty = resTy ? cType(resTy) : "";
  std::string uty = resTy ? unsignedType(resTy) : "";
  bool f32 = resTy && (resTy.isF32() || resTy.isF16() || resTy.isBF16());
  auto call = [&](StringRef fn) {
    std::string s = fn.str() + (f32 ? "f(" : "(");
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      s += (i ? ", " : "") + arg(i);
    return s + ")";
  };
  auto binary = [&](StringRef sym) {
    return "(" + arg(0) + " " + sym.str() + " " + arg(1) + ")";
  };
  // Integer add, sub, mul and shl wrap: computed unsigned.
  auto wrapping = [&](StringRef sym) {
    return "(" + ty + ")((" + uty + ")" + arg(0) + " " + sym.str() + " (" +
           uty + ")" + arg(1) + ")";
  };
  auto srcUnsigned = [&](unsigned i) {
    return "(" + unsignedType(op->getOperand(i).getType()) + ")" + arg(i);
  };

  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    expr = name(cst.getResult());
    return success(!expr.empty());
  }
  if (isa<arith::AddFOp>(op)) expr = binary("+");
  else if (isa<arith::SubFOp>(op)) expr = binary("-");
  else if (isa<arith::MulFOp>(op)) expr = binary("*");
  else if (isa<arith::DivFOp>(op)) expr = binary("/");
  else if (isa<arith::RemFOp>(op)) expr = call("fmod");
  else if (isa<arith::NegFOp>(op)) expr = "(-" + arg(0) + ")";
  else if (isa<arith::AddIOp>(op)) expr = wrapping("+");
  else if (isa<arith::SubIOp>(op)) expr = wrapping("-");
  else if (isa<arith::MulIOp>(op)) expr = wrapping("*");
  else if (isa<arith::ShLIOp>(op)) expr = wrapping("<<");
  else if (isa<arith::DivSIOp>(op)) expr = binary("/");
  else if (isa<arith::RemSIOp>(op)) expr = binary("%");
  else if (isa<arith::DivUIOp>(op)) expr = "(" + ty + ")(" + srcUnsigned(0) + " / " + srcUnsigned(1) + ")";
  else if (isa<arith::RemUIOp>(op)) expr = "(" + ty + ")(" + srcUnsigned(0) + " % " + srcUnsigned(1) + ")";
  else if (isa<arith::ShRSIOp>(op)) expr = binary(">>");
  else if (isa<arith::ShRUIOp>(op)) expr = "(" + ty + ")(" + srcUnsigned(0) + " >> " + arg(1) + ")";
  else if (isa<arith::AndIOp>(op)) expr = "(" + ty + ")" + binary("&");
  else if (isa<arith::OrIOp>(op)) expr = "(" + ty + ")" + binary("|");
  else if (isa<arith::XOrIOp>(op)) expr = "(" + ty + ")" + binary("^");
  else if (isa<arith::MaxSIOp>(op)) expr = "(" + arg(0) + " > " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")";
  else if (isa<arith::MinSIOp>(op)) expr = "(" + arg(0) + " < " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")";
  else if (isa<arith::MaxUIOp>(op)) expr = "(" + srcUnsigned(0) + " > " + srcUnsigned(1) + " ? " + arg(0) + " : " + arg(1) + ")";
  else if (isa<arith::MinUIOp>(op)) expr = "(" + srcUnsigned(0) + " < " + srcUnsigned(1) + " ? " + arg(0) + " : " + arg(1) + ")";
  else if (isa<arith::MaximumFOp>(op)) expr = "kiln_maximum(" + arg(0) + ", " + arg(1) + ")";
  else if (isa<arith::MinimumFOp>(op)) expr = "kiln_minimum(" + arg(0) + ", " + arg(1) + ")";
  else if (isa<arith::MaxNumFOp>(op)) expr = call("fmax");
  else if (isa<arith::MinNumFOp>(op)) expr = call("fmin");
  else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    bool isUnsigned = cmp.getPredicate() == P::ult || cmp.getPredicate() == P::ule ||
                      cmp.getPredicate() == P::ugt || cmp.getPredicate() == P::uge;
    std::string a = isUnsigned ? srcUnsigned(0) : arg(0);
    std::string b = isUnsigned ? srcUnsigned(1) : arg(1);
    const char *sym = "==";
    switch (cmp.getPredicate()) {
    case P::eq: sym = "=="; break;
    case P::ne: sym = "!="; break;
    case P::slt: case P::ult: sym = "<"; break;
    case P::sle: case P::ule: sym = "<="; break;
    case P::sgt: case P::ugt: sym = ">"; break;
    case P::sge: case P::uge: sym = ">="; break;
    }
    expr = "(" + a + " " + sym + " " + b + ")";
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    expr = substitute(cmpfText(cmp.getPredicate()), arg(0), arg(1));
  } else if (isa<arith::SelectOp>(op)) {
    if (!op->getOperand(0).getType().isInteger(1))
      return failure();
    expr = "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  } else if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::FPToSIOp,
                 arith::ExtSIOp, arith::IndexCastOp>(op)) {
    expr = "(" + ty + ")" + arg(0);
  } else if (isa<arith::TruncIOp>(op)) {
    expr = resTy.isInteger(1) ? "(bool)(" + arg(0) + " & 1)" : "(" + ty + ")" + arg(0);
  } else if (isa<arith::ExtUIOp, arith::UIToFPOp, arith::IndexCastUIOp>(op)) {
    expr = "(" + ty + ")" + srcUnsigned(0);
  } else if (isa<arith::FPToUIOp>(op)) {
    expr = "(" + ty + ")(" + uty + ")" + arg(0);
  } else if (isa<arith::BitcastOp>(op)) {
    Type from = op->getOperand(0).getType();
    if (from.isF16() || from.isBF16())
      expr = "(" + ty + ")" + toStored(from, arg(0));
    else if (resTy.isF16() || resTy.isBF16())
      expr = loaded(resTy, "(uint16_t)" + arg(0));
    else
      expr = "kiln_bitcast<" + ty + ">(" + arg(0) + ")";
  } else if (isa<math::AbsIOp>(op)) {
    expr = "(" + arg(0) + " < 0 ? (" + ty + ")-" + arg(0) + " : " + arg(0) + ")";
  } else if (isa<math::IsNaNOp>(op)) {
    expr = "isnan(" + arg(0) + ")";
  } else if (isa<math::IsInfOp>(op)) {
    expr = "isinf(" + arg(0) + ")";
  } else if (isa<math::IsFiniteOp>(op)) {
    expr = "isfinite(" + arg(0) + ")";
  } else if (isa<math::FPowIOp, math::IPowIOp>(op)) {
    expr = "kiln_powi(" + arg(0) + ", (int64_t)" + arg(1) + ")";
  } else if (isa<math::CountLeadingZerosOp, math::CountTrailingZerosOp,
                 math::CtPopOp>(op)) {
    unsigned width = resTy.getIntOrFloatBitWidth();
    std::string fn = isa<math::CountLeadingZerosOp>(op)    ? "kiln_clz"
                     : isa<math::CountTrailingZerosOp>(op) ? "kiln_ctz"
                                                           : "kiln_popc";
    expr = "(" + ty + ")" + fn + "((uint64_t)(" + uty + ")" + arg(0) + ", " +
           std::to_string(width) + ")";
  } else {
    static const std::pair<StringRef, StringRef> mathFns[] = {
        {"math.exp", "exp"},     {"math.exp2", "exp2"},   {"math.expm1", "expm1"},
        {"math.log", "log"},     {"math.log2", "log2"},   {"math.log10", "log10"},
        {"math.log1p", "log1p"}, {"math.sqrt", "sqrt"},   {"math.rsqrt", "rsqrt"},
        {"math.cbrt", "cbrt"},   {"math.tanh", "tanh"},   {"math.sin", "sin"},
        {"math.cos", "cos"},     {"math.tan", "tan"},     {"math.asin", "asin"},
        {"math.acos", "acos"},   {"math.atan", "atan"},   {"math.atan2", "atan2"},
        {"math.sinh", "sinh"},   {"math.cosh", "cosh"},   {"math.asinh", "asinh"},
        {"math.acosh", "acosh"}, {"math.atanh", "atanh"}, {"math.erf", "erf"},
        {"math.erfc", "erfc"},   {"math.floor", "floor"}, {"math.ceil", "ceil"},
        {"math.round", "round"}, {"math.roundeven", "rint"},
        {"math.trunc", "trunc"}, {"math.absf", "fabs"},   {"math.copysign", "copysign"},
        {"math.fma", "fma"},     {"math.powf", "pow"}};
    StringRef opName = op->getName().getStringRef();
    for (auto [mlirName, fn] : mathFns)
      if (opName == mlirName) {
        if (!f32 && !resTy.isF64())
          return failure();
        expr = call(fn);
        return success();
      }
    return failure();
  }
  return success();
}

LogicalResult CudaPrinter::printBlock(Block &block, llvm::raw_ostream &os,
                                      int indent) {
  for (Operation &op : block.without_terminator())
    if (failed(printOp(&op, os, indent)))
      return failure();
  return success();
}

LogicalResult CudaPrinter::printOp(Operation *op, llvm::raw_ostream &os,
                                   int indent) {
  std::string pad(indent, ' ');
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    std::string v = fresh();
    os << pad << "int64_t " << v << " = d" << index.getDim() << ";\n";
    names[index.getResult()] = v;
    return success();
  }
  // Views only compute addresses, resolved where they are used.
  if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
          memref::ReinterpretCastOp, memref::CastOp, memref::ViewOp>(op))
    return success();
  if (op->getNumResults() == 1 && op->getNumRegions() == 0 &&
      isMemoryEffectFree(op)) {
    Type t = op->getResult(0).getType();
    std::string ty = cType(t), expr;
    if (ty.empty())
      return op->emitOpError("cuda: type ") << t << " is not supported yet";
    if (failed(printExpr(op, expr)))
      return op->emitOpError("cuda: no CUDA C form for this op yet");
    if (!isa<arith::ConstantOp>(op))
      expr = rounded(t, expr);
    std::string v = fresh();
    os << pad << ty << " " << v << " = " << expr << ";\n";
    names[op->getResult(0)] = v;
    return success();
  }
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    auto ref = resolve(load.getMemRef(), op);
    if (failed(ref))
      return failure();
    SmallVector<std::string> idx;
    for (Value i : load.getIndices())
      idx.push_back(name(i));
    std::string v = fresh();
    os << pad << cType(ref->elementType) << " " << v << " = "
       << loaded(ref->elementType, element(*ref, idx)) << ";\n";
    names[load.getResult()] = v;
    return success();
  }
  if (auto store = dyn_cast<memref::StoreOp>(op)) {
    auto ref = resolve(store.getMemRef(), op);
    if (failed(ref))
      return failure();
    SmallVector<std::string> idx;
    for (Value i : store.getIndices())
      idx.push_back(name(i));
    os << pad << element(*ref, idx) << " = "
       << toStored(ref->elementType, name(store.getValue())) << ";\n";
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    SmallVector<std::string> vars;
    for (auto [init, result] :
         llvm::zip(loop.getInitArgs(), loop.getResults())) {
      std::string ty = cType(result.getType());
      if (ty.empty())
        return op->emitOpError("cuda: type ") << result.getType()
                                              << " is not supported yet";
      std::string v = fresh();
      os << pad << ty << " " << v << " = " << name(init) << ";\n";
      vars.push_back(v);
    }
    std::string iv = fresh();
    os << pad << "for (int64_t " << iv << " = " << name(loop.getLowerBound())
       << "; " << iv << " < " << name(loop.getUpperBound()) << "; " << iv
       << " += " << name(loop.getStep()) << ") {\n";
    names[loop.getInductionVar()] = iv;
    for (auto [arg, v] : llvm::zip(loop.getRegionIterArgs(), vars))
      names[arg] = v;
    if (failed(printBlock(*loop.getBody(), os, indent + 2)))
      return failure();
    // Yielded values go through temporaries: one may be another's iter arg.
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    SmallVector<std::string> temps;
    for (Value y : yield.getOperands()) {
      std::string t = fresh();
      os << pad << "  " << cType(y.getType()) << " " << t << " = " << name(y)
         << ";\n";
      temps.push_back(t);
    }
    for (auto [v, t] : llvm::zip(vars, temps))
      os << pad << "  " << v << " = " << t << ";\n";
    os << pad << "}\n";
    for (auto [result, v] : llvm::zip(loop.getResults(), vars))
      names[result] = v;
    return success();
  }
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    SmallVector<std::string> vars;
    for (Value result : ifOp.getResults()) {
      std::string ty = cType(result.getType());
      if (ty.empty())
        return op->emitOpError("cuda: type ") << result.getType()
                                              << " is not supported yet";
      std::string v = fresh();
      os << pad << ty << " " << v << ";\n";
      vars.push_back(v);
      names[result] = v;
    }
    auto branch = [&](Region &region) -> LogicalResult {
      Block &block = region.front();
      if (failed(printBlock(block, os, indent + 2)))
        return failure();
      for (auto [v, y] : llvm::zip(vars, block.getTerminator()->getOperands()))
        os << pad << "  " << v << " = " << name(y) << ";\n";
      return success();
    };
    os << pad << "if (" << name(ifOp.getCondition()) << ") {\n";
    if (failed(branch(ifOp.getThenRegion())))
      return failure();
    if (!ifOp.getElseRegion().empty()) {
      os << pad << "} else {\n";
      if (failed(branch(ifOp.getElseRegion())))
        return failure();
    }
    os << pad << "}\n";
    return success();
  }
  return op->emitOpError("cuda: no CUDA C form for this op yet");
}

void CudaPrinter::finishKernel(Operation *op, const std::string &body,
                               const Launch &launch) {
  std::string kname = "k" + std::to_string(program.kernels.size());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// " << op->getName() << " at ";
  op->getLoc().print(os);
  os << "\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << kBlock << ") "
     << kname << "(";
  CudaStep step;
  step.kernel = program.kernels.size();
  bool first = true;
  for (auto [space, index] : params) {
    os << (first ? "" : ", ") << "char *__restrict__ " << paramName(space, index);
    first = false;
    step.args.push_back({space, index, 0});
  }
  os << ") {\n";
  for (auto [space, index] : params)
    if (alignedParams) {
      std::string name = paramName(space, index);
      os << "  " << name << " = KILN_ALIGNED(" << name << ", "
         << (space == CudaSpace::Arena ? 256 : 16) << ");\n";
      program.ioAlignment = std::max<uint32_t>(program.ioAlignment,
                                               space == CudaSpace::Arena ? 1 : 16);
    }
  os << body << "}\n\n";
  unsigned lines = llvm::count(text, '\n');
  program.kernels.push_back(
      {kname, op->getLoc(), line, line + lines - 1, launch.synchronizes});
  line += lines;
  program.source += text;
  step.grid = launch.grid;
  step.block = launch.block;
  // A kernel over no elements is not launched at all.
  if (launch.work > 0)
    program.steps.push_back(std::move(step));
}

/// The value `e` with combiner(e, x) == x for every x, or "" when `op` is
/// not a combiner a block reduction knows.
static std::string combinerIdentity(Operation *op) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1)
    return "";
  Type t = op->getResult(0).getType();
  if (isa<FloatType>(t)) {
    // f16 and bf16 compute in float.
    const llvm::fltSemantics &sem =
        t.isF64() ? APFloat::IEEEdouble() : APFloat::IEEEsingle();
    std::optional<APFloat> e;
    if (isa<arith::AddFOp>(op))
      e = APFloat::getZero(sem, /*Negative=*/true);
    else if (isa<arith::MulFOp>(op))
      e = APFloat(sem, 1);
    else if (isa<arith::MaximumFOp>(op))
      e = APFloat::getInf(sem, /*Negative=*/true);
    else if (isa<arith::MinimumFOp>(op))
      e = APFloat::getInf(sem, /*Negative=*/false);
    else if (isa<arith::MaxNumFOp, arith::MinNumFOp>(op))
      e = APFloat::getQNaN(sem); // fmax and fmin ignore a NaN operand
    return e ? floatLiteral(*e, t) : "";
  }
  auto it = dyn_cast<IntegerType>(t);
  if (!it)
    return "";
  unsigned w = it.getWidth();
  std::optional<APInt> e;
  if (isa<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(op))
    e = APInt::getZero(w);
  else if (isa<arith::MulIOp>(op))
    e = APInt(w, 1);
  else if (isa<arith::AndIOp, arith::MinUIOp>(op))
    e = APInt::getAllOnes(w);
  else if (isa<arith::MaxSIOp>(op))
    e = APInt::getSignedMinValue(w);
  else if (isa<arith::MinSIOp>(op))
    e = APInt::getSignedMaxValue(w);
  return e ? intLiteral(*e, t) : "";
}

namespace {
/// An output of a block reduction: the payload yields combiner(acc, x)
/// and reads the output's value `acc` nowhere else.
struct BlockReduction {
  unsigned output;
  Operation *combiner;
  std::string identity;
};
} // namespace

/// The outputs of `op` as block reductions, or nothing when its threads
/// cannot split the inner loops: every output must either combine into one
/// element per point of the parallel dims (`reduced`), or be written at one
/// element per iteration without being read (`perIteration`).
static std::optional<SmallVector<BlockReduction>>
blockReductions(linalg::GenericOp op, const llvm::SmallBitVector &innerDims) {
  SmallVector<BlockReduction> reductions;
  Block &payload = op.getRegion().front();
  Operation *yield = payload.getTerminator();
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    bool usesInner = llvm::any_of(map.getResults(), [&](AffineExpr e) {
      return llvm::any_of(innerDims.set_bits(),
                          [&](unsigned d) { return e.isFunctionOfDim(d); });
    });
    if (usesInner) {
      // Distinct iterations write distinct elements.
      if (!map.isPermutation() || !acc.use_empty())
        return std::nullopt;
      continue;
    }
    Value yielded = yield->getOperand(i);
    Operation *combiner = yielded.getDefiningOp();
    if (!acc.hasOneUse() || !combiner || combiner->getBlock() != &payload ||
        *acc.getUsers().begin() != combiner || !yielded.hasOneUse())
      return std::nullopt;
    std::string identity = combinerIdentity(combiner);
    if (identity.empty())
      return std::nullopt;
    reductions.push_back({unsigned(i), combiner, identity});
  }
  if (reductions.empty())
    return std::nullopt;
  return reductions;
}

namespace {
/// How one linalg.generic becomes a kernel.
struct GenericPlan {
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> parallel, inner;
  llvm::SmallBitVector innerDims;
  int64_t points = 1, innerPoints = 1;
  Mapping mapping = Mapping::Threads;
  SmallVector<BlockReduction> reductions; ///< for Mapping::Block
  /// Whether output `i` is read and written at every iteration (its map
  /// uses an inner dim) rather than accumulated per point.
  bool perIteration(linalg::GenericOp op, unsigned i) const {
    if (mapping == Mapping::Serial)
      return true;
    AffineMap map = op.getMatchingIndexingMap(op.getDpsInitOperand(i));
    return llvm::any_of(map.getResults(), [&](AffineExpr e) {
      return llvm::any_of(innerDims.set_bits(),
                          [&](unsigned d) { return e.isFunctionOfDim(d); });
    });
  }
};
} // namespace

/// Threads take the points of the parallel dims when every output holds one
/// element per point (so no two threads write one element); otherwise one
/// thread runs every loop (correct, and rare). A long enough reduction whose
/// outputs all combine with a known combiner gets a block per point.
static GenericPlan planGeneric(linalg::GenericOp op) {
  GenericPlan plan;
  plan.ranges = op.getStaticLoopRanges();
  unsigned numDims = plan.ranges.size();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < numDims; ++d)
    (iterators[d] == utils::IteratorType::parallel ? plan.parallel : plan.inner)
        .push_back(d);
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!llvm::all_of(plan.parallel, [&](unsigned d) {
          return map.getResultPosition(getAffineDimExpr(d, op.getContext()))
              .has_value();
        })) {
      plan.inner.clear();
      plan.parallel.clear();
      for (unsigned k = 0; k < numDims; ++k)
        plan.inner.push_back(k);
      break;
    }
  }
  plan.innerDims.resize(numDims);
  for (unsigned d : plan.inner)
    plan.innerDims.set(d);
  for (unsigned d : plan.parallel)
    plan.points *= plan.ranges[d];
  for (unsigned d : plan.inner)
    plan.innerPoints *= plan.ranges[d];
  plan.mapping = plan.parallel.empty() && !plan.inner.empty()
                     ? Mapping::Serial
                     : Mapping::Threads;
  if (plan.mapping == Mapping::Threads &&
      plan.innerPoints >= kMinBlockReduction &&
      plan.points < kMaxBlockReductionPoints) {
    if (auto reductions = blockReductions(op, plan.innerDims)) {
      plan.mapping = Mapping::Block;
      plan.reductions = std::move(*reductions);
    }
  }
  return plan;
}

/// The constant a fill (a generic storing one constant everywhere) stores,
/// or null for any other generic.
static Value fillConstant(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation())
    return Value();
  Block &payload = op.getRegion().front();
  if (!llvm::hasSingleElement(payload))
    return Value();
  Value y = payload.getTerminator()->getOperand(0);
  if (auto arg = dyn_cast<BlockArgument>(y)) {
    if (arg.getArgNumber() >= op.getNumDpsInputs())
      return Value();
    y = op.getDpsInputOperand(arg.getArgNumber())->get();
  }
  return y.getDefiningOp<arith::ConstantOp>() ? y : Value();
}

std::string CudaPrinter::fillValue(linalg::GenericOp op) {
  Value c = fillConstant(op);
  return c ? name(c) : "";
}

/// Whether `v` is `root` or a view made from it.
static bool isViewOf(Value v, Value root) {
  while (v != root) {
    Operation *def = v.getDefiningOp();
    if (!isa_and_nonnull<memref::SubViewOp, memref::ExpandShapeOp,
                         memref::CollapseShapeOp, memref::ReinterpretCastOp,
                         memref::CastOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return true;
}

/// Whether `consumer` can start output `buffer` from a fill's value instead
/// of reading what the fill stored: it accumulates into that output per
/// point, writes every element of it, and reads the buffer nowhere else
/// (no input is the buffer or a view of it, no load in the payload).
static bool startsFromFill(linalg::GenericOp consumer, Value buffer) {
  if (llvm::any_of(consumer.getDpsInputs(),
                   [&](Value in) { return isViewOf(in, buffer); }) ||
      consumer.getRegion()
          .walk([](memref::LoadOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return false;
  GenericPlan plan = planGeneric(consumer);
  if (plan.points == 0)
    return false;
  for (auto [i, init] : llvm::enumerate(consumer.getDpsInits()))
    if (init == buffer)
      return !plan.perIteration(consumer, i) &&
             consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(i))
                 .isProjectedPermutation();
  return false;
}

/// The users of `v` and of the views made from it (the views left out).
static void collectViewUsers(Value v, SmallVectorImpl<Operation *> &users) {
  for (Operation *user : v.getUsers()) {
    if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::ReinterpretCastOp, memref::CastOp>(user))
      collectViewUsers(user->getResult(0), users);
    else
      users.push_back(user);
  }
}

/// The bytes [lo, hi) a memref can touch in its root, or nothing when it
/// cannot be traced.
std::optional<ByteRange> CudaPrinter::byteRange(Value memref, Operation *user) {
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  auto ref = resolve(memref, user);
  if (failed(ref))
    return std::nullopt;
  auto type = cast<MemRefType>(memref.getType());
  int64_t size = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  ByteRange range{ref->space, ref->index, ref->constant, 0, 0};
  if (type.getNumElements() == 0)
    return range;
  int64_t last = ref->offset;
  for (auto [extent, stride] : llvm::zip(type.getShape(), ref->strides)) {
    if (stride < 0)
      return std::nullopt;
    last += (extent - 1) * stride;
  }
  range.lo = ref->byteOffset + size * ref->offset;
  range.hi = ref->byteOffset + size * (last + 1);
  return range;
}

bool CudaPrinter::isEpilogue(linalg::GenericOp producer, linalg::GenericOp consumer) {
  // One output, accumulated per point, in the arena (a model output must be
  // stored), read by the consumer alone, through one permutation map.
  // Elementwise producers are kiln-fuse's to merge (and --no-fuse keeps
  // them apart); this is for what it leaves: a contraction's or a
  // reduction's elementwise consumer (the CPU's tile epilogues, 0015).
  if (producer.getNumDpsInits() != 1 || producer.getNumReductionLoops() == 0 ||
      consumer.getNumReductionLoops() != 0 || consumer.getNumDpsInits() == 0)
    return false;
  GenericPlan plan = planGeneric(producer);
  if (plan.perIteration(producer, 0) ||
      llvm::any_of(plan.ranges, ShapedType::isDynamic) ||
      llvm::any_of(consumer.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  Value result = producer.getDpsInits()[0];
  auto range = byteRange(result, producer);
  if (!range || range->space != CudaSpace::Arena || range->constant)
    return false;
  // Read through one permutation map (x * x reads it twice, the same way).
  OpOperand *read = nullptr;
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    if (in->get() != result)
      continue;
    if (read && consumer.getMatchingIndexingMap(read) !=
                    consumer.getMatchingIndexingMap(in))
      return false;
    read = in;
  }
  if (!read || !consumer.getMatchingIndexingMap(read).isPermutation() ||
      llvm::any_of(consumer.getDpsInits(), [&](Value out) { return out == result; }))
    return false;
  // Nothing after the producer reads the result but the consumer (the
  // fill before it writes it; a load nested in a loop counts at its loop).
  SmallVector<Operation *> users;
  collectViewUsers(result, users);
  Block &body = func.getBody().front();
  for (Operation *user : users) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (user == producer || user == consumer ||
        (top && top != producer && top != consumer &&
         top->isBeforeInBlock(producer)))
      continue;
    return false;
  }
  // linalg.index in the consumer would name the producer's loops; and
  // reads through memref.load (gathers) escape the overlap check below.
  if (!consumer.getRegion().front().getOps<linalg::IndexOp>().empty())
    return false;
  for (linalg::GenericOp g : {producer, consumer})
    if (g.getRegion()
            .walk([](memref::LoadOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      return false;
  // A thread writes the consumer's outputs while other threads still read
  // the producer's inputs: no output may share bytes with an input.
  for (Value out : consumer.getDpsInits()) {
    auto o = byteRange(out, consumer);
    if (!o || !inputsApartFrom(producer, *o))
      return false;
  }
  return true;
}

bool CudaPrinter::inputsApartFrom(linalg::GenericOp op, const ByteRange &written) {
  for (Value in : op.getDpsInputs()) {
    if (!isa<MemRefType>(in.getType()))
      continue;
    auto r = byteRange(in, op);
    if (!r || r->overlaps(written))
      return false;
  }
  return true;
}

LogicalResult CudaPrinter::loadInput(linalg::GenericOp op, OpOperand *input,
                                     ArrayRef<std::string> dims,
                                     llvm::raw_ostream &os,
                                     const std::string &pad) {
  BlockArgument arg = op.getMatchingBlockArgument(input);
  if (!isa<MemRefType>(input->get().getType())) {
    names[arg] = name(input->get());
    if (names[arg].empty())
      return op.emitOpError("cuda: expects memref or constant inputs");
    return success();
  }
  auto ref = resolve(input->get(), op);
  if (failed(ref))
    return failure();
  SmallVector<std::string> idx;
  for (AffineExpr e : op.getMatchingIndexingMap(input).getResults())
    idx.push_back(affine(e, dims));
  std::string v = fresh();
  os << pad << cType(ref->elementType) << " " << v << " = "
     << loaded(ref->elementType, element(*ref, idx)) << ";\n";
  names[arg] = v;
  return success();
}

LogicalResult CudaPrinter::storeResult(linalg::GenericOp op, unsigned output,
                                       const BufferRef &ref,
                                       ArrayRef<std::string> idx,
                                       const std::string &value,
                                       llvm::raw_ostream &os, int indent) {
  std::string pad(indent, ' ');
  if (!epilogue || output != 0) {
    os << pad << element(ref, idx) << " = " << toStored(ref.elementType, value)
       << ";\n";
    return success();
  }
  // The epilogue's point is the producer's output element: its loops are
  // named by the producer's output index through the permutation map.
  linalg::GenericOp consumer = epilogue;
  Value result = op.getDpsInits()[0];
  SmallVector<std::string> dims(consumer.getNumLoops());
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    if (in->get() != result)
      continue;
    for (auto [p, e] : llvm::enumerate(consumer.getMatchingIndexingMap(in).getResults()))
      dims[cast<AffineDimExpr>(e).getPosition()] = "(" + idx[p] + ")";
  }
  os << pad << "{ // the epilogue at " ;
  consumer.getLoc().print(os);
  os << "\n";
  std::string ipad = pad + "  ";
  Block &payload = consumer.getRegion().front();
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    BlockArgument arg = consumer.getMatchingBlockArgument(in);
    if (arg.use_empty())
      continue;
    if (in->get() == result) {
      // Rounded as the store and load it replaces would round it.
      std::string v = fresh();
      os << ipad << cType(ref.elementType) << " " << v << " = "
         << rounded(ref.elementType, value) << ";\n";
      names[arg] = v;
      continue;
    }
    if (failed(loadInput(consumer, in, dims, os, ipad)))
      return failure();
  }
  SmallVector<std::pair<BufferRef, SmallVector<std::string>>> outs;
  for (OpOperand &init : consumer.getDpsInitsMutable()) {
    auto outRef = resolve(init.get(), consumer);
    if (failed(outRef))
      return failure();
    SmallVector<std::string> outIdx;
    for (AffineExpr e : consumer.getMatchingIndexingMap(&init).getResults())
      outIdx.push_back(affine(e, dims));
    BlockArgument arg = consumer.getMatchingBlockArgument(&init);
    if (!arg.use_empty()) {
      std::string v = fresh();
      os << ipad << cType(outRef->elementType) << " " << v << " = "
         << loaded(outRef->elementType, element(*outRef, outIdx)) << ";\n";
      names[arg] = v;
    }
    outs.push_back({*outRef, outIdx});
  }
  if (failed(printBlock(payload, os, indent + 2)))
    return failure();
  for (auto [out, y] : llvm::zip(outs, payload.getTerminator()->getOperands()))
    os << ipad << element(out.first, out.second) << " = "
       << toStored(out.first.elementType, name(y)) << ";\n";
  os << pad << "}\n";
  return success();
}

unsigned CudaPrinter::vectorWidth(linalg::GenericOp op, const GenericPlan &plan) {
  // Elementwise: threads over the parallel loops, nothing inside them, no
  // index arithmetic or gathers in the payload, and no output a folded
  // fill starts (its stores were left out; printGeneric starts from its
  // value).
  if (plan.mapping != Mapping::Threads || !plan.inner.empty() || plan.parallel.empty() ||
      llvm::is_contained(op.getDpsInits(), fill.buffer) ||
      op.getRegion()
          .walk([](Operation *o) {
            return isa<linalg::IndexOp, memref::LoadOp>(o) ? WalkResult::interrupt()
                                                           : WalkResult::advance();
          })
          .wasInterrupted())
    return 1;
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  unsigned last = plan.parallel.back(); // varies fastest between threads
  AffineExpr lastDim = getAffineDimExpr(last, op.getContext());
  int64_t size = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    // Scalars, and broadcasts along the last loop, are read once per group.
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!isa<MemRefType>(operand.get().getType()) || !map.getResultPosition(lastDim))
      continue;
    auto ref = resolve(operand.get(), op);
    unsigned bits = failed(ref) ? 0 : ref->elementType.getIntOrFloatBitWidth();
    if (bits == 0 || bits % 8 != 0 || (size && int64_t(bits / 8) != size))
      return 1;
    size = bits / 8;
    // Every group of points starts 16-byte aligned: unit stride along the
    // last loop, 16-byte multiples along the others and at the start (the
    // arena's and the constants' bases are 256-aligned; the caller's
    // buffers must be 16-aligned, which the runtime checks).
    if ((ref->byteOffset + size * ref->offset) % 16 != 0)
      return 1;
    for (auto [p, e] : llvm::enumerate(map.getResults())) {
      // A constant index adds a fixed offset, which must keep the alignment.
      int64_t step = isa<AffineConstantExpr>(e) ? cast<AffineConstantExpr>(e).getValue() : 1;
      if (e == lastDim ? ref->strides[p] != 1
                       : e.isFunctionOfDim(last) || (ref->strides[p] * step * size) % 16 != 0)
        return 1;
    }
  }
  unsigned width = size ? unsigned(16 / size) : 1;
  if (width < 2 || 16 % size != 0 || plan.ranges[last] % width != 0)
    return 1;
  return width;
}

LogicalResult CudaPrinter::printVectorized(linalg::GenericOp op,
                                           const GenericPlan &plan,
                                           unsigned width) {
  ArrayRef<int64_t> ranges = plan.ranges;
  ArrayRef<unsigned> parallel = plan.parallel;
  unsigned last = parallel.back();
  int64_t threads = plan.points / width;
  Launch launch;
  launch.work = plan.points;
  launch.block = kBlock;
  launch.grid = uint32_t(std::min<int64_t>(kMaxGrid, (threads + kBlock - 1) / kBlock));
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < "
     << threads << "; t += (int64_t)gridDim.x * blockDim.x) {\n"
     << "    int64_t r = t;\n";
  // The last loop counts groups of `width` points.
  for (unsigned k = parallel.size(); k-- > 0;) {
    unsigned d = parallel[k];
    std::string var = "d" + std::to_string(d) + (d == last ? "_group" : "");
    int64_t range = d == last ? ranges[d] / width : ranges[d];
    os << "    const int64_t " << var << " = r";
    if (k > 0)
      os << " % " << range << "; r /= " << range;
    os << ";\n";
  }
  // The group's first point: every access is at it (a vector starting
  // there, or a broadcast element).
  os << "    const int64_t d" << last << " = d" << last << "_group * " << width << ";\n";
  SmallVector<std::string> dims;
  for (unsigned d = 0; d < ranges.size(); ++d)
    dims.push_back("d" + std::to_string(d));
  Block &payload = op.getRegion().front();
  std::string pad = "    ";
  AffineExpr lastDim = getAffineDimExpr(last, op.getContext());
  // An operand that runs along the last loop is one 16-byte vector for the
  // group (kiln_vec, aligned: NVRTC loads and stores it whole); one that
  // does not (a broadcast) is the same element for every point.
  struct Operand {
    BufferRef ref;
    std::string vector; ///< the group's kiln_vec, or "" for a broadcast
    SmallVector<std::string> idx; ///< at the group's first point
  };
  auto operandOf = [&](OpOperand &operand) -> FailureOr<Operand> {
    auto ref = resolve(operand.get(), op);
    if (failed(ref))
      return failure();
    Operand o{*ref, "", {}};
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (AffineExpr e : map.getResults())
      o.idx.push_back(affine(e, dims));
    if (map.getResultPosition(lastDim))
      o.vector = fresh();
    return o;
  };
  auto vecType = [&](const Operand &o) {
    return "kiln_vec<" + storageType(o.ref.elementType) + ", " + std::to_string(width) + ">";
  };
  // Loads of the group (outputs the payload reads included).
  SmallVector<DenseMap<Value, std::string>> laneNames(width);
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    if (!isa<MemRefType>(operand.get().getType())) {
      for (unsigned k = 0; k < width; ++k)
        laneNames[k][arg] = name(operand.get());
      if (name(operand.get()).empty())
        return op.emitOpError("cuda: expects memref or constant inputs");
      continue;
    }
    auto o = operandOf(operand);
    if (failed(o))
      return failure();
    Type t = o->ref.elementType;
    if (!o->vector.empty())
      os << pad << vecType(*o) << " " << o->vector << " = *(const " << vecType(*o)
         << " *)&" << element(o->ref, o->idx) << ";\n";
    std::string shared;
    for (unsigned k = 0; k < width; ++k) {
      if (!shared.empty()) {
        laneNames[k][arg] = shared;
        continue;
      }
      std::string v = fresh();
      std::string stored = o->vector.empty()
                               ? element(o->ref, o->idx)
                               : o->vector + ".v[" + std::to_string(k) + "]";
      os << pad << cType(t) << " " << v << " = " << loaded(t, stored) << ";\n";
      laneNames[k][arg] = v;
      if (o->vector.empty())
        shared = v; // a broadcast: one element for the group
    }
  }
  // Every point's payload, then the group's stores.
  SmallVector<SmallVector<std::string>> results(width);
  Operation *yield = payload.getTerminator();
  for (unsigned k = 0; k < width; ++k) {
    for (auto [arg, v] : laneNames[k])
      names[arg] = v;
    if (failed(printBlock(payload, os, 4)))
      return failure();
    for (Value y : yield->getOperands())
      results[k].push_back(name(y));
  }
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    auto o = operandOf(init);
    if (failed(o))
      return failure();
    // Outputs hold one element per point, so each runs along the last loop.
    if (o->vector.empty())
      return op.emitOpError("internal error: a vectorized output without the last loop");
    os << pad << vecType(*o) << " " << o->vector << ";\n";
    for (unsigned k = 0; k < width; ++k)
      os << pad << o->vector << ".v[" << k << "] = "
         << toStored(o->ref.elementType, results[k][i]) << ";\n";
    os << pad << "*(" << vecType(*o) << " *)&" << element(o->ref, o->idx) << " = "
       << o->vector << ";\n";
  }
  os << "  }\n";
  alignedParams = true;
  finishKernel(op, body, launch);
  alignedParams = false;
  return success();
}

LogicalResult CudaPrinter::printGeneric(linalg::GenericOp op) {
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return op.emitOpError("cuda: expects static loop ranges");
  GenericPlan plan = planGeneric(op);
  ArrayRef<int64_t> ranges = plan.ranges;
  ArrayRef<unsigned> parallel = plan.parallel, inner = plan.inner;
  int64_t points = plan.points, innerPoints = plan.innerPoints;
  Mapping mapping = plan.mapping;
  unsigned numDims = ranges.size();
  SmallVector<std::string> dims;
  for (unsigned d = 0; d < numDims; ++d)
    dims.push_back("d" + std::to_string(d));

  // Elementwise kernels take `width` consecutive points a thread, which
  // NVRTC turns into 16-byte loads and stores.
  if (unsigned width = vectorWidth(op, plan); width > 1)
    return printVectorized(op, plan, width);
  Launch launch;
  // A point with an empty reduction still stores its output's start value.
  launch.work = mapping == Mapping::Serial ? innerPoints : points;
  launch.synchronizes = mapping == Mapping::Block;
  if (mapping == Mapping::Serial) {
    launch.grid = launch.block = 1;
  } else if (mapping == Mapping::Threads) {
    launch.block = kBlock;
    launch.grid = uint32_t(std::min<int64_t>(kMaxGrid, (points + kBlock - 1) / kBlock));
  } else {
    // A power of two, for the tree; no more threads than elements per row.
    launch.block = std::min<uint32_t>(kBlock, llvm::PowerOf2Ceil(innerPoints));
    launch.grid = uint32_t(std::min<int64_t>(kMaxGrid, points));
  }

  std::string body;
  llvm::raw_string_ostream os(body);
  std::string pad = "  ";
  // The flat index `flat` over `dimsOf` (the last varies fastest) decoded
  // into the loop variables.
  auto decode = [&](ArrayRef<unsigned> dimsOf, StringRef flat, StringRef rest,
                    int indent) {
    std::string p(indent, ' ');
    os << p << "int64_t " << rest << " = " << flat << ";\n";
    for (unsigned k = dimsOf.size(); k-- > 0;) {
      unsigned d = dimsOf[k];
      if (k == 0)
        os << p << "const int64_t d" << d << " = " << rest << ";\n";
      else
        os << p << "const int64_t d" << d << " = " << rest << " % " << ranges[d]
           << "; " << rest << " /= " << ranges[d] << ";\n";
    }
    if (dimsOf.empty())
      os << p << "(void)" << rest << ";\n";
  };
  if (mapping == Mapping::Serial) {
    os << "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n  {\n";
  } else if (mapping == Mapping::Threads) {
    os << "  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < "
       << points << "; t += (int64_t)gridDim.x * blockDim.x) {\n";
    decode(parallel, "t", "r", 4);
  } else {
    for (const BlockReduction &red : plan.reductions)
      os << "  __shared__ "
         << cType(getElementTypeOrSelf(op.getDpsInits()[red.output].getType()))
         << " kiln_partial" << red.output << "[" << kBlock << "];\n";
    os << "  for (int64_t t = blockIdx.x; t < " << points
       << "; t += gridDim.x) {\n";
    decode(parallel, "t", "r", 4);
  }

  Block &payload = op.getRegion().front();
  Operation *yield = payload.getTerminator();
  // Outputs indexed by the parallel dims only: accumulators loaded before
  // the inner loops (a block reduction starts from the combiner's
  // identity instead), stored after. The others are read and written at
  // every iteration.
  struct Output {
    BufferRef ref;
    SmallVector<std::string> idx;
    std::string acc; ///< empty for an output written per iteration
  };
  SmallVector<Output> outputs;
  int indent = 4;
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    auto ref = resolve(init.get(), op);
    if (failed(ref))
      return failure();
    Output out{*ref, {}, ""};
    for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults())
      out.idx.push_back(affine(e, dims));
    if (!plan.perIteration(op, i)) {
      BlockArgument arg = op.getMatchingBlockArgument(&init);
      out.acc = fresh();
      std::string ty = cType(ref->elementType);
      os << pad << "  " << ty << " " << out.acc;
      if (mapping == Mapping::Block)
        os << " = " << llvm::find_if(plan.reductions, [&](const BlockReduction &r) {
                         return r.output == i;
                       })->identity;
      else if (init.get() == fill.buffer)
        os << " = " << fill.value;
      else if (!inner.empty() || !arg.use_empty())
        os << " = " << loaded(ref->elementType, element(*ref, out.idx));
      os << ";\n";
      names[arg] = out.acc;
    }
    outputs.push_back(std::move(out));
  }
  if (mapping == Mapping::Block) {
    os << "    for (int64_t l = threadIdx.x; l < " << innerPoints
       << "; l += blockDim.x) {\n";
    decode(inner, "l", "q", 6);
    indent = 6;
  } else {
    for (unsigned d : inner) {
      os << std::string(indent, ' ') << "for (int64_t d" << d << " = 0; d" << d
         << " < " << ranges[d] << "; ++d" << d << ") {\n";
      indent += 2;
    }
  }
  std::string ipad(indent, ' ');
  for (auto [init, out] : llvm::zip(op.getDpsInitsMutable(), outputs)) {
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    if (!out.acc.empty() || arg.use_empty())
      continue;
    std::string v = fresh();
    os << ipad << cType(out.ref.elementType) << " " << v << " = "
       << loaded(out.ref.elementType, element(out.ref, out.idx)) << ";\n";
    names[arg] = v;
  }
  for (OpOperand *input : op.getDpsInputOperands())
    if (!op.getMatchingBlockArgument(input).use_empty() &&
        failed(loadInput(op, input, dims, os, ipad)))
      return failure();
  if (failed(printBlock(payload, os, indent)))
    return failure();
  for (auto [out, y] : llvm::zip(outputs, yield->getOperands())) {
    if (out.acc.empty())
      os << ipad << element(out.ref, out.idx) << " = "
         << toStored(out.ref.elementType, name(y)) << ";\n";
    else
      os << ipad << out.acc << " = " << name(y) << ";\n";
  }
  if (mapping == Mapping::Block) {
    os << "    }\n";
    // Each thread's partial into shared memory, then a tree over the
    // block's (power-of-two many) threads; thread 0 combines the result
    // into the output's value.
    auto combine = [&](const BlockReduction &red, const std::string &acc,
                       const std::string &other, int at) {
      BlockArgument arg = op.getRegionOutputArgs()[red.output];
      for (Value operand : red.combiner->getOperands())
        names[operand] = operand == arg ? acc : other;
      if (failed(printOp(red.combiner, os, at)))
        return std::string();
      return name(red.combiner->getResult(0));
    };
    for (const BlockReduction &red : plan.reductions)
      os << "    kiln_partial" << red.output << "[threadIdx.x] = "
         << outputs[red.output].acc << ";\n";
    os << "    __syncthreads();\n";
    os << "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n";
    os << "      if (threadIdx.x < s) {\n";
    for (const BlockReduction &red : plan.reductions) {
      std::string slot = "kiln_partial" + std::to_string(red.output);
      std::string v = combine(red, slot + "[threadIdx.x]",
                              slot + "[threadIdx.x + s]", 8);
      if (v.empty())
        return failure();
      os << "        " << slot << "[threadIdx.x] = " << v << ";\n";
    }
    os << "      }\n      __syncthreads();\n    }\n";
    os << "    if (threadIdx.x == 0) {\n";
    for (const BlockReduction &red : plan.reductions) {
      const Output &out = outputs[red.output];
      std::string init = fresh();
      os << "      " << cType(out.ref.elementType) << " " << init << " = "
         << (op.getDpsInits()[red.output] == fill.buffer
                 ? fill.value
                 : loaded(out.ref.elementType, element(out.ref, out.idx)))
         << ";\n";
      std::string v = combine(red, init,
                              "kiln_partial" + std::to_string(red.output) + "[0]", 6);
      if (v.empty())
        return failure();
      if (failed(storeResult(op, red.output, out.ref, out.idx, v, os, 6)))
        return failure();
    }
    os << "    }\n";
    // The next row reuses the shared slots.
    os << "    __syncthreads();\n";
  } else {
    for (unsigned k = 0; k < inner.size(); ++k) {
      indent -= 2;
      os << std::string(indent, ' ') << "}\n";
    }
    for (auto [i, out] : llvm::enumerate(outputs))
      if (!out.acc.empty() && failed(storeResult(op, i, out.ref, out.idx, out.acc, os, 4)))
        return failure();
  }
  os << "  }\n";
  finishKernel(op, body, launch);
  return success();
}

LogicalResult CudaPrinter::printSerial(Operation *op) {
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n";
  if (failed(printOp(op, os, 2)))
    return failure();
  finishKernel(op, body, Launch{1, 1, 1, false});
  return success();
}

CudaArg CudaPrinter::argOf(const BufferRef &ref) {
  int64_t size = std::max<int64_t>(1, ref.elementType.getIntOrFloatBitWidth() / 8);
  return CudaArg{ref.constant ? CudaSpace::Constants : ref.space,
                 ref.constant ? 0u : ref.index,
                 uint64_t(ref.byteOffset + size * ref.offset)};
}

/// The result position of `dim` in `map` when every other result is the
/// constant 0 (a vector along that loop, the other dims of size 1).
static std::optional<unsigned> vectorAlong(AffineMap map, AffineExpr dim) {
  std::optional<unsigned> at;
  for (auto [p, e] : llvm::enumerate(map.getResults())) {
    if (e == dim && !at)
      at = p;
    else if (!isa<AffineConstantExpr>(e) || cast<AffineConstantExpr>(e).getValue() != 0)
      return std::nullopt;
  }
  return at;
}

std::optional<CudaGemm::Epilogue>
CudaPrinter::convEpilogue(linalg::GenericOp op, linalg::GenericOp next,
                          int64_t channels, BufferRef &y, BufferRef &bias) {
  Value out = op.getDpsInits()[0];
  if (!next || next.getNumDpsInits() != 1 || next.getNumReductionLoops() != 0)
    return std::nullopt;
  // Read through a view of the output, in the arena, by `next` alone.
  OpOperand *read = nullptr;
  for (OpOperand *in : next.getDpsInputOperands())
    if (isViewOf(in->get(), out)) {
      if (read)
        return std::nullopt;
      read = in;
    }
  auto outRange = byteRange(out, op);
  if (!read || !outRange || outRange->space != CudaSpace::Arena || outRange->constant)
    return std::nullopt;
  SmallVector<Operation *> users;
  collectViewUsers(out, users);
  for (Operation *user : users)
    if (user != op && user != next &&
        !(user->getBlock() == op->getBlock() && user->isBeforeInBlock(op)))
      return std::nullopt;
  OpOperand *biasOperand = nullptr;
  auto kind = matchGemmEpilogue(next, read, biasOperand);
  if (!kind || !biasOperand || (*kind != CudaGemm::Bias && *kind != CudaGemm::BiasRelu) ||
      !next.getMatchingIndexingMap(read).isIdentity() ||
      !next.getMatchingIndexingMap(next.getDpsInitOperand(0)).isIdentity() ||
      next.getNumLoops() != 4)
    return std::nullopt;
  // The bias: along the channels (loop 1), 0 elsewhere, unit stride.
  std::optional<unsigned> at = vectorAlong(next.getMatchingIndexingMap(biasOperand),
                                           getAffineDimExpr(1, op.getContext()));
  Value result = next.getDpsInits()[0];
  auto refY = resolve(result, next);
  auto refBias = resolve(biasOperand->get(), next);
  auto yRange = byteRange(result, next), biasRange = byteRange(biasOperand->get(), next);
  if (!at || failed(refY) || failed(refBias) || !yRange || !biasRange ||
      refY->elementType != cast<MemRefType>(out.getType()).getElementType() ||
      refBias->elementType != refY->elementType ||
      !(refBias->strides[*at] == 1 || channels == 1) || biasRange->overlaps(*yRange) ||
      // cuDNN may not write where it reads x or w.
      !inputsApartFrom(op, *yRange))
    return std::nullopt;
  y = *refY;
  bias = *refBias;
  return kind;
}

bool CudaPrinter::emitConv(linalg::GenericOp op, linalg::GenericOp next) {
  std::optional<ConvLoops> l;
  Value out = op.getDpsInits()[0];
  if (!options.cudnn || fill.buffer != out || !fill.zero || !(l = matchConv(op)))
    return false;
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  auto x = resolve(op.getDpsInputs()[0], op), w = resolve(op.getDpsInputs()[1], op),
       y = resolve(out, op);
  auto yRange = byteRange(out, op);
  if (failed(x) || failed(w) || failed(y) || !yRange || !inputsApartFrom(op, *yRange))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t G = ranges[l->g], F = ranges[l->f], Cg = ranges[l->c];
  int64_t R = ranges[l->kh], S = ranges[l->kw];
  // Group and channel dims as one (cuDNN's C and K), where contiguous.
  auto joined = [&](const BufferRef &ref, int64_t perGroup, int64_t &stride) {
    stride = ref.strides[2];
    return G == 1 || ref.strides[1] == ref.strides[2] * perGroup;
  };
  CudaConv c;
  int64_t xc, yc;
  if (!joined(*x, Cg, xc) || !joined(*y, F, yc))
    return false;
  // The filter packed [G * F, Cg, R, S] (a size-1 dim's stride is free).
  int64_t packed[5] = {F * Cg * R * S, Cg * R * S, R * S, S, 1};
  auto wShape = cast<MemRefType>(op.getDpsInputs()[1].getType()).getShape();
  for (int i = 0; i < 5; ++i)
    if (wShape[i] != 1 && w->strides[i] != packed[i])
      return false;
  c.n = ranges[l->n];
  c.c = G * Cg;
  c.k = G * F;
  c.r = R, c.s = S;
  c.p = ranges[l->oh], c.q = ranges[l->ow];
  c.strideH = l->strideH, c.strideW = l->strideW;
  c.dilationH = l->dilationH, c.dilationW = l->dilationW;
  c.groups = G;
  // The rows and columns of x the output reads (a padded buffer may hold
  // more, which cuDNN's output size would count).
  c.h = (c.p - 1) * c.strideH + (R - 1) * c.dilationH + 1;
  c.w = (c.q - 1) * c.strideW + (S - 1) * c.dilationW + 1;
  int64_t xs[4] = {x->strides[0], xc, x->strides[3], x->strides[4]};
  int64_t ys[4] = {y->strides[0], yc, y->strides[3], y->strides[4]};
  BufferRef yOut = *y, bias;
  std::optional<CudaGemm::Epilogue> kind =
      convEpilogue(op, next, G * F, yOut, bias);
  if (kind)
    std::copy(yOut.strides.begin(), yOut.strides.end(), ys);
  std::copy(xs, xs + 4, c.xStride);
  std::copy(ys, ys + 4, c.yStride);
  if (llvm::any_of(xs, [](int64_t s) { return s < 0; }) ||
      llvm::any_of(ys, [](int64_t s) { return s < 0; }) ||
      llvm::any_of(ArrayRef<int64_t>{c.strideH, c.strideW, c.dilationH, c.dilationW, G},
                   [](int64_t v) { return v > INT32_MAX; }))
    return false;
  Type type = x->elementType;
  c.dtype = type.isF32() ? 1 : type.isF16() ? 2 : 3; // kiln_dtype_t
  c.tf32 = options.tf32 && type.isF32();
  c.epilogue = kind.value_or(CudaGemm::None);
  c.workspaceBytes = options.libraryWorkspaceBytes;
  CudaStep step;
  step.conv = program.convs.size();
  step.args = {argOf(*x), argOf(*w), argOf(yOut), CudaArg{CudaSpace::Arena, 0, 0}};
  if (kind)
    step.args.push_back(argOf(bias));
  program.convs.push_back(c);
  program.steps.push_back(std::move(step));
  // run() marks a taken epilogue as done; any other is printed on its own.
  epilogue = kind ? next : linalg::GenericOp();
  return true;
}

bool CudaPrinter::emitGemm(linalg::GenericOp op) {
  linalg::GenericOp consumer = epilogue;
  std::optional<GemmLoops> loops;
  if (!options.cublasLt || !(loops = matchGemm(op)))
    return false;
  // cuBLASLt starts from 0 (beta 0: a +0.0 fill folded into the product) or
  // from what the output holds (beta 1: nothing folded).
  Value out = op.getDpsInits()[0];
  bool accumulate = fill.buffer != out;
  if (!accumulate && !fill.zero)
    return false;
  // A buffer the printer cannot trace is the kernel printer's to report.
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // The element strides of a buffer per loop of `op`; `position[p]` is the
  // loop of its dim p, or -1 for a dim indexed by 0.
  auto strides = [&](const BufferRef &ref, ArrayRef<int> position) {
    LoopStrides loop(ranges.size(), 0);
    for (auto [p, d] : llvm::enumerate(position))
      if (d >= 0)
        loop[d] = ref.strides[p];
    return loop;
  };
  auto positions = [](AffineMap map) {
    SmallVector<int> dims;
    for (AffineExpr e : map.getResults())
      dims.push_back(isa<AffineDimExpr>(e) ? int(cast<AffineDimExpr>(e).getPosition()) : -1);
    return dims;
  };
  auto refA = resolve(op.getDpsInputs()[0], op);
  auto refB = resolve(op.getDpsInputs()[1], op);
  auto refOut = resolve(out, op);
  if (failed(refA) || failed(refB) || failed(refOut))
    return false;
  SmallVector<int> outDims = positions(op.getIndexingMapsArray()[2]);
  LoopStrides a = strides(*refA, positions(op.getIndexingMapsArray()[0]));
  LoopStrides b = strides(*refB, positions(op.getIndexingMapsArray()[1]));
  // cuBLASLt may not write where A or B lie.
  auto outRange = byteRange(out, op);
  if (!outRange || !inputsApartFrom(op, *outRange))
    return false;

  CudaGemm gemm;
  bool swapped = false;
  BufferRef refD = *refOut;
  std::optional<BufferRef> refBias;
  // The epilogue: its output is D, read and written at the product's index
  // (identity maps), and the bias runs along cuBLASLt's rows.
  OpOperand *bias = nullptr;
  std::optional<CudaGemm::Epilogue> kind;
  if (consumer && !accumulate) {
    OpOperand *read = nullptr;
    for (OpOperand *in : consumer.getDpsInputOperands())
      if (in->get() == out && !read)
        read = in;
    kind = read ? matchGemmEpilogue(consumer, read, bias) : std::nullopt;
    AffineMap outMap = consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0));
    if (kind && (!consumer.getMatchingIndexingMap(read).isIdentity() ||
                 !outMap.isIdentity()))
      kind.reset();
    auto refEpi = kind ? resolve(consumer.getDpsInits()[0], consumer)
                       : FailureOr<BufferRef>(failure());
    // D's type: the product's, or with a rounding epilogue the narrower
    // type of A and B.
    Type dType = kind == CudaGemm::None ? refA->elementType : refOut->elementType;
    if (kind && succeeded(refEpi) && refEpi->elementType == dType &&
        layoutGemm(*loops, ranges, a, b, strides(*refEpi, outDims), gemm, swapped)) {
      if (bias) {
        // The bias reads the output's dim of cuBLASLt's rows (one loop of
        // the product) with unit stride, and lies apart from D.
        ArrayRef<unsigned> rowLoops = swapped ? loops->n : loops->m;
        AffineMap map = consumer.getMatchingIndexingMap(bias);
        auto ref = resolve(bias->get(), consumer);
        auto biasRange = byteRange(bias->get(), consumer);
        auto dRange = byteRange(consumer.getDpsInits()[0], consumer);
        auto *rowPos = rowLoops.size() == 1 ? llvm::find(outDims, int(rowLoops[0]))
                                            : outDims.end();
        std::optional<unsigned> biasDim =
            rowPos == outDims.end()
                ? std::nullopt
                : vectorAlong(map, getAffineDimExpr(rowPos - outDims.begin(), op.getContext()));
        if (!biasDim || failed(ref) || ref->elementType != dType ||
            !(ref->strides[*biasDim] == 1 || ranges[rowLoops[0]] == 1) ||
            !biasRange || !dRange || biasRange->overlaps(*dRange))
          kind.reset();
        else
          refBias = *ref;
      }
      if (kind)
        refD = *refEpi;
    } else {
      kind.reset();
    }
  }
  if (!kind) {
    bias = nullptr;
    if (!layoutGemm(*loops, ranges, a, b, strides(*refOut, outDims), gemm, swapped))
      return false;
  }

  auto dtypeOf = [](Type t) -> uint8_t { return t.isF32() ? 1 : t.isF16() ? 2 : 3; }; // kiln_dtype_t
  Type type = refA->elementType;
  gemm.dtype = dtypeOf(type);
  gemm.dDtype = dtypeOf(refD.elementType);
  gemm.epilogue = kind.value_or(CudaGemm::None);
  gemm.accumulate = accumulate;
  gemm.tf32 = options.tf32 && type.isF32();
  gemm.workspaceBytes = options.libraryWorkspaceBytes;
  CudaStep step;
  step.gemm = program.gemms.size();
  step.args = {argOf(swapped ? *refB : *refA), argOf(swapped ? *refA : *refB),
               argOf(refD),
               // The workspace, placed after the plan by lowerToCuda.
               CudaArg{CudaSpace::Arena, 0, 0}};
  if (refBias)
    step.args.push_back(argOf(*refBias));
  program.gemms.push_back(gemm);
  program.steps.push_back(std::move(step));
  // run() marks a taken epilogue as done; any other is printed on its own.
  epilogue = kind ? consumer : linalg::GenericOp();
  return true;
}

LogicalResult CudaPrinter::run() {
  DenseSet<Operation *> fused;
  for (Operation &op : func.getBody().front().without_terminator()) {
    names.clear();
    params.clear();
    nextValue = 0;
    if (fused.contains(&op))
      continue; // printed as the epilogue of the kernel before
    if (isa<arith::ConstantOp, memref::ViewOp, memref::SubViewOp,
            memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::ReinterpretCastOp, memref::CastOp, memref::GetGlobalOp>(op))
      continue; // addresses and literals, resolved where they are used
    if (isa<memref::AllocOp, memref::AllocaOp>(op))
      return op.emitOpError("cuda: an allocation is left after memory planning");
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!generic.hasPureBufferSemantics())
        return op.emitOpError("cuda: expects a bufferized linalg.generic");
      // A fill followed by the reduction or matmul that accumulates into
      // it is one kernel: the fill's value starts the accumulator.
      Operation *next = op.getNextNode();
      while (next && isa<arith::ConstantOp, memref::ViewOp, memref::SubViewOp,
                         memref::ExpandShapeOp, memref::CollapseShapeOp,
                         memref::ReinterpretCastOp, memref::CastOp,
                         memref::GetGlobalOp>(next))
        next = next->getNextNode();
      auto consumer = dyn_cast_or_null<linalg::GenericOp>(next);
      std::string value = fillValue(generic);
      if (consumer && !value.empty() &&
          startsFromFill(consumer, generic.getDpsInits()[0])) {
        fill = {generic.getDpsInits()[0], value,
                matchPattern(fillConstant(generic), m_PosZeroFloat())};
        continue;
      }
      // The elementwise generic after a reduction or contraction that alone
      // reads its result runs in its kernel (bias, activation, mean), or in
      // cuBLASLt's epilogue.
      epilogue = consumer && isEpilogue(generic, consumer) ? consumer
                                                          : linalg::GenericOp();
      if (!emitGemm(generic) && !emitConv(generic, consumer) &&
          failed(printGeneric(generic)))
        return failure();
      fill = {Value(), "", false};
      if (epilogue)
        fused.insert(epilogue);
      epilogue = {};
      continue;
    }
    if (isa<scf::ForOp, scf::IfOp, memref::StoreOp>(op)) {
      if (failed(printSerial(&op)))
        return failure();
      continue;
    }
    return op.emitOpError("cuda: no CUDA C form for this op yet");
  }
  return success();
}

/// Helpers every kernel may use. NVRTC compiles without any header, so the
/// fixed-width types are declared here. The #else branches let a host C++
/// compiler build the same source (with a small shim for the CUDA built-ins)
/// so tests can run the kernels on the CPU.
static const char kPrelude[] =
    "// Generated by kilnc for the CUDA target; do not edit.\n"
    "#ifdef __CUDACC_RTC__\n"
    "typedef signed char int8_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef short int16_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef int int32_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#define KILN_ALIGNED(p, n) ((char *)__builtin_assume_aligned((p), (n)))\n"
    "template <typename T, int N> struct __align__(16) kiln_vec { T v[N]; };\n"
    "#else // a host compiler, for tests that run the kernels on the CPU\n"
    "#include <stdint.h>\n"
    "#define KILN_ALIGNED(p, n) (p)\n"
    "template <typename T, int N> struct kiln_vec { T v[N]; };\n"
    "#endif\n"
    "template <typename To, typename From>\n"
    "__device__ __forceinline__ To kiln_bitcast(From x) {\n"
    "  union { From f; To t; } u; u.f = x; return u.t;\n"
    "}\n"
    "template <typename T> __device__ __forceinline__ T kiln_maximum(T a, T b) {\n"
    "  return (a != a || b != b) ? a + b : (a == b ? (signbit(a) ? b : a) : (a > b ? a : b));\n"
    "}\n"
    "template <typename T> __device__ __forceinline__ T kiln_minimum(T a, T b) {\n"
    "  return (a != a || b != b) ? a + b : (a == b ? (signbit(a) ? a : b) : (a < b ? a : b));\n"
    "}\n"
    "template <typename T> __device__ __forceinline__ T kiln_powi(T x, int64_t n) {\n"
    "  bool neg = n < 0; uint64_t e = neg ? 0 - (uint64_t)n : (uint64_t)n;\n"
    "  T r = (T)1;\n"
    "  for (; e; e >>= 1, x = x * x) if (e & 1) r = r * x;\n"
    "  return neg ? (T)1 / r : r;\n"
    "}\n"
    "#ifdef __CUDA_ARCH__\n"
    "__device__ __forceinline__ float kiln_f16_to_f32(uint16_t h) {\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;\n"
    "}\n"
    "__device__ __forceinline__ uint16_t kiln_f32_to_f16(float f) {\n"
    "  uint16_t h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n"
    "}\n"
    "#else\n"
    "inline float kiln_f16_to_f32(uint16_t h) {\n"
    "  _Float16 f; __builtin_memcpy(&f, &h, 2); return (float)f;\n"
    "}\n"
    "inline uint16_t kiln_f32_to_f16(float f) {\n"
    "  _Float16 x = (_Float16)f; uint16_t h; __builtin_memcpy(&h, &x, 2); return h;\n"
    "}\n"
    "#endif\n"
    "__device__ __forceinline__ float kiln_bf16_to_f32(uint16_t h) {\n"
    "  return __uint_as_float((uint32_t)h << 16);\n"
    "}\n"
    "__device__ __forceinline__ uint16_t kiln_f32_to_bf16(float f) {\n"
    "  uint32_t u = __float_as_uint(f);\n"
    "  if (f != f) return (uint16_t)((u >> 16) | 0x40);\n"
    "  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "__device__ __forceinline__ float kiln_round_f16(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }\n"
    "__device__ __forceinline__ float kiln_round_bf16(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }\n"
    "__device__ __forceinline__ int64_t kiln_mod(int64_t a, int64_t b) {\n"
    "  int64_t m = a % b; return m < 0 ? m + b : m;\n"
    "}\n"
    "__device__ __forceinline__ int64_t kiln_floordiv(int64_t a, int64_t b) {\n"
    "  int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "__device__ __forceinline__ int64_t kiln_ceildiv(int64_t a, int64_t b) {\n"
    "  int64_t q = a / b; return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;\n"
    "}\n"
    "__device__ __forceinline__ uint64_t kiln_clz(uint64_t x, int w) {\n"
    "  return x == 0 ? w : __clzll(x) - (64 - w);\n"
    "}\n"
    "__device__ __forceinline__ uint64_t kiln_ctz(uint64_t x, int w) {\n"
    "  return x == 0 ? w : __ffsll(x) - 1;\n"
    "}\n"
    "__device__ __forceinline__ uint64_t kiln_popc(uint64_t x, int w) {\n"
    "  return __popcll(x);\n"
    "}\n";

std::string kiln::describeCudaSteps(const CudaProgram &program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto arg = [&](const CudaArg &a) {
    os << (a.space == CudaSpace::Constants ? "kiln_constants"
                                           : paramName(a.space, a.index))
       << "+" << a.offset;
  };
  static const char *const epilogues[] = {"none", "bias", "relu", "bias+relu"};
  os << "\n// The steps, in order (kernel<<<grid, block>>>(base+offset, ...),\n"
        "// or cuBLASLt in its column-major terms):\n";
  for (auto [i, step] : llvm::enumerate(program.steps)) {
    os << "// " << i << ": ";
    if (step.conv) {
      const CudaConv &c = program.convs[*step.conv];
      os << "cudnn conv " << (c.dtype == 1 ? "f32" : c.dtype == 2 ? "f16" : "bf16")
         << (c.tf32 ? " tf32" : "") << " x=[" << c.n << "," << c.c << "," << c.h << ","
         << c.w << "] w=[" << c.k << "," << c.c / c.groups << "," << c.r << "," << c.s
         << "] y=[" << c.n << "," << c.k << "," << c.p << "," << c.q << "] stride="
         << c.strideH << "," << c.strideW << " dilation=" << c.dilationH << ","
         << c.dilationW << " groups=" << c.groups << " epilogue="
         << epilogues[c.epilogue] << " x=";
      arg(step.args[0]);
      os << " w=";
      arg(step.args[1]);
      os << " y=";
      arg(step.args[2]);
      os << " workspace=";
      arg(step.args[3]);
      if (step.args.size() > 4) {
        os << " bias=";
        arg(step.args[4]);
      }
      os << "\n";
      continue;
    }
    if (step.gemm) {
      const CudaGemm &g = program.gemms[*step.gemm];
      auto name = [](uint8_t t) { return t == 1 ? "f32" : t == 2 ? "f16" : "bf16"; };
      os << "cublasLt " << name(g.dtype);
      if (g.dDtype != g.dtype)
        os << "->" << name(g.dDtype);
      os
         << (g.tf32 ? " tf32" : "") << " m=" << g.m << " n=" << g.n
         << " k=" << g.k << " batch=" << g.batch << " A=";
      arg(step.args[0]);
      os << (g.transA ? "^T" : "") << " lda=" << g.lda << " B=";
      arg(step.args[1]);
      os << (g.transB ? "^T" : "") << " ldb=" << g.ldb << " D=";
      arg(step.args[2]);
      os << " ldd=" << g.ldd;
      if (g.batch > 1)
        os << " strides=" << g.strideA << "," << g.strideB << "," << g.strideD;
      os << (g.accumulate ? " beta=1" : " beta=0") << " epilogue="
         << epilogues[g.epilogue];
      if (step.args.size() > 4) {
        os << " bias=";
        arg(step.args[4]);
      }
      os << " workspace=";
      arg(step.args[3]);
      os << "\n";
      continue;
    }
    os << program.kernels[step.kernel].name << "<<<" << step.grid << ", "
       << step.block << ">>>(";
    for (auto [j, a] : llvm::enumerate(step.args)) {
      os << (j ? ", " : "");
      arg(a);
    }
    os << ")\n";
  }
  return text;
}

LogicalResult kiln::lowerToCuda(ModuleOp module, StringRef funcName,
                                ArtifactInfo &info, CudaProgram &program,
                                const CudaCodegenOptions &options) {
  if (!isValidGpuArch(options.gpuArch))
    return module.emitError("expects a GPU architecture sm_75 or newer "
                            "written sm_<major><minor>, found '")
           << options.gpuArch << "'";
  auto func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func)
    return module.emitError("expects an entry function '") << funcName << "'";
  if (failed(collectSignature(func, info)))
    return failure();

  PassManager pm(module.getContext(), "builtin.module");
  if (failed(buildCudaLoweringPipeline(pm, options.arenaAlignment)))
    return module.emitError("internal error: the CUDA pipeline does not parse");
  if (options.configurePassManager)
    options.configurePassManager(pm);
  if (failed(pm.run(module)))
    return failure();
  func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func)
    return module.emitError("internal error: lowering lost '") << funcName << "'";
  auto intAttr = [&](StringRef name) -> uint64_t {
    auto a = func->getAttrOfType<IntegerAttr>(name);
    return a ? a.getInt() : 0;
  };
  info.arenaBytes = intAttr("kiln.arena_bytes");
  info.arenaAlignment = intAttr("kiln.arena_alignment");
  info.arenaLowerBoundBytes = intAttr("kiln.arena_lower_bound_bytes");
  info.arenaNoReuseBytes = intAttr("kiln.arena_no_reuse_bytes");
  info.triple = "cuda";
  info.cpu = "";
  // A training step writes the new state into the arena, past the planned
  // buffers, and its last step copies it over the state buffer, so no
  // kernel reads a parameter another has already updated.
  if (!info.state.empty()) {
    info.stateScratchOffset =
        llvm::alignTo(info.arenaBytes, std::max<uint64_t>(options.arenaAlignment,
                                                          info.stateAlignment));
    info.arenaBytes = info.stateScratchOffset + info.stateBytes;
    info.arenaLowerBoundBytes += info.stateBytes;
    info.arenaNoReuseBytes += info.stateBytes;
    info.arenaAlignment = std::max<uint64_t>(info.arenaAlignment, options.arenaAlignment);
  }

  program.gpuArch = options.gpuArch;
  program.moreGpuArchs = options.moreGpuArchs;
  program.source = kPrelude;
  program.kernels.clear();
  program.steps.clear();
  program.constants.clear();
  program.gemms.clear();
  program.convs.clear();
  program.ioAlignment = 0;
  CudaPrinter printer(func, info, program, options);
  // The prelude's lines come first; the printer counts from after them.
  if (failed(printer.run()))
    return failure();
  if (!info.state.empty()) {
    // The new state over the old, 8 bytes a thread (the state's size and
    // offsets are multiples of its alignment, 64).
    uint64_t words = info.stateBytes / 8;
    std::string text =
        "// the new state (arena + " + std::to_string(info.stateScratchOffset) +
        ") over the state buffer\n"
        "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
        ") kiln_state_copy(char *__restrict__ state, char *__restrict__ arena) {\n"
        "  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < " +
        std::to_string(words) +
        "; t += (int64_t)gridDim.x * blockDim.x)\n"
        "    ((uint64_t *)state)[t] = ((const uint64_t *)arena)[t];\n"
        "}\n\n";
    unsigned first = 1 + llvm::count(program.source, '\n');
    unsigned lines = llvm::count(text, '\n');
    program.source += text;
    CudaStep copy;
    copy.kernel = program.kernels.size();
    copy.block = kBlock;
    copy.grid = static_cast<uint32_t>(
        std::clamp<uint64_t>(llvm::divideCeil(words, kBlock), 1, 4096));
    copy.args = {CudaArg{CudaSpace::State, 0, 0},
                 CudaArg{CudaSpace::Arena, 0, info.stateScratchOffset}};
    program.kernels.push_back(
        {"kiln_state_copy", func.getLoc(), first, first + lines - 1, false});
    program.steps.push_back(copy);
  }
  if (!program.gemms.empty() || !program.convs.empty()) {
    // One workspace after the planned buffers, for every library step (they
    // run one after another on the stream).
    uint64_t at = llvm::alignTo(info.arenaBytes, options.arenaAlignment);
    for (CudaStep &step : program.steps)
      if (step.gemm || step.conv)
        step.args[3].offset = at;
    info.arenaBytes = at + options.libraryWorkspaceBytes;
    info.arenaLowerBoundBytes += options.libraryWorkspaceBytes;
    info.arenaAlignment = std::max<uint64_t>(info.arenaAlignment, 256);
  }
  if (!program.constants.empty()) {
    // Declared after the kernels: their line ranges stay as counted, and a
    // __device__ array may be used before its definition only if declared,
    // so the declaration goes into the prelude's place instead.
    std::string decl = "__device__ __align__(256) unsigned char kiln_constants[" +
                       std::to_string(program.constants.size()) + "];\n";
    program.source.insert(sizeof(kPrelude) - 1, decl);
    for (CudaKernel &k : program.kernels) {
      ++k.firstLine;
      ++k.lastLine;
    }
  }
  return success();
}

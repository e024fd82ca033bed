//===- CudaBuffers.cpp - memrefs traced to their roots -----------------===//
//
// Every memref a kernel touches is traced through views to its root (an
// input, an output, the state, the arena or a constant) with a static
// offset and strides, so kernels take plain base pointers; and the bytes
// it can touch there, to tell which buffers overlap. Over symbolic
// dimensions (kilnc --dim NAME=LO..HI) sizes, strides and offsets that
// depend on the run-time sizes are traced as DimExprs and printed as C
// expressions of the kernel's dim parameters.
//
//===----------------------------------------------------------------------===//

#include "../RunTimeSizes.h"
#include "CudaPrinter.h"

#include "llvm/ADT/SmallBitVector.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::cuda {

/// A size operand of a view as an expression over the symbols.
static std::optional<DimExpr> sizeOf(OpFoldResult r) {
  if (std::optional<int64_t> c = getConstantIntValue(r))
    return DimExpr::constant(*c);
  return sizeExpr(cast<Value>(r));
}

std::optional<DimExpr> memrefSize(Value memref, unsigned k) {
  auto type = cast<MemRefType>(memref.getType());
  if (!type.isDynamicDim(k))
    return DimExpr::constant(type.getDimSize(k));
  Operation *def = memref.getDefiningOp();
  if (auto view = dyn_cast_or_null<memref::ViewOp>(def))
    return sizeExpr(view.getSizes()[type.getDynamicDimIndex(k)]);
  if (auto cast = dyn_cast_or_null<memref::ReinterpretCastOp>(def))
    return sizeOf(cast.getMixedSizes()[k]);
  if (auto sub = dyn_cast_or_null<memref::SubViewOp>(def)) {
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    SmallVector<OpFoldResult> sizes = sub.getMixedSizes();
    for (unsigned i = 0, kept = 0; i < sizes.size(); ++i)
      if (!dropped.test(i) && kept++ == k)
        return sizeOf(sizes[i]);
    return std::nullopt;
  }
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def))
    return sizeOf(expand.getMixedOutputShape()[k]);
  if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
    DimExpr product = DimExpr::constant(1);
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    for (int64_t src : groups[k]) {
      std::optional<DimExpr> s = memrefSize(collapse.getSrc(), src);
      if (!s)
        return std::nullopt;
      product = product * *s;
    }
    return product;
  }
  if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
    return memrefSize(cast.getSource(), k);
  return std::nullopt;
}

namespace {
/// A layout over the symbols: the offset and strides, in elements from the
/// memref's base, as expressions.
struct SymbolicLayout {
  DimExpr offset;
  SmallVector<DimExpr> strides;
};
} // namespace

/// Row-major strides of `memref`'s axes `axes` (consecutive, outermost
/// first) into `strides`, the innermost one `inner`; false when a size
/// cannot be traced.
static bool denseStrides(Value memref, ArrayRef<int64_t> axes, DimExpr inner,
                         SmallVectorImpl<DimExpr> &strides) {
  for (int64_t axis : llvm::reverse(axes)) {
    strides[axis] = inner;
    std::optional<DimExpr> size = memrefSize(memref, axis);
    if (!size)
      return false;
    inner = inner * *size;
  }
  return true;
}

/// The layout of `memref` from the views that made it (its type says `?`
/// where a stride or the offset depends on the run-time sizes).
static std::optional<SymbolicLayout> symbolicLayout(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  unsigned rank = type.getRank();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (succeeded(type.getStridesAndOffset(strides, offset)) &&
      offset != ShapedType::kDynamic &&
      !llvm::is_contained(strides, ShapedType::kDynamic)) {
    SymbolicLayout l{DimExpr::constant(offset), {}};
    for (int64_t s : strides)
      l.strides.push_back(DimExpr::constant(s));
    return l;
  }
  Operation *def = memref.getDefiningOp();
  if (auto cast = dyn_cast_or_null<memref::ReinterpretCastOp>(def)) {
    std::optional<DimExpr> off = sizeOf(cast.getMixedOffsets()[0]);
    if (!off)
      return std::nullopt;
    SymbolicLayout l{*off, {}};
    for (OpFoldResult s : cast.getMixedStrides()) {
      std::optional<DimExpr> e = sizeOf(s);
      if (!e)
        return std::nullopt;
      l.strides.push_back(*e);
    }
    return l;
  }
  if (auto sub = dyn_cast_or_null<memref::SubViewOp>(def)) {
    std::optional<SymbolicLayout> src = symbolicLayout(sub.getSource());
    if (!src)
      return std::nullopt;
    SymbolicLayout l{src->offset, {}};
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    SmallVector<OpFoldResult> offsets = sub.getMixedOffsets(),
                              steps = sub.getMixedStrides();
    for (unsigned i = 0; i < offsets.size(); ++i) {
      std::optional<DimExpr> off = sizeOf(offsets[i]), step = sizeOf(steps[i]);
      if (!off || !step)
        return std::nullopt;
      l.offset = l.offset + *off * src->strides[i];
      if (!dropped.test(i))
        l.strides.push_back(src->strides[i] * *step);
    }
    return l;
  }
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def)) {
    std::optional<SymbolicLayout> src = symbolicLayout(expand.getSrc());
    if (!src)
      return std::nullopt;
    SymbolicLayout l{src->offset, SmallVector<DimExpr>(rank)};
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    for (auto [j, group] : llvm::enumerate(groups))
      if (!denseStrides(memref, group, src->strides[j], l.strides))
        return std::nullopt;
    return l;
  }
  if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
    std::optional<SymbolicLayout> src = symbolicLayout(collapse.getSrc());
    if (!src)
      return std::nullopt;
    SymbolicLayout l{src->offset, {}};
    for (ReassociationIndices group : collapse.getReassociationIndices())
      l.strides.push_back(src->strides[group.back()]);
    return l;
  }
  if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
    return symbolicLayout(cast.getSource());
  // A root (an argument, a constant, a view of the arena): dense.
  if (!type.getLayout().isIdentity())
    return std::nullopt;
  SymbolicLayout l{DimExpr::constant(0), SmallVector<DimExpr>(rank)};
  auto all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (!denseStrides(memref, all, DimExpr::constant(1), l.strides))
    return std::nullopt;
  return l;
}

std::string CudaPrinter::symbolic(const DimExpr &e) {
  return e.fold<std::string>(
      [](int64_t c) { return std::to_string(c); },
      [&](const std::string &name) {
        for (auto [i, s] : llvm::enumerate(info.symbols))
          if (s.name == name) {
            params.insert({CudaSpace::Dim, uint32_t(i)});
            return paramName(CudaSpace::Dim, i);
          }
        return std::string("0"); // the lowering names no other symbol
      },
      [](std::string a, std::string b) { return "(" + a + " + " + b + ")"; },
      [](std::string a, std::string b) { return "(" + a + " * " + b + ")"; },
      [](std::string a, int64_t d, bool ceiling) {
        return std::string(ceiling ? "kiln_ceildiv(" : "kiln_floordiv(") + a +
               ", " + std::to_string(d) + ")";
      });
}

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
  if (!type)
    return user->emitOpError("cuda: expects memrefs, found ")
               << memref.getType(),
           failure();
  BufferRef ref;
  ref.elementType = type.getElementType();
  if (cType(ref.elementType).empty())
    return user->emitOpError("cuda: element type ")
               << ref.elementType << " is not supported yet",
           failure();
  if (failed(type.getStridesAndOffset(ref.strides, ref.offset)))
    return user->emitOpError("cuda: expects a strided layout, found ") << type,
           failure();
  if (ref.offset == ShapedType::kDynamic ||
      llvm::is_contained(ref.strides, ShapedType::kDynamic)) {
    // Over symbolic dimensions: the layout from the run-time sizes.
    std::optional<SymbolicLayout> layout = symbolicLayout(memref);
    if (!layout)
      return user->emitOpError("cuda: cannot compute the layout of ")
                 << type << " from the run-time sizes",
             failure();
    ref.offsetText = symbolic(layout->offset);
    for (const DimExpr &stride : layout->strides)
      ref.strideTexts.push_back(symbolic(stride));
  }
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
  // The arguments: the run-time sizes, inputs, old state, outputs, new
  // state, arena. The old
  // state is the state buffer; the new state is written into the arena
  // past the planned buffers (stateScratchOffset), laid out like it.
  unsigned numSymbols = info.symbols.size();
  if (arg.getArgNumber() < numSymbols)
    return user->emitOpError("cuda: a size is used as a buffer"), failure();
  unsigned n = arg.getArgNumber() - numSymbols;
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

std::string paramName(CudaSpace space, uint32_t index) {
  switch (space) {
  case CudaSpace::Input:
    return "in" + std::to_string(index);
  case CudaSpace::Output:
    return "out" + std::to_string(index);
  case CudaSpace::Arena:
    return "arena";
  case CudaSpace::Constants:
    return "kiln_constants";
  case CudaSpace::State:
    return "state";
  case CudaSpace::Dim:
    return "dim" + std::to_string(index);
  }
  return "";
}

std::string CudaPrinter::pointer(const BufferRef &ref) {
  // A root becomes a kernel parameter where an address in it is printed
  // (a result an epilogue consumes in registers never is).
  if (!ref.constant)
    params.insert({ref.space, ref.index});
  std::string base =
      ref.constant ? "kiln_constants" : paramName(ref.space, ref.index);
  std::string p = "(" + storageType(ref.elementType) + " *)(" + base;
  if (ref.byteOffset)
    p += " + " + std::to_string(ref.byteOffset);
  return "(" + p + "))";
}

std::string CudaPrinter::element(const BufferRef &ref,
                                 ArrayRef<std::string> indices) {
  if (!ref.isStatic()) {
    std::string index = ref.offsetText;
    for (size_t k = 0; k < indices.size(); ++k) {
      const std::string &stride = ref.strideTexts[k];
      if (stride == "0")
        continue;
      index += " + " + indices[k];
      if (stride != "1")
        index += " * " + stride;
    }
    return pointer(ref) + "[" + index + "]";
  }
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

/// Whether `v` is `root` or a view made from it.
bool isViewOf(Value v, Value root) {
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

/// The users of `v` and of the views made from it (the views left out).
void collectViewUsers(Value v, SmallVectorImpl<Operation *> &users) {
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
  auto type = cast<MemRefType>(memref.getType());
  // Over symbolic dimensions: unknown, so never taken for apart.
  if (failed(ref) || !ref->isStatic() || !type.hasStaticShape())
    return std::nullopt;
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

bool CudaPrinter::inputsApartFrom(linalg::GenericOp op,
                                  const ByteRange &written) {
  for (Value in : op.getDpsInputs()) {
    if (!isa<MemRefType>(in.getType()))
      continue;
    auto r = byteRange(in, op);
    if (!r || r->overlaps(written))
      return false;
  }
  return true;
}

} // namespace kiln::cuda

//===- CudaBuffers.cpp - memrefs traced to their roots -----------------===//
//
// Every memref a kernel touches is traced through views to its root (an
// input, an output, the state, the arena or a constant) with a static
// offset and strides, so kernels take plain base pointers; and the bytes
// it can touch there, to tell which buffers overlap.
//
//===----------------------------------------------------------------------===//

#include "CudaPrinter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::cuda {

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

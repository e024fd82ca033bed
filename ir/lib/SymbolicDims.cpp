//===- SymbolicDims.cpp - sizes over symbolic dimensions in types ---------===//

#include "kiln/IR/SymbolicDims.h"
#include "kiln/IR/KilnDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace kiln;

LogicalResult
DimsAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                         function_ref<InFlightDiagnostic()> emitError) const {
  ArrayAttr sizes = getSizes();
  if (sizes.size() != shape.size())
    return emitError() << "#kiln.dims has " << sizes.size()
                       << " sizes for a tensor of rank " << shape.size();
  bool symbolic = false;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    auto text = dyn_cast<StringAttr>(size);
    std::optional<DimExpr> e = text ? DimExpr::parse(text.str()) : std::nullopt;
    if (!e)
      return emitError() << "#kiln.dims: size " << i
                         << " is not a size expression: " << size;
    if (std::optional<int64_t> k = e->getConstant()) {
      if (*k != shape[i])
        return emitError() << "#kiln.dims: size " << i << " is " << *k
                           << " but the shape has " << shape[i];
    } else {
      symbolic = true;
    }
  }
  if (!symbolic)
    return emitError() << "#kiln.dims on a tensor without symbolic sizes";
  return success();
}

bool kiln::hasSymbolicDims(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return ranked && isa_and_present<DimsAttr>(ranked.getEncoding());
}

bool kiln::anySymbolicDims(TypeRange types) {
  return llvm::any_of(types, hasSymbolicDims);
}

SmallVector<DimExpr> kiln::dimExprs(Type type) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<DimExpr> sizes;
  auto dims = dyn_cast_if_present<DimsAttr>(ranked.getEncoding());
  for (auto [i, size] : llvm::enumerate(ranked.getShape())) {
    std::optional<DimExpr> e;
    if (dims && i < dims.getSizes().size())
      if (auto text = dyn_cast<StringAttr>(dims.getSizes()[i]))
        e = DimExpr::parse(text.str());
    sizes.push_back(e ? *e : DimExpr::constant(size));
  }
  return sizes;
}

RankedTensorType kiln::symbolicTensorType(ArrayRef<int64_t> shape,
                                          ArrayRef<DimExpr> sizes,
                                          Type elementType) {
  bool symbolic = llvm::any_of(
      sizes, [](const DimExpr &e) { return !e.getConstant().has_value(); });
  if (!symbolic)
    return RankedTensorType::get(shape, elementType);
  MLIRContext *ctx = elementType.getContext();
  SmallVector<Attribute> texts;
  for (const DimExpr &e : sizes)
    texts.push_back(StringAttr::get(ctx, e.str()));
  return RankedTensorType::get(shape, elementType,
                               DimsAttr::get(ctx, ArrayAttr::get(ctx, texts)));
}

RankedTensorType kiln::withElementType(RankedTensorType type,
                                       Type elementType) {
  return RankedTensorType::get(type.getShape(), elementType,
                               type.getEncoding());
}

std::string kiln::dimsString(ArrayRef<DimExpr> sizes) {
  std::string text = "[";
  for (auto [i, e] : llvm::enumerate(sizes))
    text += (i ? ", " : "") + e.str();
  return text + "]";
}

std::optional<SmallVector<DimExpr>> kiln::broadcastDims(ArrayRef<DimExpr> lhs,
                                                        ArrayRef<DimExpr> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  DimExpr one = DimExpr::constant(1);
  SmallVector<DimExpr> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    DimExpr l = i < rank - lhs.size() ? one : lhs[i - (rank - lhs.size())];
    DimExpr r = i < rank - rhs.size() ? one : rhs[i - (rank - rhs.size())];
    if (l != r && l != one && r != one)
      return std::nullopt;
    result[i] = l == one ? r : l;
  }
  return result;
}

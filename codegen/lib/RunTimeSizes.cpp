//===- RunTimeSizes.cpp - sizes of symbolic dimensions in lowered code ----===//

#include "RunTimeSizes.h"

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/SymbolicDims.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <set>

#include <map>

using namespace mlir;
using namespace kiln;

RunTimeSizes::RunTimeSizes(func::FuncOp func) : func(func) {
  auto ranges = func->getAttrOfType<DictionaryAttr>(kSymbolsAttr);
  if (!ranges || func.isExternal())
    return;
  MLIRContext *ctx = func.getContext();
  auto computedNames = func->getAttrOfType<ArrayAttr>(kComputedSymbolsAttr);
  std::set<std::string> isComputed;
  if (computedNames)
    for (auto [j, name] : llvm::enumerate(computedNames)) {
      computedSlots[cast<StringAttr>(name).str()] = j;
      isComputed.insert(cast<StringAttr>(name).str());
    }
  unsigned i = 0;
  for (NamedAttribute range : ranges) {
    if (isComputed.count(range.getName().str()))
      continue;
    NamedAttribute marker(StringAttr::get(ctx, kSymbolArgAttr),
                          range.getName());
    if (failed(func.insertArgument(i, IndexType::get(ctx),
                                   DictionaryAttr::get(ctx, {marker}),
                                   func.getLoc())))
      return;
    symbols[range.getName().str()] = i++;
  }
  if (!computedSlots.empty()) {
    NamedAttribute marker(StringAttr::get(ctx, kComputedDimsArgAttr),
                          computedNames);
    auto type = MemRefType::get({static_cast<int64_t>(computedSlots.size())},
                                IndexType::get(ctx));
    if (failed(func.insertArgument(i, type, DictionaryAttr::get(ctx, {marker}),
                                   func.getLoc())))
      return;
    computedArg = i;
  }
  // Every symbolic size in the function's types, once, in canonical order
  // (so the code is the same for the same model).
  std::set<DimExpr> used;
  auto collect = [&](Type t) {
    if (!hasSymbolicDims(t))
      return;
    for (const DimExpr &e : dimExprs(t))
      if (!e.getConstant())
        used.insert(e);
  };
  func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      collect(t);
    for (Region &r : op->getRegions())
      for (Block &block : r)
        for (Type t : block.getArgumentTypes())
          collect(t);
  });
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  // A size over a computed symbol is known only after the op that defines
  // it: it is built where it is used.
  for (const DimExpr &e : used)
    if ((e.symbols().size() > 1 || e != DimExpr::symbol(e.symbols().front())) &&
        llvm::none_of(e.symbols(), [&](const std::string &s) {
          return computedSlots.count(s);
        }))
      computed[e] = build(b, func.getLoc(), e);
  if (b.getInsertionPoint() != b.getBlock()->begin())
    last = &*std::prev(b.getInsertionPoint());
}

Value RunTimeSizes::build(OpBuilder &b, Location loc,
                          const DimExpr &size) const {
  return size.fold<Value>(
      [&](int64_t c) -> Value {
        return arith::ConstantIndexOp::create(b, loc, c);
      },
      [&](const std::string &name) { return symbol(b, loc, name); },
      [&](Value x, Value y) -> Value {
        return arith::AddIOp::create(b, loc, x, y);
      },
      [&](Value x, Value y) -> Value {
        return arith::MulIOp::create(b, loc, x, y);
      },
      [&](Value x, int64_t divisor, bool ceiling) -> Value {
        Value d = arith::ConstantIndexOp::create(b, loc, divisor);
        if (ceiling)
          return arith::CeilDivSIOp::create(b, loc, x, d);
        return arith::FloorDivSIOp::create(b, loc, x, d);
      });
}

Value RunTimeSizes::symbol(OpBuilder &b, Location loc,
                           const std::string &name) const {
  auto slot = computedSlots.find(name);
  if (slot == computedSlots.end())
    return func.getArgument(symbols.at(name));
  Value index = arith::ConstantIndexOp::create(b, loc, slot->second);
  return memref::LoadOp::create(b, loc, func.getArgument(computedArg),
                                ValueRange{index});
}

LogicalResult RunTimeSizes::define(OpBuilder &b, Location loc, StringRef name,
                                   Value value) const {
  auto slot = computedSlots.find(name.str());
  if (slot == computedSlots.end())
    return failure();
  Value index = arith::ConstantIndexOp::create(b, loc, slot->second);
  memref::StoreOp::create(b, loc, value, func.getArgument(computedArg),
                          ValueRange{index});
  return success();
}

Value RunTimeSizes::get(OpBuilder &b, Location loc, const DimExpr &size) const {
  if (std::optional<int64_t> c = size.getConstant())
    return arith::ConstantIndexOp::create(b, loc, *c);
  auto it = computed.find(size);
  if (it != computed.end())
    return it->second;
  return build(b, loc, size);
}

SmallVector<Value> RunTimeSizes::dynamic(OpBuilder &b, Location loc,
                                         ArrayRef<DimExpr> sizes) const {
  SmallVector<Value> values;
  for (const DimExpr &e : sizes)
    if (!e.getConstant())
      values.push_back(get(b, loc, e));
  return values;
}

SmallVector<OpFoldResult> RunTimeSizes::mixed(OpBuilder &b, Location loc,
                                              ArrayRef<DimExpr> sizes) const {
  SmallVector<OpFoldResult> values;
  for (const DimExpr &e : sizes) {
    if (std::optional<int64_t> c = e.getConstant())
      values.push_back(b.getIndexAttr(*c));
    else
      values.push_back(get(b, loc, e));
  }
  return values;
}

SmallVector<int64_t> kiln::loweredShape(ArrayRef<DimExpr> sizes) {
  SmallVector<int64_t> shape;
  for (const DimExpr &e : sizes)
    shape.push_back(e.getConstant().value_or(ShapedType::kDynamic));
  return shape;
}

namespace {

/// The size of dimension `index` of the buffer `v` where the op that
/// makes it states it (an allocation, a view, an expansion); null when it
/// does not.
OpFoldResult statedSize(Value v, int64_t index) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || index < 0 || index >= type.getRank())
    return {};
  if (!type.isDynamicDim(index))
    return IntegerAttr::get(IndexType::get(v.getContext()),
                            type.getDimSize(index));
  // The dynamic size operands of an allocation or a view, in order.
  auto nth = [&](ValueRange dynamicSizes) -> OpFoldResult {
    return dynamicSizes[type.getDynamicDimIndex(index)];
  };
  Operation *op = v.getDefiningOp();
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(op))
    return nth(alloc.getDynamicSizes());
  if (auto view = dyn_cast_or_null<memref::ViewOp>(op))
    return nth(view.getSizes());
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(op))
    return expand.getMixedOutputShape()[index];
  if (auto sizes = dyn_cast_or_null<OffsetSizeAndStrideOpInterface>(op))
    return sizes.getMixedSizes()[index];
  return {};
}

/// `v` as an expression over the symbol arguments: constants, the sizes
/// buffers state (an allocation's, a view's, an expansion's, a collapse's
/// product), and the arithmetic RunTimeSizes builds.
/// Each value's expression once per query (sizes share subexpressions).
using ExprMemo = llvm::DenseMap<Value, std::optional<DimExpr>>;

std::optional<DimExpr> exprOf(Value v, unsigned depth, ExprMemo &memo);

std::optional<DimExpr> dimExpr(Value buffer, int64_t index, unsigned depth,
                               ExprMemo &memo) {
  if (auto collapse = buffer.getDefiningOp<memref::CollapseShapeOp>();
      collapse && index >= 0 &&
      index < static_cast<int64_t>(collapse.getReassociationIndices().size())) {
    DimExpr product = DimExpr::constant(1);
    for (int64_t d : collapse.getReassociationIndices()[index]) {
      std::optional<DimExpr> e = dimExpr(collapse.getSrc(), d, depth + 1, memo);
      if (!e)
        return std::nullopt;
      product = product * *e;
    }
    return product;
  }
  OpFoldResult size = statedSize(buffer, index);
  if (!size)
    return std::nullopt;
  if (auto attr = dyn_cast<Attribute>(size))
    return DimExpr::constant(cast<IntegerAttr>(attr).getInt());
  return exprOf(cast<Value>(size), depth + 1, memo);
}

std::optional<DimExpr> exprOfUncached(Value v, unsigned depth, ExprMemo &memo);

std::optional<DimExpr> exprOf(Value v, unsigned depth, ExprMemo &memo) {
  // Deep enough for a sum of hundreds of sizes (a concat of what many
  // NonZeros kept), shallow enough for the stack.
  if (depth > 2048)
    return std::nullopt;
  auto known = memo.find(v);
  if (known != memo.end())
    return known->second;
  std::optional<DimExpr> e = exprOfUncached(v, depth, memo);
  memo[v] = e;
  return e;
}

std::optional<DimExpr> exprOfUncached(Value v, unsigned depth, ExprMemo &memo) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return DimExpr::constant(c.getSExtValue());
  if (auto dim = v.getDefiningOp<memref::DimOp>()) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return std::nullopt;
    return dimExpr(dim.getSource(), *index, depth + 1, memo);
  }
  // A computed symbol, read from the argument its op stores it to.
  if (auto load = v.getDefiningOp<memref::LoadOp>()) {
    auto arg = dyn_cast<BlockArgument>(load.getMemRef());
    APInt slot;
    if (!arg || load.getIndices().size() != 1 ||
        !matchPattern(load.getIndices()[0], m_ConstantInt(&slot)))
      return std::nullopt;
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getBody().front())
      return std::nullopt;
    auto names = func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                                  kComputedDimsArgAttr);
    if (!names || slot.getZExtValue() >= names.size())
      return std::nullopt;
    return DimExpr::symbol(cast<StringAttr>(names[slot.getZExtValue()]).str());
  }
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getBody().front())
      return std::nullopt;
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kSymbolArgAttr);
    if (!name)
      return std::nullopt;
    return DimExpr::symbol(name.str());
  }
  Operation *op = v.getDefiningOp();
  if (!op || op->getNumOperands() != 2)
    return std::nullopt;
  std::optional<DimExpr> x = exprOf(op->getOperand(0), depth + 1, memo);
  std::optional<DimExpr> y = exprOf(op->getOperand(1), depth + 1, memo);
  if (!x || !y)
    return std::nullopt;
  if (isa<arith::AddIOp>(op))
    return *x + *y;
  if (isa<arith::SubIOp>(op))
    return *x - *y;
  if (isa<arith::MulIOp>(op))
    return *x * *y;
  std::optional<int64_t> d = y->getConstant();
  if (!d || *d <= 0)
    return std::nullopt;
  if (isa<arith::FloorDivSIOp>(op))
    return x->floorDiv(*d);
  if (isa<arith::CeilDivSIOp>(op))
    return x->ceilDiv(*d);
  if (isa<arith::DivSIOp>(op)) // of sizes, which are not negative
    return x->floorDiv(*d);
  return std::nullopt;
}

} // namespace

std::optional<DimExpr> kiln::sizeExpr(Value size) {
  ExprMemo memo;
  std::optional<DimExpr> e = exprOf(size, 0, memo);
  if (!e || !e->isValid())
    return std::nullopt;
  return e;
}

std::optional<int64_t> kiln::sizeUpperBound(Value size) {
  std::optional<DimExpr> e = sizeExpr(size);
  Region *region = size.getParentRegion();
  auto func = region ? region->getParentOfType<func::FuncOp>() : nullptr;
  if (!e || !func)
    return std::nullopt;
  return upperBound(*e, func);
}

std::optional<int64_t> kiln::upperBound(const DimExpr &e, func::FuncOp func) {
  if (std::optional<int64_t> c = e.getConstant())
    return c;
  std::map<std::string, DimExpr::Range> ranges;
  if (auto symbols = func->getAttrOfType<DictionaryAttr>(kSymbolsAttr))
    for (NamedAttribute symbol : symbols) {
      auto range = dyn_cast<DenseI64ArrayAttr>(symbol.getValue());
      if (!range || range.size() != 2)
        return std::nullopt;
      ranges[symbol.getName().str()] = {range[0], range[1]};
    }
  std::optional<DimExpr::Range> range = e.bounds(ranges);
  if (!range)
    return std::nullopt;
  return range->hi;
}

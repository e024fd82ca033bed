//===- OnnxImporter.cpp - ONNX model -> kiln dialect ----------------------===//
//
// Walks the model once: opsets, graph inputs, initializers, nodes in file
// order (ONNX requires a topological order; a node reading a value defined
// later is reported), outputs. Per-op work is in OnnxOps.cpp; this file owns
// everything about values, types and tensor data.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/OnnxImporter.h"

#include "ImporterImpl.h"
#include "kiln/IR/SymbolicDims.h"

#include "kiln/Compiler/TensorData.h"
#include "kiln/IR/ConstantEvaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

InFlightDiagnostic NodeImporter::error() {
  InFlightDiagnostic diag = emitError(loc);
  diag << "(" << node.op_type() << ", ";
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    diag << node.domain() << " ";
  diag << "opset " << opset << "): ";
  return diag;
}

LogicalResult NodeImporter::expectInputs(size_t min, size_t max) {
  if (inputs.size() < min || inputs.size() > max) {
    if (min == max)
      error() << "expects " << min << (min == 1 ? " input" : " inputs")
              << ", found " << inputs.size();
    else
      error() << "expects " << min << " to " << max << " inputs, found "
              << inputs.size();
    return failure();
  }
  for (size_t i = 0; i < min; ++i)
    if (!inputs[i]) {
      error() << "input " << i << " is required but empty";
      return failure();
    }
  return success();
}

/// The largest value the importer computes to decide a shape or an index.
constexpr int64_t kMaxImportFoldElements = 1 << 16;

/// The elements of a constant's value, reading resource blobs back.
static DenseElementsAttr denseValue(Attribute value) {
  if (!value)
    return {};
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return dense;
  // Small integer inputs (shapes, axes) are never stored as resources, but a
  // resource can still be read back.
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value))
    if (auto blob = res.getRawHandle().getBlob())
      return DenseElementsAttr::getFromRawBuffer(res.getType(),
                                                 blob->getData());
  return {};
}

/// Folds the ops computing `v` when all of them have constant operands:
/// each op's folder, else the constant evaluator kiln-fold-constants uses
/// (which computes every core op: Ceil, ReduceMax, ... of shape arithmetic
/// such as torchvision's padding to a stride), for results of up to 2^16
/// elements. The IR is not changed except by folders that update an op in
/// place, which keep its meaning; the canonicalizer later removes what the
/// folded value makes dead. `depth` bounds the walk up the chain; `memo`
/// visits each value once, so shared subexpressions cost nothing more.
static Attribute foldToAttribute(Value v, unsigned depth,
                                 llvm::DenseMap<Value, Attribute> &memo) {
  Operation *op = v.getDefiningOp();
  if (!op || hasSymbolicDims(v.getType()))
    return {};
  if (auto c = dyn_cast<ConstantOp>(op))
    return c.getValue();
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  memo[v] = Attribute();
  if (depth == 0 || op->getNumResults() != 1 || op->getNumRegions() != 0)
    return {};
  // A folder that updates the op in place (reshape of a reshape) returns the
  // op's own result; the second try sees the updated operands.
  for (int attempt = 0; attempt < 2; ++attempt) {
    SmallVector<Attribute> operands;
    for (Value operand : op->getOperands()) {
      Attribute a = foldToAttribute(operand, depth - 1, memo);
      if (!a)
        return {};
      operands.push_back(a);
    }
    SmallVector<OpFoldResult> results;
    if (failed(op->fold(operands, results)) || results.size() != 1) {
      SmallVector<DenseElementsAttr> dense;
      for (Attribute a : operands)
        dense.push_back(asDenseElements(a, kMaxImportFoldElements));
      DenseElementsAttr value =
          evaluateConstantOp(op, dense, kMaxImportFoldElements);
      memo[v] = value;
      return value;
    }
    Attribute folded;
    if (auto attr = dyn_cast<Attribute>(results[0]))
      folded = attr;
    else if (Value value = cast<Value>(results[0]); value != v)
      folded = foldToAttribute(value, depth - 1, memo);
    else
      continue;
    memo[v] = folded;
    return folded;
  }
  return {};
}

DenseElementsAttr NodeImporter::constantValueOf(Value v) {
  // A tensor with symbolic sizes is never known: folding it would give its
  // value at the bounds.
  if (!v || hasSymbolicDims(v.getType()))
    return {};
  llvm::DenseMap<Value, Attribute> memo;
  return denseValue(foldToAttribute(v, /*depth=*/64, memo));
}

FailureOr<DenseElementsAttr> NodeImporter::constantInput(size_t i,
                                                         StringRef what) {
  if (!hasInput(i)) {
    error() << "the " << what << " input is missing";
    return failure();
  }
  if (DenseElementsAttr value = constantValue(i))
    return value;
  error() << "the " << what
          << " input must be a constant (an initializer or Constant node); "
             "values computed at run time are not supported";
  return failure();
}

FailureOr<SmallVector<int64_t>> NodeImporter::constantInts(size_t i,
                                                           StringRef what) {
  auto dense = constantInput(i, what);
  if (failed(dense))
    return failure();
  if (!dense->getElementType().isInteger(64) &&
      !dense->getElementType().isInteger(32)) {
    error() << "the " << what << " input must hold integers, found "
            << dense->getElementType();
    return failure();
  }
  SmallVector<int64_t> values;
  for (const APInt &v : dense->getValues<APInt>())
    values.push_back(v.getSExtValue());
  return values;
}

const onnx::AttributeProto *NodeImporter::getAttribute(StringRef name) {
  read.insert(name.str());
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

const onnx::AttributeProto *NodeImporter::firstUnreadAttribute() const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (!read.count(a.name()))
      return &a;
  return nullptr;
}

static const char *attributeTypeName(int type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return "a float";
  case onnx::AttributeProto::INT:
    return "an int";
  case onnx::AttributeProto::STRING:
    return "a string";
  case onnx::AttributeProto::TENSOR:
    return "a tensor";
  case onnx::AttributeProto::GRAPH:
    return "a graph";
  case onnx::AttributeProto::FLOATS:
    return "a list of floats";
  case onnx::AttributeProto::INTS:
    return "a list of ints";
  case onnx::AttributeProto::STRINGS:
    return "a list of strings";
  default:
    return "an unsupported kind";
  }
}

/// Fails with an error unless attribute `a` has `type`.
static LogicalResult checkType(NodeImporter &n, const onnx::AttributeProto &a,
                               int type) {
  if (!a.ref_attr_name().empty()) {
    n.error() << "attribute '" << a.name()
              << "' refers to a function attribute, which is not supported";
    return failure();
  }
  if (a.type() == type)
    return success();
  n.error() << "attribute '" << a.name() << "' must be "
            << attributeTypeName(type) << ", found "
            << attributeTypeName(a.type());
  return failure();
}

FailureOr<const onnx::GraphProto *> NodeImporter::getGraph(StringRef name) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a) {
    error() << "expects the graph attribute '" << name << "'";
    return failure();
  }
  if (failed(checkType(*this, *a, onnx::AttributeProto::GRAPH)))
    return failure();
  return &a->g();
}

FailureOr<std::string> NodeImporter::getString(StringRef name,
                                               StringRef fallback) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a)
    return fallback.str();
  if (failed(checkType(*this, *a, onnx::AttributeProto::STRING)))
    return failure();
  return a->s();
}

FailureOr<std::optional<SmallVector<std::string>>>
NodeImporter::getStrings(StringRef name) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a)
    return std::optional<SmallVector<std::string>>();
  if (failed(checkType(*this, *a, onnx::AttributeProto::STRINGS)))
    return failure();
  return std::optional<SmallVector<std::string>>(
      SmallVector<std::string>(a->strings().begin(), a->strings().end()));
}

FailureOr<std::optional<int64_t>> NodeImporter::getInt(StringRef name) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a)
    return std::optional<int64_t>();
  if (failed(checkType(*this, *a, onnx::AttributeProto::INT)))
    return failure();
  return std::optional<int64_t>(a->i());
}

FailureOr<std::optional<float>> NodeImporter::getFloat(StringRef name) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a)
    return std::optional<float>();
  if (failed(checkType(*this, *a, onnx::AttributeProto::FLOAT)))
    return failure();
  return std::optional<float>(a->f());
}

FailureOr<std::optional<SmallVector<int64_t>>>
NodeImporter::getInts(StringRef name) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a)
    return std::optional<SmallVector<int64_t>>();
  if (failed(checkType(*this, *a, onnx::AttributeProto::INTS)))
    return failure();
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(a->ints().begin(), a->ints().end()));
}

FailureOr<std::optional<SmallVector<float>>>
NodeImporter::getFloats(StringRef name) {
  const onnx::AttributeProto *a = getAttribute(name);
  if (!a)
    return std::optional<SmallVector<float>>();
  if (failed(checkType(*this, *a, onnx::AttributeProto::FLOATS)))
    return failure();
  return std::optional<SmallVector<float>>(
      SmallVector<float>(a->floats().begin(), a->floats().end()));
}

FailureOr<int64_t> NodeImporter::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    error() << "axis " << axis << " is out of range for rank " << rank
            << " (expected [" << -rank << ", " << rank << "))";
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Value> NodeImporter::legacyBroadcastRhs(Value lhs, Value rhs) {
  if (opset >= 7)
    return rhs;
  auto broadcast = getInt("broadcast");
  auto axis = getInt("axis");
  if (failed(broadcast) || failed(axis))
    return failure();
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (!broadcast->value_or(0)) {
    if (l.getShape() != r.getShape()) {
      error() << "operand shapes " << l << " and " << r
              << " differ, and the node does not set broadcast=1";
      return failure();
    }
    return rhs;
  }
  int64_t start = axis->value_or(l.getRank() - r.getRank());
  if (start < 0)
    start += l.getRank();
  if (start < 0 || start + r.getRank() > l.getRank()) {
    error() << "axis " << axis->value_or(0) << " does not place " << r
            << " inside " << l;
    return failure();
  }
  // Trailing ones make numpy alignment equal ONNX's legacy alignment at axis.
  SmallVector<int64_t> shape(r.getShape());
  shape.append(l.getRank() - start - r.getRank(), 1);
  return reshape(rhs, shape);
}

FailureOr<Value> NodeImporter::matmul(Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (l.getElementType() != r.getElementType()) {
    error() << "operands have different element types, " << l.getElementType()
            << " and " << r.getElementType();
    return failure();
  }
  if (l.getElementType().isInteger(1)) {
    error() << "element type i1 (bool) is not supported";
    return failure();
  }
  bool compatible =
      l.getRank() >= 2 && r.getRank() >= 2 &&
      l.getShape().back() == r.getShape()[r.getRank() - 2] &&
      broadcastShapes(l.getShape().drop_back(2), r.getShape().drop_back(2));
  if (compatible && anySymbolicDims({l, r})) {
    SmallVector<DimExpr> ld = dimExprs(l), rd = dimExprs(r);
    compatible = ld.back() == rd[rd.size() - 2] &&
                 broadcastDims(ArrayRef<DimExpr>(ld).drop_back(2),
                               ArrayRef<DimExpr>(rd).drop_back(2));
  }
  if (!compatible) {
    error() << "operand shapes " << l << " and " << r
            << " are not compatible for a matrix product";
    return failure();
  }
  return Value(MatMulOp::create(b, loc, lhs, rhs));
}

Value NodeImporter::reshape(Value v, ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc,
                           RankedTensorType::get(shape, t.getElementType()), v);
}

Value NodeImporter::reshape(Value v, ArrayRef<int64_t> shape,
                            ArrayRef<DimExpr> sizes) {
  auto t = cast<RankedTensorType>(v.getType());
  auto type = symbolicTensorType(shape, sizes, t.getElementType());
  if (type == t)
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

Value NodeImporter::transpose(Value v, ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, v, b.getDenseI64ArrayAttr(perm));
}

Value kiln::import::i64Constant(NodeImporter &n, ArrayRef<int64_t> values,
                                ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, n.b.getI64Type());
  return ConstantOp::create(
      n.b, n.loc, type,
      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

Value NodeImporter::scalar(Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr;
  if (isa<FloatType>(elementType))
    attr = DenseElementsAttr::get(type, b.getFloatAttr(elementType, value));
  else
    attr = DenseElementsAttr::get(
        type, b.getIntegerAttr(elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(b, loc, type, cast<ElementsAttr>(attr));
}

//===----------------------------------------------------------------------===//
// Types and tensor data
//===----------------------------------------------------------------------===//

Type kiln::import::elementTypeOf(MLIRContext *ctx, int onnxType) {
  Builder b(ctx);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
    return b.getIntegerType(64);
  case onnx::TensorProto::BOOL:
    return b.getIntegerType(1);
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, /*isSigned=*/false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, /*isSigned=*/false);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, /*isSigned=*/false);
  case onnx::TensorProto::FLOAT8E4M3FN:
    return b.getType<Float8E4M3FNType>();
  case onnx::TensorProto::FLOAT8E4M3FNUZ:
    return b.getType<Float8E4M3FNUZType>();
  case onnx::TensorProto::FLOAT8E5M2:
    return b.getType<Float8E5M2Type>();
  case onnx::TensorProto::FLOAT8E5M2FNUZ:
    return b.getType<Float8E5M2FNUZType>();
  case onnx::TensorProto::FLOAT8E8M0:
    return b.getType<Float8E8M0FNUType>();
  case onnx::TensorProto::FLOAT4E2M1:
    return b.getType<Float4E2M1FNType>();
  case onnx::TensorProto::INT4:
    return b.getIntegerType(4);
  case onnx::TensorProto::UINT4:
    return b.getIntegerType(4, /*isSigned=*/false);
  case onnx::TensorProto::INT2:
    return b.getIntegerType(2);
  case onnx::TensorProto::UINT2:
    return b.getIntegerType(2, /*isSigned=*/false);
  default:
    return Type();
  }
}

namespace {

/// Imports one graph; owns the name -> value map.
class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, StringRef fileName,
                const ImportOptions &options)
      : ctx(ctx), builder(&ctx), fileName(fileName), options(options) {}

  OwningOpRef<ModuleOp> run(onnx::ModelProto &model);

private:
  /// A location for the whole model file (no node).
  Location fileLoc() {
    return FileLineColLoc::get(builder.getStringAttr(fileName), 0, 0);
  }
  Location nodeLoc(StringRef nodeName) {
    return NameLoc::get(builder.getStringAttr(nodeName), fileLoc());
  }
  FailureOr<RankedTensorType> valueType(const onnx::ValueInfoProto &info,
                                        StringRef role);
  /// Decodes tensor data; errors start with `error()`'s prefix and `what`.
  /// With `takeFrom` (the same tensor, which the caller gives up), a large
  /// tensor's raw_data moves into the constant instead of being copied.
  FailureOr<ElementsAttr>
  tensorData(const onnx::TensorProto &tensor, StringRef what,
             llvm::function_ref<InFlightDiagnostic()> error,
             onnx::TensorProto *takeFrom = nullptr);
  LogicalResult importNode(const onnx::NodeProto &node, size_t index);
  /// NodeImporter::importSubgraph.
  FailureOr<SmallVector<Value>>
  importSubgraph(const onnx::GraphProto &graph, StringRef which,
                 ArrayRef<Value> inputs,
                 llvm::function_ref<InFlightDiagnostic()> error);
  /// The bytes of an external-data tensor and the file they lie in, mapped
  /// once per import; or failure with an error.
  FailureOr<std::pair<StringRef, std::shared_ptr<llvm::MemoryBuffer>>>
  externalBytes(const onnx::TensorProto &t,
                llvm::function_ref<InFlightDiagnostic()> error);
  /// Mapped external files, by resolved path; the resource blobs made from
  /// them share ownership, so the mapping outlives the import.
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> externalFiles;

  MLIRContext &ctx;
  OpBuilder builder;
  std::string fileName;
  const ImportOptions &options;
  int64_t opset = 0;             ///< of the default domain
  bool defaultImported = false;  ///< whether the model imports ai.onnx
  bool trainingImported = false; ///< ... and ai.onnx.preview.training
  llvm::StringMap<Value> values;
  /// Per subgraph being imported (innermost last): the names it bound or
  /// defined, with what they held before (null: nothing), undone when it
  /// ends, so that its names do not outlive it.
  std::vector<std::vector<std::pair<std::string, Value>>> scopes;
  /// Binds `name` to `v`, remembered by the innermost scope.
  void bind(StringRef name, Value v) {
    if (!scopes.empty())
      scopes.back().emplace_back(name.str(), values.lookup(name));
    values[name] = v;
  }
  ShapeValues shapeValues;
  unsigned resourceCount = 0;
};

} // namespace

FailureOr<RankedTensorType>
GraphImporter::valueType(const onnx::ValueInfoProto &info, StringRef role) {
  Location loc = fileLoc();
  if (!info.type().has_tensor_type()) {
    emitError(loc) << role << " '" << info.name()
                   << "' is not a tensor (sequences, maps and optionals are "
                      "not supported)";
    return failure();
  }
  const onnx::TypeProto::Tensor &t = info.type().tensor_type();
  Type elt = elementTypeOf(&ctx, t.elem_type());
  if (!elt) {
    emitError(loc) << role << " '" << info.name() << "' has element type "
                   << onnxTypeName(t.elem_type()) << ", which is not supported";
    return failure();
  }
  if (!t.has_shape()) {
    emitError(loc) << role << " '" << info.name()
                   << "' has no shape; kiln compiles static shapes only";
    return failure();
  }
  SmallVector<int64_t> shape;
  SmallVector<DimExpr> sizes;
  for (const auto &dim : t.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      sizes.push_back(DimExpr::constant(dim.dim_value()));
      continue;
    }
    if (dim.has_dim_param()) {
      auto pinned = options.dims.find(dim.dim_param());
      if (pinned != options.dims.end()) {
        shape.push_back(pinned->second);
        sizes.push_back(DimExpr::constant(pinned->second));
        continue;
      }
      auto range = options.dimRanges.find(dim.dim_param());
      if (range != options.dimRanges.end()) {
        if (!DimExpr::isSymbolName(dim.dim_param())) {
          emitError(loc) << role << " '" << info.name()
                         << "' has a symbolic dimension '" << dim.dim_param()
                         << "' whose name kiln cannot keep symbolic (it has "
                            "an operator, a blank or a leading digit); pin "
                            "it with --dim "
                         << dim.dim_param() << "=N";
          return failure();
        }
        shape.push_back(range->second.second);
        sizes.push_back(DimExpr::symbol(dim.dim_param()));
        continue;
      }
    }
    auto diag = emitError(loc) << role << " '" << info.name() << "' has ";
    if (dim.has_dim_param())
      diag << "a symbolic dimension '" << dim.dim_param()
           << "'; pin it to a size with --dim " << dim.dim_param()
           << "=N (kiln compiles static shapes)";
    else if (dim.has_dim_value())
      diag << "a negative dimension " << dim.dim_value()
           << "; kiln compiles static shapes only";
    else
      diag << "a dimension of unknown size; kiln compiles static shapes only";
    return failure();
  }
  return symbolicTensorType(shape, sizes, elt);
}

FailureOr<std::pair<StringRef, std::shared_ptr<llvm::MemoryBuffer>>>
GraphImporter::externalBytes(const onnx::TensorProto &t,
                             llvm::function_ref<InFlightDiagnostic()> error) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      uint64_t v;
      if (StringRef(e.value()).getAsInteger(10, v)) {
        error() << "external data " << e.key() << " '" << e.value()
                << "' is not a non-negative integer";
        return failure();
      }
      if (e.key() == "offset")
        offset = v;
      else
        length = v;
    } else if (e.key() != "checksum") {
      error() << "external data key '" << e.key()
              << "' is not one of location, offset, length, checksum";
      return failure();
    }
  }
  if (options.externalDataDir.empty()) {
    error() << "the data is stored in an external file, which needs the "
               "model's folder (compile the model from its file)";
    return failure();
  }
  // The location is a relative path below the model's folder; after
  // resolving symlinks it must still be there.
  namespace path = llvm::sys::path;
  bool escapes = location.empty() || path::is_absolute(location) ||
                 location.find('\0') != std::string::npos;
  for (auto it = path::begin(location), end = path::end(location);
       !escapes && it != end; ++it)
    escapes = *it == "..";
  if (escapes) {
    error() << "external data location '" << location
            << "' must be a relative path inside the model's folder";
    return failure();
  }
  SmallString<256> dirReal, fileReal, joined(options.externalDataDir);
  path::append(joined, location);
  if (llvm::sys::fs::real_path(options.externalDataDir, dirReal) ||
      llvm::sys::fs::real_path(joined, fileReal)) {
    error() << "cannot open external data file '" << location << "'";
    return failure();
  }
  if (!StringRef(fileReal).starts_with(dirReal.str().str() + "/")) {
    error() << "external data location '" << location
            << "' resolves outside the model's folder";
    return failure();
  }
  auto &file = externalFiles[fileReal];
  if (!file) {
    auto buffer = llvm::MemoryBuffer::getFile(fileReal, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      error() << "cannot read external data file '" << location
              << "': " << buffer.getError().message();
      return failure();
    }
    file = std::move(*buffer);
  }
  uint64_t size = file->getBufferSize();
  if (offset > size || (length && *length > size - offset)) {
    error() << "external data at offset " << offset << " with length "
            << (length ? std::to_string(*length) : std::string("(to the end)"))
            << " lies outside '" << location << "' (" << size << " bytes)";
    return failure();
  }
  return std::make_pair(
      file->getBuffer().substr(offset, length.value_or(size - offset)), file);
}

FailureOr<ElementsAttr>
GraphImporter::tensorData(const onnx::TensorProto &t, StringRef what,
                          llvm::function_ref<InFlightDiagnostic()> error,
                          onnx::TensorProto *takeFrom) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    auto external = externalBytes(t, [&]() -> InFlightDiagnostic {
      auto diag = error();
      diag << what << ": ";
      return diag;
    });
    if (failed(external))
      return failure();
    auto [bytes, file] = *external;
    Type elt = elementTypeOf(&ctx, t.data_type());
    unsigned width = onnxElementBytes(t.data_type());
    // Large plain tensors reference the mapped file instead of a copy.
    if (elt && width && !elt.isInteger(1) && !isNarrowType(elt) &&
        reinterpret_cast<uintptr_t>(bytes.data()) % width == 0) {
      SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
      int64_t count = 1;
      bool ok = true;
      for (int64_t d : dims) {
        ok = ok && d >= 0 && (d == 0 || count <= (int64_t(1) << 40) / d);
        count *= ok ? d : 1;
      }
      if (ok && count > options.resourceThresholdElements &&
          bytes.size() == static_cast<uint64_t>(count) * width) {
        std::string blobName = "kiln_weight_" + std::to_string(resourceCount++);
        return ElementsAttr(DenseResourceElementsAttr::get(
            RankedTensorType::get(dims, elt), blobName,
            AsmResourceBlob(
                ArrayRef<char>(bytes.data(), bytes.size()), width,
                [keep = file](void *, size_t, size_t) {},
                /*dataIsMutable=*/false)));
      }
    }
    // Everything else decodes a copy, with the usual checks.
    onnx::TensorProto copy = t;
    copy.clear_external_data();
    copy.clear_data_location();
    copy.set_raw_data(bytes.data(), bytes.size());
    return tensorData(copy, what, error, &copy);
  }
  TensorBytes decoded;
  std::string message;
  if (!(takeFrom ? decodeTensorTakingData(*takeFrom, decoded, message)
                 : decodeTensor(t, decoded, message))) {
    error() << what << ": " << message;
    return failure();
  }
  Type elt = elementTypeOf(&ctx, t.data_type());
  auto type = RankedTensorType::get(decoded.dims, elt);
  const std::string &raw = decoded.data;
  if (elt.isInteger(1)) {
    // MLIR packs i1 as bits; ONNX stores a byte per element.
    SmallVector<bool> bits(raw.begin(), raw.end());
    return ElementsAttr(DenseElementsAttr::get(type, bits));
  }
  if (isNarrowType(elt)) {
    // One byte per element once decoded; MLIR wants values of the type's own
    // width.
    unsigned width = elt.getIntOrFloatBitWidth();
    auto floatTy = dyn_cast<FloatType>(elt);
    SmallVector<Attribute> values;
    values.reserve(raw.size());
    for (char c : raw) {
      APInt bits(width, static_cast<uint8_t>(c) & ((1u << width) - 1));
      values.push_back(
          floatTy ? Attribute(FloatAttr::get(
                        floatTy, APFloat(floatTy.getFloatSemantics(), bits)))
                  : Attribute(IntegerAttr::get(elt, bits)));
    }
    return ElementsAttr(DenseElementsAttr::get(type, values));
  }
  if (decoded.numElements > options.resourceThresholdElements) {
    // Large initializers: a blob in the module's resource section.
    std::string blobName = "kiln_weight_" + std::to_string(resourceCount++);
    if (reinterpret_cast<uintptr_t>(raw.data()) % alignof(uint64_t) == 0) {
      // The blob keeps the decoded string rather than a copy of it (a heap
      // buffer, aligned for any element; a copy only where a short string's
      // inline buffer is not, with resourceThresholdElements set low).
      auto owned = std::make_unique<std::string>(std::move(decoded.data));
      ArrayRef<char> bytes(owned->data(), owned->size());
      return ElementsAttr(DenseResourceElementsAttr::get(
          type, blobName,
          AsmResourceBlob(
              bytes, alignof(uint64_t),
              [owned = std::move(owned)](void *, size_t, size_t) mutable {
                owned.reset();
              },
              /*dataIsMutable=*/true)));
    }
    return ElementsAttr(DenseResourceElementsAttr::get(
        type, blobName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(
            ArrayRef<char>(raw.data(), raw.size()), alignof(uint64_t))));
  }
  bool splat = false;
  ArrayRef<char> rawRef(raw.data(), raw.size());
  if (!DenseElementsAttr::isValidRawBuffer(type, rawRef, splat)) {
    error() << what << ": its data does not match its type";
    return failure();
  }
  return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, rawRef));
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        size_t index) {
  std::string nodeName =
      node.name().empty() ? "#" + std::to_string(index) : node.name();
  Location loc = nodeLoc(nodeName);
  auto nodeError = [&]() {
    InFlightDiagnostic diag = emitError(loc);
    diag << "(" << node.op_type() << ", ";
    if (node.domain() == kTrainingDomain)
      diag << kTrainingDomain << " opset " << kTrainingOpset << "): ";
    else
      diag << "opset " << opset << "): ";
    return diag;
  };
  bool training = node.domain() == kTrainingDomain;
  if (!node.domain().empty() && node.domain() != "ai.onnx" && !training) {
    nodeError() << "domain '" << node.domain() << "' is not supported";
    return failure();
  }
  if (training ? !trainingImported : !defaultImported) {
    emitError(loc) << "(" << node.op_type() << "): the model imports no "
                   << (training ? kTrainingDomain : "default-domain (ai.onnx)")
                   << " opset";
    return failure();
  }
  const auto &handlers = training ? trainingHandlers() : opHandlers();
  // These decompositions build a constant (a mask, a ramp, an identity, a
  // window count) as large as an input, element by element at compile time;
  // a hostile input shape must not make that billions of elements.
  static const llvm::StringSet<> materializing = {"EyeLike",
                                                  "Trilu",
                                                  "GatherElements",
                                                  "Hardmax",
                                                  "Attention",
                                                  "AveragePool",
                                                  "SoftmaxCrossEntropyLoss",
                                                  "NegativeLogLikelihoodLoss"};
  constexpr int64_t kMaxMaterialized = int64_t(1) << 24;
  if (materializing.contains(node.op_type())) {
    for (const std::string &name : node.input()) {
      auto found = values.find(name);
      if (name.empty() || found == values.end())
        continue;
      auto type = dyn_cast<RankedTensorType>(found->second.getType());
      if (type && type.getNumElements() > kMaxMaterialized) {
        nodeError() << "input '" << name << "' has " << type.getNumElements()
                    << " elements; kiln decomposes " << node.op_type()
                    << " with a constant as large as its input and allows at "
                    << "most " << kMaxMaterialized;
        return failure();
      }
    }
  }
  auto it = handlers.find(node.op_type());
  if (it == handlers.end()) {
    nodeError() << "unsupported op type '" << node.op_type() << "'";
    return failure();
  }
  // Symbolic sizes reach only the handlers that carry them.
  static const llvm::StringSet<> symbolic = [] {
    llvm::StringSet<> ops;
    for (const std::string &op : symbolicOnnxOps())
      ops.insert(op);
    return ops;
  }();
  // Windows and per-channel statistics read the sizes after the batch as
  // numbers.
  static const llvm::StringSet<> batchOnly = {
      "AveragePool",       "BatchNormalization", "Conv",
      "GlobalAveragePool", "GlobalMaxPool",      "MaxPool"};
  if (batchOnly.contains(node.op_type()) && node.input_size() > 0) {
    auto found = values.find(node.input(0));
    if (found != values.end() && hasSymbolicDims(found->second.getType())) {
      auto sizes = dimExprs(found->second.getType());
      if (llvm::any_of(ArrayRef<DimExpr>(sizes).drop_front(),
                       [](const DimExpr &e) { return !e.getConstant(); })) {
        nodeError() << "input '" << node.input(0) << "' has symbolic sizes "
                    << dimsString(sizes) << "; " << node.op_type()
                    << " takes a symbolic batch (the first dimension) only; "
                       "pin the others with --dim NAME=N";
        return failure();
      }
    }
  }
  if (training || !symbolic.contains(node.op_type()))
    for (const std::string &name : node.input()) {
      auto found = values.find(name);
      if (name.empty() || found == values.end() ||
          !hasSymbolicDims(found->second.getType()))
        continue;
      auto sizes = dimExprs(found->second.getType());
      nodeError() << "input '" << name << "' has symbolic sizes "
                  << dimsString(sizes) << ", which " << node.op_type()
                  << " does not support yet; pin the dimensions with --dim "
                     "NAME=N";
      return failure();
    }

  std::vector<Value> inputs;
  for (const std::string &name : node.input()) {
    if (name.empty()) {
      inputs.push_back(Value());
      continue;
    }
    auto v = values.find(name);
    if (v == values.end()) {
      nodeError() << "input '" << name
                  << "' is not a graph input, an initializer or the output of "
                     "an earlier node";
      return failure();
    }
    inputs.push_back(v->second);
  }

  // Sizes over symbolic dimensions (Shape of a symbolic tensor and the
  // arithmetic on it) are placeholders: the shape arithmetic computes on
  // them at compile time and the inputs that take sizes read them; any
  // other reader gets their run-time values from a kiln.sizes op.
  Handler handler = it->second;
  // Whether every input is sizes or a small integer constant; asked only
  // of nodes that read sizes (folding an input is not free).
  bool allSizes = llvm::any_of(inputs,
                               [&](Value v) {
                                 return v && shapeValues.elements.count(v);
                               }) &&
                  llvm::all_of(inputs, [&](Value v) {
                    if (!v || shapeValues.elements.count(v))
                      return true;
                    auto type = dyn_cast<RankedTensorType>(v.getType());
                    if (!type || type.getNumElements() > 64 ||
                        !isa<IntegerType>(type.getElementType()))
                      return false;
                    return bool(NodeImporter::constantValueOf(v));
                  });
  for (auto [i, v] : llvm::enumerate(inputs)) {
    if (!v || !shapeValues.elements.count(v))
      continue;
    // Reshape's and Expand's shape, Slice's bounds on data, Range's limit.
    bool dataSlice = node.op_type() == "Slice" && i > 0 &&
                     !shapeValues.elements.count(inputs[0]);
    bool takesSizes =
        ((node.op_type() == "Reshape" || node.op_type() == "Expand") &&
         i == 1) ||
        (node.op_type() == "ConstantOfShape" && i == 0) || dataSlice ||
        (node.op_type() == "Range" && i == 1);
    if (takesSizes)
      continue;
    // A cast to floats reads the sizes as data.
    bool castToFloat =
        node.op_type() == "Cast" &&
        llvm::any_of(node.attribute(), [](const onnx::AttributeProto &a) {
          return a.name() == "to" && a.i() != onnx::TensorProto::INT64 &&
                 a.i() != onnx::TensorProto::INT32;
        });
    if (!training && allSizes && !castToFloat &&
        isShapeArithmetic(node.op_type())) {
      handler = importShapeArithmetic;
      continue;
    }
    SmallVector<Attribute> texts;
    for (const DimExpr &e : shapeValues.elements.lookup(v))
      texts.push_back(builder.getStringAttr(e.str()));
    inputs[i] =
        SizesOp::create(builder, loc, v.getType(), builder.getArrayAttr(texts));
  }

  NodeImporter n(builder, node, loc, training ? kTrainingOpset : opset,
                 std::move(inputs));
  n.shapeValues = &shapeValues;
  n.lookupValue = [&](StringRef name) { return values.lookup(name); };
  n.importSubgraph = [&](const onnx::GraphProto &graph, StringRef which,
                         ArrayRef<Value> inputs) {
    return importSubgraph(graph, which, inputs, [&] { return n.error(); });
  };
  // Before opset 6 many ops carry `consumed_inputs`, an in-place hint with
  // no meaning for a compiler.
  if (!training && opset < 6)
    n.ignoreAttribute("consumed_inputs");
  n.decodeTensor = [&](const onnx::TensorProto &t, StringRef what) {
    return tensorData(t, what, [&] { return n.error(); });
  };
  // The narrow types are storage only: conversions and data movement take
  // them, arithmetic does not.
  static const llvm::StringSet<> storageOps = {
      "Cast",      "CastLike",  "QuantizeLinear", "DequantizeLinear",
      "Identity",  "Reshape",   "Flatten",        "Squeeze",
      "Unsqueeze", "Transpose", "Concat",         "Split",
      "Slice",     "Gather",    "Expand",         "Tile",
      "Shape",     "Size",      "Where"};
  if (!storageOps.contains(node.op_type()))
    for (size_t i = 0; i < n.numInputs(); ++i)
      if (n.hasInput(i) && isNarrowType(n.inputType(i).getElementType())) {
        n.error() << "input " << i << " has the storage-only element type "
                  << n.inputType(i).getElementType()
                  << "; only casts, quantization and data movement accept "
                     "it";
        return failure();
      }
  if (failed(handler(n)))
    return failure();
  if (const onnx::AttributeProto *a = n.firstUnreadAttribute()) {
    n.error() << "attribute '" << a->name() << "' is not supported";
    return failure();
  }
  for (auto [i, name] : llvm::enumerate(node.output())) {
    if (name.empty())
      continue;
    Value v = n.getResults()[i];
    if (!v) {
      n.error() << "output " << i << " ('" << name << "') is not supported";
      return failure();
    }
    if (!values.try_emplace(name, v).second) {
      n.error() << "output '" << name
                << "' redefines a value; ONNX values are assigned once";
      return failure();
    }
    if (!scopes.empty())
      scopes.back().emplace_back(name, Value());
  }
  return success();
}

FailureOr<SmallVector<Value>>
GraphImporter::importSubgraph(const onnx::GraphProto &graph, StringRef which,
                              ArrayRef<Value> inputs,
                              llvm::function_ref<InFlightDiagnostic()> error) {
  if (static_cast<size_t>(graph.input_size()) != inputs.size()) {
    error() << which << " has " << graph.input_size() << " inputs, expected "
            << inputs.size();
    return failure();
  }
  // The names the subgraph binds or defines are its own: undone after
  // it, whatever happens.
  scopes.emplace_back();
  llvm::scope_exit restore([&] {
    for (auto &[name, before] : llvm::reverse(scopes.back())) {
      if (before)
        values[name] = before;
      else
        values.erase(name);
    }
    scopes.pop_back();
  });
  for (auto [in, v] : llvm::zip(graph.input(), inputs))
    bind(in.name(), v);
  for (const onnx::TensorProto &t : graph.initializer()) {
    auto data =
        tensorData(t, which.str() + " initializer '" + t.name() + "'", error);
    if (failed(data))
      return failure();
    bind(t.name(), ConstantOp::create(builder, nodeLoc(t.name()),
                                      data->getType(), *data));
  }
  for (auto [i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, i)))
      return failure();
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    Value v = values.lookup(out.name());
    if (!v) {
      error() << which << " output '" << out.name()
              << "' is not computed by the branch or its enclosing graph";
      return failure();
    }
    outputs.push_back(v);
  }
  return outputs;
}

OwningOpRef<ModuleOp> GraphImporter::run(onnx::ModelProto &model) {
  Location loc = fileLoc();
  // The default domain's opset decides every op's semantics. A model of
  // training ops alone (an optimizer step) may import only their domain.
  for (const onnx::OperatorSetIdProto &o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      if (defaultImported) {
        emitError(loc) << "the model imports the default domain twice (opsets "
                       << opset << " and " << o.version() << ")";
        return nullptr;
      }
      opset = o.version();
      defaultImported = true;
    } else if (o.domain() == kTrainingDomain) {
      if (o.version() != kTrainingOpset) {
        emitError(loc) << kTrainingDomain << " opset " << o.version()
                       << " is not supported (expected " << kTrainingOpset
                       << ")";
        return nullptr;
      }
      trainingImported = true;
    }
  }
  if (!defaultImported && !trainingImported) {
    emitError(loc) << "the model imports no default-domain (ai.onnx) opset";
    return nullptr;
  }
  if (defaultImported && (opset < kMinOpset || opset > kMaxOpset)) {
    emitError(loc) << "opset " << opset << " is not supported (expected "
                   << kMinOpset << " to " << kMaxOpset << ")";
    return nullptr;
  }
  if (!model.has_graph()) {
    emitError(loc) << "the model has no graph";
    return nullptr;
  }
  const onnx::GraphProto &graph = model.graph();

  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr("kiln.source", builder.getStringAttr(
                                        llvm::sys::path::filename(fileName)));
  if (defaultImported)
    (*module)->setAttr("kiln.opset", builder.getI64IntegerAttr(opset));
  builder.setInsertionPointToEnd(module->getBody());

  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &t : graph.initializer())
    initializerNames.insert(t.name());

  // Every pinned dimension must be one the graph's inputs or outputs name.
  std::map<std::string, std::string> requested;
  for (const auto &[name, size] : options.dims)
    requested[name] = std::to_string(size);
  for (const auto &[name, range] : options.dimRanges)
    requested[name] =
        std::to_string(range.first) + ".." + std::to_string(range.second);
  if (!requested.empty()) {
    std::set<std::string> named;
    for (const auto *list : {&graph.input(), &graph.output()})
      for (const onnx::ValueInfoProto &v : *list)
        if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
          for (const auto &dim : v.type().tensor_type().shape().dim())
            if (dim.has_dim_param())
              named.insert(dim.dim_param());
    for (const auto &[name, size] : requested)
      if (!named.count(name)) {
        auto diag = emitError(loc)
                    << "--dim " << name << "=" << size
                    << ": no graph input or output has a dimension '" << name
                    << "'";
        if (named.empty())
          diag << " (it has no symbolic dimension)";
        else {
          diag << " (it has";
          for (const std::string &n : named)
            diag << " '" << n << "'";
          diag << ")";
        }
        return nullptr;
      }
  }

  // Graph inputs that are not initializers are the function's arguments.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &in : graph.input()) {
    if (initializerNames.contains(in.name()))
      continue;
    auto type = valueType(in, "graph input");
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argNames.push_back(in.name());
  }
  auto func = func::FuncOp::create(builder, loc, "main",
                                   builder.getFunctionType(argTypes, {}));
  for (const auto &[name, range] : options.dimRanges)
    shapeValues.upper[name] = range.second;
  for (const auto &[name, range] : options.dimRanges)
    shapeValues.ranges[name] = {range.first, range.second};
  // The ranges of the symbols the inputs use.
  std::set<std::string> used;
  for (Type t : argTypes)
    for (const DimExpr &e : dimExprs(t))
      for (const std::string &s : e.symbols())
        used.insert(s);
  if (!used.empty()) {
    SmallVector<NamedAttribute> ranges;
    for (const std::string &s : used) {
      auto [lo, hi] = options.dimRanges.at(s);
      ranges.push_back(
          builder.getNamedAttr(s, builder.getDenseI64ArrayAttr({lo, hi})));
    }
    func->setAttr(kSymbolsAttr, builder.getDictionaryAttr(ranges));
  }
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, kNameAttr, builder.getStringAttr(name));
    if (!values.try_emplace(name, body->getArgument(i)).second) {
      emitError(loc) << "graph input '" << name << "' is declared twice";
      return nullptr;
    }
  }

  // Parameters to differentiate must name an initializer or a graph input.
  for (const std::string &name : options.parameters)
    if (!initializerNames.contains(name) &&
        !llvm::is_contained(argNames, name)) {
      emitError(loc) << "cannot differentiate with respect to '" << name
                     << "': the model has no initializer or graph input of "
                        "that name";
      return nullptr;
    }
  SmallVector<std::string> parameterNames;
  SmallVector<Attribute> parameterValues;
  auto isParameter = [&](StringRef name, ElementsAttr data) {
    Type elt = data.getElementType();
    if (!isa<FloatType>(elt) || isNarrowType(elt))
      return false;
    return options.allFloatParameters ||
           llvm::is_contained(options.parameters, name);
  };
  // The constants take the initializers' data: the model is not read
  // again after this (its other tensors' bytes were only copied).
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    Location tloc = nodeLoc(t.name());
    // Errors name the initializer, not a node; the constant itself is
    // located by the initializer's name for later messages.
    auto data = tensorData(
        t, "initializer '" + t.name() + "'", [&] { return emitError(loc); },
        &t);
    if (failed(data))
      return nullptr;
    if (llvm::is_contained(options.parameters, t.name()) &&
        !isParameter(t.name(), *data)) {
      emitError(loc) << "cannot differentiate with respect to '" << t.name()
                     << "': it holds " << data->getElementType()
                     << ", not floats";
      return nullptr;
    }
    if (isParameter(t.name(), *data)) {
      // A parameter to differentiate: an argument, initialized by the caller.
      argTypes.push_back(data->getType());
      values[t.name()] = body->addArgument(data->getType(), tloc);
      parameterNames.push_back(t.name());
      parameterValues.push_back(*data);
      continue;
    }
    Value c = ConstantOp::create(builder, tloc, data->getType(), *data);
    // An initializer may share its name with a graph input (a default value
    // that callers could override); kiln treats it as a constant.
    values[t.name()] = c;
  }

  for (auto [i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, i)))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto v = values.find(out.name());
    if (v == values.end()) {
      emitError(loc) << "graph output '" << out.name()
                     << "' is not computed by any node";
      return nullptr;
    }
    // Sizes over symbolic dimensions returned as an output: their run-time
    // values, not the placeholder's.
    if (auto sizes = shapeValues.elements.find(v->second);
        sizes != shapeValues.elements.end()) {
      SmallVector<Attribute> texts;
      for (const DimExpr &e : sizes->second)
        texts.push_back(builder.getStringAttr(e.str()));
      v->second =
          SizesOp::create(builder, nodeLoc(out.name()), v->second.getType(),
                          builder.getArrayAttr(texts));
    }
    auto computed = cast<RankedTensorType>(v->second.getType());
    // A declared output type must agree with what the graph computes; symbolic
    // or missing dimensions in the declaration are fine.
    if (out.type().has_tensor_type()) {
      const auto &tt = out.type().tensor_type();
      Type elt = elementTypeOf(&ctx, tt.elem_type());
      bool mismatch = tt.elem_type() != 0 && elt != computed.getElementType();
      if (tt.has_shape()) {
        SmallVector<DimExpr> sizes = dimExprs(computed);
        if (tt.shape().dim_size() != computed.getRank())
          mismatch = true;
        else
          for (auto [d, dim] : llvm::enumerate(tt.shape().dim())) {
            // A static size or a symbol in a range must be what the graph
            // computes; other names are the exporter's labels. A size the
            // run computes from data (decision 0031) cannot be checked
            // here: the declaration is the exporter's guess.
            bool computedSize =
                llvm::any_of(sizes[d].symbols(), [&](const std::string &s) {
                  return llvm::is_contained(shapeValues.computed, s);
                });
            if (computedSize)
              continue;
            if (dim.has_dim_value()
                    ? sizes[d] != DimExpr::constant(dim.dim_value())
                    : options.dimRanges.count(dim.dim_param()) &&
                          sizes[d] != DimExpr::symbol(dim.dim_param()))
              mismatch = true;
            if (dim.has_dim_param() && options.dims.count(dim.dim_param()) &&
                sizes[d] != DimExpr::constant(options.dims.at(dim.dim_param())))
              mismatch = true;
          }
      }
      if (mismatch) {
        std::string declared =
            elt ? "" : std::string(onnxTypeName(tt.elem_type()));
        llvm::raw_string_ostream ds(declared);
        if (elt)
          ds << elt;
        ds << " [";
        for (auto [d, dim] : llvm::enumerate(tt.shape().dim()))
          ds << (d ? "," : "")
             << (dim.has_dim_value()       ? std::to_string(dim.dim_value())
                 : dim.dim_param().empty() ? "?"
                                           : dim.dim_param());
        ds << "]";
        std::string computedText;
        llvm::raw_string_ostream cs(computedText);
        cs << computed.getElementType() << " [";
        for (auto [d, size] : llvm::enumerate(dimExprs(computed)))
          cs << (d ? "," : "") << size.str();
        cs << "]";
        emitError(loc) << "graph output '" << out.name() << "' is declared as "
                       << declared << " but the graph computes "
                       << computedText;
        return nullptr;
      }
    }
    results.push_back(v->second);
    resultTypes.push_back(computed);
  }
  if (results.empty()) {
    emitError(loc) << "the graph has no outputs";
    return nullptr;
  }
  func::ReturnOp::create(builder, loc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  // Sizes computed from data (decision 0031) join the inputs' symbols with
  // their ranges, and are listed in the order the ops made them.
  if (!shapeValues.computed.empty()) {
    SmallVector<NamedAttribute> ranges;
    if (auto inputs = func->getAttrOfType<DictionaryAttr>(kSymbolsAttr))
      llvm::append_range(ranges, inputs.getValue());
    SmallVector<Attribute> names;
    for (const std::string &s : shapeValues.computed) {
      DimExpr::Range range = shapeValues.ranges.at(s);
      ranges.push_back(builder.getNamedAttr(
          s, builder.getDenseI64ArrayAttr({range.lo, range.hi})));
      names.push_back(builder.getStringAttr(s));
    }
    func->setAttr(kSymbolsAttr, builder.getDictionaryAttr(ranges));
    func->setAttr(kComputedSymbolsAttr, builder.getArrayAttr(names));
  }
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, kNameAttr, builder.getStringAttr(out.name()));
  if (!parameterNames.empty()) {
    // The argument attributes were sized for the graph inputs; rebuild them
    // with the parameters appended.
    SmallVector<DictionaryAttr> argAttrs;
    func.getAllArgAttrs(argAttrs);
    argAttrs.resize(argNames.size());
    for (auto [name, value] : llvm::zip(parameterNames, parameterValues)) {
      SmallVector<NamedAttribute> attrs = {
          builder.getNamedAttr(kNameAttr, builder.getStringAttr(name)),
          builder.getNamedAttr(kParameterAttr, builder.getUnitAttr())};
      if (options.parameterInitialValues)
        attrs.push_back(builder.getNamedAttr(kInitialValueAttr, value));
      argAttrs.push_back(builder.getDictionaryAttr(attrs));
    }
    func.setAllArgAttrs(argAttrs);
  }
  return module;
}

/// Parses the model's bytes; an error (located at the file) when they are
/// not an ONNX model.
static LogicalResult parseModel(MLIRContext &context, StringRef bytes,
                                StringRef fileName, onnx::ModelProto &model) {
  if (bytes.empty()) {
    emitError(FileLineColLoc::get(&context, fileName, 0, 0))
        << "the file is empty, not an ONNX model";
    return failure();
  }
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    emitError(FileLineColLoc::get(&context, fileName, 0, 0))
        << "not a valid ONNX model (the protobuf does not parse)";
    return failure();
  }
  return success();
}

OwningOpRef<ModuleOp> kiln::importOnnxModel(MLIRContext &context,
                                            StringRef bytes, StringRef fileName,
                                            const ImportOptions &options) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  onnx::ModelProto model;
  if (failed(parseModel(context, bytes, fileName, model)))
    return nullptr;
  return GraphImporter(context, fileName, options).run(model);
}

std::vector<std::string> kiln::symbolicOnnxOps() {
  // Each handler here builds its results through the kiln ops' shape rules
  // (or the symbolic reshape), so the #kiln.dims encodings follow; Conv and
  // the pools take a symbolic batch only (their window and padding rules
  // read the spatial sizes as numbers).
  std::vector<std::string> ops = {"Abs",
                                  "Add",
                                  "AveragePool",
                                  "BatchNormalization",
                                  "Ceil",
                                  "Concat",
                                  "Conv",
                                  "Div",
                                  "Erf",
                                  "Exp",
                                  "Flatten",
                                  "Floor",
                                  "Gather",
                                  "GatherElements",
                                  "Gemm",
                                  "GlobalAveragePool",
                                  "GlobalMaxPool",
                                  "Identity",
                                  "LayerNormalization",
                                  "Log",
                                  "LogSoftmax",
                                  "MatMul",
                                  "MaxPool",
                                  "Mul",
                                  "Neg",
                                  "NegativeLogLikelihoodLoss",
                                  "Pow",
                                  "Reciprocal",
                                  "ReduceMax",
                                  "ReduceMean",
                                  "ReduceMin",
                                  "ReduceSum",
                                  "Relu",
                                  "Reshape",
                                  "Shape",
                                  "Sigmoid",
                                  "Slice",
                                  "Softmax",
                                  "SoftmaxCrossEntropyLoss",
                                  "Sqrt",
                                  "Squeeze",
                                  "Sub",
                                  "Tanh",
                                  "Transpose",
                                  "Unsqueeze",
                                  "Expand",
                                  "Cast",
                                  "CastLike",
                                  "Where",
                                  "Equal",
                                  "Less",
                                  "LessOrEqual",
                                  "Greater",
                                  "GreaterOrEqual",
                                  "Not",
                                  "And",
                                  "Or",
                                  "Max",
                                  "Min",
                                  "Clip",
                                  "LeakyRelu",
                                  "Gelu",
                                  "HardSigmoid",
                                  "HardSwish",
                                  "Softplus",
                                  "Elu",
                                  "Sin",
                                  "Cos",
                                  "Range",
                                  "Split",
                                  "NonZero",
                                  "TopK",
                                  "GatherND",
                                  "NonMaxSuppression"};
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::vector<std::string> kiln::supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto &entry : opHandlers())
    ops.push_back(entry.getKey().str());
  std::sort(ops.begin(), ops.end());
  size_t defaultOps = ops.size();
  for (const auto &entry : trainingHandlers())
    ops.push_back((kTrainingDomain + "." + entry.getKey()).str());
  std::sort(ops.begin() + defaultOps, ops.end());
  return ops;
}

OwningOpRef<ModuleOp> kiln::importOnnxFile(MLIRContext &context, StringRef path,
                                           const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read the file: " << buffer.getError().message();
    return nullptr;
  }
  ImportOptions withDir = options;
  if (withDir.externalDataDir.empty()) {
    StringRef dir = llvm::sys::path::parent_path(path);
    withDir.externalDataDir = dir.empty() ? "." : dir.str();
  }
  context.loadDialect<KilnDialect, func::FuncDialect>();
  onnx::ModelProto model;
  if (failed(parseModel(context, (*buffer)->getBuffer(), path, model)))
    return nullptr;
  // The parsed model holds every byte it needs: the file's pages (as large
  // as the weights) are released before the weights are copied again.
  buffer->reset();
  return GraphImporter(context, path, withDir).run(model);
}

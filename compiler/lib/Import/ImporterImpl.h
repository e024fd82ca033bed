//===- ImporterImpl.h - shared state of the ONNX importer -------*- C++ -*-===//
//
// NodeImporter is what an op handler sees: the node's inputs as values, typed
// attribute accessors that remember which attributes were read (so unknown
// attributes are reported, not ignored), an error helper that names the node,
// and the builder. Handlers live in OnnxOps.cpp, one function per ONNX op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_IMPORTERIMPL_H
#define KILN_COMPILER_IMPORT_IMPORTERIMPL_H

#include "onnx_subset.pb.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace kiln::import {

/// In a handler: unwraps a FailureOr into `var`, or returns failure (the
/// error was reported where the failure happened).
#define KILN_TRY(var, expr)                                                    \
  auto var##OrFailure = (expr);                                                \
  if (failed(var##OrFailure))                                                  \
    return mlir::failure();                                                    \
  auto var = std::move(*var##OrFailure)

/// Small integer tensors (rank 0 or 1) whose elements are sizes over the
/// symbolic dimensions: what Shape makes of a tensor with symbolic sizes and
/// the shape arithmetic after it computes (decision 0027). Each is a
/// kiln.constant of the elements' values at the symbols' upper bounds, a
/// placeholder that only the ops that read sizes may consume (the importer
/// refuses any other reader), with its elements kept here.
struct ShapeValues {
  llvm::DenseMap<mlir::Value, llvm::SmallVector<DimExpr>> elements;
  /// Each symbol's upper bound, and its range.
  std::map<std::string, int64_t> upper;
  std::map<std::string, DimExpr::Range> ranges;
  /// The symbols ops compute from data (decision 0031), in the order they
  /// were made; each also in `upper` and `ranges`.
  std::vector<std::string> computed;
  /// A new computed symbol named after `base` (with characters a size
  /// expression reserves replaced), in 0..hi.
  std::string newComputedSymbol(llvm::StringRef base, int64_t hi);
  /// The smallest value `e` takes over the ranges (nullopt: unbounded).
  std::optional<int64_t> lowest(const DimExpr &e) const {
    std::optional<DimExpr::Range> r = e.bounds(ranges);
    return r ? std::optional<int64_t>(r->lo) : std::nullopt;
  }
};

class NodeImporter {
public:
  NodeImporter(mlir::OpBuilder &builder, const onnx::NodeProto &node,
               mlir::Location loc, int64_t opset,
               std::vector<mlir::Value> inputs)
      : b(builder), loc(loc), node(node), opset(opset),
        inputs(std::move(inputs)), results(node.output_size()) {}

  mlir::OpBuilder &b;
  const mlir::Location loc;
  const onnx::NodeProto &node;
  const int64_t opset;

  /// An error at the node: "(<OpType>, opset <N>): " and the caller's text.
  mlir::InFlightDiagnostic error();

  // Inputs. Optional inputs that are absent (empty name) are null values.
  size_t numInputs() const { return inputs.size(); }
  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i]; }
  mlir::Value input(size_t i) const {
    return hasInput(i) ? inputs[i] : mlir::Value();
  }
  mlir::RankedTensorType inputType(size_t i) const {
    return mlir::cast<mlir::RankedTensorType>(inputs[i].getType());
  }
  /// Checks there are at least `min` and at most `max` inputs and that the
  /// first `min` are present.
  mlir::LogicalResult expectInputs(size_t min, size_t max);
  /// The constant elements of input `i`, or failure with an error saying the
  /// input must be constant (`what` names it, e.g. "shape").
  mlir::FailureOr<mlir::DenseElementsAttr> constantInput(size_t i,
                                                         llvm::StringRef what);
  /// A constant integer list input (shape, axes, ...).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(size_t i, llvm::StringRef what);
  /// The value of input `i` when it is known at compile time (see
  /// constantValueOf), or null; reports nothing.
  mlir::DenseElementsAttr constantValue(size_t i) const {
    return hasInput(i) ? constantValueOf(inputs[i]) : mlir::DenseElementsAttr();
  }
  /// The value of `v` when it is known at compile time: a kiln.constant, or a
  /// value computed from constants only by ops whose folders give it (shape
  /// arithmetic such as Sub(Size(x), 1) feeding a Reshape). Null otherwise.
  static mlir::DenseElementsAttr constantValueOf(mlir::Value v);

  // Attributes; each accessor marks the attribute as understood and fails
  // (with an error) when the attribute has the wrong type.
  mlir::FailureOr<std::optional<int64_t>> getInt(llvm::StringRef name);
  mlir::FailureOr<std::optional<float>> getFloat(llvm::StringRef name);
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  getInts(llvm::StringRef name);
  mlir::FailureOr<std::optional<llvm::SmallVector<float>>>
  getFloats(llvm::StringRef name);
  mlir::FailureOr<std::optional<llvm::SmallVector<std::string>>>
  getStrings(llvm::StringRef name);
  /// A string attribute, or `fallback` when absent.
  mlir::FailureOr<std::string> getString(llvm::StringRef name,
                                         llvm::StringRef fallback);
  const onnx::AttributeProto *getAttribute(llvm::StringRef name);
  /// A graph attribute (If's branches); failure with an error when it is
  /// absent or not a graph.
  mlir::FailureOr<const onnx::GraphProto *> getGraph(llvm::StringRef name);
  /// Marks attributes that do not change inference results (e.g. a seed).
  void ignoreAttribute(llvm::StringRef name) { read.insert(name.str()); }
  /// The first attribute no accessor read, if any.
  const onnx::AttributeProto *firstUnreadAttribute() const;

  // Outputs.
  size_t numOutputs() const { return results.size(); }
  bool outputUsed(size_t i) const {
    return i < static_cast<size_t>(node.output_size()) &&
           !node.output(i).empty();
  }
  void setResult(size_t i, mlir::Value v) {
    if (i < results.size())
      results[i] = v;
  }
  llvm::ArrayRef<mlir::Value> getResults() const { return results; }

  /// Decodes tensor data (an attribute's tensor) like an initializer's.
  std::function<mlir::FailureOr<mlir::ElementsAttr>(const onnx::TensorProto &,
                                                    llvm::StringRef what)>
      decodeTensor;

  /// The value an earlier node, an initializer or a graph input named
  /// `name`, or null (ops that refer to values by name: Gradient).
  std::function<mlir::Value(llvm::StringRef name)> lookupValue;

  /// Imports a subgraph (an If branch, a Loop or Scan body; `which` names
  /// it in errors) inline at the builder's insertion point, its inputs
  /// bound to `inputs`: its nodes read the enclosing graph's values, and
  /// the names it defines are gone afterwards. Its outputs' values, or
  /// failure with an error.
  std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(
      const onnx::GraphProto &graph, llvm::StringRef which,
      llvm::ArrayRef<mlir::Value> inputs)>
      importSubgraph;

  /// Normalizes an axis in [-rank, rank) to [0, rank).
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

  // Validated builders: they check what the op verifier would, and report a
  // node error instead of failing type inference.
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> binary(mlir::Value lhs, mlir::Value rhs);
  mlir::FailureOr<mlir::Value> matmul(mlir::Value lhs, mlir::Value rhs);
  /// Before opset 7, binary ops broadcast only with `broadcast=1`, aligning
  /// rhs at `axis` instead of at the trailing dimension. Returns rhs
  /// reshaped so numpy broadcasting gives that result (or rhs unchanged at
  /// opset 7 and later); every ONNX binary op's handler calls this first.
  mlir::FailureOr<mlir::Value> legacyBroadcastRhs(mlir::Value lhs,
                                                  mlir::Value rhs);
  /// A reshape to the static `shape` (none when `v` has it already; a
  /// tensor with symbolic sizes needs the overload that takes them).
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// A reshape to `shape` (the sizes at the symbols' bounds) whose sizes
  /// are `sizes`.
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape,
                      llvm::ArrayRef<DimExpr> sizes);
  mlir::Value transpose(mlir::Value v, llvm::ArrayRef<int64_t> perm);
  mlir::Value scalar(mlir::Type elementType, double value);

  // Sizes over symbolic dimensions (see ShapeValues).
  /// The elements of input `i` when it holds sizes over symbolic
  /// dimensions; nullopt for any other input.
  std::optional<llvm::SmallVector<DimExpr>> symbolicInts(size_t i) const;
  /// The elements of input `i` as expressions: symbolic ones, or the values
  /// of a small integer constant; nullopt otherwise.
  std::optional<llvm::SmallVector<DimExpr>> intsAsExprs(size_t i) const;
  /// A tensor of `shape` and integer type `elt` holding `elements`: a
  /// constant when they are all constant, else a placeholder recorded in
  /// the ShapeValues.
  mlir::Value sizesValue(llvm::ArrayRef<DimExpr> elements,
                         llvm::ArrayRef<int64_t> shape, mlir::Type elt);
  ShapeValues *shapeValues = nullptr;

private:
  std::vector<mlir::Value> inputs;
  std::vector<mlir::Value> results;
  llvm::SmallSet<std::string, 8> read;
};

template <typename OpTy>
mlir::FailureOr<mlir::Value> NodeImporter::binary(mlir::Value lhs,
                                                  mlir::Value rhs) {
  auto l = mlir::cast<mlir::RankedTensorType>(lhs.getType());
  auto r = mlir::cast<mlir::RankedTensorType>(rhs.getType());
  if (l.getElementType() != r.getElementType()) {
    error() << "operands have different element types, " << l.getElementType()
            << " and " << r.getElementType();
    return mlir::failure();
  }
  if (l.getElementType().isInteger(1)) {
    error() << "element type i1 (bool) is not supported";
    return mlir::failure();
  }
  if (!broadcastShapes(l.getShape(), r.getShape()) ||
      (anySymbolicDims({l, r}) && !broadcastDims(dimExprs(l), dimExprs(r)))) {
    error() << "operand shapes " << l << " and " << r << " do not broadcast";
    return mlir::failure();
  }
  return mlir::Value(OpTy::create(b, loc, lhs, rhs));
}

/// numpy matmul of `a` and `b` (ONNX MatMul), checked.
mlir::FailureOr<mlir::Value> buildMatMul(NodeImporter &n, mlir::Value a,
                                         mlir::Value b);

/// Conv of `x` and filter `w` with the node's Conv attributes, no bias.
mlir::FailureOr<mlir::Value> buildConv(NodeImporter &n, mlir::Value x,
                                       mlir::Value w);

/// An i64 constant of `shape` (shapes, indices) at the node.
mlir::Value i64Constant(NodeImporter &n, llvm::ArrayRef<int64_t> values,
                        llvm::ArrayRef<int64_t> shape);

/// What a Reduce* node reduces: its axes (normalized, sorted) and keepdims.
/// `noop` when the axes are empty and noop_with_empty_axes is set: nothing is
/// reduced.
struct Reduction {
  llvm::SmallVector<int64_t> axes;
  bool keepDims = true;
  bool noop = false;
};

/// Checks a Reduce* node's inputs and reads keepdims and its axes: from the
/// `axes` attribute before `axesInputOpset`, from the optional constant second
/// input from then on (with noop_with_empty_axes).
mlir::FailureOr<Reduction> parseReduction(NodeImporter &n,
                                          int64_t axesInputOpset);

/// The MLIR element type of an ONNX TensorProto data type, or null when kiln
/// does not support it.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int onnxType);

using Handler = mlir::LogicalResult (*)(NodeImporter &);
using HandlerMap = llvm::StringMap<Handler>;

/// The handler for each supported default-domain op type.
const HandlerMap &opHandlers();

/// The domain of the training ops (Gradient and the optimizers), and the
/// one version of it kiln reads.
constexpr llvm::StringLiteral kTrainingDomain = "ai.onnx.preview.training";
constexpr int64_t kTrainingOpset = 1;
/// The handler for each supported op of kTrainingDomain
/// (OnnxOpsTraining.cpp).
const HandlerMap &trainingHandlers();

// One registration function per op family, each in its own file
// (OnnxOps*.cpp); opHandlers() calls them all.
void registerCoreHandlers(HandlerMap &handlers);
/// The ONNX ops that compute on sizes over symbolic dimensions (Gather,
/// Concat, Slice, Unsqueeze, arithmetic...), and the handler that does it.
bool isShapeArithmetic(llvm::StringRef opType);
mlir::LogicalResult importShapeArithmetic(NodeImporter &n);
void registerElementwiseHandlers(HandlerMap &handlers);
void registerShapeHandlers(HandlerMap &handlers);
void registerNNHandlers(HandlerMap &handlers);
void registerConvHandlers(HandlerMap &handlers);
void registerPadLossHandlers(HandlerMap &handlers);
void registerAttentionHandlers(HandlerMap &handlers);
void registerResizeHandlers(HandlerMap &handlers);
void registerIndexHandlers(HandlerMap &handlers);
/// If, Loop and Scan (OnnxOpsControl.cpp).
void registerControlHandlers(HandlerMap &handlers);
/// Einsum (OnnxOpsEinsum.cpp), registered with the index handlers.
mlir::LogicalResult importEinsum(NodeImporter &n);

} // namespace kiln::import

#endif // KILN_COMPILER_IMPORT_IMPORTERIMPL_H

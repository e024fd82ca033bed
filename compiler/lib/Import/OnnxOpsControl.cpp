//===- OnnxOpsControl.cpp - If, Loop and Scan -----------------------------===//
//
// Control flow as far as a static schedule takes it. An If whose condition
// is known at compile time imports the branch it takes; one known only at
// run time runs both branches and selects. Loop and Scan are unrolled, each
// iteration's body imported inline: a Scan's sequence length is a static
// size, and a Loop's trip count and condition must be known at compile time
// (constants, or shape arithmetic that folds). The unrolled size is capped.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// The most body nodes an unrolled Loop or Scan may import.
constexpr int64_t kMaxUnrolledNodes = int64_t(1) << 16;

/// If: a condition known at compile time (a constant, or shape arithmetic
/// that folds) imports the branch it takes, inline. One known only at run
/// time imports both branches and selects each output, so both branches
/// run and their outputs must have one type; branches of different shapes
/// are data-dependent shapes, which kiln refuses.
LogicalResult importIf(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  RankedTensorType condType = n.inputType(0);
  if (!condType.getElementType().isInteger(1) || !condType.hasStaticShape() ||
      condType.getNumElements() != 1) {
    n.error() << "the condition must be one bool (i1) element, found "
              << condType;
    return failure();
  }
  KILN_TRY(thenBranch, n.getGraph("then_branch"));
  KILN_TRY(elseBranch, n.getGraph("else_branch"));
  size_t count = n.numOutputs();
  if (static_cast<size_t>(thenBranch->output_size()) != count ||
      static_cast<size_t>(elseBranch->output_size()) != count) {
    n.error() << "expects branches of " << count << " outputs, found "
              << thenBranch->output_size() << " (then_branch) and "
              << elseBranch->output_size() << " (else_branch)";
    return failure();
  }
  if (DenseElementsAttr known = n.constantValue(0)) {
    bool taken = *known.getValues<bool>().begin();
    KILN_TRY(outputs,
             n.importSubgraph(taken ? *thenBranch : *elseBranch,
                              taken ? "then_branch" : "else_branch", {}));
    for (auto [i, v] : llvm::enumerate(outputs))
      n.setResult(i, v);
    return success();
  }
  KILN_TRY(thenOutputs, n.importSubgraph(*thenBranch, "then_branch", {}));
  KILN_TRY(elseOutputs, n.importSubgraph(*elseBranch, "else_branch", {}));
  Value flag = n.reshape(n.input(0), {});
  for (size_t i = 0; i < count; ++i) {
    Value a = thenOutputs[i], b = elseOutputs[i];
    bool sizes = n.shapeValues && (n.shapeValues->elements.count(a) ||
                                   n.shapeValues->elements.count(b));
    auto at = cast<RankedTensorType>(a.getType()),
         bt = cast<RankedTensorType>(b.getType());
    // Sizes that differ between the branches are sizes computed at run
    // time (decision 0031): a new symbol per differing axis.
    if (at != bt && !sizes && at.getRank() == bt.getRank() &&
        at.getElementType() == bt.getElementType()) {
      SmallVector<DimExpr> as = dimExprs(at), bs = dimExprs(bt), rs;
      SmallVector<int64_t> bounds;
      SmallVector<Attribute> counts;
      llvm::StringRef base =
          !n.node.name().empty() ? n.node.name() : n.node.output(i);
      for (int64_t d = 0; d < at.getRank(); ++d) {
        bounds.push_back(std::max(at.getDimSize(d), bt.getDimSize(d)));
        if (as[d] == bs[d]) {
          rs.push_back(as[d]);
          counts.push_back(n.b.getStringAttr(""));
          continue;
        }
        std::string symbol = n.shapeValues->newComputedSymbol(
            base.str() + "." + std::to_string(i) + "." + std::to_string(d),
            bounds.back());
        rs.push_back(DimExpr::symbol(symbol));
        counts.push_back(n.b.getStringAttr(symbol));
      }
      auto type = symbolicTensorType(bounds, rs, at.getElementType());
      n.setResult(i, ChooseOp::create(n.b, n.loc, type, flag, a, b,
                                      n.b.getArrayAttr(counts)));
      continue;
    }
    if (a.getType() != b.getType() || sizes) {
      n.error() << "output " << i << " is " << a.getType()
                << " in then_branch and " << b.getType()
                << " in else_branch; with a condition known only at run "
                   "time the branches must give one type"
                << (sizes ? " and not sizes over symbolic dimensions" : "");
      return failure();
    }
    n.setResult(i, SelectOp::create(n.b, n.loc, flag, a, b));
  }
  return success();
}

/// Fails unless `iterations` copies of `body` stay within kMaxUnrolledNodes.
LogicalResult checkUnrolledSize(NodeImporter &n, const onnx::GraphProto &body,
                                int64_t iterations) {
  int64_t nodes = std::max(body.node_size(), 1);
  if (iterations <= kMaxUnrolledNodes / nodes)
    return success();
  n.error() << "unrolling " << iterations << " iterations of a body of "
            << body.node_size() << " nodes passes the limit of "
            << kMaxUnrolledNodes << " nodes";
  return failure();
}

/// Element `index` of `v` along `axis`, the axis removed.
Value elementAlong(NodeImporter &n, Value v, int64_t axis, int64_t index) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), strides(type.getRank(), 1);
  SmallVector<int64_t> shape(type.getShape());
  starts[axis] = index;
  shape[axis] = 1;
  Value slice = SliceOp::create(
      n.b, n.loc, RankedTensorType::get(shape, type.getElementType()), v,
      n.b.getDenseI64ArrayAttr(starts), n.b.getDenseI64ArrayAttr(strides));
  shape.erase(shape.begin() + axis);
  return n.reshape(slice, shape);
}

/// The iterations' values of scan output `index`, stacked along a new
/// `axis` (an error when they differ in type).
FailureOr<Value> stack(NodeImporter &n, ArrayRef<Value> parts, size_t index,
                       int64_t axis) {
  SmallVector<Value> expanded;
  for (Value part : parts) {
    if (part.getType() != parts.front().getType()) {
      n.error() << "scan output " << index << " is " << parts.front().getType()
                << " in the first iteration and " << part.getType()
                << " in a later one";
      return failure();
    }
    auto type = cast<RankedTensorType>(part.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(n.reshape(part, shape));
  }
  if (expanded.size() == 1)
    return expanded.front();
  return Value(ConcatOp::create(n.b, n.loc, expanded, axis));
}

/// An optional list attribute of `count` entries, or `count` zeros.
FailureOr<SmallVector<int64_t>> listOr0(NodeImporter &n, StringRef name,
                                        size_t count) {
  KILN_TRY(list, n.getInts(name));
  if (!list)
    return SmallVector<int64_t>(count, 0);
  if (list->size() != count) {
    n.error() << "attribute '" << name << "' has " << list->size()
              << " entries, expected " << count;
    return failure();
  }
  return *list;
}

/// Scan (opset 9 on): N states and M scan inputs; the body runs once per
/// element of the scan inputs' sequence axis, taking the states and one
/// element of each, and gives the new states and one element of each of
/// the K scan outputs.
LogicalResult importScan(NodeImporter &n) {
  if (n.opset < 9) {
    n.error() << "Scan before opset 9 (a batch axis and sequence_lens) is "
                 "not supported";
    return failure();
  }
  KILN_TRY(body, n.getGraph("body"));
  KILN_TRY(numScanInputs, n.getInt("num_scan_inputs"));
  int64_t total = n.numInputs();
  if (!numScanInputs || *numScanInputs < 1 || *numScanInputs > total) {
    n.error() << "expects 'num_scan_inputs' between 1 and the " << total
              << " inputs";
    return failure();
  }
  int64_t m = *numScanInputs, states = total - m,
          k = int64_t(n.numOutputs()) - states;
  if (k < 0) {
    n.error() << "expects at least " << states << " outputs (the states)";
    return failure();
  }
  KILN_TRY(inAxes, listOr0(n, "scan_input_axes", m));
  KILN_TRY(inDirections, listOr0(n, "scan_input_directions", m));
  KILN_TRY(outAxes, listOr0(n, "scan_output_axes", k));
  KILN_TRY(outDirections, listOr0(n, "scan_output_directions", k));
  int64_t length = -1;
  for (int64_t j = 0; j < total; ++j)
    if (!n.hasInput(j)) {
      n.error() << "input " << j << " is missing";
      return failure();
    }
  for (int64_t j = 0; j < m; ++j) {
    RankedTensorType type = n.inputType(states + j);
    KILN_TRY(axis, n.normalizeAxis(inAxes[j], type.getRank()));
    inAxes[j] = axis;
    int64_t size = type.getDimSize(axis);
    if (length >= 0 && size != length) {
      n.error() << "the scan inputs' sequences differ in length: " << length
                << " and " << size;
      return failure();
    }
    length = size;
  }
  if (length == 0) {
    n.error() << "scan inputs of length 0 are not supported";
    return failure();
  }
  if (failed(checkUnrolledSize(n, *body, length)))
    return failure();
  SmallVector<Value> state;
  for (int64_t j = 0; j < states; ++j)
    state.push_back(n.input(j));
  SmallVector<SmallVector<Value>> scanned(k);
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> bodyInputs(state);
    for (int64_t j = 0; j < m; ++j)
      bodyInputs.push_back(elementAlong(n, n.input(states + j), inAxes[j],
                                        inDirections[j] ? length - 1 - t : t));
    KILN_TRY(results, n.importSubgraph(*body, "body", bodyInputs));
    if (int64_t(results.size()) != states + k) {
      n.error() << "the body has " << results.size() << " outputs, expected "
                << states + k;
      return failure();
    }
    state.assign(results.begin(), results.begin() + states);
    for (int64_t i = 0; i < k; ++i)
      scanned[i].push_back(results[states + i]);
  }
  for (int64_t i = 0; i < states; ++i)
    n.setResult(i, state[i]);
  for (int64_t i = 0; i < k; ++i) {
    if (outDirections[i])
      std::reverse(scanned[i].begin(), scanned[i].end());
    auto type = cast<RankedTensorType>(scanned[i].front().getType());
    KILN_TRY(axis, n.normalizeAxis(outAxes[i], type.getRank() + 1));
    KILN_TRY(stacked, stack(n, scanned[i], i, axis));
    n.setResult(states + i, stacked);
  }
  return success();
}

/// The value of a one-element `v` (a trip count, a condition) as an
/// integer, or an error naming `what` (the loop's `kind`) when it is known
/// only at run time.
FailureOr<int64_t> knownScalar(NodeImporter &n, Value v, StringRef what,
                               StringRef kind) {
  DenseElementsAttr value = NodeImporter::constantValueOf(v);
  if (!value || value.getNumElements() != 1) {
    n.error() << what << " is known only at run time; kiln unrolls loops "
              << "whose " << kind << " is known at compile time";
    return failure();
  }
  if (value.getElementType().isInteger(1))
    return *value.getValues<bool>().begin() ? 1 : 0;
  return (*value.getValues<APInt>().begin()).getSExtValue();
}

/// Loop: runs its body while the iteration count is below M and the
/// condition holds, threading the carried values through and stacking the
/// scan outputs along a new first axis. Unrolled, so M and every
/// condition must be known at compile time.
LogicalResult importLoop(NodeImporter &n) {
  KILN_TRY(body, n.getGraph("body"));
  if (n.numInputs() < 2) {
    n.error() << "expects at least 2 inputs (M and cond, either may be "
                 "empty), found "
              << n.numInputs();
    return failure();
  }
  int64_t carried = n.numInputs() - 2;
  int64_t scans = int64_t(n.numOutputs()) - carried;
  if (scans < 0) {
    n.error() << "expects at least " << carried
              << " outputs (the carried values)";
    return failure();
  }
  for (int64_t j = 2; j < int64_t(n.numInputs()); ++j)
    if (!n.hasInput(j)) {
      n.error() << "input " << j << " is missing";
      return failure();
    }
  std::optional<int64_t> trips;
  if (n.hasInput(0)) {
    KILN_TRY(m, knownScalar(n, n.input(0), "the trip count M", "trip count"));
    trips = std::max<int64_t>(m, 0);
    if (failed(checkUnrolledSize(n, *body, *trips)))
      return failure();
  }
  bool running = true;
  if (n.hasInput(1)) {
    KILN_TRY(cond, knownScalar(n, n.input(1), "the condition", "condition"));
    running = cond != 0;
  } else if (!trips) {
    n.error() << "has neither a trip count nor a condition (it never ends)";
    return failure();
  }
  auto boolType = RankedTensorType::get({}, n.b.getI1Type());
  Value alwaysTrue = ConstantOp::create(
      n.b, n.loc, boolType,
      cast<ElementsAttr>(DenseElementsAttr::get(boolType, true)));
  SmallVector<Value> state;
  for (int64_t j = 0; j < carried; ++j)
    state.push_back(n.input(2 + j));
  SmallVector<SmallVector<Value>> scanned(scans);
  int64_t iteration = 0;
  for (; running && (!trips || iteration < *trips); ++iteration) {
    if (!trips && failed(checkUnrolledSize(n, *body, iteration + 1)))
      return failure();
    SmallVector<Value> bodyInputs = {i64Constant(n, {iteration}, {}),
                                     alwaysTrue};
    bodyInputs.append(state);
    KILN_TRY(results, n.importSubgraph(*body, "body", bodyInputs));
    if (int64_t(results.size()) != 1 + carried + scans) {
      n.error() << "the body has " << results.size() << " outputs, expected "
                << 1 + carried + scans;
      return failure();
    }
    KILN_TRY(cond, knownScalar(n, results[0], "the body's condition output",
                               "condition"));
    running = cond != 0;
    state.assign(results.begin() + 1, results.begin() + 1 + carried);
    for (int64_t i = 0; i < scans; ++i)
      scanned[i].push_back(results[1 + carried + i]);
  }
  if (scans > 0 && iteration == 0) {
    n.error() << "runs no iteration, so its scan outputs would be empty, "
                 "which is not supported";
    return failure();
  }
  for (int64_t i = 0; i < carried; ++i)
    n.setResult(i, state[i]);
  for (int64_t i = 0; i < scans; ++i) {
    KILN_TRY(stacked, stack(n, scanned[i], i, 0));
    n.setResult(carried + i, stacked);
  }
  return success();
}

} // namespace

void kiln::import::registerControlHandlers(HandlerMap &handlers) {
  handlers["If"] = importIf;
  handlers["Loop"] = importLoop;
  handlers["Scan"] = importScan;
}

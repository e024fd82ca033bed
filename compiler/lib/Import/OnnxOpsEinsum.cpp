//===- OnnxOpsEinsum.cpp - Einsum as transpose, reshape, matmul -----------===//
//
// Einsum decomposes entirely into core ops. Each operand's subscripts become
// integer labels (letters, and one label per ellipsis dimension, aligned at
// the right across operands). Then:
//   1. a label repeated within an operand takes the diagonal: the two dims
//      move last, merge into one of size d*d, and a constant-index gather
//      reads positions 0, d+1, 2d+2, ... (exact for every type);
//   2. labels that neither the output nor a later operand needs are summed
//      away (reduce_sum);
//   3. operands combine left to right in pairs as one batched matmul:
//      [batch, lhs-only, contracted] x [batch, contracted, rhs-only];
//   4. what is left is summed and transposed into the output's order.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// Labels of ellipsis dimensions start here (letters are 0..51).
constexpr int kEllipsisLabel = 100;

struct Term {
  Value value;
  SmallVector<int> labels; ///< one per dimension of value
};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// One subscript term: letters and at most one "...". `ellipsisRank` is the
/// number of dims the ellipsis stands for, `maxEllipsis` the largest over all
/// operands (ellipsis dims align at the right).
struct ParsedTerm {
  SmallVector<int> before, after; ///< letter labels around the ellipsis
  bool hasEllipsis = false;
};

FailureOr<ParsedTerm> parseTerm(NodeImporter &n, StringRef text) {
  ParsedTerm t;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ')
      continue;
    if (c == '.') {
      if (t.hasEllipsis || !text.substr(i).starts_with("...")) {
        n.error() << "malformed ellipsis in einsum term '" << text << "'";
        return failure();
      }
      t.hasEllipsis = true;
      i += 2;
      continue;
    }
    int label;
    if (c >= 'a' && c <= 'z')
      label = c - 'a';
    else if (c >= 'A' && c <= 'Z')
      label = 26 + (c - 'A');
    else {
      n.error() << "unexpected character '" << c << "' in einsum equation";
      return failure();
    }
    (t.hasEllipsis ? t.after : t.before).push_back(label);
  }
  return t;
}

/// The labels of a term given how many dims its ellipsis covers.
SmallVector<int> expand(const ParsedTerm &t, int64_t ellipsisRank,
                        int64_t maxEllipsis) {
  SmallVector<int> labels(t.before);
  for (int64_t e = 0; e < ellipsisRank; ++e)
    labels.push_back(kEllipsisLabel + (maxEllipsis - ellipsisRank + e));
  llvm::append_range(labels, t.after);
  return labels;
}

/// Takes diagonals until every label of `t` is unique.
void takeDiagonals(NodeImporter &n, Term &t) {
  for (;;) {
    int64_t rank = t.labels.size(), a = -1, b = -1;
    for (int64_t i = 0; i < rank && a < 0; ++i)
      for (int64_t j = i + 1; j < rank; ++j)
        if (t.labels[i] == t.labels[j]) {
          a = i;
          b = j;
          break;
        }
    if (a < 0)
      return;
    auto type = typeOf(t.value);
    int64_t d = type.getDimSize(a);
    SmallVector<int64_t> perm;
    SmallVector<int> labels;
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < rank; ++i)
      if (i != a && i != b) {
        perm.push_back(i);
        labels.push_back(t.labels[i]);
        shape.push_back(type.getDimSize(i));
      }
    perm.push_back(a);
    perm.push_back(b);
    bool identity = a == rank - 2 && b == rank - 1;
    Value moved = identity ? t.value : n.transpose(t.value, perm);
    shape.push_back(d * d);
    Value merged = n.reshape(moved, shape);
    SmallVector<int64_t> positions;
    for (int64_t i = 0; i < d; ++i)
      positions.push_back(i * (d + 1));
    Value indices = i64Constant(n, positions, {d});
    t.value = GatherOp::create(n.b, n.loc, merged, indices,
                               static_cast<int64_t>(shape.size() - 1));
    labels.push_back(t.labels[a]);
    t.labels = labels;
  }
}

/// Sums away the dims of `t` whose labels are not in `keep`.
void reduceExcept(NodeImporter &n, Term &t,
                  const llvm::SmallSet<int, 16> &keep) {
  SmallVector<int64_t> axes, shape;
  SmallVector<int> labels;
  auto type = typeOf(t.value);
  for (auto [i, label] : llvm::enumerate(t.labels)) {
    if (keep.contains(label)) {
      labels.push_back(label);
      shape.push_back(type.getDimSize(i));
    } else {
      axes.push_back(i);
    }
  }
  if (axes.empty())
    return;
  auto resultTy = RankedTensorType::get(shape, type.getElementType());
  t.value = ReduceSumOp::create(n.b, n.loc, resultTy, t.value,
                                n.b.getDenseI64ArrayAttr(axes), UnitAttr());
  t.labels = labels;
}

/// Transposes `t` so its labels are `order` (a permutation of them).
void permuteTo(NodeImporter &n, Term &t, ArrayRef<int> order) {
  SmallVector<int64_t> perm;
  for (int label : order)
    perm.push_back(llvm::find(t.labels, label) - t.labels.begin());
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (!identity)
    t.value = n.transpose(t.value, perm);
  t.labels.assign(order.begin(), order.end());
}

int64_t sizeOf(const Term &t, int label) {
  auto it = llvm::find(t.labels, label);
  return typeOf(t.value).getDimSize(it - t.labels.begin());
}

/// a x b over their shared labels, keeping the labels in `keep`: one matmul
/// [batch..., M, K] x [batch..., K, N].
FailureOr<Term> contract(NodeImporter &n, Term a, Term b,
                         const llvm::SmallSet<int, 16> &keep) {
  llvm::SmallSet<int, 16> keepA(keep), keepB(keep);
  for (int l : b.labels)
    keepA.insert(l);
  for (int l : a.labels)
    keepB.insert(l);
  reduceExcept(n, a, keepA);
  reduceExcept(n, b, keepB);
  SmallVector<int> batch, lhsOnly, contracted, rhsOnly;
  for (int l : a.labels) {
    if (!llvm::is_contained(b.labels, l))
      lhsOnly.push_back(l);
    else if (keep.contains(l))
      batch.push_back(l);
    else
      contracted.push_back(l);
  }
  for (int l : b.labels)
    if (!llvm::is_contained(a.labels, l))
      rhsOnly.push_back(l);
  int64_t m = 1, k = 1, nn = 1;
  SmallVector<int64_t> batchA, batchB, resultShape;
  for (int l : contracted) {
    if (sizeOf(a, l) != sizeOf(b, l)) {
      n.error() << "einsum dimension sizes differ for a summed subscript: "
                << sizeOf(a, l) << " and " << sizeOf(b, l);
      return failure();
    }
    k *= sizeOf(a, l);
  }
  for (int l : batch) {
    int64_t sa = sizeOf(a, l), sb = sizeOf(b, l);
    if (sa != sb && sa != 1 && sb != 1) {
      n.error() << "einsum dimension sizes differ for a subscript: " << sa
                << " and " << sb;
      return failure();
    }
    batchA.push_back(sa);
    batchB.push_back(sb);
    resultShape.push_back(std::max(sa, sb));
  }
  for (int l : lhsOnly) {
    m *= sizeOf(a, l);
    resultShape.push_back(sizeOf(a, l));
  }
  for (int l : rhsOnly) {
    nn *= sizeOf(b, l);
    resultShape.push_back(sizeOf(b, l));
  }
  SmallVector<int> orderA(batch), orderB(batch);
  llvm::append_range(orderA, lhsOnly);
  llvm::append_range(orderA, contracted);
  llvm::append_range(orderB, contracted);
  llvm::append_range(orderB, rhsOnly);
  permuteTo(n, a, orderA);
  permuteTo(n, b, orderB);
  SmallVector<int64_t> shapeA(batchA), shapeB(batchB);
  shapeA.append({m, k});
  shapeB.append({k, nn});
  Value lhs = n.reshape(a.value, shapeA);
  Value rhs = n.reshape(b.value, shapeB);
  KILN_TRY(product, n.matmul(lhs, rhs));
  Term result;
  result.value = n.reshape(product, resultShape);
  result.labels = batch;
  llvm::append_range(result.labels, lhsOnly);
  llvm::append_range(result.labels, rhsOnly);
  return result;
}

} // namespace

LogicalResult kiln::import::importEinsum(NodeImporter &n) {
  if (n.numInputs() < 1) {
    n.error() << "expected at least one input, found none";
    return failure();
  }
  if (failed(n.expectInputs(n.numInputs(), n.numInputs())))
    return failure();
  KILN_TRY(equation, n.getString("equation", ""));
  StringRef eq(equation);
  StringRef lhsText = eq, outText;
  bool explicitOutput = false;
  if (size_t arrow = eq.find("->"); arrow != StringRef::npos) {
    lhsText = eq.take_front(arrow);
    outText = eq.drop_front(arrow + 2);
    explicitOutput = true;
  }
  SmallVector<StringRef> termTexts;
  lhsText.split(termTexts, ',');
  if (termTexts.size() != n.numInputs()) {
    n.error() << "einsum equation '" << equation << "' has " << termTexts.size()
              << " input terms, expected " << n.numInputs();
    return failure();
  }
  Type elt = n.inputType(0).getElementType();
  SmallVector<ParsedTerm> parsed;
  int64_t maxEllipsis = 0;
  SmallVector<int64_t> ellipsisRanks;
  for (auto [i, text] : llvm::enumerate(termTexts)) {
    KILN_TRY(t, parseTerm(n, text));
    auto type = n.inputType(i);
    if (type.getElementType() != elt) {
      n.error() << "einsum operands must share an element type, found " << elt
                << " and " << type.getElementType();
      return failure();
    }
    int64_t letters = t.before.size() + t.after.size();
    int64_t rank = type.getRank();
    if (t.hasEllipsis ? rank < letters : rank != letters) {
      n.error() << "einsum term '" << text.trim() << "' does not match operand "
                << i << " of rank " << rank;
      return failure();
    }
    ellipsisRanks.push_back(rank - letters);
    maxEllipsis = std::max(maxEllipsis, rank - letters);
    parsed.push_back(t);
  }
  if (elt.isInteger(1) || !(isa<FloatType>(elt) || isa<IntegerType>(elt))) {
    n.error() << "expected numeric operands, found " << elt;
    return failure();
  }
  SmallVector<Term> terms;
  llvm::DenseMap<int, int64_t> sizes;
  llvm::DenseMap<int, int> counts;
  for (auto [i, t] : llvm::enumerate(parsed)) {
    Term term{n.input(i), expand(t, ellipsisRanks[i], maxEllipsis)};
    auto type = n.inputType(i);
    for (auto [d, label] : llvm::enumerate(term.labels)) {
      int64_t size = type.getDimSize(d);
      auto [it, inserted] = sizes.try_emplace(label, size);
      if (!inserted && it->second != size) {
        if (label < kEllipsisLabel || (it->second != 1 && size != 1)) {
          n.error() << "einsum subscript sizes differ: " << it->second
                    << " and " << size;
          return failure();
        }
        it->second = std::max(it->second, size);
      }
      ++counts[label];
    }
    terms.push_back(term);
  }
  SmallVector<int> output;
  if (explicitOutput) {
    KILN_TRY(out, parseTerm(n, outText));
    // An output without "..." sums the ellipsis dimensions away.
    output = expand(out, out.hasEllipsis ? maxEllipsis : 0, maxEllipsis);
  } else {
    for (int64_t e = 0; e < maxEllipsis; ++e)
      output.push_back(kEllipsisLabel + e);
    for (int label = 0; label < 52; ++label)
      if (counts.lookup(label) == 1)
        output.push_back(label);
  }
  llvm::SmallSet<int, 16> outputSet;
  for (int label : output) {
    if (!sizes.count(label)) {
      n.error() << "einsum output subscript '"
                << (label < 26 ? char('a' + label) : char('A' + label - 26))
                << "' appears in no input";
      return failure();
    }
    if (!outputSet.insert(label).second) {
      n.error() << "einsum output repeats a subscript";
      return failure();
    }
  }

  for (Term &t : terms)
    takeDiagonals(n, t);
  Term acc = terms.front();
  for (size_t i = 1; i < terms.size(); ++i) {
    // Keep what the output or a later operand needs.
    llvm::SmallSet<int, 16> keep(outputSet);
    for (size_t j = i + 1; j < terms.size(); ++j)
      for (int l : terms[j].labels)
        keep.insert(l);
    KILN_TRY(next, contract(n, acc, terms[i], keep));
    acc = next;
  }
  reduceExcept(n, acc, outputSet);
  // Ellipsis dims that broadcast (size 1 here) stretch to the output's size.
  permuteTo(n, acc, output);
  SmallVector<int64_t> outShape;
  for (int label : output)
    outShape.push_back(sizes.lookup(label));
  Value result = acc.value;
  if (typeOf(result).getShape() != ArrayRef<int64_t>(outShape))
    result = BroadcastOp::create(n.b, n.loc,
                                 RankedTensorType::get(outShape, elt), result);
  n.setResult(0, result);
  return success();
}

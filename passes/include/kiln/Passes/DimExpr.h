//===- DimExpr.h - sizes over symbolic dimensions -------------------------===//
//
// A tensor size that depends on symbolic dimensions (`batch`, `seq`), free
// of IR: step 1 of docs/decisions/0027-symbolic-ranges.md. An expression is
// a sum of terms, each an integer coefficient times a product of factors; a
// factor is a symbol, or the floor or the ceiling of an expression divided by
// a positive constant (what Reshape, strided Slice, pooling and convolution
// output sizes need). It is kept canonical: factors and terms sorted, like
// terms merged, zero terms dropped; in a division, whole multiples of the
// divisor taken out, common factors cancelled and nested divisions merged.
// So sums and products of symbols that are equal compare equal, and
// divisions do as far as those rules reach (`floor(a / 2) * 2 + a % 2` is
// not recognized as `a`). Arithmetic that leaves int64 marks the result
// invalid.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_DIMEXPR_H
#define KILN_PASSES_DIMEXPR_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

class DimExpr {
public:
  /// An inclusive range of sizes.
  struct Range {
    int64_t lo = 0, hi = 0;
    bool operator==(const Range &o) const { return lo == o.lo && hi == o.hi; }
  };

  /// The constant 0.
  DimExpr() = default;
  static DimExpr constant(int64_t value);
  static DimExpr symbol(const std::string &name);

  /// False once an operation overflowed int64 (every later result too).
  bool isValid() const { return valid; }
  /// The value when the expression has no symbols.
  std::optional<int64_t> getConstant() const;
  /// The symbols it reads, sorted, each once.
  std::vector<std::string> symbols() const;

  DimExpr operator+(const DimExpr &other) const;
  DimExpr operator-(const DimExpr &other) const;
  DimExpr operator*(const DimExpr &other) const;
  /// floor(this / divisor) and ceil(this / divisor); divisor > 0.
  DimExpr floorDiv(int64_t divisor) const;
  DimExpr ceilDiv(int64_t divisor) const;
  /// The q with q * divisor == this, when divisor is one term (a product
  /// of factors times a nonzero integer) that divides every term of this
  /// one; nullopt when it does not (or is not one term). What a Reshape's
  /// -1 needs: [batch, seq, 768] -> [batch*seq, -1] gives 768.
  std::optional<DimExpr> divideExactly(const DimExpr &divisor) const;

  /// The value at the given sizes; nullopt when a symbol has none, the
  /// expression is invalid, or the value leaves int64.
  std::optional<int64_t>
  evaluate(const std::map<std::string, int64_t> &sizes) const;
  /// A range holding every value the expression takes while each symbol
  /// stays in its range (interval arithmetic: exact for the sums and
  /// products of sizes shape rules make, conservative otherwise); nullopt
  /// as for evaluate.
  std::optional<Range> bounds(const std::map<std::string, Range> &ranges) const;

  /// Canonical text: `2*batch*seq + floor((seq + 1) / 2)`.
  std::string str() const;
  /// Reads what str() writes (and any sum of products of integers, symbols,
  /// parenthesized expressions and floor/ceil divisions by a positive
  /// constant); nullopt on anything else. A symbol is a run of characters
  /// other than blanks, digits first, `+ - * / ( )` and `,`.
  static std::optional<DimExpr> parse(const std::string &text);

  /// The expression rebuilt in another form (code that computes it at run
  /// time): `constant(int64_t)`, `symbol(name)`, `add(T, T)`, `mul(T, T)`
  /// and `divide(T, int64_t divisor, bool ceiling)` meet the terms and
  /// factors in canonical order, so equal expressions build the same code.
  template <typename T, typename Constant, typename Symbol, typename Add,
            typename Mul, typename Divide>
  T fold(Constant constant, Symbol symbol, Add add, Mul mul,
         Divide divide) const {
    std::optional<T> sum;
    for (const Term &t : terms) {
      std::optional<T> term;
      if (t.coefficient != 1 || t.factors.empty())
        term = constant(t.coefficient);
      for (const Factor &f : t.factors) {
        T x = f.kind == Factor::Symbol
                  ? symbol(f.name)
                  : divide(f.body->template fold<T>(constant, symbol, add, mul,
                                                    divide),
                           f.divisor, f.kind == Factor::CeilDiv);
        term = term ? mul(*term, x) : x;
      }
      sum = sum ? add(*sum, *term) : *term;
    }
    return sum ? *sum : constant(0);
  }
  /// Whether `name` can be a symbol in text that parse reads.
  static bool isSymbolName(const std::string &name);

  bool operator==(const DimExpr &other) const;
  bool operator!=(const DimExpr &other) const { return !(*this == other); }
  /// A total order on canonical forms (for sorting and maps).
  bool operator<(const DimExpr &other) const { return compare(other) < 0; }

private:
  struct Factor {
    enum Kind { Symbol, FloorDiv, CeilDiv } kind = Symbol;
    std::string name;                    ///< Symbol
    std::shared_ptr<const DimExpr> body; ///< FloorDiv, CeilDiv
    int64_t divisor = 1;                 ///< FloorDiv, CeilDiv
  };
  struct Term {
    int64_t coefficient = 0;
    std::vector<Factor> factors; ///< sorted; empty for the constant term
  };

  static int compareFactors(const Factor &a, const Factor &b);
  static int compareFactorLists(const std::vector<Factor> &a,
                                const std::vector<Factor> &b);
  int compare(const DimExpr &other) const;
  /// Sorts terms, merges like ones and drops zeros.
  void canonicalize();
  DimExpr divide(int64_t divisor, bool ceiling) const;
  static DimExpr invalid();

  std::vector<Term> terms;
  bool valid = true;
};

} // namespace kiln

#endif // KILN_PASSES_DIMEXPR_H

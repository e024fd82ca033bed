//===- DimExpr.cpp - sizes over symbolic dimensions -----------------------===//

#include "kiln/Passes/DimExpr.h"

#include <algorithm>
#include <numeric>
#include <set>

using namespace kiln;

namespace {

bool addOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}
bool mulOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

/// floor(a / b) and ceil(a / b) for b > 0, whatever the sign of a.
int64_t floorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
int64_t ceilDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

int compareInts(int64_t a, int64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

} // namespace

DimExpr DimExpr::invalid() {
  DimExpr e;
  e.valid = false;
  return e;
}

DimExpr DimExpr::constant(int64_t value) {
  DimExpr e;
  if (value != 0)
    e.terms.push_back({value, {}});
  return e;
}

DimExpr DimExpr::symbol(const std::string &name) {
  DimExpr e;
  Factor f;
  f.kind = Factor::Symbol;
  f.name = name;
  e.terms.push_back({1, {f}});
  return e;
}

std::optional<int64_t> DimExpr::getConstant() const {
  if (!valid)
    return std::nullopt;
  if (terms.empty())
    return 0;
  if (terms.size() == 1 && terms[0].factors.empty())
    return terms[0].coefficient;
  return std::nullopt;
}

std::vector<std::string> DimExpr::symbols() const {
  std::set<std::string> names;
  for (const Term &t : terms)
    for (const Factor &f : t.factors) {
      if (f.kind == Factor::Symbol)
        names.insert(f.name);
      else
        for (const std::string &n : f.body->symbols())
          names.insert(n);
    }
  return {names.begin(), names.end()};
}

int DimExpr::compareFactors(const Factor &a, const Factor &b) {
  if (a.kind != b.kind)
    return a.kind < b.kind ? -1 : 1;
  if (a.kind == Factor::Symbol)
    return a.name.compare(b.name) < 0 ? -1 : a.name == b.name ? 0 : 1;
  if (int c = compareInts(a.divisor, b.divisor))
    return c;
  return a.body->compare(*b.body);
}

int DimExpr::compareFactorLists(const std::vector<Factor> &a,
                                const std::vector<Factor> &b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (int c = compareFactors(a[i], b[i]))
      return c;
  return compareInts((int64_t)a.size(), (int64_t)b.size());
}

int DimExpr::compare(const DimExpr &other) const {
  if (valid != other.valid)
    return valid ? 1 : -1;
  if (int c = compareInts((int64_t)terms.size(), (int64_t)other.terms.size()))
    return c;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (int c = compareFactorLists(terms[i].factors, other.terms[i].factors))
      return c;
    if (int c = compareInts(terms[i].coefficient, other.terms[i].coefficient))
      return c;
  }
  return 0;
}

bool DimExpr::operator==(const DimExpr &other) const {
  return compare(other) == 0;
}

void DimExpr::canonicalize() {
  if (!valid) {
    terms.clear();
    return;
  }
  for (Term &t : terms)
    std::sort(t.factors.begin(), t.factors.end(),
              [](const Factor &a, const Factor &b) {
                return compareFactors(a, b) < 0;
              });
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term &a, const Term &b) {
                     return compareFactorLists(a.factors, b.factors) < 0;
                   });
  std::vector<Term> merged;
  for (Term &t : terms) {
    if (!merged.empty() &&
        compareFactorLists(merged.back().factors, t.factors) == 0) {
      if (addOverflows(merged.back().coefficient, t.coefficient,
                       merged.back().coefficient)) {
        *this = invalid();
        return;
      }
    } else {
      merged.push_back(std::move(t));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const Term &t) { return t.coefficient == 0; }),
               merged.end());
  terms = std::move(merged);
}

DimExpr DimExpr::operator+(const DimExpr &other) const {
  if (!valid || !other.valid)
    return invalid();
  DimExpr sum = *this;
  sum.terms.insert(sum.terms.end(), other.terms.begin(), other.terms.end());
  sum.canonicalize();
  return sum;
}

DimExpr DimExpr::operator-(const DimExpr &other) const {
  return *this + other * constant(-1);
}

DimExpr DimExpr::operator*(const DimExpr &other) const {
  if (!valid || !other.valid)
    return invalid();
  DimExpr product;
  for (const Term &a : terms)
    for (const Term &b : other.terms) {
      Term t;
      if (mulOverflows(a.coefficient, b.coefficient, t.coefficient))
        return invalid();
      t.factors = a.factors;
      t.factors.insert(t.factors.end(), b.factors.begin(), b.factors.end());
      product.terms.push_back(std::move(t));
    }
  product.canonicalize();
  return product;
}

DimExpr DimExpr::floorDiv(int64_t divisor) const {
  return divide(divisor, /*ceiling=*/false);
}
DimExpr DimExpr::ceilDiv(int64_t divisor) const {
  return divide(divisor, /*ceiling=*/true);
}

DimExpr DimExpr::divide(int64_t divisor, bool ceiling) const {
  if (!valid || divisor <= 0)
    return invalid();
  if (divisor == 1)
    return *this;
  // Each coefficient k = divisor * q + r with 0 <= r < divisor: the q parts
  // are whole (every factor is an integer) and leave the division.
  DimExpr whole, rest;
  for (const Term &t : terms) {
    int64_t q = floorDivide(t.coefficient, divisor);
    int64_t r = t.coefficient - q * divisor;
    if (q != 0)
      whole.terms.push_back({q, t.factors});
    if (r != 0)
      rest.terms.push_back({r, t.factors});
  }
  whole.canonicalize();
  rest.canonicalize();
  if (std::optional<int64_t> r = rest.getConstant()) // 0 <= r < divisor
    return whole + constant(ceiling && *r > 0 ? 1 : 0);
  // floor(g*x / (g*d)) = floor(x / d), the same for ceil.
  int64_t g = divisor;
  for (const Term &t : rest.terms)
    g = std::gcd(g, t.coefficient);
  if (g > 1) {
    for (Term &t : rest.terms)
      t.coefficient /= g;
    divisor /= g;
    if (divisor == 1)
      return whole + rest;
  }
  // floor(floor(x / a) / d) = floor(x / (a * d)), the same for ceil.
  Factor::Kind kind = ceiling ? Factor::CeilDiv : Factor::FloorDiv;
  if (rest.terms.size() == 1 && rest.terms[0].coefficient == 1 &&
      rest.terms[0].factors.size() == 1 &&
      rest.terms[0].factors[0].kind == kind) {
    const Factor &inner = rest.terms[0].factors[0];
    int64_t both;
    if (mulOverflows(inner.divisor, divisor, both))
      return invalid();
    return whole + inner.body->divide(both, ceiling);
  }
  Factor f;
  f.kind = kind;
  f.body = std::make_shared<const DimExpr>(std::move(rest));
  f.divisor = divisor;
  DimExpr quotient;
  quotient.terms.push_back({1, {f}});
  return whole + quotient;
}

std::optional<DimExpr> DimExpr::divideExactly(const DimExpr &divisor) const {
  if (!valid || !divisor.valid || divisor.terms.size() != 1)
    return std::nullopt;
  const Term &d = divisor.terms[0];
  DimExpr quotient;
  for (const Term &t : terms) {
    if ((d.coefficient == -1 && t.coefficient == INT64_MIN) ||
        t.coefficient % d.coefficient != 0)
      return std::nullopt;
    // Both factor lists are sorted: take d's factors out of t's, in order.
    Term q{t.coefficient / d.coefficient, {}};
    size_t j = 0;
    for (const Factor &f : t.factors) {
      if (j < d.factors.size() && compareFactors(f, d.factors[j]) == 0)
        ++j;
      else
        q.factors.push_back(f);
    }
    if (j != d.factors.size())
      return std::nullopt;
    quotient.terms.push_back(std::move(q));
  }
  quotient.canonicalize();
  return quotient;
}

std::optional<int64_t>
DimExpr::evaluate(const std::map<std::string, int64_t> &sizes) const {
  // Interval arithmetic over one-point ranges is exact: every corner of a
  // product is the same product, and a division of a point is a point.
  std::map<std::string, Range> points;
  for (const auto &[name, size] : sizes)
    points[name] = Range{size, size};
  std::optional<Range> value = bounds(points);
  if (!value)
    return std::nullopt;
  return value->lo;
}

std::optional<DimExpr::Range>
DimExpr::bounds(const std::map<std::string, Range> &ranges) const {
  if (!valid)
    return std::nullopt;
  auto multiply = [](Range a, Range b) -> std::optional<Range> {
    int64_t corners[4];
    if (mulOverflows(a.lo, b.lo, corners[0]) ||
        mulOverflows(a.lo, b.hi, corners[1]) ||
        mulOverflows(a.hi, b.lo, corners[2]) ||
        mulOverflows(a.hi, b.hi, corners[3]))
      return std::nullopt;
    return Range{*std::min_element(corners, corners + 4),
                 *std::max_element(corners, corners + 4)};
  };
  Range sum{0, 0};
  for (const Term &t : terms) {
    std::optional<Range> term = Range{t.coefficient, t.coefficient};
    for (const Factor &f : t.factors) {
      Range x;
      if (f.kind == Factor::Symbol) {
        auto it = ranges.find(f.name);
        if (it == ranges.end())
          return std::nullopt;
        x = it->second;
      } else {
        std::optional<Range> body = f.body->bounds(ranges);
        if (!body)
          return std::nullopt;
        // Division by a positive constant keeps the order.
        x = f.kind == Factor::FloorDiv ? Range{floorDivide(body->lo, f.divisor),
                                               floorDivide(body->hi, f.divisor)}
                                       : Range{ceilDivide(body->lo, f.divisor),
                                               ceilDivide(body->hi, f.divisor)};
      }
      term = multiply(*term, x);
      if (!term)
        return std::nullopt;
    }
    if (addOverflows(sum.lo, term->lo, sum.lo) ||
        addOverflows(sum.hi, term->hi, sum.hi))
      return std::nullopt;
  }
  return sum;
}

std::string DimExpr::str() const {
  if (!valid)
    return "<overflow>";
  if (terms.empty())
    return "0";
  // Terms with symbols in canonical order, the constant last.
  std::vector<const Term *> order;
  for (const Term &t : terms)
    if (!t.factors.empty())
      order.push_back(&t);
  for (const Term &t : terms)
    if (t.factors.empty())
      order.push_back(&t);
  std::string text;
  for (const Term *t : order) {
    int64_t k = t->coefficient;
    bool negative = k < 0;
    // |k| as unsigned: INT64_MIN has no positive int64.
    uint64_t magnitude = negative ? 0 - (uint64_t)k : (uint64_t)k;
    if (text.empty())
      text = negative ? "-" : "";
    else
      text += negative ? " - " : " + ";
    std::string factors;
    for (const Factor &f : t->factors) {
      if (!factors.empty())
        factors += "*";
      if (f.kind == Factor::Symbol) {
        factors += f.name;
        continue;
      }
      std::string body = f.body->str();
      if (f.body->terms.size() > 1)
        body = "(" + body + ")";
      factors += (f.kind == Factor::FloorDiv ? "floor(" : "ceil(") + body +
                 " / " + std::to_string(f.divisor) + ")";
    }
    if (factors.empty())
      text += std::to_string(magnitude);
    else if (magnitude == 1)
      text += factors;
    else
      text += std::to_string(magnitude) + "*" + factors;
  }
  return text;
}

namespace {

bool isOperatorChar(char c) {
  return c == '+' || c == '-' || c == '*' || c == '/' || c == '(' || c == ')' ||
         c == ',' || c == ' ' || c == '\t' || c == '\n';
}

/// Recursive descent over str()'s grammar:
///   expr   := ['-'] term (('+' | '-') term)*
///   term   := factor ('*' factor)*
///   factor := integer | symbol | '(' expr ')'
///           | ('floor' | 'ceil') '(' expr '/' integer ')'
class DimExprParser {
public:
  explicit DimExprParser(const std::string &text) : text(text) {}

  std::optional<DimExpr> parseAll() {
    std::optional<DimExpr> e = parseExpr();
    skipBlanks();
    if (!e || pos != text.size() || !e->isValid())
      return std::nullopt;
    return e;
  }

private:
  void skipBlanks() {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n'))
      ++pos;
  }
  bool consume(char c) {
    skipBlanks();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  std::optional<int64_t> parseInteger() {
    skipBlanks();
    size_t start = pos;
    int64_t value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (mulOverflows(value, 10, value) ||
          addOverflows(value, text[pos] - '0', value))
        return std::nullopt;
      ++pos;
    }
    if (pos == start)
      return std::nullopt;
    return value;
  }
  std::optional<DimExpr> parseExpr() {
    bool negate = consume('-');
    std::optional<DimExpr> sum = parseTerm();
    if (!sum)
      return std::nullopt;
    if (negate)
      sum = DimExpr() - *sum;
    while (true) {
      bool plus = consume('+');
      if (!plus && !consume('-'))
        return sum;
      std::optional<DimExpr> t = parseTerm();
      if (!t)
        return std::nullopt;
      sum = plus ? *sum + *t : *sum - *t;
    }
  }
  std::optional<DimExpr> parseTerm() {
    std::optional<DimExpr> product = parseFactor();
    while (product && consume('*')) {
      std::optional<DimExpr> f = parseFactor();
      if (!f)
        return std::nullopt;
      product = *product * *f;
    }
    return product;
  }
  std::optional<DimExpr> parseFactor() {
    skipBlanks();
    if (pos >= text.size())
      return std::nullopt;
    if (text[pos] >= '0' && text[pos] <= '9') {
      std::optional<int64_t> k = parseInteger();
      if (!k)
        return std::nullopt;
      return DimExpr::constant(*k);
    }
    if (consume('(')) {
      std::optional<DimExpr> e = parseExpr();
      if (!e || !consume(')'))
        return std::nullopt;
      return e;
    }
    size_t start = pos;
    while (pos < text.size() && !isOperatorChar(text[pos]))
      ++pos;
    if (pos == start)
      return std::nullopt;
    std::string name = text.substr(start, pos - start);
    if ((name == "floor" || name == "ceil") && consume('(')) {
      std::optional<DimExpr> body = parseExpr();
      if (!body || !consume('/'))
        return std::nullopt;
      std::optional<int64_t> divisor = parseInteger();
      if (!divisor || *divisor <= 0 || !consume(')'))
        return std::nullopt;
      return name == "floor" ? body->floorDiv(*divisor)
                             : body->ceilDiv(*divisor);
    }
    return DimExpr::symbol(name);
  }

  const std::string &text;
  size_t pos = 0;
};

} // namespace

std::optional<DimExpr> DimExpr::parse(const std::string &text) {
  return DimExprParser(text).parseAll();
}

bool DimExpr::isSymbolName(const std::string &name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9') || name == "floor" ||
      name == "ceil")
    return false;
  return std::none_of(name.begin(), name.end(), isOperatorChar);
}

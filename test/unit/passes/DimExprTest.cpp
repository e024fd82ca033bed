//===- DimExprTest.cpp - sizes over symbolic dimensions -------------------===//
//
// Canonical forms of the sizes shape rules build, checked by hand; then
// random expressions over two symbols, each evaluated by DimExpr and by a
// plain recursive evaluation of the tree it was built from (floor and ceil
// through double division), at every size of the ranges, and each value
// checked to lie in DimExpr::bounds.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/DimExpr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace kiln;

namespace {

DimExpr c(int64_t v) { return DimExpr::constant(v); }
DimExpr s(const char *name) { return DimExpr::symbol(name); }

TEST(DimExpr, SumsAndProductsAreCanonical) {
  DimExpr a = s("a"), b = s("b");
  EXPECT_EQ((a + c(1)) * (a + c(1)), a * a + c(2) * a + c(1));
  EXPECT_EQ(a * b, b * a);
  EXPECT_EQ(a - a, DimExpr());
  EXPECT_EQ((a + b) - b, a);
  EXPECT_NE(a, b);
  EXPECT_EQ((a * b).getConstant(), std::nullopt);
  EXPECT_EQ((c(3) * c(4)).getConstant(), 12);
  EXPECT_EQ((a * c(0)).getConstant(), 0);
  EXPECT_EQ((b * a * c(2) + a).symbols(), (std::vector<std::string>{"a", "b"}));
}

TEST(DimExpr, DivisionsTakeOutWholeMultiples) {
  DimExpr a = s("a"), b = s("b");
  EXPECT_EQ((c(4) * a + c(8)).floorDiv(4), a + c(2));
  EXPECT_EQ((c(4) * a + c(3)).floorDiv(4), a);
  EXPECT_EQ((c(4) * a + c(3)).ceilDiv(4), a + c(1));
  EXPECT_EQ((c(5) * a).floorDiv(4), a + a.floorDiv(4));
  EXPECT_EQ((c(2) * a).floorDiv(4), a.floorDiv(2));
  EXPECT_EQ(a.floorDiv(2).floorDiv(3), a.floorDiv(6));
  EXPECT_EQ(a.ceilDiv(2).ceilDiv(3), a.ceilDiv(6));
  EXPECT_NE(a.floorDiv(2).ceilDiv(3), a.ceilDiv(6));
  EXPECT_EQ((a * b).floorDiv(1), a * b);
  EXPECT_EQ(c(-7).floorDiv(2).getConstant(), -4);
  EXPECT_EQ(c(-7).ceilDiv(2).getConstant(), -3);
  EXPECT_FALSE(a.floorDiv(0).isValid());
}

// A Reshape's -1: the input's element count over the target's known
// sizes, when one term divides it exactly.
TEST(DimExpr, DividesExactlyByOneTerm) {
  DimExpr batch = s("batch"), seq = s("seq"), heads = s("heads");
  DimExpr elements = batch * seq * c(768);
  EXPECT_EQ(elements.divideExactly(batch * seq), c(768));
  EXPECT_EQ(elements.divideExactly(batch * c(12)), seq * c(64));
  EXPECT_EQ((batch * seq * seq * heads).divideExactly(seq), batch * seq * heads);
  EXPECT_EQ((c(6) * batch + c(4)).divideExactly(c(2)), c(3) * batch + c(2));
  EXPECT_EQ(elements.divideExactly(c(768) * batch * seq), c(1));
  // Not one term, not a divisor, or not exact: unknown.
  EXPECT_EQ(elements.divideExactly(batch + seq), std::nullopt);
  EXPECT_EQ((batch * seq + c(1)).divideExactly(batch), std::nullopt);
  EXPECT_EQ(elements.divideExactly(heads), std::nullopt);
  EXPECT_EQ(elements.divideExactly(c(7)), std::nullopt);
  EXPECT_EQ(elements.divideExactly(DimExpr()), std::nullopt);
  EXPECT_EQ(seq.divideExactly(seq * seq), std::nullopt);
  DimExpr lowest = c(std::numeric_limits<int64_t>::min()) * seq;
  EXPECT_EQ(lowest.divideExactly(c(-1)), std::nullopt);
  EXPECT_EQ(lowest.divideExactly(c(-2) * seq), c(std::numeric_limits<int64_t>::min() / -2));
}

TEST(DimExpr, PrintsReadably) {
  DimExpr batch = s("batch"), seq = s("seq");
  EXPECT_EQ((batch * c(128)).str(), "128*batch");
  // floor((seq - 1) / 2) + 1: the division keeps a constant in [0, 2).
  EXPECT_EQ((c(2) * batch * seq + (seq - c(1)).floorDiv(2) + c(1)).str(), "2*batch*seq + floor((seq + 1) / 2)");
  EXPECT_EQ((c(1) - seq).str(), "-seq + 1");
  EXPECT_EQ((seq + c(3)).ceilDiv(4).str(), "ceil((seq + 3) / 4)");
  EXPECT_EQ(DimExpr().str(), "0");
}

TEST(DimExpr, ParsesItsTextAndRefusesOtherText) {
  DimExpr batch = s("batch"), seq = s("seq_len");
  EXPECT_EQ(DimExpr::parse("2*batch*seq_len + floor((seq_len + 1) / 2)"),
            c(2) * batch * seq + (seq + c(1)).floorDiv(2));
  EXPECT_EQ(DimExpr::parse(" -seq_len + 1 "), c(1) - seq);
  EXPECT_EQ(DimExpr::parse("ceil(batch / 4)"), batch.ceilDiv(4));
  EXPECT_EQ(DimExpr::parse("(batch + 1) * (batch - 1)"), (batch + c(1)) * (batch - c(1)));
  EXPECT_EQ(DimExpr::parse("768"), c(768));
  for (const char *bad : {"", "batch +", "floor(batch)", "floor(batch / 0)", "ceil(batch / -2)", "(batch", "batch)",
                          "2 3", "99999999999999999999"})
    EXPECT_EQ(DimExpr::parse(bad), std::nullopt) << bad;
  EXPECT_TRUE(DimExpr::isSymbolName("batch_size"));
  EXPECT_TRUE(DimExpr::isSymbolName("s0"));
  for (const char *bad : {"", "0s", "a b", "a-b", "floor", "ceil", "f(x)"})
    EXPECT_FALSE(DimExpr::isSymbolName(bad)) << bad;
}

// A convolution's output size over a symbolic length, with padding 1,
// kernel 3 and stride 2: floor((n + 2 - 3) / 2) + 1 = ceil(n / 2).
TEST(DimExpr, ConvolutionOutputSize) {
  DimExpr n = s("n");
  DimExpr out = (n + c(2 * 1) - c(3)).floorDiv(2) + c(1);
  for (int64_t v = 1; v <= 300; ++v)
    EXPECT_EQ(out.evaluate({{"n", v}}), (v + 2 - 3) / 2 + 1) << v;
  EXPECT_EQ(out.bounds({{"n", {1, 300}}}), (DimExpr::Range{1, 150}));
  EXPECT_EQ(out.evaluate({}), std::nullopt);
}

TEST(DimExpr, OverflowIsInvalidNotWrong) {
  DimExpr big = c(std::numeric_limits<int64_t>::max());
  EXPECT_FALSE((big + c(1)).isValid());
  EXPECT_FALSE((big * c(2) + s("a")).isValid());
  EXPECT_EQ((big + c(1)).evaluate({}), std::nullopt);
  EXPECT_EQ((big * s("a")).evaluate({{"a", 2}}), std::nullopt);
  EXPECT_EQ((big * s("a")).bounds({{"a", {1, 2}}}), std::nullopt);
  EXPECT_EQ((big * s("a")).evaluate({{"a", 1}}), std::numeric_limits<int64_t>::max());
  EXPECT_EQ((big + c(1)).str(), "<overflow>");
}

// The reference: a tree evaluated directly.
struct Node {
  enum Op { Const, Sym, Add, Sub, Mul, Floor, Ceil } op = Const;
  int64_t value = 0; // Const; the divisor of Floor and Ceil
  std::string name;
  std::vector<Node> kids;
};

Node randomNode(std::mt19937 &rng, int depth) {
  std::uniform_int_distribution<int> pick(0, depth > 0 ? 6 : 1);
  std::uniform_int_distribution<int64_t> small(-4, 6), divisor(1, 5);
  Node n;
  n.op = static_cast<Node::Op>(pick(rng));
  switch (n.op) {
  case Node::Const:
    n.value = small(rng);
    break;
  case Node::Sym:
    n.name = rng() % 2 ? "a" : "b";
    break;
  case Node::Floor:
  case Node::Ceil:
    n.value = divisor(rng);
    n.kids = {randomNode(rng, depth - 1)};
    break;
  default:
    n.kids = {randomNode(rng, depth - 1), randomNode(rng, depth - 1)};
  }
  return n;
}

int64_t reference(const Node &n, int64_t a, int64_t b) {
  switch (n.op) {
  case Node::Const:
    return n.value;
  case Node::Sym:
    return n.name == "a" ? a : b;
  case Node::Add:
    return reference(n.kids[0], a, b) + reference(n.kids[1], a, b);
  case Node::Sub:
    return reference(n.kids[0], a, b) - reference(n.kids[1], a, b);
  case Node::Mul:
    return reference(n.kids[0], a, b) * reference(n.kids[1], a, b);
  case Node::Floor:
    return (int64_t)std::floor((double)reference(n.kids[0], a, b) / (double)n.value);
  case Node::Ceil:
    return (int64_t)std::ceil((double)reference(n.kids[0], a, b) / (double)n.value);
  }
  return 0;
}

DimExpr build(const Node &n) {
  switch (n.op) {
  case Node::Const:
    return c(n.value);
  case Node::Sym:
    return DimExpr::symbol(n.name);
  case Node::Add:
    return build(n.kids[0]) + build(n.kids[1]);
  case Node::Sub:
    return build(n.kids[0]) - build(n.kids[1]);
  case Node::Mul:
    return build(n.kids[0]) * build(n.kids[1]);
  case Node::Floor:
    return build(n.kids[0]).floorDiv(n.value);
  case Node::Ceil:
    return build(n.kids[0]).ceilDiv(n.value);
  }
  return {};
}

TEST(DimExpr, RandomExpressionsMatchDirectEvaluationAndStayInBounds) {
  std::mt19937 rng(27);
  const DimExpr::Range ra{1, 9}, rb{2, 7};
  for (int i = 0; i < 3000; ++i) {
    Node tree = randomNode(rng, 4);
    DimExpr e = build(tree);
    ASSERT_TRUE(e.isValid());
    std::optional<DimExpr::Range> bound = e.bounds({{"a", ra}, {"b", rb}});
    ASSERT_TRUE(bound.has_value()) << e.str();
    for (int64_t a = ra.lo; a <= ra.hi; ++a)
      for (int64_t b = rb.lo; b <= rb.hi; ++b) {
        int64_t want = reference(tree, a, b);
        std::optional<int64_t> got = e.evaluate({{"a", a}, {"b", b}});
        ASSERT_EQ(got, want) << e.str() << " at a=" << a << " b=" << b;
        // fold, the walk code generation computes sizes with, agrees.
        int64_t folded =
            e.fold<int64_t>([](int64_t v) { return v; }, [&](const std::string &n) { return n == "a" ? a : b; },
                            [](int64_t x, int64_t y) { return x + y; }, [](int64_t x, int64_t y) { return x * y; },
                            [](int64_t x, int64_t d, bool ceiling) {
                              int64_t q = x / d, r = x % d; // rounds toward zero
                              if (r > 0 && ceiling)
                                return q + 1;
                              if (r < 0 && !ceiling)
                                return q - 1;
                              return q;
                            });
        ASSERT_EQ(folded, want) << e.str() << " at a=" << a << " b=" << b;
        ASSERT_LE(bound->lo, want) << e.str();
        ASSERT_GE(bound->hi, want) << e.str();
      }
    // Building it again gives the same canonical form, and so does reading
    // its text back.
    ASSERT_EQ(build(tree), e);
    ASSERT_EQ(DimExpr::parse(e.str()), e) << e.str();
    // Multiplying by one term and dividing it out again gives it back.
    DimExpr term = c(1 + (int64_t)(rng() % 3)) * (rng() % 2 ? s("a") : s("b"));
    ASSERT_EQ((e * term).divideExactly(term), e) << e.str();
  }
}

} // namespace

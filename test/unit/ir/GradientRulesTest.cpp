//===- GradientRulesTest.cpp - every core op states its gradient ----------===//
//
// A guard for new core ops: each op of the kiln dialect either has a
// gradient rule (GradientOpInterface, ir/lib/KilnGradients.cpp) or never
// yields floats, so kiln-generate-gradients never meets a core op it cannot
// differentiate. The rules' numbers are checked end to end against finite
// differences in test/e2e/gradients.test.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnGradientInterface.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

namespace {

// Ops whose results are never floats (constants need no rule either).
const llvm::StringSet<> kWithoutRule = {"kiln.constant", "kiln.cmp", "kiln.and", "kiln.or", "kiln.xor", "kiln.not",
                                        "kiln.argmax", "kiln.argmin",
                                        // Kernels are formed by kiln-fuse after differentiation,
                                        // and gradients are averaged over the ranks after it.
                                        "kiln.fused", "kiln.yield", "kiln.all_reduce",
                                        // Sizes over the symbolic dimensions: no gradient.
                                        "kiln.sizes",
                                        // Indices and sizes computed from data: no gradient.
                                        "kiln.non_zero", "kiln.nms",
                                        // A run-time If's branches of different sizes.
                                        "kiln.choose", "kiln.slice_to"};

TEST(GradientRules, EveryCoreOpWithFloatResultsHasOne) {
  mlir::MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  int seen = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "kiln")
      continue;
    ++seen;
    llvm::StringRef op = name.getStringRef();
    bool hasRule = name.hasInterface<kiln::GradientOpInterface>();
    EXPECT_TRUE(hasRule || kWithoutRule.contains(op))
        << op.str() << " can yield floats but has no gradient rule; add one "
        << "in ir/lib/KilnGradients.cpp";
    EXPECT_FALSE(hasRule && kWithoutRule.contains(op)) << op.str() << " has a rule; take it off kWithoutRule";
  }
  EXPECT_GT(seen, 40);
}

} // namespace

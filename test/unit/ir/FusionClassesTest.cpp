//===- FusionClassesTest.cpp - every core op states its fusion class ------===//
//
// A guard for new core ops: each op of the kiln dialect answers
// FusionOpInterface (ir/lib/KilnFusion.cpp) or is on the list of ops kiln-fuse
// treats as opaque, so a new op is never left out of fusion by accident. The
// classes' effect is checked in test/Passes/kiln-fuse.mlir.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnFusionInterface.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

namespace {

// Ops that no kernel takes: constants, ops with their own loops that are not
// elementwise, reductions or contractions, and the kernel ops themselves.
const llvm::StringSet<> kOpaque = {"kiln.constant", "kiln.scatter", "kiln.topk",  "kiln.pool", "kiln.all_reduce",
                                   "kiln.argmax",   "kiln.argmin",  "kiln.fused", "kiln.yield"};

TEST(FusionClasses, EveryCoreOpHasOneOrIsOpaque) {
  mlir::MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  int seen = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "kiln")
      continue;
    ++seen;
    llvm::StringRef op = name.getStringRef();
    bool hasClass = name.hasInterface<kiln::FusionOpInterface>();
    EXPECT_TRUE(hasClass || kOpaque.contains(op))
        << op.str() << " has no fusion class; add it in ir/lib/KilnFusion.cpp "
        << "or to kOpaque";
    EXPECT_FALSE(hasClass && kOpaque.contains(op)) << op.str() << " has a fusion class; take it off kOpaque";
  }
  EXPECT_GT(seen, 40);
}

} // namespace

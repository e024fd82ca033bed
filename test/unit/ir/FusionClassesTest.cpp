//===- FusionClassesTest.cpp - every core op states its fusion class ------===//
//
// A guard for new core ops: each op of the kiln dialect answers
// FusionOpInterface (ir/lib/KilnFusion.cpp) or is on the list of ops kiln-fuse
// treats as opaque, so a new op is never left out of fusion by accident. The
// classes' effect is checked in test/Passes/kiln-fuse.mlir. Also: the one
// cost model (CostOpInterface, ir/lib/KilnCost.cpp) answers both
// kiln-rematerialize's question and the kernel lowering's.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnCostInterface.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnFusionInterface.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

namespace {

// Ops that no kernel takes: constants, ops with their own loops that are not
// elementwise, reductions or contractions, and the kernel ops themselves.
const llvm::StringSet<> kOpaque = {"kiln.constant", "kiln.scatter", "kiln.topk", "kiln.pool", "kiln.all_reduce",
                                   "kiln.argmax", "kiln.argmin", "kiln.fused", "kiln.yield", "kiln.sizes",
                                   // They define sizes computed from data (decision 0031).
                                   "kiln.non_zero", "kiln.nms", "kiln.choose", "kiln.slice_to"};

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

// The two questions of the one cost model: fusion's (cheap to duplicate
// into each consumer: elementwise and work 1; a transpose costs 1 but is
// movement) and rematerialization's (work times elements; none for a
// matmul, which is never recomputed).
TEST(FusionClasses, OneCostModelAnswersBothPasses) {
  mlir::MLIRContext context;
  context.loadDialect<kiln::KilnDialect, mlir::func::FuncDialect>();
  mlir::OpBuilder b(&context);
  mlir::Location loc = b.getUnknownLoc();
  auto t = mlir::RankedTensorType::get({2, 3}, b.getF32Type());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func = mlir::func::FuncOp::create(b, loc, "f", b.getFunctionType({t, t}, {}));
  mlir::Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  mlir::Value x = body->getArgument(0), y = body->getArgument(1);
  auto add = kiln::AddOp::create(b, loc, x, y);
  auto exp = kiln::ExpOp::create(b, loc, x);
  auto div = kiln::DivOp::create(b, loc, x, y);
  auto transpose = kiln::TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr({1, 0}));
  auto matmul = kiln::MatMulOp::create(b, loc, x, transpose);
  EXPECT_TRUE(kiln::isCheapToRecompute(add));
  EXPECT_FALSE(kiln::isCheapToRecompute(exp));
  EXPECT_FALSE(kiln::isCheapToRecompute(div));
  EXPECT_FALSE(kiln::isCheapToRecompute(transpose));
  EXPECT_FALSE(kiln::isCheapToRecompute(matmul));
  EXPECT_EQ(kiln::recomputeCost(add), std::optional<uint64_t>(6));
  EXPECT_EQ(kiln::recomputeCost(div), std::optional<uint64_t>(12));
  EXPECT_EQ(kiln::recomputeCost(exp), std::optional<uint64_t>(24));
  EXPECT_EQ(kiln::recomputeCost(transpose), std::optional<uint64_t>(6));
  EXPECT_EQ(kiln::recomputeCost(matmul), std::nullopt);
}

} // namespace

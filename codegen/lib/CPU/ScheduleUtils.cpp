//===- ScheduleUtils.cpp - helpers shared by the CPU schedules ------------===//
//
// What the matmul, convolution, depthwise and elementwise schedules share:
// the canonicalization they run between tiling steps, the reading of a
// window's index expressions, and the recognition of a convolution's
// multiply-accumulate body.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

std::optional<std::pair<int64_t, int64_t>>
kiln::linearWindow(AffineMap map, unsigned result, unsigned outLoop,
                   unsigned tapLoop) {
  // The index at d(outLoop) = 1 and at d(tapLoop) = 1, every other loop 0;
  // then the map is rebuilt from them and compared, which also rules out
  // any other loop, an offset and nonlinear forms.
  auto at = [&](int64_t dim) {
    SmallVector<int64_t> point(map.getNumDims(), 0);
    if (dim >= 0)
      point[dim] = 1;
    return map.compose(point)[result];
  };
  int64_t stride = at(outLoop) - at(-1), dilation = at(tapLoop) - at(-1);
  MLIRContext *ctx = map.getContext();
  if (stride < 1 || dilation < 1 ||
      map.getResult(result) != getAffineDimExpr(outLoop, ctx) * stride +
                                   getAffineDimExpr(tapLoop, ctx) * dilation)
    return std::nullopt;
  return std::make_pair(stride, dilation);
}

FrozenRewritePatternSet kiln::canonicalizationPatterns(MLIRContext *ctx) {
  RewritePatternSet patterns(ctx);
  for (Dialect *dialect : ctx->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
  return FrozenRewritePatternSet(std::move(patterns));
}

LogicalResult
kiln::canonicalizeFunction(func::FuncOp func,
                           const FrozenRewritePatternSet &canonicalization) {
  // Without region simplification: the schedules' IR is structured
  // (scf loops, one block per region), where it finds nothing to merge or
  // erase that the patterns and the driver's dead-op removal do not, yet it
  // walked the whole function after every round: 0.3-0.4 s of ResNet-50's
  // lowering, with byte-identical objects (docs/decisions/0030).
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(func, canonicalization, config);
}

bool kiln::isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 || body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add = dyn_cast<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  return mul && add && add.getRhs() == mul.getResult() &&
         add.getLhs() == body.getArgument(2) &&
         mul.getLhs() == body.getArgument(0) &&
         mul.getRhs() == body.getArgument(1);
}

FailureOr<linalg::GenericOp> kiln::asGeneric(RewriterBase &rewriter,
                                             linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return generic;
  rewriter.setInsertionPoint(op);
  return linalg::generalizeNamedOp(rewriter, op);
}

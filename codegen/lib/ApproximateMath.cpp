//===- ApproximateMath.cpp - kiln-approximate-math ------------------------===//
//
// Replaces the f32 transcendental functions that models spend time in (exp,
// expm1, log, log1p, log2, tanh, erf) by MLIR's polynomial approximations:
// plain arithmetic that LLVM vectorizes, where a libm call per element
// (what convert-math-to-libm and the LLVM intrinsics become) keeps every
// loop scalar.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct ApproximateMath : kiln::impl::ApproximateMathBase<ApproximateMath> {
  void runOnOperation() override {
    static const llvm::StringSet<> approximated = {
        "math.exp",  "math.expm1", "math.log", "math.log1p",
        "math.log2", "math.tanh",  "math.erf"};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return approximated.contains(name); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

//===- PackWeights.h - constant matmul operands in panel order --*- C++ -*-===//
//
// Part of kiln-schedule-matmul: a constant right-hand side is reordered at
// compile time into the order the register tiles read it, and a large
// non-constant one at run time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_PACKWEIGHTS_H
#define KILN_CODEGEN_CPU_PACKWEIGHTS_H

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <vector>

namespace mlir::linalg {
class LinalgOp;
}

namespace kiln {

/// `v` seen through the expand_shape/collapse_shape ops that produce it
/// (which keep the row-major order of the elements); with `singleUse`, only
/// through values used once.
mlir::Value throughReshapes(mlir::Value v, bool singleUse = false);

/// The elements of a constant: a view of its blob (no copy of a weight),
/// or a copy of a dense attribute's (splats expanded).
class ConstantFloats {
public:
  explicit ConstantFloats(llvm::ArrayRef<float> blob) : values(blob) {}
  explicit ConstantFloats(std::vector<float> copy)
      : storage(std::move(copy)), values(storage) {}
  ConstantFloats(ConstantFloats &&other)
      : storage(std::move(other.storage)),
        values(storage.empty() ? other.values
                               : llvm::ArrayRef<float>(storage)) {}
  size_t size() const { return values.size(); }
  float operator[](size_t i) const { return values[i]; }

private:
  std::vector<float> storage;
  llvm::ArrayRef<float> values;
};

/// The elements of a static f32 `arith.constant` tensor (dense or a dense
/// resource), row-major, seen through reshapes (throughReshapes); nothing
/// for any other value.
std::optional<ConstantFloats> constantFloats(mlir::Value v);

/// A constant of `type` whose `count` floats `fill` writes, made by
/// kiln::makeConstantAttr (kiln/IR/ConstantBlobs.h): weight-sized rewrites
/// of a constant become blobs the compile can free, written in place.
mlir::TypedAttr makeFloatConstant(mlir::ShapedType type, size_t count,
                                  llvm::function_ref<void(float *)> fill);

/// When the right-hand side of the f32 contraction `op` is a 2-D constant
/// [K, N] (or [N, K], read transposed) with N a multiple of `panel` and at
/// least two panels, replaces it by a constant [N / panel, K, panel] (each
/// panel of `panel` columns stored k-major, so a register tile's row of B
/// is one contiguous read and consecutive k are adjacent) and `op` by a
/// generic over that layout writing the result through an expand_shape
/// [..., N] -> [..., N / panel, panel]. Fails, changing nothing, otherwise.
mlir::LogicalResult packConstantRhs(mlir::RewriterBase &rewriter,
                                    mlir::linalg::LinalgOp op, int64_t panel);

/// The same layout for a right-hand side that is not a constant (a trained
/// weight in a training step, a gradient), made at run time by a
/// linalg.transpose into [N / panel, K, panel] in front of `op`, when the
/// copy is small next to the product: `op` has at least `minRows` rows
/// (each element of B is reused that often) and B at least
/// kMinRuntimePackElements elements (smaller ones, attention's per-head
/// operands, stay in cache as they are).
mlir::LogicalResult packRuntimeRhs(mlir::RewriterBase &rewriter,
                                   mlir::linalg::LinalgOp op, int64_t panel,
                                   int64_t minRows);

/// The fewest elements of a right-hand side packRuntimeRhs copies: 64K,
/// 256 KB, a quarter of a 512x512 weight.
constexpr int64_t kMinRuntimePackElements = 64 * 1024;

} // namespace kiln

#endif // KILN_CODEGEN_CPU_PACKWEIGHTS_H

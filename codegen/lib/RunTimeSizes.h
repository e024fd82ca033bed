//===- RunTimeSizes.h - sizes of symbolic dimensions in lowered code -*- C++
//-*-===//
//
// Decision 0027, step 5: a function whose types carry #kiln.dims encodings
// is lowered to dynamic tensors. Its entry takes each symbol's run-time
// value as a leading `index` argument (marked with the symbol's name), and
// every size expression its types use is computed once from them at the
// entry. Storage planning reads the same arguments' upper bounds back from
// the function's kiln.symbols, so every buffer keeps a constant slot sized
// for the bound.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_RUNTIMESIZES_H
#define KILN_CODEGEN_RUNTIMESIZES_H

#include "kiln/Passes/DimExpr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>
#include <optional>

namespace kiln {

/// The argument attribute that names the symbol an `index` argument holds.
inline constexpr llvm::StringLiteral kSymbolArgAttr = "kiln.symbol";
/// The argument attribute of the `memref<K x index>` argument that a
/// function with computed symbols (decision 0031) writes their values to:
/// their names, in order. The caller reads them back after the run.
inline constexpr llvm::StringLiteral kComputedDimsArgAttr =
    "kiln.computed_dims";

/// The run-time sizes of one function being lowered.
class RunTimeSizes {
public:
  /// Adds the leading symbol arguments to `func` (none when it has no
  /// kiln.symbols) and computes, at its entry, every symbolic size that a
  /// type in it uses. Symbols computed from data (kiln.computed_symbols)
  /// are no arguments: one `memref<K x index>` argument after the others
  /// (kComputedDimsArgAttr) receives their values, and a size that uses one
  /// is computed where it is needed, from that memory.
  explicit RunTimeSizes(mlir::func::FuncOp func);

  /// Stores `value` as the run-time value of the computed symbol `name`:
  /// the op that defines it calls this before any size uses it.
  mlir::LogicalResult define(mlir::OpBuilder &b, mlir::Location loc,
                             llvm::StringRef name, mlir::Value value) const;

  /// True when the function has symbols.
  bool any() const { return !symbols.empty() || !computedSlots.empty(); }

  /// The last op of the code at the entry that computes the sizes; null
  /// when there is none (every size is a symbol itself).
  mlir::Operation *prologueEnd() const { return last; }

  /// The value of `size`: the one computed at the entry, or else code at
  /// `b`'s insertion point.
  mlir::Value get(mlir::OpBuilder &b, mlir::Location loc,
                  const DimExpr &size) const;

  /// The values of the sizes that are not constants, in order: the dynamic
  /// sizes of a tensor whose sizes are `sizes`.
  llvm::SmallVector<mlir::Value> dynamic(mlir::OpBuilder &b, mlir::Location loc,
                                         llvm::ArrayRef<DimExpr> sizes) const;

  /// `sizes` as tensor ops take them: constants as attributes, symbolic
  /// sizes as their values.
  llvm::SmallVector<mlir::OpFoldResult>
  mixed(mlir::OpBuilder &b, mlir::Location loc,
        llvm::ArrayRef<DimExpr> sizes) const;

private:
  mlir::Value build(mlir::OpBuilder &b, mlir::Location loc,
                    const DimExpr &size) const;

  /// The function's argument for the symbol (looked up at each use: the
  /// conversion replaces the entry block and its arguments), or for a
  /// computed symbol its value loaded at `b`'s insertion point.
  mlir::Value symbol(mlir::OpBuilder &b, mlir::Location loc,
                     const std::string &name) const;

  mutable mlir::func::FuncOp func;
  std::map<std::string, unsigned> symbols;
  /// Each computed symbol's slot in the computed-dims argument, whose
  /// position is `computedArg`.
  std::map<std::string, unsigned> computedSlots;
  unsigned computedArg = 0;
  std::map<DimExpr, mlir::Value> computed;
  mlir::Operation *last = nullptr;
};

/// The static shape of a lowered tensor whose sizes are `sizes`: each
/// constant as itself, each symbolic size dynamic.
llvm::SmallVector<int64_t> loweredShape(llvm::ArrayRef<DimExpr> sizes);

/// The index `size` as an expression over the symbols of its function (the
/// names of their kiln.symbol arguments); nullopt when `size` is not
/// computed from constants, symbol arguments and the sizes buffers state by
/// the arithmetic RunTimeSizes builds (and canonicalization leaves).
std::optional<DimExpr> sizeExpr(mlir::Value size);

/// The largest value the index `size` takes while each symbol argument of
/// its function stays in its kiln.symbols range (sizeExpr's bounds);
/// nullopt where sizeExpr fails.
std::optional<int64_t> sizeUpperBound(mlir::Value size);

/// The largest value `size` takes while each symbol stays in its range in
/// `func`'s kiln.symbols; nullopt when it has no bound there.
std::optional<int64_t> upperBound(const DimExpr &size, mlir::func::FuncOp func);

} // namespace kiln

#endif // KILN_CODEGEN_RUNTIMESIZES_H

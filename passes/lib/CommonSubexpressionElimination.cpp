//===- CommonSubexpressionElimination.cpp - kiln-cse ----------------------===//
//
// Merges side-effect-free ops that compute the same value. The comparison is
// MLIR's OperationEquivalence (name, attributes/properties, result types,
// operands) with two extensions: constants compare by contents
// (kiln/IR/ConstantEvaluator.h), and commutative ops, plus `cmp eq`/`ne`,
// compare their operands as an unordered pair. Ops are visited in program
// order and the first one of each class is kept, so the result never depends
// on hash values or addresses.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantEvaluator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopedHashTable.h"

namespace kiln {
#define GEN_PASS_DEF_COMMONSUBEXPRESSIONELIMINATION
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Ops whose two operands may be swapped without changing the value.
bool isCommutative(Operation *op) {
  if (op->hasTrait<OpTrait::IsCommutative>())
    return true;
  if (auto cmp = dyn_cast<kiln::CmpOp>(op))
    return cmp.getPredicate() == kiln::CmpPredicate::eq ||
           cmp.getPredicate() == kiln::CmpPredicate::ne;
  return false;
}

/// Hash and equality for the table: ops are equal when they compute the
/// same value.
struct OpValueInfo : llvm::DenseMapInfo<Operation *> {
  static unsigned getHashValue(const Operation *constOp) {
    auto *op = const_cast<Operation *>(constOp);
    if (auto c = dyn_cast<kiln::ConstantOp>(op))
      return llvm::hash_combine(op->getName(),
                                kiln::hashConstantContents(c.getValue()));
    // Everything but the operands, then the operands (order-free when
    // commutative: hash values are combined with a symmetric sum).
    llvm::hash_code base = OperationEquivalence::computeHash(
        op, OperationEquivalence::ignoreHashValue,
        OperationEquivalence::ignoreHashValue,
        OperationEquivalence::IgnoreLocations);
    if (isCommutative(op)) {
      size_t sum = 0;
      for (Value v : op->getOperands())
        sum += hash_value(v);
      return llvm::hash_combine(base, sum);
    }
    return llvm::hash_combine(
        base, llvm::hash_combine_range(op->operand_begin(), op->operand_end()));
  }

  static bool isEqual(const Operation *constLhs, const Operation *constRhs) {
    if (constLhs == constRhs)
      return true;
    if (constLhs == getEmptyKey() || constLhs == getTombstoneKey() ||
        constRhs == getEmptyKey() || constRhs == getTombstoneKey())
      return false;
    auto *lhs = const_cast<Operation *>(constLhs);
    auto *rhs = const_cast<Operation *>(constRhs);
    auto lc = dyn_cast<kiln::ConstantOp>(lhs),
         rc = dyn_cast<kiln::ConstantOp>(rhs);
    if (lc || rc)
      return lc && rc &&
             lc->getDiscardableAttrDictionary() ==
                 rc->getDiscardableAttrDictionary() &&
             kiln::equalConstantContents(lc.getValue(), rc.getValue());
    if (!OperationEquivalence::isEquivalentTo(
            lhs, rhs, OperationEquivalence::ignoreValueEquivalence, nullptr,
            OperationEquivalence::IgnoreLocations))
      return false;
    if (lhs->getNumOperands() != rhs->getNumOperands())
      return false;
    if (llvm::equal(lhs->getOperands(), rhs->getOperands()))
      return true;
    return isCommutative(lhs) && lhs->getNumOperands() == 2 &&
           lhs->getOperand(0) == rhs->getOperand(1) &&
           lhs->getOperand(1) == rhs->getOperand(0);
  }
};

using ScopedTable =
    llvm::ScopedHashTable<Operation *, Operation *, OpValueInfo>;

struct CommonSubexpressionElimination
    : kiln::impl::CommonSubexpressionEliminationBase<
          CommonSubexpressionElimination> {
  void runOnOperation() override {
    ScopedTable table;
    for (Region &region : getOperation()->getRegions())
      simplifyRegion(table, region);
    for (Operation *op : toErase)
      op->erase();
    toErase.clear();
  }

  /// Blocks of a multi-block region share nothing with each other (no
  /// dominance analysis): each gets its own scope under the enclosing one.
  void simplifyRegion(ScopedTable &table, Region &region) {
    for (Block &block : region) {
      ScopedTable::ScopeTy scope(table);
      for (Operation &op : block)
        simplifyOp(table, &op);
    }
  }

  void simplifyOp(ScopedTable &table, Operation *op) {
    // Nested regions see the values defined before their op.
    for (Region &region : op->getRegions())
      simplifyRegion(table, region);
    if (op->getNumRegions() != 0 || op->getNumResults() == 0 ||
        !isMemoryEffectFree(op) || op->hasTrait<OpTrait::IsTerminator>())
      return;
    if (Operation *existing = table.lookup(op)) {
      op->replaceAllUsesWith(existing);
      toErase.push_back(op);
      ++numMerged;
      return;
    }
    table.insert(op, op);
  }

  SmallVector<Operation *> toErase;
};
} // namespace

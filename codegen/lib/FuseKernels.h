//===- FuseKernels.h - kiln.fused kernels in kiln-lower-to-linalg ---------===//
//
// The two halves of lowering a kiln.fused kernel, around the op-by-op
// conversion of kiln-lower-to-linalg: before it, each kernel becomes an
// scf.execute_region (so its ops convert in place and stay together); after
// it, the linalg ops of each region are fused into as few loop nests as the
// cost rule allows, and the regions are inlined.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_FUSEKERNELS_H
#define KILN_CODEGEN_FUSEKERNELS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/DenseSet.h"

namespace kiln {

/// Opens every kiln.fused op of `func`: its body moves into an
/// scf.execute_region marked `kiln.kernel`, or straight into the function
/// when the conversion would change a type inside (then nothing fuses).
/// Adds the ops of the kernels that are cheap to recompute
/// (FusionOpInterface) to `cheapOps`.
void openKernels(mlir::func::FuncOp func, const mlir::TypeConverter &converter,
                 llvm::DenseSet<mlir::Operation *> &cheapOps);

/// Marks the linalg.generic that replaces an op of `cheapOps` during the
/// conversion, so the loop fusion knows it may compute it again.
struct CheapOpListener : mlir::RewriterBase::Listener {
  explicit CheapOpListener(const llvm::DenseSet<mlir::Operation *> &cheapOps)
      : cheapOps(cheapOps) {}
  void notifyOperationReplaced(mlir::Operation *op,
                               mlir::ValueRange replacement) override;
  const llvm::DenseSet<mlir::Operation *> &cheapOps;
};

/// Fuses the linalg ops inside each kernel region into as few loop nests as
/// the cost rule allows, then inlines the regions.
mlir::LogicalResult fuseAndCloseKernels(mlir::func::FuncOp func);

} // namespace kiln

#endif // KILN_CODEGEN_FUSEKERNELS_H

//===- Passes.h - code generation passes ------------------------*- C++ -*-===//
//
// Declarations generated from Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_PASSES_H
#define KILN_CODEGEN_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

#include <optional>

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Codegen/Passes.h.inc"

/// Marks a loop whose iterations are independent (each writes its own part
/// of the outputs, none reads what another writes) and that does enough
/// work to run on several threads; kiln-outline-parallel-loops reads it.
constexpr llvm::StringLiteral kParallelAttr = "kiln.parallel";

/// Work, in flops or bytes moved, below which a loop is not worth a fork
/// and join (a few microseconds): the schedules leave such loops unmarked.
constexpr int64_t kMinParallelWork = 1 << 17;

/// The prefix of the functions kiln-outline-parallel-loops creates and
/// calls: `<f>_body<N>` (defined) and `<f>_region<N>` (declared; the code
/// generator defines it).
constexpr llvm::StringLiteral kParallelBodySuffix = "_body";
constexpr llvm::StringLiteral kParallelRegionSuffix = "_region";
/// The suffix of `<f>_loop<N>`, the function that identical serial loops
/// share.
constexpr llvm::StringLiteral kSharedLoopSuffix = "_loop";

/// On a function kiln-outline-kernels made of a kernel (one or several
/// identical ones), which kiln-inline-kernels puts back in place.
constexpr llvm::StringLiteral kKernelBodyAttr = "kiln.kernel_body";
/// On a function whose contractions kiln-schedule-matmul has prepared
/// (convolutions rewritten, weights packed, operands read transposed
/// copied): the steps that must see the whole function, since they read
/// the weights' values, are not repeated.
constexpr llvm::StringLiteral kContractionsPreparedAttr =
    "kiln.contractions_prepared";

/// The function kiln-mark-kernels calls between kernels, and the suffix of
/// the per-function probe kiln-instrument-kernels turns it into.
constexpr llvm::StringLiteral kKernelProbe =
    "kiln.kernel_probe"; // no C identifier clashes
constexpr llvm::StringLiteral kKernelProbeSuffix = "_probe";
/// The attributes kiln-mark-kernels sets on a function: the ONNX nodes of
/// each kernel and its flops.
constexpr llvm::StringLiteral kKernelNamesAttr = "kiln.kernel_names";
/// On a training step's kernel: the indices of the state tensors it updates
/// in the caller's state buffer (kiln-drop-state-copies).
constexpr llvm::StringLiteral kStateInPlaceAttr = "kiln.state_in_place";
constexpr llvm::StringLiteral kKernelFlopsAttr = "kiln.kernel_flops";

/// Data-parallel steps: bufferization turns bucket k's kiln.all_reduce into
/// calls of `kiln.all_reduce_start.<k>` and `kiln.all_reduce_wait.<k>` on
/// its buffers; kiln-connect-collectives turns them into
/// `<f>_bucket<k>_start` and `<f>_bucket<k>_wait`, with the caller's
/// kiln_collectives_t first, which the code generator defines.
constexpr llvm::StringLiteral kAllReduceStart = "kiln.all_reduce_start.";
constexpr llvm::StringLiteral kAllReduceWait = "kiln.all_reduce_wait.";
constexpr llvm::StringLiteral kBucketSuffix = "_bucket";

/// kiln-fuse's kernels, carried to the backends: kiln-lower-to-linalg
/// wraps the location of every op of a kiln.fused kernel in a FusedLoc
/// whose metadata names the kernel ({kiln.kernel = <index>}). Locations
/// follow an op through every rewrite that builds its replacements at its
/// location (conversion to linalg, loop fusion, bufferization,
/// generalization, the convolution rewrites), where an attribute would be
/// dropped. The backends' epilogue fusions (the CPU's tile epilogues, the
/// CUDA printer's) fuse only what kiln-fuse put in one kernel.
mlir::Location withKernel(mlir::Location loc, int64_t kernel);
/// `loc` without the kernel marks withKernel added, for messages and
/// comments that name an op's source.
mlir::Location withoutKernel(mlir::Location loc);
/// The kiln-fuse kernel `loc` belongs to, or nullopt (an op no kernel
/// took, or IR that did not come through kiln-fuse).
std::optional<int64_t> kernelOf(mlir::Location loc);
/// Whether kiln-fuse's kernels allow `epilogue` to be computed with its
/// producer `root` (a contraction or a reduction): when kiln-fuse put the
/// root in a kernel, only an op of that kernel is its epilogue; a root it
/// left alone (--no-fuse, hand-written IR, a reduction whose consumers it
/// cannot reach through a reshape) made no decision, and the backend's own
/// rule decides.
bool sameKernel(mlir::Operation *root, mlir::Operation *epilogue);

/// kiln-plan-memory as kilnc runs it: the pass options, and `sink` (may be
/// null) receiving each function's plan as data (MemoryPlan.h).
class MemoryPlanSink;
std::unique_ptr<mlir::Pass> createPlanMemoryPass(int64_t alignment,
                                                 MemoryPlanSink *sink);

/// Registers the bufferization of kiln.all_reduce (its two calls).
void registerAllReduceBufferization(mlir::DialectRegistry &registry);

/// Registers the tensor slices' SubsetOpInterface with a fast answer for
/// two slices of the same offsets, sizes and strides (SliceSubsets.cpp).
/// Call it before mlir::registerAllDialects: the first model registered
/// for an op is the one it keeps.
void registerSliceSubsets(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_CODEGEN_PASSES_H

//===- CudaPrinter.h - the CUDA C printer's parts -------------*- C++ -*-===//
//
// Private to codegen/lib/CUDA: the printer that turns each top-level
// linalg.generic of the lowered function into a CUDA C kernel or a library
// step (docs/decisions/0011, 0019). Its parts live in files by job:
//   CudaBuffers.cpp       buffers traced to their roots, their byte ranges
//   CudaStatements.cpp    C types and literals, payload ops as statements
//   CudaKernels.cpp       kernel planning (threads, blocks, fills,
//                         epilogues, vector widths) and kernel text
//   CudaLibrarySteps.cpp  products and convolutions handed to cuBLASLt and
//                         cuDNN (matching in CudaLibraryCalls.cpp)
//   CudaCodegen.cpp       the walk over the function, the prelude
//                         (CudaPrelude.cuh) and lowerToCuda
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDA_CUDAPRINTER_H
#define KILN_CODEGEN_CUDA_CUDAPRINTER_H

#include "kiln/Codegen/CudaCodegen.h"
#include "kiln/Passes/DimExpr.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/MapVector.h"

#include <optional>
#include <set>
#include <string>

namespace kiln::cuda {

using namespace mlir;

/// A memref traced to its root: element (i0, ..., in) lives at
/// base + byteOffset + sizeof(T) * (offset + sum(ik * strides[k])).
/// Over symbolic dimensions (kilnc --dim NAME=LO..HI) the offset and
/// strides may depend on the run-time sizes: then they are also C
/// expressions of the kernel's dim parameters (offsetText, strideTexts),
/// and the numbers the layout states are ShapedType::kDynamic there.
struct BufferRef {
  CudaSpace space = CudaSpace::Input;
  bool constant = false; ///< in kiln_constants, not a kernel parameter
  uint32_t index = 0;
  int64_t byteOffset = 0;
  int64_t offset = 0;
  SmallVector<int64_t> strides;
  Type elementType;
  std::string offsetText;
  SmallVector<std::string> strideTexts; ///< empty for a static layout
  bool isStatic() const { return strideTexts.empty(); }
};

/// Axis `k` of `memref` as an expression over the function's symbols,
/// traced through the views that made it; nothing when it cannot be.
std::optional<DimExpr> memrefSize(Value memref, unsigned k);

/// The C type of a value of type `t`, or "" if the CUDA printer lacks it.
/// f16 and bf16 values compute in float, rounded after every op as LLVM
/// promotes them; only their storage is 16 bits (storageType).
std::string cType(Type t);

/// The C type of a stored element.
std::string storageType(Type t);

/// Wraps an expression of type `t` computed in float so that it rounds to t.
std::string rounded(Type t, const std::string &expr);

/// A stored element read as a value, and a value as it is stored.
std::string loaded(Type t, const std::string &element);
std::string toStored(Type t, const std::string &value);

/// The unsigned C type of the same width (for wrapping arithmetic).
std::string unsignedType(Type t);

std::string floatLiteral(const APFloat &value, Type type);

std::string intLiteral(const APInt &value, Type type);

/// Launch geometry of `total` independent work items.
constexpr uint32_t kBlock = 256;
constexpr int64_t kMaxGrid = 4096;
/// Reductions of at least this many elements per output element get a
/// block of threads each (a warp's worth); shorter ones run in one thread.
constexpr int64_t kMinBlockReduction = 32;
/// ... unless there are this many output elements: a thread each then
/// fills the GPU already (a quarter of an H100's resident threads), and a
/// contraction's neighbouring threads read neighbouring weights.
constexpr int64_t kMaxBlockReductionPoints = 65536;

/// How the iterations of a linalg.generic map to threads.
enum class Mapping {
  Serial,  ///< one thread runs every loop
  Threads, ///< one thread per point of the parallel dims; inner loops inside
  Block,   ///< one block per point of the parallel dims: its threads split
           ///< the reduction and combine partials in shared memory
};

/// One kernel's launch: grid x block threads over `work` iterations (none:
/// no launch).
struct Launch {
  int64_t work = 0;
  uint32_t grid = 1, block = 1;
  bool synchronizes = false;
};

/// Bytes [lo, hi) of one root (an input, an output, the arena, or the
/// constants).
struct ByteRange {
  CudaSpace space;
  uint32_t index;
  bool constant;
  int64_t lo, hi;
  bool overlaps(const ByteRange &o) const {
    return space == o.space && index == o.index && constant == o.constant &&
           lo < o.hi && o.lo < hi;
  }
};

struct GenericPlan;

/// A padding applied where the padded buffer is read, instead of the fill
/// and the copy the lowering made: `copy` copies `source` into a subview of
/// `buffer` (which `fill` filled with one constant) at [0, 0, padH, padW].
/// cuDNN pads a convolution's input with zeros itself; a kernel reads the
/// source inside and the constant outside.
struct PadFold {
  Value buffer, source;
  linalg::GenericOp fill, copy;
  int64_t padH = 0, padW = 0;
};

/// Prints the kernels of one function and records the steps.
class CudaPrinter {
public:
  CudaPrinter(func::FuncOp func, const ArtifactInfo &info, CudaProgram &program,
              const CudaCodegenOptions &options)
      : func(func), info(info), numInputs(info.inputs.size()),
        numOutputs(info.outputs.size()), numState(info.state.size()),
        program(program), options(options),
        line(1 + llvm::count(program.source, '\n')) {}

  LogicalResult run();

private:
  // --- buffers ---------------------------------------------------------
  FailureOr<BufferRef> resolve(Value memref, Operation *user);
  FailureOr<int64_t> constantOffset(memref::GetGlobalOp get);
  std::string pointer(const BufferRef &ref);
  std::string element(const BufferRef &ref, ArrayRef<std::string> indices);
  /// `e` as a C expression of the kernel's int64_t dim parameters (each
  /// symbol it uses becomes one).
  std::string symbolic(const DimExpr &e);

  // --- statements ------------------------------------------------------
  std::string fresh() { return "v" + std::to_string(nextValue++); }
  std::string name(Value v);
  LogicalResult printOp(Operation *op, llvm::raw_ostream &os, int indent);
  LogicalResult printBlock(Block &block, llvm::raw_ostream &os, int indent);
  LogicalResult printExpr(Operation *op, std::string &expr);
  std::string affine(AffineExpr e, ArrayRef<std::string> dims);

  // --- kernels ---------------------------------------------------------
  LogicalResult printGeneric(linalg::GenericOp op);
  /// The literal a fill (a generic storing one constant everywhere) stores,
  /// or "" for any other generic.
  std::string fillValue(linalg::GenericOp op);
  /// Whether `consumer`, the next generic after `producer`, can run in
  /// producer's kernel on each output element instead of its store.
  bool isEpilogue(linalg::GenericOp producer, linalg::GenericOp consumer);
  std::optional<ByteRange> byteRange(Value memref, Operation *user);
  /// Whether no memref input of `op` shares bytes with `written` (a kernel
  /// or library call writing there while `op`'s inputs are still read).
  bool inputsApartFrom(linalg::GenericOp op, const ByteRange &written);
  /// Reads `input` of `op` at the point `dims` into a fresh variable (a
  /// scalar operand is named where it is used).
  LogicalResult loadInput(linalg::GenericOp op, OpOperand *input,
                          ArrayRef<std::string> dims, llvm::raw_ostream &os,
                          const std::string &pad);
  /// Stores output `output` of `op` (value `value` at index `idx`), or runs
  /// the epilogue on it.
  LogicalResult storeResult(linalg::GenericOp op, unsigned output,
                            const BufferRef &ref, ArrayRef<std::string> idx,
                            const std::string &value, llvm::raw_ostream &os,
                            int indent);
  LogicalResult printSerial(Operation *op);
  /// How many consecutive points of the innermost parallel loop one thread
  /// of `op` takes, so that its accesses can be 16-byte vectors; 1 when
  /// they cannot.
  unsigned vectorWidth(linalg::GenericOp op, const GenericPlan &plan);
  /// Prints elementwise `op` with `width` consecutive points a thread: every
  /// point's loads first, then every point's payload, then every store, so
  /// that NVRTC merges each operand's loads and stores into 16-byte ones.
  LogicalResult printVectorized(linalg::GenericOp op, const GenericPlan &plan,
                                unsigned width);
  /// Records `op` as a cuBLASLt step when it is a matrix product cuBLASLt
  /// runs, with `epilogue` as cuBLASLt's epilogue when it has that one
  /// (else `epilogue` is cleared, to be printed as a kernel of its own):
  /// true when it did, false (`epilogue` kept) to print `op` as a kernel.
  bool emitGemm(linalg::GenericOp op);
  /// Records `op` as a cuDNN step when it is a 2-d convolution cuDNN runs,
  /// starting from a +0.0 fill, with `next` (the generic after it) as its
  /// epilogue when that is a bias (+ relu) only it reads: true when it did
  /// (and `epilogue` is `next` when taken).
  bool emitConv(linalg::GenericOp op, linalg::GenericOp next);
  /// A cuDNN step for convolution `op`: its descriptor, arguments and the
  /// epilogue it takes (or null).
  struct ConvPlan {
    CudaConv conv;
    std::vector<CudaArg> args;
    linalg::GenericOp epilogue;
  };
  /// The cuDNN step `op` would be (emitConv, without the check of its
  /// output's fill), reading `pad`'s source with cuDNN's padding when
  /// given; nothing when cuDNN cannot run it. Changes nothing.
  std::optional<ConvPlan> planConv(linalg::GenericOp op, linalg::GenericOp next,
                                   const PadFold *pad);
  /// Finds the convolutions whose padding cuDNN can apply (padFolds), the
  /// kernels that can read a padded buffer's source themselves
  /// (paddedReads), and the fills and copies left out for them
  /// (foldedPads): only where the step or kernel is certain, since the copy
  /// is no longer made.
  void findPadFolds();
  /// Records `pad` in paddedReads when the generic after its copy is a
  /// kernel with reductions (a pooling window) that alone reads the padded
  /// buffer, and writes nothing over the source.
  bool foldIntoReader(const PadFold &pad);
  /// The bias (+ relu, or + residual + relu) `next` applies to conv `op`'s
  /// output, as cuDNN's epilogue: its kind, and `y`, `bias` and `residual`
  /// set to where it writes and what it adds; nothing when `next` is not
  /// such an epilogue.
  std::optional<CudaGemm::Epilogue>
  convEpilogue(linalg::GenericOp op, linalg::GenericOp next, int64_t channels,
               BufferRef &y, BufferRef &bias,
               std::optional<BufferRef> &residual);
  /// A traced buffer as a library call's argument.
  static CudaArg argOf(const BufferRef &ref);
  void finishKernel(Operation *op, const std::string &body,
                    const Launch &launch);

  func::FuncOp func;
  const ArtifactInfo &info;
  size_t numInputs, numOutputs, numState;
  CudaProgram &program;
  const CudaCodegenOptions &options;
  llvm::MapVector<Attribute, int64_t> constantOffsets;

  /// A fill left out because the next kernel starts its output from the
  /// fill's value instead of reading it (startsFromFill).
  struct {
    Value buffer;
    std::string value;
    bool zero = false; ///< the value is +0.0 (a product may start from beta 0)
  } fill;
  /// The generic printed inside the current kernel on each output element
  /// (isEpilogue), or null.
  linalg::GenericOp epilogue;
  /// Convolutions that read their padding's source (findPadFolds), and the
  /// fills and copies that are therefore not printed.
  DenseMap<Operation *, PadFold> padFolds;
  /// Kernels that read a padded buffer through its source (loadInput).
  DenseMap<Operation *, PadFold> paddedReads;
  DenseSet<Operation *> foldedPads;

  // Per-kernel state.
  /// The kernel's accesses are vectorized: its parameters are 16-byte
  /// aligned (the arena 256), which the runtime checks of the caller's.
  bool alignedParams = false;
  DenseMap<Value, std::string> names;
  std::set<std::pair<CudaSpace, uint32_t>> params;
  unsigned nextValue = 0;
  std::string kernelSource;
  unsigned line = 1;
};

// ---- shared by the printer's files ---------------------------------------

/// The kernel parameter name of an input, output, state or the arena.
std::string paramName(CudaSpace space, uint32_t index);
/// Whether `v` is `root` or a view made from it.
bool isViewOf(Value v, Value root);
/// The users of `v` and of the views made from it (the views left out).
void collectViewUsers(Value v, SmallVectorImpl<Operation *> &users);
/// Ops that print no kernel: views, constants and sizes, resolved where a
/// kernel uses them.
bool isResolvedAtUse(Operation &op);
/// The op after `op` past those resolved at use, if it is a linalg.generic
/// (the kernel or step printed next), else null.
linalg::GenericOp nextGeneric(Operation *op);
/// Whether every loop range and buffer of `op` (null: true) is static.
bool isStaticGeneric(linalg::GenericOp op);
/// The constant a fill (a generic storing one constant everywhere) stores,
/// or null for any other generic.
Value fillConstant(linalg::GenericOp op);
/// Whether `consumer` can start output `buffer` from a fill's value instead
/// of reading what the fill stored.
bool startsFromFill(linalg::GenericOp consumer, Value buffer);

} // namespace kiln::cuda

#endif // KILN_CODEGEN_CUDA_CUDAPRINTER_H

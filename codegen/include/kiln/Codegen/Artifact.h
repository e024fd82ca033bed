//===- Artifact.h - what an artifact exposes, and how it is written -------===//
//
// The artifact contract between kilnc and its users: the signature and arena
// facts collected from the IR, the generated C header, and the FlatBuffers
// model descriptor the runtime verifies. Target-independent.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_ARTIFACT_H
#define KILN_CODEGEN_ARTIFACT_H

#include "kiln/Codegen/MemoryPlan.h"
#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Constant;
class Function;
class Module;
} // namespace llvm

namespace kiln {

struct CudaProgram;

/// One input or output of the compiled function.
struct TensorSignature {
  std::string name;  ///< the ONNX value name
  std::string cName; ///< a unique C identifier derived from it
  int dtype = 0;     ///< a kiln_dtype_t value
  std::string cType; ///< C element type, e.g. "float"
  /// The sizes; a symbolic one (kilnc --dim NAME=LO..HI) at its bound.
  std::vector<int64_t> shape;
  /// Bytes at the bound.
  uint64_t sizeBytes = 0;
  /// Each size as kiln::DimExpr text when any depends on a symbol (the
  /// #kiln.dims encoding); empty for static sizes.
  std::vector<std::string> dims;
};

/// A symbolic dimension a run chooses the size of, within [lo, hi].
struct DimSymbol {
  std::string name;
  int64_t lo = 1, hi = 1;
  /// A size the run computes from data (decision 0031), not the inputs'.
  bool computed = false;
};

/// Roles of state tensors; values equal kiln_state_role_t in kiln/runtime.h.
enum class StateRole : int { Parameter = 1, Moment = 2, Step = 3 };

/// One tensor of a training step's state buffer (kilnc train): an argument
/// the step reads and a result it writes back, at `offset` in the caller's
/// state buffer.
struct StateTensor : TensorSignature {
  StateRole role = StateRole::Parameter;
  uint64_t offset = 0;
  /// What <name>_init_state writes: the initializer's bytes for a
  /// parameter that has one (kiln.initial_value), else empty for zeros.
  std::string initialData;
  /// The step writes its new value into the state buffer itself
  /// (kiln-drop-state-copies, CPU): no copy from the arena after the step.
  bool inPlace = false;
};

/// One all-reduce bucket of a data-parallel step (kilnc --data-parallel):
/// the tensors the step hands the collectives together, in order.
struct AllReduceBucket {
  int dtype = 0; ///< kiln_dtype_t of every tensor: f32 or f64
  std::vector<uint64_t> elements;
};

struct ArtifactInfo {
  std::string name; ///< C identifier prefix of every exported symbol
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  /// The symbolic dimensions, in the order the entry points take their
  /// run-time sizes (the entry function's kiln.symbols), then those the run
  /// computes (kiln.computed_symbols), which it writes back; empty for a
  /// model of static sizes.
  std::vector<DimSymbol> symbols;
  /// The state of a training step, in buffer order (empty for a model).
  std::vector<StateTensor> state;
  uint64_t stateBytes = 0;
  uint64_t stateAlignment = 64;
  /// Where in the arena the step writes the new state before copying it
  /// over the state buffer (meaningful when `state` is not empty).
  uint64_t stateScratchOffset = 0;
  uint64_t arenaBytes = 0;
  uint64_t arenaAlignment = 64;
  uint64_t arenaLowerBoundBytes = 0;
  uint64_t arenaNoReuseBytes = 0;
  /// The arena at given sizes: the largest of these expressions
  /// (MemoryPlan::arenaTerms); empty for static sizes.
  std::vector<std::string> arenaTerms;
  unsigned planSteps = 0, planPeakStep = 0;
  std::vector<PlannedBuffer> plan;
  std::string triple;
  std::string cpu;
  /// The CPU kernels in run order (kiln-mark-kernels): ONNX nodes, flops.
  std::vector<std::string> kernelNames;
  std::vector<uint64_t> kernelFlops;
  /// A data-parallel step's buckets, in the order they start (empty for
  /// anything else).
  std::vector<AllReduceBucket> buckets;
};

/// Turns any string into a C identifier (letters, digits, '_'; no leading
/// digit, no C keyword).
std::string sanitizeIdentifier(llvm::StringRef name);

/// Reads the signature of the entry function (tensor level, before
/// bufferization): inputs, outputs and, for a training step, the state
/// (arguments and results marked kiln.state, which must come last and
/// match one to one) with its layout. Fails with a located error on an
/// unsupported element type.
mlir::LogicalResult collectSignature(mlir::func::FuncOp func,
                                     ArtifactInfo &info);

/// The descriptor's program for a tensor's sizes (kiln_model.fbs,
/// Tensor.dims): per axis a count and the codes that compute the size from
/// the run-time values of `symbols`; empty for static sizes.
std::vector<int64_t> dimsProgram(const TensorSignature &t,
                                 const std::vector<DimSymbol> &symbols);
/// The same encoding for any list of size expressions (kiln::DimExpr
/// text), one program each: Model.arena_terms.
std::vector<int64_t> sizePrograms(const std::vector<std::string> &sizes,
                                  const std::vector<DimSymbol> &symbols);

/// Takes the arena plan of the entry function into `info` (both targets):
/// the arena's size, alignment and bounds, and its buffers. A training step
/// then gets its new-state scratch past the planned buffers, aligned for
/// the state, and the plan lists it as one more buffer live throughout.
void recordMemoryPlan(const MemoryPlan &plan, ArtifactInfo &info);

/// Reads a data-parallel step's buckets (kiln.all_reduce ops numbered by
/// kiln-bucket-all-reduce, in order) into `info.buckets`; fails, located,
/// on an op without its number.
mlir::LogicalResult collectBuckets(mlir::func::FuncOp func, ArtifactInfo &info);

/// The generated C header for the artifact; with `cuda`, the CUDA target's
/// (device pointers, a stream, the kiln/runtime_cuda.h model handle).
std::string emitHeader(const ArtifactInfo &info,
                       const CudaProgram *cuda = nullptr);

/// The FlatBuffers model descriptor (runtime/schema/kiln_model.fbs); with
/// `cuda`, its CudaModule too.
std::string buildDescriptor(const ArtifactInfo &info,
                            const CudaProgram *cuda = nullptr);

/// Adds to `m` the exported `kiln_status_t <name>_init_state(void *state)` of
/// a training step, which writes the initial state into host memory (zeros,
/// then each parameter's initial value, embedded as constant data), and
/// returns it; null when `info` has no state.
llvm::Function *emitInitState(llvm::Module &m, const ArtifactInfo &info);

/// Adds to `m` the descriptor as constant data, the kiln_artifact_t that
/// points at it (KILN_ABI_VERSION, `runPacked`, `initState` or null,
/// `runPackedParallel`, `runPackedProfiled` and `runPackedHooks` or null)
/// and the exported
/// `<name>_artifact()` returning it: the part every target's object shares.
void emitArtifactAccessor(llvm::Module &m, llvm::StringRef name,
                          llvm::StringRef descriptor, llvm::Function *runPacked,
                          llvm::Constant *initState,
                          llvm::Function *runPackedParallel = nullptr,
                          llvm::Function *runPackedProfiled = nullptr,
                          llvm::Function *runPackedHooks = nullptr);

/// Fills the data ranges and data checksum of the kiln_artifact_t that
/// emitArtifactAccessor made for `name` in `m`: every constant global of
/// plain numeric data (the weights) but the descriptor, and
/// kiln_data_checksum over their bytes. Call it on the optimized module,
/// whose globals are the ones the object will hold. `declared` gives the
/// bytes of constant globals that `m` only declares (DetachedData), by name.
void attachDataChecksum(
    llvm::Module &m, llvm::StringRef name,
    const llvm::StringMap<llvm::StringRef> *declared = nullptr);

/// Seals the shared library at `path` that was just linked from an object
/// holding the artifact of `name`: computes kiln_data_checksum over the
/// library's executable segment (its bytes as the loader maps them) and
/// writes it into the code_checksum field of the kiln_artifact_t, which
/// lies outside that segment, in the file. kiln_model_open recomputes it.
llvm::Error sealSharedLibrary(llvm::StringRef path, llvm::StringRef name);

} // namespace kiln

#endif // KILN_CODEGEN_ARTIFACT_H

//===- CpuCodegen.h - kiln dialect to an x86-64 object ----------*- C++ -*-===//
//
// The CPU code generator: lowers a module with one kiln function through
// linalg, bufferization and the arena planner to the LLVM dialect, then to
// LLVM IR with the artifact's entry points, and emits an object file in
// process. All steps are deterministic for a given module and options.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPUCODEGEN_H
#define KILN_CODEGEN_CPUCODEGEN_H

#include "kiln/Codegen/Artifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
}

namespace kiln {

struct CpuCodegenOptions {
  /// LLVM CPU name, or "host" for the machine running the compiler.
  std::string cpu = "host";
  /// Extra LLVM target features, e.g. "+avx2,-avx512f".
  std::string features;
  /// Alignment of the arena and of every buffer in it.
  int64_t arenaAlignment = 64;
  /// Called on each pass manager before it runs (instrumentation, timing).
  std::function<void(mlir::PassManager &)> configurePassManager;
};

/// Registers every dialect, interface and translation the code generators
/// use, like mlir-opt does (in-process pipelines silently skip unregistered
/// external models).
void registerCodegenDialects(mlir::DialectRegistry &registry);

/// Lowers `module` in place from the kiln dialect to the LLVM dialect. The
/// entry function `funcName` becomes `<info.name>_kernel` and takes its
/// outputs and the arena as trailing pointer arguments; the arena facts are
/// written into `info`.
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module,
                                       llvm::StringRef funcName,
                                       ArtifactInfo &info,
                                       const CpuCodegenOptions &options);

/// Lowers `module` in place only as far as the arena plan
/// (buildCpuPlanningPipeline) and records the plan of `funcName` into
/// `info`, as lowerToLLVMDialect would: the arena facts without the rest
/// of the lowering, for --memory-budget's tries.
mlir::LogicalResult planCpuArena(mlir::ModuleOp module,
                                 llvm::StringRef funcName, ArtifactInfo &info,
                                 const CpuCodegenOptions &options);

/// The target machine for `options` (host triple, PIC).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createCpuTargetMachine(const CpuCodegenOptions &options);

/// Constant data that the object carries beside the LLVM module (issue 29,
/// decision 0021): a weight's bytes stay in their MLIR blob and are written
/// straight into the object's file (writeObjectWithData), instead of being
/// copied into an LLVM constant and again into the object writer's section
/// (ResNet-50: 200 MB of copies, a third of the compile's page faults). The
/// LLVM module only declares each such global, hidden, under
/// `<artifact>.d<N>`. The blobs must outlive the object's emission.
struct DetachedData {
  struct Global {
    /// The LLVM global's name.
    std::string name;
    /// The initializer's bytes: in the MLIR context's blob named `blob`,
    /// or, when that is empty, in a dense attribute the context holds.
    llvm::StringRef bytes;
    uint64_t alignment = 1;
    std::string blob;
  };
  std::vector<Global> globals;
};

/// Whether writeObjectWithData can add data to `triple`'s objects (ELF,
/// 64-bit, little-endian: x86-64 and AArch64).
bool canDetachData(const llvm::Triple &triple);

/// Writes to `path` the ELF relocatable object `code` with `data` added as
/// one more read-only section, each global at the next offset of its
/// alignment. The code's undefined symbols of the globals' names become
/// defined there (hidden, global, of the global's size); a global the code
/// does not reference gets such a symbol of its own. Every other byte,
/// symbol index and section index of `code` is kept.
llvm::Error writeObjectWithData(llvm::StringRef code, const DetachedData &data,
                                llvm::StringRef path);

/// Translates a module lowered by lowerToLLVMDialect to LLVM IR, adds the
/// exported entry points, artifact struct and descriptor, and optimizes it.
/// Fails (with a diagnostic on `module`) if the code would call anything
/// outside libm and the mem* functions. `translated`, when given, runs once
/// the LLVM IR is complete and before -O2: the caller may empty `module`'s
/// body there (only `module` itself is used after it, for diagnostics).
/// With `detached`, constant globals of blob data of 4 KiB or more are not
/// translated but listed there (the blobs are then the caller's to keep;
/// `translated` may release the others); only code generation in parts
/// (SplitCodegenOptions::detached) writes them, and any other emission
/// needs restoreDetachedData first.
mlir::FailureOr<std::unique_ptr<llvm::Module>>
buildArtifactModule(mlir::ModuleOp module, const ArtifactInfo &info,
                    llvm::TargetMachine &tm, llvm::LLVMContext &llvmContext,
                    llvm::function_ref<void()> translated = {},
                    DetachedData *detached = nullptr);

/// Gives the globals `data` lists their initializers back in `module`, as
/// buildArtifactModule would have made them without detaching.
void restoreDetachedData(llvm::Module &module, const DetachedData &data);

/// A tiny module exporting `kiln_artifact_v1()`, the generic loader entry of
/// a shared artifact, forwarding to `<name>_artifact()`.
std::unique_ptr<llvm::Module>
buildSharedEntryModule(const ArtifactInfo &info, llvm::TargetMachine &tm,
                       llvm::LLVMContext &llvmContext);

/// Code generation in parts, on threads (issue 29). A module with enough
/// code has its functions dealt into parts by size; each part is generated
/// on its own thread, with its own LLVM context and target machine, while
/// the calling thread writes the module's data (the weights) and then
/// takes parts too; `linker -r` joins the objects into one. How many parts
/// there are depends on the module alone, never on `jobs`, so the object
/// is the same bytes at any thread count. The detached data (DetachedData)
/// is added to the joined object after the join (writeObjectWithData), so
/// the linker never copies it. Without the linker, or with too little code
/// for two parts and less than 1 MiB of detached data, the object is
/// generated whole, as one part; with code for one part and that much data,
/// the data is added to that part's object and no linker runs.
struct SplitCodegenOptions {
  /// Threads; 0 means one per core this process may run on.
  unsigned jobs = 0;
  /// The C compiler driver that joins the parts (`-r -nostdlib`).
  std::string linker = "cc";
  /// Each part's thread makes its target machine from these.
  CpuCodegenOptions target;
  /// The artifact's symbol prefix: the module's local symbols become
  /// hidden globals so the parts can reach each other, and those not
  /// named after the artifact yet are renamed `<prefix>.l<N>`, so two
  /// artifacts in one program still cannot collide.
  std::string symbolPrefix;
  /// Data buildArtifactModule detached: added to the code's object. When the
  /// module is generated whole instead, emitObject and emitObjectFile
  /// restore it into the module first.
  const DetachedData *detached = nullptr;
};

/// The parts `module` would be split into: each a list of function
/// definitions. Empty when it is generated whole.
std::vector<std::vector<llvm::Function *>>
partitionForCodegen(llvm::Module &module);

/// Machine code for `module` as an ELF object; in parts when `split` is
/// given (and the module is large enough).
llvm::Expected<std::string>
emitObject(llvm::Module &module, llvm::TargetMachine &tm,
           const SplitCodegenOptions *split = nullptr);

/// Flags kiln adds for the linker driver `linker`: the default driver
/// (`cc`) links with LLVM's linker where `ld.lld` is installed, in a third
/// of GNU ld's time on a ResNet-50's weights; none for any other driver.
llvm::SmallVector<llvm::StringRef> linkerDriverFlags(llvm::StringRef linker);

/// Runs the linker driver `program` with `args` (args[0] is its name) and
/// returns its exit status, or -1 with `message` set when it could not
/// start or was killed by a signal. The driver runs in a process group of
/// its own: a SIGINT, SIGTERM or SIGHUP that reaches this process while it
/// runs is passed to the whole group (driver, collect2, ld), which is
/// waited for before the signal's previous handler removes the
/// temporaries (llvm::sys::RemoveFileOnSignal). Without that, a linker
/// outliving an interrupted compile wrote its output after the removal.
int runLinkerDriver(llvm::StringRef program,
                    llvm::ArrayRef<llvm::StringRef> args, std::string &message);

/// emitObject written straight to the file `path`: a model's weights are
/// then held by LLVM's constants and the object writer's sections, not by
/// a third copy in memory. A failure to write or read the file is an
/// llvm::ECError (the caller names the file as its user knows it).
llvm::Error emitObjectFile(llvm::Module &module, llvm::TargetMachine &tm,
                           llvm::StringRef path,
                           const SplitCodegenOptions *split = nullptr);

} // namespace kiln

#endif // KILN_CODEGEN_CPUCODEGEN_H

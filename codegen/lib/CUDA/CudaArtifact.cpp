//===- CudaArtifact.cpp - the host object of a CUDA artifact --------------===//
//
// A CUDA artifact's PREFIX.o holds data, not kernels: the descriptor, which
// carries the cubin, the PTX, the step list and the constants, and the
// kiln_artifact_t that points at it. Its run_packed returns
// KILN_STATUS_UNAVAILABLE, so the CPU runtime refuses to run it on the host
// while kiln_model_open can still read its signature; a training step's
// init_state writes its initial state (into host memory).
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CudaCodegen.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

using namespace kiln;

std::unique_ptr<llvm::Module> kiln::buildCudaArtifactModule(
    const ArtifactInfo &info, const CudaProgram &program,
    llvm::TargetMachine &tm, llvm::LLVMContext &context) {
  auto m = std::make_unique<llvm::Module>(info.name, context);
  m->setSourceFileName(info.name);
  m->setTargetTriple(tm.getTargetTriple());
  m->setDataLayout(tm.createDataLayout());
  llvm::IRBuilder<> b(context);
  llvm::Type *i32 = b.getInt32Ty();
  llvm::PointerType *ptr = b.getPtrTy();

  // kiln_status_t run_packed(void *const *buffers, void *arena)
  llvm::Function *packed = llvm::Function::Create(
      llvm::FunctionType::get(i32, {ptr, ptr}, false),
      llvm::GlobalValue::InternalLinkage, info.name + "_run_packed", m.get());
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", packed));
  b.CreateRet(b.getInt32(5)); // KILN_STATUS_UNAVAILABLE

  // A training step's init_state writes the initial state into host
  // memory; the caller copies it to the device state buffer.
  emitArtifactAccessor(*m, info.name, buildDescriptor(info, &program), packed,
                       emitInitState(*m, info));
  return m;
}

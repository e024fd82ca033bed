//===- CudaArtifact.cpp - the host object of a CUDA artifact --------------===//
//
// A CUDA artifact's PREFIX.o holds data, not kernels: the descriptor, which
// carries the cubin, the PTX, the step list and the constants, and the
// kiln_artifact_t that points at it. Its run_packed returns
// KILN_STATUS_UNAVAILABLE, so the CPU runtime refuses to run it on the host
// while kiln_model_open can still read its signature.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CudaCodegen.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

using namespace kiln;

std::unique_ptr<llvm::Module>
kiln::buildCudaArtifactModule(const ArtifactInfo &info,
                              const CudaProgram &program,
                              llvm::TargetMachine &tm,
                              llvm::LLVMContext &context) {
  auto m = std::make_unique<llvm::Module>(info.name, context);
  m->setSourceFileName(info.name);
  m->setTargetTriple(tm.getTargetTriple());
  m->setDataLayout(tm.createDataLayout());
  llvm::IRBuilder<> b(context);
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  llvm::PointerType *ptr = b.getPtrTy();

  // kiln_status_t run_packed(void *const *buffers, void *arena)
  llvm::Function *packed = llvm::Function::Create(
      llvm::FunctionType::get(i32, {ptr, ptr}, false),
      llvm::GlobalValue::InternalLinkage, info.name + "_run_packed", m.get());
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", packed));
  b.CreateRet(b.getInt32(5)); // KILN_STATUS_UNAVAILABLE

  std::string descriptor = buildDescriptor(info, &program);
  auto *descInit = llvm::ConstantDataArray::getRaw(descriptor, descriptor.size(),
                                                   b.getInt8Ty());
  auto *descGlobal = new llvm::GlobalVariable(
      *m, descInit->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, descInit, info.name + "_descriptor");
  descGlobal->setAlignment(llvm::Align(16));
  llvm::StructType *artifactTy =
      llvm::StructType::get(context, {i32, i32, ptr, i64, ptr, ptr});
  // No state on this target: init_state is null.
  auto *artifactInit = llvm::ConstantStruct::get(
      artifactTy, {b.getInt32(2) /*KILN_ABI_VERSION*/, b.getInt32(0),
                   descGlobal, b.getInt64(descriptor.size()), packed,
                   llvm::ConstantPointerNull::get(ptr)});
  auto *artifact = new llvm::GlobalVariable(
      *m, artifactTy, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
      artifactInit, info.name + "_artifact_data");
  artifact->setAlignment(llvm::Align(8));
  llvm::Function *getArtifact = llvm::Function::Create(
      llvm::FunctionType::get(ptr, false), llvm::GlobalValue::ExternalLinkage,
      info.name + "_artifact", m.get());
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", getArtifact));
  b.CreateRet(artifact);
  return m;
}

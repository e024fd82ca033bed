//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// Bytes -> ONNX model -> kiln dialect -> verifier. Every input must end in a
// module that verifies or in a diagnostic; a crash, a sanitizer report, a
// hang or unbounded memory is a bug. External data is off (no folder), so
// the fuzzer never reads files.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/OnnxImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <memory>

// A context interns every attribute and type it ever sees (weights
// included) and never frees them, so one context for a whole run grows
// without bound; a fresh one every few hundred inputs keeps the memory flat.
static std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  kiln::registerCompilerDialects(registry);
  auto ctx = std::make_unique<mlir::MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<mlir::MLIRContext> owned;
  static unsigned runs = 0;
  if (!owned || ++runs % 256 == 0)
    owned = makeContext();
  mlir::MLIRContext *context = owned.get();
  mlir::ScopedDiagnosticHandler quiet(context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = kiln::importOnnxModel(*context, bytes, "fuzz.onnx");
  if (module)
    (void)mlir::verify(*module);
  return 0;
}

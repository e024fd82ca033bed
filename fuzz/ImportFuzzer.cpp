//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer -----------===//
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
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    kiln::registerCompilerDialects(registry);
    auto *ctx = new mlir::MLIRContext(registry);
    ctx->loadAllAvailableDialects();
    return ctx;
  }();
  mlir::ScopedDiagnosticHandler quiet(context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importOnnxModel(*context, bytes, "fuzz.onnx");
  if (module)
    (void)mlir::verify(*module);
  return 0;
}

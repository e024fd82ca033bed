//===- OnnxImporter.h - ONNX model -> kiln dialect --------------*- C++ -*-===//
//
// Reads an ONNX model (protobuf) into a module holding one function, @main,
// in the kiln dialect. Graph inputs become arguments and graph outputs
// results, both tagged with their ONNX names (`kiln.name`); initializers
// become kiln.constant; each node becomes one kiln op or a short
// decomposition, located at the node (NameLoc with the node's name over a
// FileLineColLoc of the model file).
//
// Errors are MLIR diagnostics at the node's location, whose message starts
// with "(<OpType>, opset <N>): " for node errors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_ONNXIMPORTER_H
#define KILN_COMPILER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct ImportOptions {
  /// Initializers with more elements than this are stored as dense_resource
  /// blobs instead of inline dense attributes.
  int64_t resourceThresholdElements = 1024;
  /// The folder tensors stored as external data are read from (the model's
  /// folder; importOnnxFile sets it). Their locations must stay inside it:
  /// no absolute paths, no `..`, no symlink out. Empty: external data is an
  /// error.
  std::string externalDataDir;
  /// Initializers imported as function arguments instead of constants, so
  /// that gradients can be taken with respect to them (`kilnc grad`). Each
  /// becomes an argument after the graph inputs, named like the initializer
  /// (`kiln.name`) and marked `kiln.parameter`. A name may also be a graph
  /// input (already an argument); any other name is an error.
  std::vector<std::string> parameters;
  /// Import every floating-point initializer as a parameter.
  bool allFloatParameters = false;
  /// Keep each parameter's initializer as its `kiln.initial_value` argument
  /// attribute (`kilnc train`: the artifact's state starts from it).
  bool parameterInitialValues = false;
  /// Symbolic dimensions (ONNX dim_param) pinned to a size (`kilnc --dim
  /// NAME=N`): the graph's inputs and outputs take that size wherever they
  /// name the dimension. Naming a dimension no input or output has is an
  /// error (a typo would otherwise go unnoticed).
  std::map<std::string, int64_t> dims;
  /// Symbolic dimensions kept symbolic over an inclusive range of sizes
  /// (`kilnc --dim NAME=LO..HI`, decision 0027): tensors carry the size at
  /// HI in their shape and the expression in a #kiln.dims encoding, and the
  /// function lists the ranges in `kiln.symbols`. Only the ops in
  /// symbolicOnnxOps() accept such tensors; any other is an error that names
  /// the node. As with `dims`, a name no input or output has is an error.
  std::map<std::string, std::pair<int64_t, int64_t>> dimRanges;
};

/// The ONNX op types that import tensors with symbolic dimensions, sorted.
std::vector<std::string> symbolicOnnxOps();

/// Imports the model in `bytes`; `fileName` is used for locations and
/// messages only. Returns null after emitting a diagnostic on failure.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef bytes,
                llvm::StringRef fileName, const ImportOptions &options = {});

/// Reads and imports the file at `path`.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(mlir::MLIRContext &context, llvm::StringRef path,
               const ImportOptions &options = {});

/// The ONNX op types the importer has a handler for: the default domain's,
/// sorted, then the training domain's as "ai.onnx.preview.training.<Op>".
std::vector<std::string> supportedOnnxOps();

/// The oldest and newest default-domain opset versions the importer accepts.
/// Opsets 7 to 23 are the supported range; older models are read with their
/// legacy attributes (`broadcast`/`axis` on binary ops, `consumed_inputs`,
/// Reshape's `shape` attribute), and newer ones up to the ONNX release of the
/// conformance data (1.23, opset 28) because their changes to the ops Kiln
/// handles only add element types. The conformance suite checks both ends.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 28;

} // namespace kiln

#endif // KILN_COMPILER_ONNXIMPORTER_H

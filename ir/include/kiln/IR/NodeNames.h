//===- NodeNames.h - the ONNX nodes an op came from -------------*- C++ -*-===//
//
// The importer locates each op at its ONNX node (a NameLoc); rewrites fuse
// locations. kiln-fuse names its kernels by these names, and
// kiln-mark-kernels names the kernels of a profile the same way.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_NODENAMES_H
#define KILN_IR_NODENAMES_H

#include "mlir/IR/Location.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Appends the ONNX node names in `loc` (its NameLocs, through fused and
/// call-site locations), in order, each once: the nodes an op came from.
void collectNodeNames(mlir::Location loc,
                      llvm::SetVector<llvm::StringRef> &names);

} // namespace kiln

#endif // KILN_IR_NODENAMES_H

//===- OnnxOpsShape.cpp - shape, indexing and data movement ops -----------===//
//
// One handler per ONNX op, registered by registerShapeHandlers.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

void kiln::import::registerShapeHandlers(HandlerMap &handlers) {}

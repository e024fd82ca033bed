//===- OnnxOpsElementwise.cpp - elementwise math, logic and casts ---------===//
//
// One handler per ONNX op, registered by registerElementwiseHandlers.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

void kiln::import::registerElementwiseHandlers(HandlerMap &handlers) {}

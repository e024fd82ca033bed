//===- OnnxOpsNN.cpp - convolution, pooling, normalization ----------------===//
//
// One handler per ONNX op, registered by registerNNHandlers.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

void kiln::import::registerNNHandlers(HandlerMap &handlers) {}

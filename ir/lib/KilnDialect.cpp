//===- KilnDialect.cpp - the kiln dialect ---------------------------------===//
//
// Registers the ops and materializes folded constants as kiln.constant.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnCostInterface.h"
#include "kiln/IR/KilnFusionInterface.h"
#include "kiln/IR/KilnGradientInterface.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/NodeNames.h"

using namespace mlir;
using namespace kiln;

#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

#include "kiln/IR/KilnDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/IR/KilnAttrs.cpp.inc"

void KilnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/IR/KilnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/IR/KilnOps.cpp.inc"
      >();
  attachGradientModels(*getContext());
  attachCostModels(*getContext());
  attachFusionModels(*getContext());
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

void kiln::collectNodeNames(Location loc, llvm::SetVector<StringRef> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.insert(name.getName().strref());
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      collectNodeNames(inner, names);
  } else if (auto site = dyn_cast<CallSiteLoc>(loc)) {
    collectNodeNames(site.getCallee(), names);
  }
}

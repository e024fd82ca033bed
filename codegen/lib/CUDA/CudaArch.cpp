//===- CudaArch.cpp - GPU architecture names ------------------------------===//
//
// The --gpu-arch values kilnc accepts: sm_<major><minor>, sm_75 or newer
// (what NVRTC 12 and 13 compile for), as one name or a list.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/CudaCodegen.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>

using namespace mlir;
using llvm::SmallVector;
using llvm::StringRef;

bool kiln::isValidGpuArch(StringRef arch) {
  if (!arch.consume_front("sm_") || arch.empty() || arch.size() > 4)
    return false;
  unsigned value;
  // NVRTC 12 and 13 compile for sm_75 and newer.
  return !arch.getAsInteger(10, value) && value >= 75;
}

bool kiln::parseGpuArchs(StringRef list, std::vector<std::string> &archs,
                         std::string &bad) {
  SmallVector<StringRef> items;
  list.split(items, ',');
  archs.clear();
  for (StringRef item : items) {
    item = item.trim();
    if (!isValidGpuArch(item)) {
      bad = item.str();
      return false;
    }
    archs.push_back(item.str());
  }
  auto number = [](const std::string &a) {
    unsigned v = 0;
    StringRef(a).drop_front(3).getAsInteger(10, v);
    return v;
  };
  llvm::sort(archs, [&](const std::string &a, const std::string &b) {
    return number(a) < number(b);
  });
  archs.erase(std::unique(archs.begin(), archs.end(),
                          [&](const std::string &a, const std::string &b) {
                            return number(a) == number(b);
                          }),
              archs.end());
  return true;
}

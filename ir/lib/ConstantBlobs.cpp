//===- ConstantBlobs.cpp - weight-sized constants the compile can free ----===//

#include "kiln/IR/ConstantBlobs.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <vector>

using namespace mlir;

bool kiln::isUniformBytes(ArrayRef<char> raw, size_t eltBytes) {
  return !raw.empty() && eltBytes > 0 && raw.size() >= eltBytes &&
         std::memcmp(raw.data(), raw.data() + eltBytes,
                     raw.size() - eltBytes) == 0;
}

/// `raw` as a DenseElementsAttr (a splat when uniform) where it is small
/// or uniform; null where it should be a blob.
static TypedAttr denseIfSmallOrUniform(ShapedType type, ArrayRef<char> raw) {
  int64_t n = type.getNumElements();
  size_t eltBytes = n > 0 ? raw.size() / n : 0;
  bool uniform = kiln::isUniformBytes(raw, eltBytes);
  if (n > kiln::kBlobThresholdElements && !uniform)
    return {};
  return DenseElementsAttr::getFromRawBuffer(
      type, uniform ? raw.take_front(eltBytes) : raw);
}

TypedAttr kiln::makeConstantAttr(ShapedType type, ArrayRef<char> raw) {
  if (TypedAttr dense = denseIfSmallOrUniform(type, raw))
    return dense;
  return DenseResourceElementsAttr::get(
      type, "kiln_constant",
      HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignof(uint64_t)));
}

TypedAttr
kiln::makeConstantAttr(ShapedType type, size_t bytes,
                       function_ref<void(MutableArrayRef<char>)> fill) {
  if (type.getNumElements() <= kBlobThresholdElements) {
    std::vector<char> raw(bytes);
    fill(raw);
    return denseIfSmallOrUniform(type, raw);
  }
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(bytes, alignof(uint64_t));
  fill(blob.getMutableData());
  if (TypedAttr dense = denseIfSmallOrUniform(type, blob.getData()))
    return dense;
  return DenseResourceElementsAttr::get(type, "kiln_constant", std::move(blob));
}

static DialectResourceBlobManager &blobManager(MLIRContext *context) {
  return DenseResourceElementsHandle::getManagerInterface(context)
      .getBlobManager();
}

llvm::StringSet<> kiln::resourceBlobNames(MLIRContext *context) {
  llvm::StringSet<> names;
  blobManager(context).getBlobMap(
      [&](const llvm::StringMap<DialectResourceBlobManager::BlobEntry> &map) {
        for (const auto &entry : map)
          names.insert(entry.getKey());
      });
  return names;
}

uint64_t kiln::releaseUnusedBlobs(MLIRContext *context, Operation *root,
                                  const llvm::StringSet<> &keep) {
  llvm::StringSet<> used;
  if (root)
    root->walk([&](Operation *op) {
      op->getAttrDictionary().walk([&](DenseResourceElementsAttr attr) {
        used.insert(attr.getRawHandle().getKey());
      });
    });
  DialectResourceBlobManager &manager = blobManager(context);
  SmallVector<std::string> unused;
  manager.getBlobMap(
      [&](const llvm::StringMap<DialectResourceBlobManager::BlobEntry> &map) {
        for (const auto &entry : map)
          if (const AsmResourceBlob *blob = entry.getValue().getBlob();
              blob && !blob->getData().empty() &&
              !keep.contains(entry.getKey()) && !used.contains(entry.getKey()))
            unused.push_back(entry.getKey().str());
      });
  uint64_t freed = 0;
  for (const std::string &name : unused) {
    DialectResourceBlobManager::BlobEntry *entry = manager.lookup(name);
    freed += entry->getBlob()->getData().size();
    // Replacing the blob runs the old one's deleter.
    entry->setBlob(AsmResourceBlob());
  }
  return freed;
}

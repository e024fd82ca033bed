//===- ConstantBlobs.h - weight-sized constants the compile can free --*- C++
//-*-===//
//
// MLIR keeps every DenseElementsAttr for the life of its context, so a
// weight rewritten by a pass (a filter transposed for a matmul, packed into
// panels) would stay in memory once per form it ever had. Weight-sized
// constants are therefore made as dense_resource blobs, which the context
// owns but can drop: releaseUnusedBlobs frees the blobs no op refers to any
// more, so that only the forms still in use are held.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_CONSTANTBLOBS_H
#define KILN_IR_CONSTANTBLOBS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/StringSet.h"

namespace kiln {

/// Constants of at most this many elements stay DenseElementsAttr (the
/// importer's threshold for initializers too).
constexpr int64_t kBlobThresholdElements = 1024;

/// True when every element of `raw` (elements of `eltBytes` bytes) equals
/// the first: the data equals itself shifted by one element, one memcmp
/// instead of one per element. False for empty data.
bool isUniformBytes(llvm::ArrayRef<char> raw, size_t eltBytes);

/// A constant of `type` with the raw bytes `raw` (the DenseElementsAttr
/// layout: elements of whole bytes, row-major): a dense_resource blob
/// owned by the context when it has more than kBlobThresholdElements
/// elements and they are not all equal, else a DenseElementsAttr.
mlir::TypedAttr makeConstantAttr(mlir::ShapedType type,
                                 llvm::ArrayRef<char> raw);

/// makeConstantAttr of `bytes` bytes written by `fill`, straight into the
/// blob when it is one (no second buffer of a weight's size).
mlir::TypedAttr
makeConstantAttr(mlir::ShapedType type, size_t bytes,
                 llvm::function_ref<void(llvm::MutableArrayRef<char>)> fill);

/// The names of the builtin dialect's resource blobs in `context` now.
llvm::StringSet<> resourceBlobNames(mlir::MLIRContext *context);

/// Frees the data of every resource blob of `context` that is neither named
/// in `keep` nor referred to by an attribute under `root` (null: by
/// nothing, so every blob not in `keep` goes); returns the bytes freed. A
/// freed blob reads as unloaded (a null getBlob()), so the IR that still
/// names it must not be used for its values again. For a compile that owns
/// its context's new blobs: `keep` is the set from before its import.
uint64_t releaseUnusedBlobs(mlir::MLIRContext *context, mlir::Operation *root,
                            const llvm::StringSet<> &keep);

} // namespace kiln

#endif // KILN_IR_CONSTANTBLOBS_H

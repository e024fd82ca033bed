//===- CudaLibrarySteps.cpp - cuBLASLt and cuDNN steps -----------------===//
//
// Products and 2-d convolutions that cuBLASLt and cuDNN run instead of a
// printed kernel (docs/decisions/0019): the ops are matched in
// CudaLibraryCalls.cpp; here their buffers are resolved and the steps,
// with their epilogues, recorded.
//
//===----------------------------------------------------------------------===//

#include "CudaLibraryCalls.h"
#include "CudaPrinter.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::cuda {

CudaArg CudaPrinter::argOf(const BufferRef &ref) {
  int64_t size =
      std::max<int64_t>(1, ref.elementType.getIntOrFloatBitWidth() / 8);
  return CudaArg{ref.constant ? CudaSpace::Constants : ref.space,
                 ref.constant ? 0u : ref.index,
                 uint64_t(ref.byteOffset + size * ref.offset)};
}

/// The result position of `dim` in `map` when every other result is the
/// constant 0 (a vector along that loop, the other dims of size 1).
static std::optional<unsigned> vectorAlong(AffineMap map, AffineExpr dim) {
  std::optional<unsigned> at;
  for (auto [p, e] : llvm::enumerate(map.getResults())) {
    if (e == dim && !at)
      at = p;
    else if (!isa<AffineConstantExpr>(e) ||
             cast<AffineConstantExpr>(e).getValue() != 0)
      return std::nullopt;
  }
  return at;
}

std::optional<CudaGemm::Epilogue>
CudaPrinter::convEpilogue(linalg::GenericOp op, linalg::GenericOp next,
                          int64_t channels, BufferRef &y, BufferRef &bias,
                          std::optional<BufferRef> &residual) {
  Value out = op.getDpsInits()[0];
  if (!next || next.getNumDpsInits() != 1 || next.getNumReductionLoops() != 0)
    return std::nullopt;
  // Read through a view of the output, in the arena, by `next` alone.
  OpOperand *read = nullptr;
  for (OpOperand *in : next.getDpsInputOperands())
    if (isViewOf(in->get(), out)) {
      if (read)
        return std::nullopt;
      read = in;
    }
  auto outRange = byteRange(out, op);
  if (!read || !outRange || outRange->space != CudaSpace::Arena ||
      outRange->constant)
    return std::nullopt;
  SmallVector<Operation *> users;
  collectViewUsers(out, users);
  for (Operation *user : users)
    if (user != op && user != next &&
        !(user->getBlock() == op->getBlock() && user->isBeforeInBlock(op)))
      return std::nullopt;
  OpOperand *biasOperand = nullptr, *residualOperand = nullptr;
  auto kind = matchGemmEpilogue(next, read, biasOperand);
  AffineExpr channel = getAffineDimExpr(1, op.getContext());
  if (!kind) {
    // relu(x + bias + z): which input is the bias (along the channels) and
    // which the residual (read at each output element).
    OpOperand *a, *b;
    if (matchResidualRelu(next, read, a, b)) {
      if (vectorAlong(next.getMatchingIndexingMap(b), channel))
        std::swap(a, b);
      if (vectorAlong(next.getMatchingIndexingMap(a), channel) &&
          next.getMatchingIndexingMap(b).isIdentity()) {
        kind = CudaGemm::BiasRelu;
        biasOperand = a;
        residualOperand = b;
      }
    }
  }
  if (!kind || !biasOperand ||
      (*kind != CudaGemm::Bias && *kind != CudaGemm::BiasRelu) ||
      !next.getMatchingIndexingMap(read).isIdentity() ||
      !next.getMatchingIndexingMap(next.getDpsInitOperand(0)).isIdentity() ||
      next.getNumLoops() != 4)
    return std::nullopt;
  // The bias: along the channels (loop 1), 0 elsewhere, unit stride.
  std::optional<unsigned> at =
      vectorAlong(next.getMatchingIndexingMap(biasOperand), channel);
  Value result = next.getDpsInits()[0];
  auto refY = resolve(result, next);
  auto refBias = resolve(biasOperand->get(), next);
  auto yRange = byteRange(result, next),
       biasRange = byteRange(biasOperand->get(), next);
  if (!at || failed(refY) || failed(refBias) || !yRange || !biasRange ||
      refY->elementType != cast<MemRefType>(out.getType()).getElementType() ||
      refBias->elementType != refY->elementType ||
      !(refBias->strides[*at] == 1 || channels == 1) ||
      biasRange->overlaps(*yRange) ||
      // cuDNN may not write where it reads x or w.
      !inputsApartFrom(op, *yRange))
    return std::nullopt;
  if (residualOperand) {
    // The residual z: f32 (cuDNN adds it in f32 and rounds once, where the
    // kernel would round after each op in a narrow type), in y's layout,
    // apart from y (cuDNN does not say it may alias y).
    auto refZ = resolve(residualOperand->get(), next);
    auto zRange = byteRange(residualOperand->get(), next);
    if (failed(refZ) || !zRange || !refY->elementType.isF32() ||
        refZ->elementType != refY->elementType ||
        refZ->strides != refY->strides || zRange->overlaps(*yRange))
      return std::nullopt;
    residual = *refZ;
  }
  y = *refY;
  bias = *refBias;
  return kind;
}

std::optional<CudaPrinter::ConvPlan>
CudaPrinter::planConv(linalg::GenericOp op, linalg::GenericOp next,
                      const PadFold *pad) {
  std::optional<ConvLoops> l;
  Value out = op.getDpsInits()[0];
  if (!options.cudnn || !(l = matchConv(op)))
    return std::nullopt;
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  auto x = resolve(op.getDpsInputs()[0], op),
       w = resolve(op.getDpsInputs()[1], op), y = resolve(out, op);
  auto yRange = byteRange(out, op);
  if (failed(x) || failed(w) || failed(y) || !yRange ||
      !inputsApartFrom(op, *yRange))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t G = ranges[l->g], F = ranges[l->f], Cg = ranges[l->c];
  int64_t R = ranges[l->kh], S = ranges[l->kw];
  // Group and channel dims as one (cuDNN's C and K), where contiguous.
  auto joined = [&](const BufferRef &ref, int64_t perGroup, int64_t &stride) {
    stride = ref.strides[2];
    return G == 1 || ref.strides[1] == ref.strides[2] * perGroup;
  };
  ConvPlan plan;
  CudaConv &c = plan.conv;
  int64_t xc, yc;
  if (!joined(*x, Cg, xc) || !joined(*y, F, yc))
    return std::nullopt;
  // The filter packed [G * F, Cg, R, S] (a size-1 dim's stride is free).
  int64_t packed[5] = {F * Cg * R * S, Cg * R * S, R * S, S, 1};
  auto wShape = cast<MemRefType>(op.getDpsInputs()[1].getType()).getShape();
  for (int i = 0; i < 5; ++i)
    if (wShape[i] != 1 && w->strides[i] != packed[i])
      return std::nullopt;
  c.n = ranges[l->n];
  c.c = G * Cg;
  c.k = G * F;
  c.r = R, c.s = S;
  c.p = ranges[l->oh], c.q = ranges[l->ow];
  c.strideH = l->strideH, c.strideW = l->strideW;
  c.dilationH = l->dilationH, c.dilationW = l->dilationW;
  c.groups = G;
  // The rows and columns of x the output reads (a padded buffer may hold
  // more, which cuDNN's output size would count).
  c.h = (c.p - 1) * c.strideH + (R - 1) * c.dilationH + 1;
  c.w = (c.q - 1) * c.strideW + (S - 1) * c.dilationW + 1;
  int64_t xs[4] = {x->strides[0], xc, x->strides[3], x->strides[4]};
  BufferRef xIn = *x;
  std::optional<ByteRange> sourceRange;
  if (pad) {
    // cuDNN reads the pad copy's source and pads it itself: x must be the
    // padded buffer from its first element, and cuDNN's output size for
    // the source and the padding the model's.
    auto padded = resolve(pad->buffer, pad->copy);
    auto source = resolve(pad->source, pad->copy);
    sourceRange = byteRange(pad->source, pad->copy);
    if (failed(padded) || failed(source) || !sourceRange ||
        padded->space != x->space || padded->index != x->index ||
        padded->constant != x->constant ||
        padded->byteOffset != x->byteOffset || padded->offset != x->offset ||
        ArrayRef<int64_t>(xs) != ArrayRef<int64_t>(padded->strides) ||
        source->elementType != x->elementType || pad->padH > INT16_MAX ||
        pad->padW > INT16_MAX)
      return std::nullopt;
    auto shape = cast<MemRefType>(pad->source.getType()).getShape();
    c.h = shape[2], c.w = shape[3];
    c.padH = int32_t(pad->padH), c.padW = int32_t(pad->padW);
    if (c.h + 2 * pad->padH < (R - 1) * c.dilationH + 1 ||
        c.w + 2 * pad->padW < (S - 1) * c.dilationW + 1 ||
        (c.h + 2 * pad->padH - (R - 1) * c.dilationH - 1) / c.strideH + 1 !=
            c.p ||
        (c.w + 2 * pad->padW - (S - 1) * c.dilationW - 1) / c.strideW + 1 !=
            c.q ||
        // cuDNN may not write where it reads the source.
        sourceRange->overlaps(*yRange))
      return std::nullopt;
    std::copy(source->strides.begin(), source->strides.end(), xs);
    xIn = *source;
  }
  int64_t ys[4] = {y->strides[0], yc, y->strides[3], y->strides[4]};
  BufferRef yOut = *y, bias;
  std::optional<BufferRef> residual;
  std::optional<CudaGemm::Epilogue> kind =
      convEpilogue(op, next, G * F, yOut, bias, residual);
  if (kind) {
    std::copy(yOut.strides.begin(), yOut.strides.end(), ys);
    std::optional<ByteRange> written = byteRange(next.getDpsInits()[0], next);
    if (sourceRange && (!written || sourceRange->overlaps(*written)))
      return std::nullopt;
  }
  std::copy(xs, xs + 4, c.xStride);
  std::copy(ys, ys + 4, c.yStride);
  if (llvm::any_of(xs, [](int64_t s) { return s < 0; }) ||
      llvm::any_of(ys, [](int64_t s) { return s < 0; }) ||
      llvm::any_of(
          ArrayRef<int64_t>{c.strideH, c.strideW, c.dilationH, c.dilationW, G},
          [](int64_t v) { return v > INT32_MAX; }))
    return std::nullopt;
  Type type = x->elementType;
  c.dtype = type.isF32() ? 1 : type.isF16() ? 2 : 3; // kiln_dtype_t
  c.tf32 = options.tf32 && type.isF32();
  c.epilogue = kind.value_or(CudaGemm::None);
  c.residual = residual.has_value();
  c.workspaceBytes = options.libraryWorkspaceBytes;
  plan.args = {argOf(xIn), argOf(*w), argOf(yOut),
               CudaArg{CudaSpace::Arena, 0, 0}};
  if (kind) {
    plan.args.push_back(argOf(bias));
    plan.epilogue = next;
  }
  if (residual)
    plan.args.push_back(argOf(*residual));
  return plan;
}

bool CudaPrinter::emitConv(linalg::GenericOp op, linalg::GenericOp next) {
  if (fill.buffer != op.getDpsInits()[0] || !fill.zero)
    return false;
  auto fold = padFolds.find(op);
  std::optional<ConvPlan> plan =
      planConv(op, next, fold == padFolds.end() ? nullptr : &fold->second);
  if (!plan)
    return false;
  CudaStep step;
  step.conv = program.convs.size();
  step.args = std::move(plan->args);
  program.convs.push_back(plan->conv);
  program.steps.push_back(std::move(step));
  // run() marks a taken epilogue as done; any other is printed on its own.
  epilogue = plan->epilogue;
  return true;
}

/// The fill and the copy that pad a 4-d buffer: `fill` stores one constant
/// into the whole buffer, `copy` copies a 4-d source unchanged into a
/// subview of it at [0, 0, padH, padW].
static std::optional<PadFold> matchPadCopy(linalg::GenericOp fill,
                                           linalg::GenericOp copy) {
  if (!fillConstant(fill) ||
      !fill.getMatchingIndexingMap(fill.getDpsInitOperand(0)).isIdentity() ||
      copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
      copy.getNumLoops() != 4 || copy.getNumReductionLoops() != 0 ||
      !llvm::all_of(copy.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return std::nullopt;
  Block &payload = copy.getRegion().front();
  Value yielded = payload.getTerminator()->getOperand(0);
  auto sub = copy.getDpsInits()[0].getDefiningOp<memref::SubViewOp>();
  Value buffer = fill.getDpsInits()[0];
  Value source = copy.getDpsInputs()[0];
  auto sourceType = dyn_cast<MemRefType>(source.getType());
  auto bufferType = cast<MemRefType>(buffer.getType());
  if (!llvm::hasSingleElement(payload) || yielded != payload.getArgument(0) ||
      !sub || sub.getSource() != buffer || !sourceType ||
      !sourceType.hasStaticShape() || !bufferType.hasStaticShape() ||
      sourceType.getElementType() != bufferType.getElementType() ||
      ArrayRef<int64_t>(sub.getStaticSizes()) != sourceType.getShape() ||
      !llvm::all_of(sub.getStaticStrides(), [](int64_t s) { return s == 1; }))
    return std::nullopt;
  ArrayRef<int64_t> at = sub.getStaticOffsets();
  ArrayRef<int64_t> shape = bufferType.getShape();
  if (at[0] != 0 || at[1] != 0 || at[2] < 0 || at[3] < 0 ||
      shape[0] != sourceType.getDimSize(0) ||
      shape[1] != sourceType.getDimSize(1))
    return std::nullopt;
  return PadFold{buffer, source, fill, copy, at[2], at[3]};
}

void CudaPrinter::findPadFolds() {
  for (auto fill : func.getBody().front().getOps<linalg::GenericOp>()) {
    linalg::GenericOp copy = nextGeneric(fill);
    std::optional<PadFold> pad;
    if (!copy || !fill.hasPureBufferSemantics() ||
        !copy.hasPureBufferSemantics() || !(pad = matchPadCopy(fill, copy)))
      continue;
    if (foldIntoReader(*pad))
      continue;
    // The convolution next, after the +0.0 fill of its output it starts
    // from, reads the zero-padded buffer, which nothing else uses.
    linalg::GenericOp outFill = nextGeneric(copy);
    linalg::GenericOp conv = outFill ? nextGeneric(outFill) : nullptr;
    Value outZero = outFill ? fillConstant(outFill) : Value();
    if (!matchPattern(fillConstant(fill), m_PosZeroFloat()) || !conv ||
        !conv.hasPureBufferSemantics() || !outZero ||
        !matchPattern(outZero, m_PosZeroFloat()) ||
        conv.getNumDpsInits() != 1 ||
        outFill.getDpsInits()[0] != conv.getDpsInits()[0] ||
        !startsFromFill(conv, conv.getDpsInits()[0]) ||
        conv.getNumDpsInputs() < 1 ||
        !isViewOf(conv.getDpsInputs()[0], pad->buffer))
      continue;
    SmallVector<Operation *> users;
    collectViewUsers(pad->buffer, users);
    if (llvm::any_of(users, [&](Operation *user) {
          return user != fill && user != copy && user != conv;
        }))
      continue;
    // Taken only when the step is certain: the fill and the copy are not
    // printed, so the convolution must not fall back to a kernel.
    linalg::GenericOp next = nextGeneric(conv);
    bool library = isStaticGeneric(conv) && isStaticGeneric(next);
    if (!library || !planConv(conv, next, &*pad))
      continue;
    padFolds[conv] = *pad;
    foldedPads.insert(fill);
    foldedPads.insert(copy);
  }
}

bool CudaPrinter::foldIntoReader(const PadFold &pad) {
  // The kernel next (after a fill of its output it starts from), a window
  // or a reduction reading the padded buffer itself: a pooling, or a
  // convolution no library runs.
  linalg::GenericOp reader = nextGeneric(pad.copy);
  if (reader && fillConstant(reader)) {
    linalg::GenericOp after = nextGeneric(reader);
    if (!after || !startsFromFill(after, reader.getDpsInits()[0]))
      return false;
    reader = after;
  }
  if (!reader || !reader.hasPureBufferSemantics() ||
      reader.getNumReductionLoops() == 0 || !isStaticGeneric(reader) ||
      (options.cudnn && matchConv(reader)) ||
      (options.cublasLt && matchGemm(reader)) ||
      llvm::count(reader.getDpsInputs(), pad.buffer) != 1)
    return false;
  SmallVector<Operation *> users;
  collectViewUsers(pad.buffer, users);
  if (llvm::any_of(users, [&](Operation *user) {
        return user != pad.fill && user != pad.copy && user != reader;
      }))
    return false;
  // The source is read where the copy would have read it, so nothing the
  // reader writes may lie over it.
  std::optional<ByteRange> source = byteRange(pad.source, pad.copy);
  if (!source)
    return false;
  for (Value out : reader.getDpsInits()) {
    std::optional<ByteRange> written = byteRange(out, reader);
    if (!written || written->overlaps(*source))
      return false;
  }
  paddedReads[reader] = pad;
  foldedPads.insert(pad.fill);
  foldedPads.insert(pad.copy);
  return true;
}

bool CudaPrinter::emitGemm(linalg::GenericOp op) {
  linalg::GenericOp consumer = epilogue;
  std::optional<GemmLoops> loops;
  if (!options.cublasLt || !(loops = matchGemm(op)))
    return false;
  // cuBLASLt starts from 0 (beta 0: a +0.0 fill folded into the product) or
  // from what the output holds (beta 1: nothing folded).
  Value out = op.getDpsInits()[0];
  bool accumulate = fill.buffer != out;
  if (!accumulate && !fill.zero)
    return false;
  // A buffer the printer cannot trace is the kernel printer's to report.
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // The element strides of a buffer per loop of `op`; `position[p]` is the
  // loop of its dim p, or -1 for a dim indexed by 0.
  auto strides = [&](const BufferRef &ref, ArrayRef<int> position) {
    LoopStrides loop(ranges.size(), 0);
    for (auto [p, d] : llvm::enumerate(position))
      if (d >= 0)
        loop[d] = ref.strides[p];
    return loop;
  };
  auto positions = [](AffineMap map) {
    SmallVector<int> dims;
    for (AffineExpr e : map.getResults())
      dims.push_back(isa<AffineDimExpr>(e)
                         ? int(cast<AffineDimExpr>(e).getPosition())
                         : -1);
    return dims;
  };
  auto refA = resolve(op.getDpsInputs()[0], op);
  auto refB = resolve(op.getDpsInputs()[1], op);
  auto refOut = resolve(out, op);
  if (failed(refA) || failed(refB) || failed(refOut))
    return false;
  SmallVector<int> outDims = positions(op.getIndexingMapsArray()[2]);
  LoopStrides a = strides(*refA, positions(op.getIndexingMapsArray()[0]));
  LoopStrides b = strides(*refB, positions(op.getIndexingMapsArray()[1]));
  // cuBLASLt may not write where A or B lie.
  auto outRange = byteRange(out, op);
  if (!outRange || !inputsApartFrom(op, *outRange))
    return false;

  CudaGemm gemm;
  bool swapped = false;
  BufferRef refD = *refOut;
  std::optional<BufferRef> refBias;
  // The epilogue: its output is D, read and written at the product's index
  // (identity maps), and the bias runs along cuBLASLt's rows.
  OpOperand *bias = nullptr;
  std::optional<CudaGemm::Epilogue> kind;
  if (consumer && !accumulate) {
    OpOperand *read = nullptr;
    for (OpOperand *in : consumer.getDpsInputOperands())
      if (in->get() == out && !read)
        read = in;
    kind = read ? matchGemmEpilogue(consumer, read, bias) : std::nullopt;
    AffineMap outMap =
        consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0));
    if (kind && (!consumer.getMatchingIndexingMap(read).isIdentity() ||
                 !outMap.isIdentity()))
      kind.reset();
    auto refEpi = kind ? resolve(consumer.getDpsInits()[0], consumer)
                       : FailureOr<BufferRef>(failure());
    // D's type: the product's, or with a rounding epilogue the narrower
    // type of A and B.
    Type dType =
        kind == CudaGemm::None ? refA->elementType : refOut->elementType;
    if (kind && succeeded(refEpi) && refEpi->elementType == dType &&
        layoutGemm(*loops, ranges, a, b, strides(*refEpi, outDims), gemm,
                   swapped)) {
      if (bias) {
        // The bias reads the output's dim of cuBLASLt's rows (one loop of
        // the product) with unit stride, and lies apart from D.
        ArrayRef<unsigned> rowLoops = swapped ? loops->n : loops->m;
        AffineMap map = consumer.getMatchingIndexingMap(bias);
        auto ref = resolve(bias->get(), consumer);
        auto biasRange = byteRange(bias->get(), consumer);
        auto dRange = byteRange(consumer.getDpsInits()[0], consumer);
        auto *rowPos = rowLoops.size() == 1
                           ? llvm::find(outDims, int(rowLoops[0]))
                           : outDims.end();
        std::optional<unsigned> biasDim =
            rowPos == outDims.end()
                ? std::nullopt
                : vectorAlong(map, getAffineDimExpr(rowPos - outDims.begin(),
                                                    op.getContext()));
        if (!biasDim || failed(ref) || ref->elementType != dType ||
            !(ref->strides[*biasDim] == 1 || ranges[rowLoops[0]] == 1) ||
            !biasRange || !dRange || biasRange->overlaps(*dRange))
          kind.reset();
        else
          refBias = *ref;
      }
      if (kind)
        refD = *refEpi;
    } else {
      kind.reset();
    }
  }
  if (!kind) {
    bias = nullptr;
    if (!layoutGemm(*loops, ranges, a, b, strides(*refOut, outDims), gemm,
                    swapped))
      return false;
  }

  auto dtypeOf = [](Type t) -> uint8_t {
    return t.isF32() ? 1 : t.isF16() ? 2 : 3;
  }; // kiln_dtype_t
  Type type = refA->elementType;
  gemm.dtype = dtypeOf(type);
  gemm.dDtype = dtypeOf(refD.elementType);
  gemm.epilogue = kind.value_or(CudaGemm::None);
  gemm.accumulate = accumulate;
  gemm.tf32 = options.tf32 && type.isF32();
  gemm.workspaceBytes = options.libraryWorkspaceBytes;
  CudaStep step;
  step.gemm = program.gemms.size();
  step.args = {argOf(swapped ? *refB : *refA), argOf(swapped ? *refA : *refB),
               argOf(refD),
               // The workspace, placed after the plan by lowerToCuda.
               CudaArg{CudaSpace::Arena, 0, 0}};
  if (refBias)
    step.args.push_back(argOf(*refBias));
  program.gemms.push_back(gemm);
  program.steps.push_back(std::move(step));
  // run() marks a taken epilogue as done; any other is printed on its own.
  epilogue = kind ? consumer : linalg::GenericOp();
  return true;
}

} // namespace kiln::cuda

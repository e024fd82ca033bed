//===- CudaKernels.cpp - linalg.generic ops as CUDA kernels ------------===//
//
// How one generic becomes a kernel: threads per point of its parallel
// dims, a block per point for long reductions, or one thread; a fill
// folded into the accumulator it starts; an elementwise epilogue run on
// each output element; 16-byte vector accesses; and the kernel's text
// with its launch.
//
//===----------------------------------------------------------------------===//

#include "../RunTimeSizes.h"
#include "CudaPrinter.h"
#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace kiln::cuda {

void CudaPrinter::finishKernel(Operation *op, const std::string &body,
                               const Launch &launch) {
  std::string kname = "k" + std::to_string(program.kernels.size());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// " << op->getName() << " at ";
  withoutKernel(op->getLoc()).print(os);
  os << "\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << kBlock << ") "
     << kname << "(";
  CudaStep step;
  step.kernel = program.kernels.size();
  bool first = true;
  for (auto [space, index] : params) {
    os << (first ? "" : ", ")
       << (space == CudaSpace::Dim ? "int64_t " : "char *__restrict__ ")
       << paramName(space, index);
    first = false;
    step.args.push_back({space, index, 0});
  }
  os << ") {\n";
  for (auto [space, index] : params)
    if (alignedParams && space != CudaSpace::Dim) {
      std::string name = paramName(space, index);
      os << "  " << name << " = KILN_ALIGNED(" << name << ", "
         << (space == CudaSpace::Arena ? 256 : 16) << ");\n";
      program.ioAlignment = std::max<uint32_t>(
          program.ioAlignment, space == CudaSpace::Arena ? 1 : 16);
    }
  os << body << "}\n\n";
  unsigned lines = llvm::count(text, '\n');
  program.kernels.push_back(
      {kname, op->getLoc(), line, line + lines - 1, launch.synchronizes});
  line += lines;
  program.source += text;
  step.grid = launch.grid;
  step.block = launch.block;
  // A kernel over no elements is not launched at all.
  if (launch.work > 0)
    program.steps.push_back(std::move(step));
}

/// The value `e` with combiner(e, x) == x for every x, or "" when `op` is
/// not a combiner a block reduction knows.
static std::string combinerIdentity(Operation *op) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1)
    return "";
  Type t = op->getResult(0).getType();
  if (isa<FloatType>(t)) {
    // f16 and bf16 compute in float.
    const llvm::fltSemantics &sem =
        t.isF64() ? APFloat::IEEEdouble() : APFloat::IEEEsingle();
    std::optional<APFloat> e;
    if (isa<arith::AddFOp>(op))
      e = APFloat::getZero(sem, /*Negative=*/true);
    else if (isa<arith::MulFOp>(op))
      e = APFloat(sem, 1);
    else if (isa<arith::MaximumFOp>(op))
      e = APFloat::getInf(sem, /*Negative=*/true);
    else if (isa<arith::MinimumFOp>(op))
      e = APFloat::getInf(sem, /*Negative=*/false);
    else if (isa<arith::MaxNumFOp, arith::MinNumFOp>(op))
      e = APFloat::getQNaN(sem); // fmax and fmin ignore a NaN operand
    return e ? floatLiteral(*e, t) : "";
  }
  auto it = dyn_cast<IntegerType>(t);
  if (!it)
    return "";
  unsigned w = it.getWidth();
  std::optional<APInt> e;
  if (isa<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(op))
    e = APInt::getZero(w);
  else if (isa<arith::MulIOp>(op))
    e = APInt(w, 1);
  else if (isa<arith::AndIOp, arith::MinUIOp>(op))
    e = APInt::getAllOnes(w);
  else if (isa<arith::MaxSIOp>(op))
    e = APInt::getSignedMinValue(w);
  else if (isa<arith::MinSIOp>(op))
    e = APInt::getSignedMaxValue(w);
  return e ? intLiteral(*e, t) : "";
}

/// An output of a block reduction: the payload yields combiner(acc, x)
/// and reads the output's value `acc` nowhere else.
struct BlockReduction {
  unsigned output;
  Operation *combiner;
  std::string identity;
};

/// The outputs of `op` as block reductions, or nothing when its threads
/// cannot split the inner loops: every output must either combine into one
/// element per point of the parallel dims (`reduced`), or be written at one
/// element per iteration without being read (`perIteration`).
static std::optional<SmallVector<BlockReduction>>
blockReductions(linalg::GenericOp op, const llvm::SmallBitVector &innerDims) {
  SmallVector<BlockReduction> reductions;
  Block &payload = op.getRegion().front();
  Operation *yield = payload.getTerminator();
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    bool usesInner = llvm::any_of(map.getResults(), [&](AffineExpr e) {
      return llvm::any_of(innerDims.set_bits(),
                          [&](unsigned d) { return e.isFunctionOfDim(d); });
    });
    if (usesInner) {
      // Distinct iterations write distinct elements.
      if (!map.isPermutation() || !acc.use_empty())
        return std::nullopt;
      continue;
    }
    Value yielded = yield->getOperand(i);
    Operation *combiner = yielded.getDefiningOp();
    if (!acc.hasOneUse() || !combiner || combiner->getBlock() != &payload ||
        *acc.getUsers().begin() != combiner || !yielded.hasOneUse())
      return std::nullopt;
    std::string identity = combinerIdentity(combiner);
    if (identity.empty())
      return std::nullopt;
    reductions.push_back({unsigned(i), combiner, identity});
  }
  if (reductions.empty())
    return std::nullopt;
  return reductions;
}

/// How one linalg.generic becomes a kernel.
struct GenericPlan {
  /// The loops' ranges; over symbolic dimensions, at the upper bounds (which
  /// size the launch) with `sizes` their run-time expressions.
  SmallVector<int64_t> ranges;
  SmallVector<DimExpr> sizes;
  bool dynamic = false; ///< a range depends on the run-time sizes
  bool unknown = false; ///< ... and its expression could not be traced
  SmallVector<unsigned> parallel, inner;
  llvm::SmallBitVector innerDims;
  int64_t points = 1, innerPoints = 1;
  Mapping mapping = Mapping::Threads;
  SmallVector<BlockReduction> reductions; ///< for Mapping::Block
  /// Whether output `i` is read and written at every iteration (its map
  /// uses an inner dim) rather than accumulated per point.
  bool perIteration(linalg::GenericOp op, unsigned i) const {
    if (mapping == Mapping::Serial)
      return true;
    AffineMap map = op.getMatchingIndexingMap(op.getDpsInitOperand(i));
    return llvm::any_of(map.getResults(), [&](AffineExpr e) {
      return llvm::any_of(innerDims.set_bits(),
                          [&](unsigned d) { return e.isFunctionOfDim(d); });
    });
  }
};

/// Loop `d`'s range over the symbols, from an operand indexed by it alone.
static std::optional<DimExpr> loopSize(linalg::GenericOp op, unsigned d) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    for (auto [p, e] :
         llvm::enumerate(op.getMatchingIndexingMap(&operand).getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == d)
        if (std::optional<DimExpr> size = memrefSize(operand.get(), p))
          return size;
  }
  return std::nullopt;
}

/// Threads take the points of the parallel dims when every output holds one
/// element per point (so no two threads write one element); otherwise one
/// thread runs every loop (correct, and rare). A long enough reduction whose
/// outputs all combine with a known combiner gets a block per point.
static GenericPlan planGeneric(linalg::GenericOp op) {
  GenericPlan plan;
  plan.ranges = op.getStaticLoopRanges();
  unsigned numDims = plan.ranges.size();
  for (unsigned d = 0; d < numDims; ++d) {
    if (!ShapedType::isDynamic(plan.ranges[d])) {
      plan.sizes.push_back(DimExpr::constant(plan.ranges[d]));
      continue;
    }
    plan.dynamic = true;
    std::optional<DimExpr> size = loopSize(op, d);
    std::optional<int64_t> bound =
        size ? upperBound(*size, op->getParentOfType<func::FuncOp>())
             : std::nullopt;
    plan.unknown |= !bound;
    plan.sizes.push_back(size ? *size : DimExpr::constant(1));
    plan.ranges[d] = bound ? *bound : 1;
  }
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < numDims; ++d)
    (iterators[d] == utils::IteratorType::parallel ? plan.parallel : plan.inner)
        .push_back(d);
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!llvm::all_of(plan.parallel, [&](unsigned d) {
          return map.getResultPosition(getAffineDimExpr(d, op.getContext()))
              .has_value();
        })) {
      plan.inner.clear();
      plan.parallel.clear();
      for (unsigned k = 0; k < numDims; ++k)
        plan.inner.push_back(k);
      break;
    }
  }
  plan.innerDims.resize(numDims);
  for (unsigned d : plan.inner)
    plan.innerDims.set(d);
  for (unsigned d : plan.parallel)
    plan.points *= plan.ranges[d];
  for (unsigned d : plan.inner)
    plan.innerPoints *= plan.ranges[d];
  plan.mapping = plan.parallel.empty() && !plan.inner.empty()
                     ? Mapping::Serial
                     : Mapping::Threads;
  if (plan.mapping == Mapping::Threads &&
      plan.innerPoints >= kMinBlockReduction &&
      plan.points < kMaxBlockReductionPoints) {
    if (auto reductions = blockReductions(op, plan.innerDims)) {
      plan.mapping = Mapping::Block;
      plan.reductions = std::move(*reductions);
    }
  }
  return plan;
}

/// The constant a fill (a generic storing one constant everywhere) stores,
/// or null for any other generic.
Value fillConstant(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation())
    return Value();
  Block &payload = op.getRegion().front();
  if (!llvm::hasSingleElement(payload))
    return Value();
  Value y = payload.getTerminator()->getOperand(0);
  if (auto arg = dyn_cast<BlockArgument>(y)) {
    if (arg.getArgNumber() >= op.getNumDpsInputs())
      return Value();
    y = op.getDpsInputOperand(arg.getArgNumber())->get();
  }
  return y.getDefiningOp<arith::ConstantOp>() ? y : Value();
}

std::string CudaPrinter::fillValue(linalg::GenericOp op) {
  Value c = fillConstant(op);
  return c ? name(c) : "";
}

/// Whether `consumer` can start output `buffer` from a fill's value instead
/// of reading what the fill stored: it accumulates into that output per
/// point, writes every element of it, and reads the buffer nowhere else
/// (no input is the buffer or a view of it, no load in the payload).
bool startsFromFill(linalg::GenericOp consumer, Value buffer) {
  if (llvm::any_of(consumer.getDpsInputs(),
                   [&](Value in) { return isViewOf(in, buffer); }) ||
      consumer.getRegion()
          .walk([](memref::LoadOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return false;
  GenericPlan plan = planGeneric(consumer);
  if (plan.points == 0 || plan.unknown)
    return false;
  for (auto [i, init] : llvm::enumerate(consumer.getDpsInits()))
    if (init == buffer)
      return !plan.perIteration(consumer, i) &&
             consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(i))
                 .isProjectedPermutation();
  return false;
}

bool CudaPrinter::isEpilogue(linalg::GenericOp producer,
                             linalg::GenericOp consumer) {
  // One output, accumulated per point, in the arena (a model output must be
  // stored), read by the consumer alone, through one permutation map.
  // Elementwise producers are kiln-fuse's to merge (and --no-fuse keeps
  // them apart); this is for what it leaves: a contraction's or a
  // reduction's elementwise consumer (the CPU's tile epilogues, 0015),
  // when kiln-fuse put them in one kernel.
  if (!sameKernel(producer, consumer))
    return false;
  if (producer.getNumDpsInits() != 1 || producer.getNumReductionLoops() == 0 ||
      consumer.getNumReductionLoops() != 0 || consumer.getNumDpsInits() == 0)
    return false;
  GenericPlan plan = planGeneric(producer);
  if (plan.perIteration(producer, 0) || plan.dynamic ||
      llvm::any_of(consumer.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  Value result = producer.getDpsInits()[0];
  auto range = byteRange(result, producer);
  if (!range || range->space != CudaSpace::Arena || range->constant)
    return false;
  // Read through one permutation map (x * x reads it twice, the same way).
  OpOperand *read = nullptr;
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    if (in->get() != result)
      continue;
    if (read && consumer.getMatchingIndexingMap(read) !=
                    consumer.getMatchingIndexingMap(in))
      return false;
    read = in;
  }
  if (!read || !consumer.getMatchingIndexingMap(read).isPermutation() ||
      llvm::any_of(consumer.getDpsInits(),
                   [&](Value out) { return out == result; }))
    return false;
  // Nothing after the producer reads the result but the consumer (the
  // fill before it writes it; a load nested in a loop counts at its loop).
  SmallVector<Operation *> users;
  collectViewUsers(result, users);
  Block &body = func.getBody().front();
  for (Operation *user : users) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (user == producer || user == consumer ||
        (top && top != producer && top != consumer &&
         top->isBeforeInBlock(producer)))
      continue;
    return false;
  }
  // linalg.index in the consumer would name the producer's loops; and
  // reads through memref.load (gathers) escape the overlap check below.
  if (!consumer.getRegion().front().getOps<linalg::IndexOp>().empty())
    return false;
  for (linalg::GenericOp g : {producer, consumer})
    if (g.getRegion()
            .walk([](memref::LoadOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      return false;
  // A thread writes the consumer's outputs while other threads still read
  // the producer's inputs: no output may share bytes with an input.
  for (Value out : consumer.getDpsInits()) {
    auto o = byteRange(out, consumer);
    if (!o || !inputsApartFrom(producer, *o))
      return false;
  }
  return true;
}

LogicalResult CudaPrinter::loadInput(linalg::GenericOp op, OpOperand *input,
                                     ArrayRef<std::string> dims,
                                     llvm::raw_ostream &os,
                                     const std::string &pad) {
  BlockArgument arg = op.getMatchingBlockArgument(input);
  if (!isa<MemRefType>(input->get().getType())) {
    names[arg] = name(input->get());
    if (names[arg].empty())
      return op.emitOpError("cuda: expects memref or constant inputs");
    return success();
  }
  SmallVector<std::string> idx;
  for (AffineExpr e : op.getMatchingIndexingMap(input).getResults())
    idx.push_back(affine(e, dims));
  auto padded = paddedReads.find(op);
  if (padded != paddedReads.end() && input->get() == padded->second.buffer) {
    // A padded buffer that was never written (findPadFolds): its source
    // inside the padding, the fill's constant outside.
    const PadFold &p = padded->second;
    auto source = resolve(p.source, p.copy);
    if (failed(source))
      return failure();
    ArrayRef<int64_t> shape = cast<MemRefType>(p.source.getType()).getShape();
    std::string h = "(" + idx[2] + ")", w = "(" + idx[3] + ")";
    std::string inside = h + " >= " + std::to_string(p.padH) + " && " + h +
                         " < " + std::to_string(p.padH + shape[2]) + " && " +
                         w + " >= " + std::to_string(p.padW) + " && " + w +
                         " < " + std::to_string(p.padW + shape[3]);
    SmallVector<std::string> at = {
        idx[0], idx[1], "(" + h + " - " + std::to_string(p.padH) + ")",
        "(" + w + " - " + std::to_string(p.padW) + ")"};
    std::string v = fresh();
    os << pad << cType(source->elementType) << " " << v << " = (" << inside
       << ") ? " << loaded(source->elementType, element(*source, at)) << " : "
       << fillValue(p.fill) << ";\n";
    names[arg] = v;
    return success();
  }
  auto ref = resolve(input->get(), op);
  if (failed(ref))
    return failure();
  std::string v = fresh();
  os << pad << cType(ref->elementType) << " " << v << " = "
     << loaded(ref->elementType, element(*ref, idx)) << ";\n";
  names[arg] = v;
  return success();
}

LogicalResult CudaPrinter::storeResult(linalg::GenericOp op, unsigned output,
                                       const BufferRef &ref,
                                       ArrayRef<std::string> idx,
                                       const std::string &value,
                                       llvm::raw_ostream &os, int indent) {
  std::string pad(indent, ' ');
  if (!epilogue || output != 0) {
    os << pad << element(ref, idx) << " = " << toStored(ref.elementType, value)
       << ";\n";
    return success();
  }
  // The epilogue's point is the producer's output element: its loops are
  // named by the producer's output index through the permutation map.
  linalg::GenericOp consumer = epilogue;
  Value result = op.getDpsInits()[0];
  SmallVector<std::string> dims(consumer.getNumLoops());
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    if (in->get() != result)
      continue;
    for (auto [p, e] :
         llvm::enumerate(consumer.getMatchingIndexingMap(in).getResults()))
      dims[cast<AffineDimExpr>(e).getPosition()] = "(" + idx[p] + ")";
  }
  os << pad << "{ // the epilogue at ";
  withoutKernel(consumer.getLoc()).print(os);
  os << "\n";
  std::string ipad = pad + "  ";
  Block &payload = consumer.getRegion().front();
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    BlockArgument arg = consumer.getMatchingBlockArgument(in);
    if (arg.use_empty())
      continue;
    if (in->get() == result) {
      // Rounded as the store and load it replaces would round it.
      std::string v = fresh();
      os << ipad << cType(ref.elementType) << " " << v << " = "
         << rounded(ref.elementType, value) << ";\n";
      names[arg] = v;
      continue;
    }
    if (failed(loadInput(consumer, in, dims, os, ipad)))
      return failure();
  }
  SmallVector<std::pair<BufferRef, SmallVector<std::string>>> outs;
  for (OpOperand &init : consumer.getDpsInitsMutable()) {
    auto outRef = resolve(init.get(), consumer);
    if (failed(outRef))
      return failure();
    SmallVector<std::string> outIdx;
    for (AffineExpr e : consumer.getMatchingIndexingMap(&init).getResults())
      outIdx.push_back(affine(e, dims));
    BlockArgument arg = consumer.getMatchingBlockArgument(&init);
    if (!arg.use_empty()) {
      std::string v = fresh();
      os << ipad << cType(outRef->elementType) << " " << v << " = "
         << loaded(outRef->elementType, element(*outRef, outIdx)) << ";\n";
      names[arg] = v;
    }
    outs.push_back({*outRef, outIdx});
  }
  if (failed(printBlock(payload, os, indent + 2)))
    return failure();
  for (auto [out, y] : llvm::zip(outs, payload.getTerminator()->getOperands()))
    os << ipad << element(out.first, out.second) << " = "
       << toStored(out.first.elementType, name(y)) << ";\n";
  os << pad << "}\n";
  return success();
}

unsigned CudaPrinter::vectorWidth(linalg::GenericOp op,
                                  const GenericPlan &plan) {
  // Elementwise: threads over the parallel loops, nothing inside them, no
  // index arithmetic or gathers in the payload, and no output a folded
  // fill starts (its stores were left out; printGeneric starts from its
  // value).
  if (plan.mapping != Mapping::Threads || !plan.inner.empty() ||
      plan.parallel.empty() || plan.dynamic ||
      llvm::is_contained(op.getDpsInits(), fill.buffer) ||
      op.getRegion()
          .walk([](Operation *o) {
            return isa<linalg::IndexOp, memref::LoadOp>(o)
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted())
    return 1;
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  unsigned last = plan.parallel.back(); // varies fastest between threads
  AffineExpr lastDim = getAffineDimExpr(last, op.getContext());
  int64_t size = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    // Scalars, and broadcasts along the last loop, are read once per group.
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!isa<MemRefType>(operand.get().getType()) ||
        !map.getResultPosition(lastDim))
      continue;
    auto ref = resolve(operand.get(), op);
    unsigned bits = failed(ref) || !ref->isStatic()
                        ? 0
                        : ref->elementType.getIntOrFloatBitWidth();
    if (bits == 0 || bits % 8 != 0 || (size && int64_t(bits / 8) != size))
      return 1;
    size = bits / 8;
    // Every group of points starts 16-byte aligned: unit stride along the
    // last loop, 16-byte multiples along the others and at the start (the
    // arena's and the constants' bases are 256-aligned; the caller's
    // buffers must be 16-aligned, which the runtime checks).
    if ((ref->byteOffset + size * ref->offset) % 16 != 0)
      return 1;
    for (auto [p, e] : llvm::enumerate(map.getResults())) {
      // A constant index adds a fixed offset, which must keep the alignment.
      int64_t step = isa<AffineConstantExpr>(e)
                         ? cast<AffineConstantExpr>(e).getValue()
                         : 1;
      if (e == lastDim ? ref->strides[p] != 1
                       : e.isFunctionOfDim(last) ||
                             (ref->strides[p] * step * size) % 16 != 0)
        return 1;
    }
  }
  unsigned width = size ? unsigned(16 / size) : 1;
  if (width < 2 || 16 % size != 0 || plan.ranges[last] % width != 0)
    return 1;
  return width;
}

LogicalResult CudaPrinter::printVectorized(linalg::GenericOp op,
                                           const GenericPlan &plan,
                                           unsigned width) {
  ArrayRef<int64_t> ranges = plan.ranges;
  ArrayRef<unsigned> parallel = plan.parallel;
  unsigned last = parallel.back();
  int64_t threads = plan.points / width;
  Launch launch;
  launch.work = plan.points;
  launch.block = kBlock;
  launch.grid =
      uint32_t(std::min<int64_t>(kMaxGrid, (threads + kBlock - 1) / kBlock));
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t "
        "< "
     << threads << "; t += (int64_t)gridDim.x * blockDim.x) {\n"
     << "    int64_t r = t;\n";
  // The last loop counts groups of `width` points.
  for (unsigned k = parallel.size(); k-- > 0;) {
    unsigned d = parallel[k];
    std::string var = "d" + std::to_string(d) + (d == last ? "_group" : "");
    int64_t range = d == last ? ranges[d] / width : ranges[d];
    os << "    const int64_t " << var << " = r";
    if (k > 0)
      os << " % " << range << "; r /= " << range;
    os << ";\n";
  }
  // The group's first point: every access is at it (a vector starting
  // there, or a broadcast element).
  os << "    const int64_t d" << last << " = d" << last << "_group * " << width
     << ";\n";
  SmallVector<std::string> dims;
  for (unsigned d = 0; d < ranges.size(); ++d)
    dims.push_back("d" + std::to_string(d));
  Block &payload = op.getRegion().front();
  std::string pad = "    ";
  AffineExpr lastDim = getAffineDimExpr(last, op.getContext());
  // An operand that runs along the last loop is one 16-byte vector for the
  // group (kiln_vec, aligned: NVRTC loads and stores it whole); one that
  // does not (a broadcast) is the same element for every point.
  struct Operand {
    BufferRef ref;
    std::string vector; ///< the group's kiln_vec, or "" for a broadcast
    SmallVector<std::string> idx; ///< at the group's first point
  };
  auto operandOf = [&](OpOperand &operand) -> FailureOr<Operand> {
    auto ref = resolve(operand.get(), op);
    if (failed(ref))
      return failure();
    Operand o{*ref, "", {}};
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (AffineExpr e : map.getResults())
      o.idx.push_back(affine(e, dims));
    if (map.getResultPosition(lastDim))
      o.vector = fresh();
    return o;
  };
  auto vecType = [&](const Operand &o) {
    return "kiln_vec<" + storageType(o.ref.elementType) + ", " +
           std::to_string(width) + ">";
  };
  // Loads of the group (outputs the payload reads included).
  SmallVector<DenseMap<Value, std::string>> laneNames(width);
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    if (!isa<MemRefType>(operand.get().getType())) {
      for (unsigned k = 0; k < width; ++k)
        laneNames[k][arg] = name(operand.get());
      if (name(operand.get()).empty())
        return op.emitOpError("cuda: expects memref or constant inputs");
      continue;
    }
    auto o = operandOf(operand);
    if (failed(o))
      return failure();
    Type t = o->ref.elementType;
    if (!o->vector.empty())
      os << pad << vecType(*o) << " " << o->vector << " = *(const "
         << vecType(*o) << " *)&" << element(o->ref, o->idx) << ";\n";
    std::string shared;
    for (unsigned k = 0; k < width; ++k) {
      if (!shared.empty()) {
        laneNames[k][arg] = shared;
        continue;
      }
      std::string v = fresh();
      std::string stored = o->vector.empty()
                               ? element(o->ref, o->idx)
                               : o->vector + ".v[" + std::to_string(k) + "]";
      os << pad << cType(t) << " " << v << " = " << loaded(t, stored) << ";\n";
      laneNames[k][arg] = v;
      if (o->vector.empty())
        shared = v; // a broadcast: one element for the group
    }
  }
  // Every point's payload, then the group's stores.
  SmallVector<SmallVector<std::string>> results(width);
  Operation *yield = payload.getTerminator();
  for (unsigned k = 0; k < width; ++k) {
    for (auto [arg, v] : laneNames[k])
      names[arg] = v;
    if (failed(printBlock(payload, os, 4)))
      return failure();
    for (Value y : yield->getOperands())
      results[k].push_back(name(y));
  }
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    auto o = operandOf(init);
    if (failed(o))
      return failure();
    // Outputs hold one element per point, so each runs along the last loop.
    if (o->vector.empty())
      return op.emitOpError(
          "internal error: a vectorized output without the last loop");
    os << pad << vecType(*o) << " " << o->vector << ";\n";
    for (unsigned k = 0; k < width; ++k)
      os << pad << o->vector << ".v[" << k
         << "] = " << toStored(o->ref.elementType, results[k][i]) << ";\n";
    os << pad << "*(" << vecType(*o) << " *)&" << element(o->ref, o->idx)
       << " = " << o->vector << ";\n";
  }
  os << "  }\n";
  alignedParams = true;
  finishKernel(op, body, launch);
  alignedParams = false;
  return success();
}

LogicalResult CudaPrinter::printGeneric(linalg::GenericOp op) {
  GenericPlan plan = planGeneric(op);
  if (plan.unknown)
    return op.emitOpError(
        "cuda: cannot compute a loop's range from the run-time sizes");
  ArrayRef<int64_t> ranges = plan.ranges;
  ArrayRef<unsigned> parallel = plan.parallel, inner = plan.inner;
  int64_t points = plan.points, innerPoints = plan.innerPoints;
  Mapping mapping = plan.mapping;
  unsigned numDims = ranges.size();
  SmallVector<std::string> dims;
  for (unsigned d = 0; d < numDims; ++d)
    dims.push_back("d" + std::to_string(d));
  // The ranges as the kernel reads them: numbers, or over symbolic
  // dimensions expressions of the run-time sizes (the launch is sized for
  // the bounds, and the loops stop at the run's sizes).
  SmallVector<std::string> rangeText;
  auto countText = [&](ArrayRef<unsigned> loops, int64_t count) {
    if (!plan.dynamic)
      return std::to_string(count);
    DimExpr product = DimExpr::constant(1);
    for (unsigned d : loops)
      product = product * plan.sizes[d];
    return symbolic(product);
  };
  for (unsigned d = 0; d < numDims; ++d)
    rangeText.push_back(plan.dynamic ? symbolic(plan.sizes[d])
                                     : std::to_string(ranges[d]));
  std::string pointsText = countText(parallel, points),
              innerPointsText = countText(inner, innerPoints);

  // Elementwise kernels take `width` consecutive points a thread, which
  // NVRTC turns into 16-byte loads and stores.
  if (unsigned width = vectorWidth(op, plan); width > 1)
    return printVectorized(op, plan, width);
  Launch launch;
  // A point with an empty reduction still stores its output's start value.
  launch.work = mapping == Mapping::Serial ? innerPoints : points;
  launch.synchronizes = mapping == Mapping::Block;
  if (mapping == Mapping::Serial) {
    launch.grid = launch.block = 1;
  } else if (mapping == Mapping::Threads) {
    launch.block = kBlock;
    launch.grid =
        uint32_t(std::min<int64_t>(kMaxGrid, (points + kBlock - 1) / kBlock));
  } else {
    // A power of two, for the tree; no more threads than elements per row.
    launch.block = std::min<uint32_t>(kBlock, llvm::PowerOf2Ceil(innerPoints));
    launch.grid = uint32_t(std::min<int64_t>(kMaxGrid, points));
  }

  std::string body;
  llvm::raw_string_ostream os(body);
  std::string pad = "  ";
  // The flat index `flat` over `dimsOf` (the last varies fastest) decoded
  // into the loop variables.
  auto decode = [&](ArrayRef<unsigned> dimsOf, StringRef flat, StringRef rest,
                    int indent) {
    std::string p(indent, ' ');
    os << p << "int64_t " << rest << " = " << flat << ";\n";
    for (unsigned k = dimsOf.size(); k-- > 0;) {
      unsigned d = dimsOf[k];
      if (k == 0)
        os << p << "const int64_t d" << d << " = " << rest << ";\n";
      else
        os << p << "const int64_t d" << d << " = " << rest << " % "
           << rangeText[d] << "; " << rest << " /= " << rangeText[d] << ";\n";
    }
    if (dimsOf.empty())
      os << p << "(void)" << rest << ";\n";
  };
  if (mapping == Mapping::Serial) {
    os << "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n  {\n";
  } else if (mapping == Mapping::Threads) {
    os << "  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; "
          "t < "
       << pointsText << "; t += (int64_t)gridDim.x * blockDim.x) {\n";
    decode(parallel, "t", "r", 4);
  } else {
    for (const BlockReduction &red : plan.reductions)
      os << "  __shared__ "
         << cType(getElementTypeOrSelf(op.getDpsInits()[red.output].getType()))
         << " kiln_partial" << red.output << "[" << kBlock << "];\n";
    os << "  for (int64_t t = blockIdx.x; t < " << pointsText
       << "; t += gridDim.x) {\n";
    decode(parallel, "t", "r", 4);
  }

  Block &payload = op.getRegion().front();
  Operation *yield = payload.getTerminator();
  // Outputs indexed by the parallel dims only: accumulators loaded before
  // the inner loops (a block reduction starts from the combiner's
  // identity instead), stored after. The others are read and written at
  // every iteration.
  struct Output {
    BufferRef ref;
    SmallVector<std::string> idx;
    std::string acc; ///< empty for an output written per iteration
  };
  SmallVector<Output> outputs;
  int indent = 4;
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    auto ref = resolve(init.get(), op);
    if (failed(ref))
      return failure();
    Output out{*ref, {}, ""};
    for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults())
      out.idx.push_back(affine(e, dims));
    if (!plan.perIteration(op, i)) {
      BlockArgument arg = op.getMatchingBlockArgument(&init);
      out.acc = fresh();
      std::string ty = cType(ref->elementType);
      os << pad << "  " << ty << " " << out.acc;
      // (The index is copied: C++17 lambdas cannot capture a binding.)
      if (unsigned output = i; mapping == Mapping::Block)
        os << " = "
           << llvm::find_if(plan.reductions, [&](const BlockReduction &r) {
                return r.output == output;
              })->identity;
      else if (init.get() == fill.buffer)
        os << " = " << fill.value;
      else if (!inner.empty() || !arg.use_empty())
        os << " = " << loaded(ref->elementType, element(*ref, out.idx));
      os << ";\n";
      names[arg] = out.acc;
    }
    outputs.push_back(std::move(out));
  }
  if (mapping == Mapping::Block) {
    os << "    for (int64_t l = threadIdx.x; l < " << innerPointsText
       << "; l += blockDim.x) {\n";
    decode(inner, "l", "q", 6);
    indent = 6;
  } else {
    for (unsigned d : inner) {
      os << std::string(indent, ' ') << "for (int64_t d" << d << " = 0; d" << d
         << " < " << rangeText[d] << "; ++d" << d << ") {\n";
      indent += 2;
    }
  }
  std::string ipad(indent, ' ');
  for (auto [init, out] : llvm::zip(op.getDpsInitsMutable(), outputs)) {
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    if (!out.acc.empty() || arg.use_empty())
      continue;
    std::string v = fresh();
    os << ipad << cType(out.ref.elementType) << " " << v << " = "
       << loaded(out.ref.elementType, element(out.ref, out.idx)) << ";\n";
    names[arg] = v;
  }
  for (OpOperand *input : op.getDpsInputOperands())
    if (!op.getMatchingBlockArgument(input).use_empty() &&
        failed(loadInput(op, input, dims, os, ipad)))
      return failure();
  if (failed(printBlock(payload, os, indent)))
    return failure();
  for (auto [out, y] : llvm::zip(outputs, yield->getOperands())) {
    if (out.acc.empty())
      os << ipad << element(out.ref, out.idx) << " = "
         << toStored(out.ref.elementType, name(y)) << ";\n";
    else
      os << ipad << out.acc << " = " << name(y) << ";\n";
  }
  if (mapping == Mapping::Block) {
    os << "    }\n";
    // Each thread's partial into shared memory, then a tree over the
    // block's (power-of-two many) threads; thread 0 combines the result
    // into the output's value.
    auto combine = [&](const BlockReduction &red, const std::string &acc,
                       const std::string &other, int at) {
      BlockArgument arg = op.getRegionOutputArgs()[red.output];
      for (Value operand : red.combiner->getOperands())
        names[operand] = operand == arg ? acc : other;
      if (failed(printOp(red.combiner, os, at)))
        return std::string();
      return name(red.combiner->getResult(0));
    };
    for (const BlockReduction &red : plan.reductions)
      os << "    kiln_partial" << red.output
         << "[threadIdx.x] = " << outputs[red.output].acc << ";\n";
    os << "    __syncthreads();\n";
    os << "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n";
    os << "      if (threadIdx.x < s) {\n";
    for (const BlockReduction &red : plan.reductions) {
      std::string slot = "kiln_partial" + std::to_string(red.output);
      std::string v =
          combine(red, slot + "[threadIdx.x]", slot + "[threadIdx.x + s]", 8);
      if (v.empty())
        return failure();
      os << "        " << slot << "[threadIdx.x] = " << v << ";\n";
    }
    os << "      }\n      __syncthreads();\n    }\n";
    os << "    if (threadIdx.x == 0) {\n";
    for (const BlockReduction &red : plan.reductions) {
      const Output &out = outputs[red.output];
      std::string init = fresh();
      os << "      " << cType(out.ref.elementType) << " " << init << " = "
         << (op.getDpsInits()[red.output] == fill.buffer
                 ? fill.value
                 : loaded(out.ref.elementType, element(out.ref, out.idx)))
         << ";\n";
      std::string v = combine(
          red, init, "kiln_partial" + std::to_string(red.output) + "[0]", 6);
      if (v.empty())
        return failure();
      if (failed(storeResult(op, red.output, out.ref, out.idx, v, os, 6)))
        return failure();
    }
    os << "    }\n";
    // The next row reuses the shared slots.
    os << "    __syncthreads();\n";
  } else {
    for (unsigned k = 0; k < inner.size(); ++k) {
      indent -= 2;
      os << std::string(indent, ' ') << "}\n";
    }
    for (auto [i, out] : llvm::enumerate(outputs))
      if (!out.acc.empty() &&
          failed(storeResult(op, i, out.ref, out.idx, out.acc, os, 4)))
        return failure();
  }
  os << "  }\n";
  finishKernel(op, body, launch);
  return success();
}

LogicalResult CudaPrinter::printSerial(Operation *op) {
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n";
  if (failed(printOp(op, os, 2)))
    return failure();
  finishKernel(op, body, Launch{1, 1, 1, false});
  return success();
}

} // namespace kiln::cuda

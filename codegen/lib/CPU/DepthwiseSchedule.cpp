//===- DepthwiseSchedule.cpp - depthwise convolutions as row FMAs ---------===//
//
// A depthwise convolution (one input and one output channel per group) has
// too little reuse for the matmul schedule: im2col copies each input
// element once per filter tap to feed a matmul of one row, so the copy
// costs more than the arithmetic. Instead each output row is computed in
// place from the input rows it reads: for every chunk of `width` output
// columns, one accumulator vector, and per filter tap one vector of input
// (contiguous at stride 1; read wider and compacted by a shuffle at larger
// strides) times the tap's weight broadcast. Taps and column chunks are
// unrolled (they are few and static), rows, channels and batch are loops.
// At stride 1 over a small plane that the padding keeps its size, the
// whole plane is one flat row instead (flatPlan), so narrow rows do not
// leave lanes idle.
//
//===----------------------------------------------------------------------===//

#include "DepthwiseSchedule.h"
#include "FuseEpilogues.h"
#include "ScheduleUtils.h"
#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace {

/// The shape facts of a 2-D depthwise convolution generic.
struct Depthwise {
  int64_t n, g, oh, ow, kh, kw;
  int64_t strideH, strideW, dilationH, dilationW;
  bool maxPool = false; ///< max over the window, no filter
};

/// The window of a depthwise convolution or pooling: results `first` and
/// `first + 1` of `in` read o*s + w*d, with the output rows and columns at
/// loops `oh`, `oh + 1` and the taps at `kh`, `kh + 1`.
bool matchWindow(AffineMap in, unsigned first, unsigned oh, unsigned kh,
                 Depthwise &dw) {
  auto rows = kiln::linearWindow(in, first, oh, kh);
  auto cols = kiln::linearWindow(in, first + 1, oh + 1, kh + 1);
  if (!rows || !cols)
    return false;
  std::tie(dw.strideH, dw.dilationH) = *rows;
  std::tie(dw.strideW, dw.dilationW) = *cols;
  return true;
}

/// The batch, channel, output and window extents of `dw` from the loop
/// ranges: batch and channel are loops 0 and 1, the output rows and columns
/// `oh` and `oh + 1`, the window's `kh` and `kh + 1`.
void setExtents(Depthwise &dw, ArrayRef<int64_t> ranges, unsigned oh,
                unsigned kh) {
  dw.n = ranges[0];
  dw.g = ranges[1];
  dw.oh = ranges[oh];
  dw.ow = ranges[oh + 1];
  dw.kh = ranges[kh];
  dw.kw = ranges[kh + 1];
}

/// A static f32 generic on tensors with two inputs and one output, whose
/// `numLoops` loops are `numParallel` parallel ones, then reductions.
bool isWindowNest(linalg::GenericOp op, unsigned numLoops,
                  unsigned numParallel) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.hasDynamicShape() ||
      op.getNumLoops() != numLoops)
    return false;
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return false;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  for (unsigned i = 0; i < numLoops; ++i)
    if ((i < numParallel) != (iters[i] == utils::IteratorType::parallel))
      return false;
  return true;
}

/// Matches the max pooling generic of kiln-lower-to-linalg: loops (n, c,
/// oh, ow, kh, kw), input [N, C, H, W] read at o*s + w*d, a window tensor
/// [KH, KW] that is never read, output [N, C, OH, OW], body max(out, in),
/// all f32.
std::optional<Depthwise> matchMaxPool(linalg::GenericOp pool) {
  if (!isWindowNest(pool, 6, 4))
    return std::nullopt;
  MLIRContext *ctx = pool.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = pool.getIndexingMapsArray();
  AffineMap in = maps[0];
  if (maps[1] != AffineMap::get(6, 0, {d(4), d(5)}, ctx) ||
      maps[2] != AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx) ||
      in.getNumResults() != 4 || in.getNumSymbols() != 0 ||
      in.getResult(0) != d(0) || in.getResult(1) != d(1))
    return std::nullopt;
  Depthwise dw{};
  if (!matchWindow(in, 2, 2, 4, dw))
    return std::nullopt;
  Block &body = pool.getRegion().front();
  if (body.getOperations().size() != 2 || !body.getArgument(1).use_empty())
    return std::nullopt;
  auto max = dyn_cast<arith::MaximumFOp>(&body.front());
  if (!max || max.getLhs() != body.getArgument(2) ||
      max.getRhs() != body.getArgument(0))
    return std::nullopt;
  setExtents(dw, pool.getStaticLoopRanges(), 2, 4);
  dw.maxPool = true;
  return dw;
}

/// Matches the convolution generic of kiln-lower-to-linalg (loops n, g, mg,
/// oh, ow, cg, kh, kw; input [N, G, Cg, H, W] read at (o*s + w*d), filter
/// [G, Mg, Cg, KH, KW], output [N, G, Mg, OH, OW], body out + in * filter)
/// with Mg = Cg = 1 and f32 operands.
std::optional<Depthwise> matchDepthwise(linalg::GenericOp conv) {
  if (!isWindowNest(conv, 8, 5))
    return std::nullopt;
  MLIRContext *ctx = conv.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = conv.getIndexingMapsArray();
  if (maps[1] != AffineMap::get(8, 0, {d(1), d(2), d(5), d(6), d(7)}, ctx) ||
      maps[2] != AffineMap::get(8, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx))
    return std::nullopt;
  AffineMap in = maps[0];
  if (in.getNumResults() != 5 || in.getNumSymbols() != 0 ||
      in.getResult(0) != d(0) || in.getResult(1) != d(1) ||
      in.getResult(2) != d(5))
    return std::nullopt;
  // The spatial results must be linear: o*s + w*d with no offset (padding
  // is a separate tensor.pad).
  Depthwise dw{};
  if (!matchWindow(in, 3, 3, 6, dw))
    return std::nullopt;
  // Body: out + in * filter.
  if (!kiln::isMultiplyAccumulate(conv))
    return std::nullopt;
  SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
  if (ranges[2] != 1 || ranges[5] != 1)
    return std::nullopt;
  setExtents(dw, ranges, 3, 6);
  return dw;
}

} // namespace

namespace {

/// Where the taps read: the convolution's input, or, when that input is the
/// zero padding of another tensor (tensor.pad, then the expand_shape that
/// adds the unit Cg dim), that tensor, with the padding handled by leaving
/// out the taps that fall on it.
struct Source {
  Value tensor;
  bool hasCgDim; ///< [N, G, 1, H, W] rather than [N, G, H, W]
  int64_t h, w;  ///< rows and columns of `tensor`
  int64_t padTop = 0, padLeft = 0;
};

/// The source behind `pad`, a static [N, C, H, W] tensor.pad of the spatial
/// dims only whose padding value is `isPadding`: the taps that fall on the
/// padding are left out instead of read. Null when `pad` is not one.
std::optional<Source> padSource(tensor::PadOp pad,
                                llvm::function_ref<bool(Value)> isPadding) {
  if (!pad || pad.getSourceType().getRank() != 4 ||
      !pad.getSourceType().hasStaticShape() || pad.getNofold())
    return std::nullopt;
  Value fill = pad.getConstantPaddingValue();
  if (!fill || !isPadding(fill))
    return std::nullopt;
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  for (ArrayRef<int64_t> side : {low, high})
    for (int64_t v : side)
      if (ShapedType::isDynamic(v) || v < 0)
        return std::nullopt;
  if (low[0] || low[1] || high[0] || high[1])
    return std::nullopt;
  RankedTensorType src = pad.getSourceType();
  Source padded{pad.getSource(), false, src.getDimSize(2), src.getDimSize(3)};
  padded.padTop = low[2];
  padded.padLeft = low[3];
  return padded;
}

/// For max pooling: the input, or, when it is the -inf padding of another
/// tensor, that tensor.
Source findPoolSource(Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  auto negativeInfinity = [](Value fill) {
    FloatAttr value;
    return matchPattern(fill, m_Constant(&value)) &&
           value.getValue().isInfinity() && value.getValue().isNegative();
  };
  if (std::optional<Source> padded =
          padSource(input.getDefiningOp<tensor::PadOp>(), negativeInfinity))
    return *padded;
  return Source{input, false, type.getDimSize(2), type.getDimSize(3)};
}

/// For a depthwise convolution: the input, or, when it is the zero padding
/// of another tensor (tensor.pad, then the expand_shape that adds the unit
/// Cg dim), that tensor.
Source findSource(Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  Source direct{input, true, type.getDimSize(3), type.getDimSize(4)};
  auto expand = input.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand)
    return direct;
  SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
  if (groups.size() != 4 || groups[0] != ReassociationIndices{0} ||
      groups[1] != ReassociationIndices{1, 2} ||
      groups[2] != ReassociationIndices{3} ||
      groups[3] != ReassociationIndices{4})
    return direct;
  auto zero = [](Value fill) { return matchPattern(fill, m_AnyZeroFloat()); };
  if (std::optional<Source> padded =
          padSource(expand.getSrc().getDefiningOp<tensor::PadOp>(), zero))
    return *padded;
  return direct;
}

/// Most FMAs per channel emitted for a convolution computed as one flat
/// row (the unrolled chunks and one period of the loop).
constexpr int64_t kMaxFlatFmas = 1024;

/// Most chunks of a flat row planned to count its FMAs, and most chunks in
/// the period of a flat row longer than kMaxFlatFmas allows unrolled.
constexpr int64_t kMaxPlannedChunks = 4096;
constexpr int64_t kMaxPeriodChunks = 8;

/// Most chunks of a flat row unrolled whole; a longer one loops over its
/// periods (RowEmitter::emitPlane).
constexpr int64_t kMaxUnrolledChunks = 32;

/// One tap of a chunk of a flat row: what it reads, relative to the
/// chunk's first position, and which lane of the read each lane takes.
struct TapPlan {
  int64_t tap;               ///< i * kw + j
  int64_t readOffset;        ///< the read starts this far from the chunk
  bool shuffle;              ///< the lanes are moved (the read was clamped)
  SmallVector<int64_t> from; ///< the lane read, or -1 on the padding
  bool operator==(const TapPlan &o) const {
    return std::tie(tap, readOffset, shuffle, from) ==
           std::tie(o.tap, o.readOffset, o.shuffle, o.from);
  }
};

/// The taps of one chunk of `lanes` positions of a flat row.
struct ChunkPlan {
  int64_t lanes;
  SmallVector<TapPlan> taps;
  bool operator==(const ChunkPlan &o) const {
    return lanes == o.lanes && taps == o.taps;
  }
};

/// A flat row's chunks, and the periods [loopFirst, loopLast) of `period`
/// positions (perPeriod chunks) run as one loop (none when equal).
struct FlatPlan {
  SmallVector<ChunkPlan> chunks;
  int64_t period = 0, perPeriod = 0, loopFirst = 0, loopLast = 0;

  /// The FMAs emitted per channel: the unrolled chunks' and one period's.
  int64_t emittedFmas() const {
    int64_t lo = loopFirst * perPeriod, hi = loopLast * perPeriod;
    int64_t fmas = 0;
    for (auto [c, chunk] : llvm::enumerate(chunks))
      if (int64_t(c) < lo + perPeriod || int64_t(c) >= hi)
        fmas += chunk.taps.size();
    return fmas;
  }
};

/// The taps of the chunk at position `first` of `dw`'s flat row.
ChunkPlan planChunk(const Depthwise &dw, const Source &src, int64_t width,
                    int64_t first) {
  int64_t positions = dw.oh * dw.ow;
  ChunkPlan plan{std::min(width, positions - first), {}};
  for (int64_t i = 0; i < dw.kh; ++i) {
    int64_t rowOffset = i * dw.dilationH - src.padTop;
    for (int64_t j = 0; j < dw.kw; ++j) {
      int64_t colOffset = j * dw.dilationW - src.padLeft;
      int64_t start = first + rowOffset * src.w + colOffset;
      int64_t readAt = std::clamp<int64_t>(start, 0, positions - width);
      TapPlan tap{i * dw.kw + j, readAt - first, readAt != start, {}};
      for (int64_t l = 0; l < width; ++l) {
        int64_t p = first + l;
        int64_t r = p / dw.ow + rowOffset, c = p % dw.ow + colOffset;
        bool inside =
            l < plan.lanes && r >= 0 && r < src.h && c >= 0 && c < src.w;
        tap.from.push_back(inside ? start + l - readAt : -1);
      }
      if (llvm::any_of(tap.from, [](int64_t f) { return f >= 0; }))
        plan.taps.push_back(std::move(tap));
      // else the tap reads only padding
    }
  }
  return plan;
}

/// Plans `dw`'s flat row: which lanes are padding repeats every
/// lcm(ow, width) positions (a period) between the plane's top and bottom
/// rows, so on a row of more than kMaxUnrolledChunks chunks the longest
/// run of periods planned alike is one loop over the period.
FlatPlan planFlatRow(const Depthwise &dw, const Source &src, int64_t width) {
  FlatPlan plan;
  int64_t positions = dw.oh * dw.ow;
  int64_t numChunks = (positions + width - 1) / width;
  for (int64_t c = 0; c < numChunks; ++c)
    plan.chunks.push_back(planChunk(dw, src, width, c * width));
  plan.period = std::lcm(dw.ow, width);
  plan.perPeriod = plan.period / width;
  int64_t numPeriods = positions / plan.period;
  ArrayRef<ChunkPlan> chunks = plan.chunks;
  auto samePeriods = [&](int64_t a, int64_t b) {
    return llvm::equal(chunks.slice(a * plan.perPeriod, plan.perPeriod),
                       chunks.slice(b * plan.perPeriod, plan.perPeriod));
  };
  int64_t first = 0, last = 0;
  for (int64_t a = 0; a < numPeriods;) {
    int64_t b = a + 1;
    while (b < numPeriods && samePeriods(a, b))
      ++b;
    if (b - a > last - first)
      std::tie(first, last) = std::make_pair(a, b);
    a = b;
  }
  // A short plane stays unrolled: a loop of a few periods costs more
  // than it saves (14x14 planes ran 10% slower as two periods looped).
  if (numChunks > kMaxUnrolledChunks && last - first >= 2) {
    plan.loopFirst = first;
    plan.loopLast = last;
  }
  return plan;
}

/// The plan of `dw`, reading `src`, when it is computed as one flat row of
/// `oh * ow` positions per channel rather than row by row: rows narrower
/// than a vector waste lanes and splice their padding into odd-sized
/// vectors, while at stride 1 over a source plane of the output's size
/// (zero padding on every side) a tap reads the flat input at a constant
/// offset from the flat output position, so every read is one full vector
/// and only the lanes whose tap falls on the padding are zeroed.
std::optional<FlatPlan> flatPlan(const Depthwise &dw, const Source &src,
                                 int64_t width) {
  int64_t positions = dw.oh * dw.ow;
  if (dw.maxPool || dw.strideH != 1 || dw.strideW != 1 || src.h != dw.oh ||
      src.w != dw.ow || positions < width)
    return std::nullopt;
  int64_t chunks = (positions + width - 1) / width;
  if (chunks * dw.kh * dw.kw <= kMaxFlatFmas)
    return planFlatRow(dw, src, width);
  // Longer rows, where looping over short periods keeps the code short:
  // only those whose rows leave a remainder chunk (row by row, a narrower
  // vector per row), since over whole vectors the row FMAs do the same,
  // and whose period is a few chunks (a 37-column row repeats its pattern
  // only every 37 chunks: more code than the rows').
  if (dw.ow % width == 0 || std::lcm(dw.ow, width) / width > kMaxPeriodChunks ||
      chunks > kMaxPlannedChunks)
    return std::nullopt;
  FlatPlan plan = planFlatRow(dw, src, width);
  if (plan.emittedFmas() > kMaxFlatFmas)
    return std::nullopt;
  return plan;
}

/// Emits the vector code of one output row `oh` (a loop variable, or a
/// constant on the edge rows, with `rowOf(i)` the input row of tap i, or
/// nullopt when it falls on the padding).
class RowEmitter {
public:
  RowEmitter(RewriterBase &rewriter, Location loc, const Depthwise &dw,
             const Source &src, Value filter, int64_t width, Value initial,
             linalg::GenericOp epilogue)
      : rewriter(rewriter), loc(loc), dw(dw), src(src), filter(filter),
        width(width), initial(initial), epilogue(epilogue) {}

  /// Where output element (n, g, oh, col) is: [N, G, 1, OH, OW] for a
  /// convolution, [N, C, OH, OW] for a pooling.
  SmallVector<Value> outIndices(Value n, Value g, Value oh, Value col) {
    if (dw.maxPool)
      return {n, g, oh, col};
    return {n, g, index(0), oh, col};
  }

  /// The loop of the epilogue (over the output's dims) along the row.
  unsigned epilogueRowDim() const { return dw.maxPool ? 3 : 4; }

  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  }

  /// The broadcast weight of every tap, for channel g.
  void loadWeights(Value g) {
    weights.clear();
    Value zero = index(0);
    for (int64_t i = 0; i < dw.kh; ++i)
      for (int64_t j = 0; j < dw.kw; ++j) {
        Value hi = index(i);
        Value wj = index(j);
        Value w = tensor::ExtractOp::create(rewriter, loc, filter,
                                            ValueRange{g, zero, zero, hi, wj});
        weights.push_back(w);
      }
  }

  /// Accumulates row `oh` of channel g of image n into `out`; `rows[i]` is
  /// the source row of tap i, null when it is padding.
  Value emit(Value out, Value n, Value g, Value oh, ArrayRef<Value> rows) {
    Type f32 = rewriter.getF32Type();
    Value padding =
        arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
    int64_t chunks = (dw.ow + width - 1) / width;
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t col = c * width;
      int64_t lanes = std::min(width, dw.ow - col);
      auto vecTy = VectorType::get({lanes}, f32);
      Value colIndex = index(col);
      Value acc =
          initial
              ? vector::BroadcastOp::create(rewriter, loc, vecTy, initial)
                    .getResult()
              : vector::TransferReadOp::create(rewriter, loc, vecTy, out,
                                               outIndices(n, g, oh, colIndex),
                                               padding, ArrayRef<bool>{true})
                    .getResult();
      // At stride s the taps read lanes*s - (s - 1) consecutive inputs, of
      // which every s-th is used.
      int64_t span = (lanes - 1) * dw.strideW + 1;
      SmallVector<int64_t> picks;
      for (int64_t l = 0; l < lanes; ++l)
        picks.push_back(l * dw.strideW);
      for (int64_t i = 0; i < dw.kh; ++i) {
        if (!rows[i])
          continue;
        for (int64_t j = 0; j < dw.kw; ++j) {
          int64_t start = col * dw.strideW + j * dw.dilationW - src.padLeft;
          int64_t lo = std::max<int64_t>(0, start);
          int64_t hi = std::min<int64_t>(src.w, start + span);
          if (hi <= lo)
            continue; // the tap reads only padding
          // At stride s a read of lanes*s elements (whole vectors, the last
          // s - 1 unused) where the row has them: an odd span would be
          // loaded in pieces.
          bool whole = dw.strideW != 1 && lo == start && hi == start + span &&
                       start + lanes * dw.strideW <= src.w;
          Value x =
              read(n, g, rows[i], lo, whole ? lanes * dw.strideW : hi - lo);
          if (!whole && (lo != start || hi != start + span)) {
            // Part padding: the read lands inside a vector of the padding
            // value (zero; -inf for a max).
            auto spanTy = VectorType::get({span}, f32);
            Value pads = arith::ConstantOp::create(
                rewriter, loc, spanTy,
                DenseElementsAttr::get(
                    spanTy,
                    rewriter.getF32FloatAttr(dw.maxPool ? -INFINITY : 0)));
            x = vector::InsertStridedSliceOp::create(
                rewriter, loc, x, pads, ArrayRef<int64_t>{lo - start},
                ArrayRef<int64_t>{1});
          }
          if (dw.strideW != 1)
            x = vector::ShuffleOp::create(rewriter, loc, x, x, picks);
          if (dw.maxPool) {
            acc = arith::MaximumFOp::create(rewriter, loc, acc, x);
            continue;
          }
          Value w = vector::BroadcastOp::create(rewriter, loc, vecTy,
                                                weights[i * dw.kw + j]);
          acc = vector::FMAOp::create(rewriter, loc, x, w, acc);
        }
      }
      if (epilogue)
        acc = kiln::emitEpilogueRow(rewriter, loc, epilogue, acc,
                                    outIndices(n, g, oh, colIndex),
                                    epilogueRowDim());
      out = vector::TransferWriteOp::create(rewriter, loc, acc, out,
                                            outIndices(n, g, oh, colIndex),
                                            ArrayRef<bool>{true})
                .getResult();
    }
    return out;
  }

  /// Accumulates channel g of image n into `out` as one row of oh * ow
  /// positions (flatPlan), chunk by chunk as `plan` says: `source` and
  /// `out` have each plane collapsed to one dim. All taps of a chunk of
  /// positions read the source at one offset from the chunk; lanes whose
  /// tap falls on the padding (a column off the row's end, or a row off the
  /// plane) are zeroed by a select, or, where the offset leaves the plane,
  /// by the shuffle that lines up a read from inside it. The periods the
  /// plan loops over keep the code a few periods long, and so the chain of
  /// writes to `out` that one-shot bufferization walks (quadratic in its
  /// length: unrolled, the 98 chunks of MobileNetV2's 28x28 planes took
  /// most of its compile).
  Value emitPlane(Value out, Value n, Value g, Value source,
                  const FlatPlan &plan) {
    auto vecTy = VectorType::get({width}, rewriter.getF32Type());
    Value padding =
        arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
    Value zeros = arith::ConstantOp::create(
        rewriter, loc, vecTy,
        DenseElementsAttr::get(vecTy, rewriter.getF32FloatAttr(0)));
    auto chunk = [&](Value into, Value at, const ChunkPlan &chunkPlan) {
      return emitChunk(into, n, g, source, at, chunkPlan, padding, zeros);
    };
    int64_t numChunks = plan.chunks.size();
    int64_t lo = plan.loopFirst * plan.perPeriod;
    int64_t hi = plan.loopLast * plan.perPeriod;
    for (int64_t c = 0; c < lo; ++c)
      out = chunk(out, index(c * width), plan.chunks[c]);
    if (lo < hi) {
      auto loop =
          scf::ForOp::create(rewriter, loc, index(plan.loopFirst),
                             index(plan.loopLast), index(1), ValueRange{out});
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      Value base = arith::MulIOp::create(rewriter, loc, loop.getInductionVar(),
                                         index(plan.period));
      Value body = loop.getRegionIterArg(0);
      for (int64_t c = 0; c < plan.perPeriod; ++c)
        body = chunk(body, offset(base, c * width), plan.chunks[lo + c]);
      scf::YieldOp::create(rewriter, loc, body);
      out = loop.getResult(0);
    }
    for (int64_t c = std::max(lo, hi); c < numChunks; ++c)
      out = chunk(out, index(c * width), plan.chunks[c]);
    return out;
  }

private:
  /// `base + delta`, folded when `base` is a constant.
  Value offset(Value base, int64_t delta) {
    if (std::optional<int64_t> known = getConstantIntValue(base))
      return index(*known + delta);
    if (delta == 0)
      return base;
    return arith::AddIOp::create(rewriter, loc, base, index(delta));
  }

  /// Accumulates the chunk of a flat row at position `at`, planned by
  /// `plan`, into `out`; `padding` is the f32 zero, `zeros` a vector of
  /// them.
  Value emitChunk(Value out, Value n, Value g, Value source, Value at,
                  const ChunkPlan &plan, Value padding, Value zeros) {
    Type f32 = rewriter.getF32Type();
    auto vecTy = VectorType::get({width}, f32);
    int64_t lanes = plan.lanes;
    Value acc;
    if (initial) {
      acc = vector::BroadcastOp::create(rewriter, loc, vecTy, initial);
    } else {
      acc = vector::TransferReadOp::create(
          rewriter, loc, VectorType::get({lanes}, f32), out,
          ValueRange{n, g, at}, padding, ArrayRef<bool>{true});
      if (lanes != width)
        acc = vector::InsertStridedSliceOp::create(rewriter, loc, acc, zeros,
                                                   ArrayRef<int64_t>{0},
                                                   ArrayRef<int64_t>{1});
    }
    for (const TapPlan &tap : plan.taps) {
      Value x = vector::TransferReadOp::create(
          rewriter, loc, vecTy, source,
          ValueRange{n, g, offset(at, tap.readOffset)}, padding,
          ArrayRef<bool>{true});
      if (tap.shuffle) {
        SmallVector<int64_t> picks;
        for (int64_t f : tap.from)
          picks.push_back(f < 0 ? width : f); // a lane of `zeros`
        x = vector::ShuffleOp::create(rewriter, loc, x, zeros, picks);
      } else if (llvm::any_of(tap.from, [](int64_t f) { return f < 0; })) {
        auto maskTy = VectorType::get({width}, rewriter.getI1Type());
        SmallVector<bool> inside;
        for (int64_t f : tap.from)
          inside.push_back(f >= 0);
        Value mask = arith::ConstantOp::create(
            rewriter, loc, maskTy, DenseElementsAttr::get(maskTy, inside));
        x = arith::SelectOp::create(rewriter, loc, mask, x, zeros);
      }
      Value w =
          vector::BroadcastOp::create(rewriter, loc, vecTy, weights[tap.tap]);
      acc = vector::FMAOp::create(rewriter, loc, x, w, acc);
    }
    if (epilogue) {
      Value zero = index(0);
      acc =
          kiln::emitEpilogueRow(rewriter, loc, epilogue, acc,
                                outIndices(n, g, zero, zero), epilogueRowDim());
    }
    if (lanes != width)
      acc = vector::ExtractStridedSliceOp::create(
          rewriter, loc, acc, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{lanes},
          ArrayRef<int64_t>{1});
    return vector::TransferWriteOp::create(rewriter, loc, acc, out,
                                           ValueRange{n, g, at},
                                           ArrayRef<bool>{true})
        .getResult();
  }

  /// `count` source elements of row `row` from column `col`.
  Value read(Value n, Value g, Value row, int64_t col, int64_t count) {
    auto type = VectorType::get({count}, rewriter.getF32Type());
    Value padding =
        arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
    Value colIndex = index(col);
    SmallVector<Value> indices = {n, g};
    if (src.hasCgDim)
      indices.push_back(index(0));
    indices.push_back(row);
    indices.push_back(colIndex);
    return vector::TransferReadOp::create(rewriter, loc, type, src.tensor,
                                          indices, padding,
                                          ArrayRef<bool>{true});
  }

  RewriterBase &rewriter;
  Location loc;
  const Depthwise &dw;
  const Source &src;
  Value filter;
  int64_t width;
  Value initial;              ///< the output's fill value, or null: read it
  linalg::GenericOp epilogue; ///< applied to each chunk, or null
  SmallVector<Value> weights;
};

/// Accumulates channel g of image n into `out` row by row: the edge rows
/// unrolled without their padding taps, the rows in [first, last), whose
/// taps all fall inside the source, as a loop.
Value emitRows(RewriterBase &rewriter, Location loc, RowEmitter &row,
               const Depthwise &dw, const Source &src, Value out, Value n,
               Value g, int64_t first, int64_t last) {
  Value one = row.index(1);
  // The source row of tap i for output row oh, known or not.
  auto edgeRow = [&](int64_t oh) {
    Value ohValue = row.index(oh);
    SmallVector<Value> rows;
    for (int64_t i = 0; i < dw.kh; ++i) {
      int64_t r = oh * dw.strideH + i * dw.dilationH - src.padTop;
      rows.push_back(r >= 0 && r < src.h ? row.index(r) : Value());
    }
    out = row.emit(out, n, g, ohValue, rows);
  };
  for (int64_t oh = 0; oh < first; ++oh)
    edgeRow(oh);
  if (first < last) {
    Value lo = row.index(first);
    Value hi = row.index(last);
    auto loopH =
        scf::ForOp::create(rewriter, loc, lo, hi, one, ValueRange{out});
    rewriter.setInsertionPointToStart(loopH.getBody());
    Value oh = loopH.getInductionVar();
    Value strideH = row.index(dw.strideH);
    Value base = arith::MulIOp::create(rewriter, loc, oh, strideH);
    SmallVector<Value> rows;
    for (int64_t i = 0; i < dw.kh; ++i) {
      Value offset = row.index(i * dw.dilationH - src.padTop);
      rows.push_back(arith::AddIOp::create(rewriter, loc, base, offset));
    }
    Value rowOut = row.emit(loopH.getRegionIterArg(0), n, g, oh, rows);
    scf::YieldOp::create(rewriter, loc, rowOut);
    rewriter.setInsertionPointAfter(loopH);
    out = loopH.getResult(0);
  }
  for (int64_t oh = last; oh < dw.oh; ++oh)
    edgeRow(oh);
  return out;
}

} // namespace

bool kiln::isFlatDepthwiseConv(linalg::GenericOp conv, int64_t width) {
  std::optional<Depthwise> dw = matchDepthwise(conv);
  return dw && width >= 1 &&
         flatPlan(*dw, findSource(conv.getDpsInputs()[0]), width).has_value();
}

LogicalResult kiln::vectorizeDepthwiseConv(RewriterBase &rewriter,
                                           linalg::GenericOp conv,
                                           int64_t width, bool fuseEpilogue) {
  std::optional<Depthwise> match = matchDepthwise(conv);
  if (!match)
    match = matchMaxPool(conv);
  if (!match || width < 1)
    return failure();
  const Depthwise dw = *match;
  Source src = dw.maxPool ? findPoolSource(conv.getDpsInputs()[0])
                          : findSource(conv.getDpsInputs()[0]);
  // Output rows whose taps all fall inside the source: [first, last).
  auto ceilDiv = [](int64_t a, int64_t b) {
    return a <= 0 ? 0 : (a + b - 1) / b;
  };
  int64_t first = std::min(dw.oh, ceilDiv(src.padTop, dw.strideH));
  int64_t lastTap = (dw.kh - 1) * dw.dilationH - src.padTop;
  int64_t last = src.h - 1 - lastTap < 0
                     ? 0
                     : std::min(dw.oh, (src.h - 1 - lastTap) / dw.strideH + 1);
  last = std::max(first, last);
  // Unrolled per row: chunks times taps vector FMAs, and the edge rows are
  // unrolled too. Rows wider than this, or filters larger, stay with the
  // generic schedule.
  int64_t chunks = (dw.ow + width - 1) / width;
  int64_t edgeRows = first + (dw.oh - last);
  std::optional<FlatPlan> plan = flatPlan(dw, src, width);
  bool flat = plan.has_value();
  if (!flat && chunks * dw.kh * dw.kw * (1 + edgeRows) > 4096)
    return failure();

  // An elementwise epilogue (bias, clip) is computed on each chunk before
  // it is stored; one that cannot be stays a separate op, updating the
  // output in place.
  linalg::GenericOp epilogue;
  if (fuseEpilogue) {
    FailureOr<linalg::GenericOp> moved =
        kiln::moveEpilogueOntoContraction(rewriter, conv);
    // On a flat row an operand must be the same over the whole plane (a
    // per-channel bias): one that varies by position would need indices
    // per lane.
    auto alongPlane = [&](linalg::GenericOp epi) {
      return llvm::any_of(epi.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap map = epi.getMatchingIndexingMap(in);
        return map.isFunctionOfDim(3) || map.isFunctionOfDim(4);
      });
    };
    if (succeeded(moved) &&
        kiln::canEmitEpilogueRow(*moved, dw.maxPool ? 3 : 4) &&
        !(flat && alongPlane(*moved)))
      epilogue = *moved;
  }

  Location loc = conv.getLoc();
  // At the epilogue when there is one: it may read values made after the
  // convolution (another piece of a convolution split tap by tap), and
  // only it reads the convolution's result.
  rewriter.setInsertionPoint(epilogue ? epilogue.getOperation()
                                      : conv.getOperation());
  Value filter = conv.getDpsInputs()[1];
  Value init = conv.getDpsInits()[0];
  // Every output element is written once, so an output that starts as a
  // constant fill needs no fill: the accumulators start as that constant.
  Value start;
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (fill && init.hasOneUse() &&
      matchPattern(fill.getInputs()[0], m_Constant())) {
    start = fill.getInputs()[0];
    init = fill.getDpsInits()[0];
  }
  RowEmitter row(rewriter, loc, dw, src, filter, width, start, epilogue);
  // A flat row: each plane of the source and output collapsed to one dim.
  SmallVector<ReassociationIndices> planes;
  Value source;
  if (flat) {
    planes = {{0}, {1, 2}, {3, 4}};
    init = tensor::CollapseShapeOp::create(rewriter, loc, init, planes);
    source = tensor::CollapseShapeOp::create(
        rewriter, loc, src.tensor,
        src.hasCgDim ? planes
                     : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  }
  Value zero = row.index(0);
  Value one = row.index(1);
  Value numN = row.index(dw.n);
  Value numG = row.index(dw.g);

  auto loopN =
      scf::ForOp::create(rewriter, loc, zero, numN, one, ValueRange{init});
  rewriter.setInsertionPointToStart(loopN.getBody());
  auto loopG = scf::ForOp::create(rewriter, loc, zero, numG, one,
                                  ValueRange{loopN.getRegionIterArg(0)});
  // One channel per iteration: the iterations write disjoint output
  // planes, so a large convolution runs them on several threads.
  if (2 * dw.n * dw.g * dw.oh * dw.ow * dw.kh * dw.kw >=
      kiln::kMinParallelWork) {
    loopN->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());
    loopG->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());
  }
  rewriter.setInsertionPointToStart(loopG.getBody());
  Value n = loopN.getInductionVar(), g = loopG.getInductionVar();
  Value out = loopG.getRegionIterArg(0);
  if (!dw.maxPool)
    row.loadWeights(g);
  if (flat)
    out = row.emitPlane(out, n, g, source, *plan);
  else
    out = emitRows(rewriter, loc, row, dw, src, out, n, g, first, last);

  scf::YieldOp::create(rewriter, loc, out);
  rewriter.setInsertionPointAfter(loopG);
  scf::YieldOp::create(rewriter, loc, loopG.getResult(0));

  Value input = conv.getDpsInputs()[0];
  Value result = loopN.getResult(0);
  if (flat) {
    rewriter.setInsertionPointAfter(loopN);
    result = tensor::ExpandShapeOp::create(
        rewriter, loc, conv.getResultTypes()[0], result, planes);
  }
  rewriter.replaceOp(conv, result);
  if (epilogue)
    rewriter.replaceOp(epilogue, epilogue.getDpsInits()[0]);
  if (start)
    rewriter.eraseOp(fill);
  // The padded copy is no longer read.
  if (src.tensor != input && input.use_empty()) {
    Operation *pad = input.getDefiningOp();
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(pad)) {
      pad = expand.getSrc().getDefiningOp();
      rewriter.eraseOp(expand);
    }
    if (pad->use_empty())
      rewriter.eraseOp(pad);
  }
  return success();
}

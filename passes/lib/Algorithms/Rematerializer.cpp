//===- Rematerializer.cpp - recompute values to lower peak memory ---------===//
//
// Greedy rematerialization over the scheduler's liveness model. A round
// finds the peak step, tries recomputing each value live across it (a copy
// of its producer, and of the producers of operands that are dead by then,
// placed before the value's first reader after the peak) and simulates each
// try; the best one is kept when it lowers the peak, or leaves the peak
// reached at fewer steps (so two steps tied at the peak are handled one
// after the other). Rounds repeat until the peak fits the budget. Copies
// can themselves be recomputed in a later round, which splits a long late
// live range into several short ones.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Rematerializer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

using namespace kiln;

namespace {

constexpr unsigned kNone = ~0u;

/// The graph being rewritten, its schedule and the facts derived from them.
struct State {
  ScheduleGraph graph;
  std::vector<uint64_t> cost;   // per node
  std::vector<unsigned> origin; // per node
  std::vector<unsigned> order;

  // Derived by analyze().
  std::vector<unsigned> producer; // per value
  std::vector<unsigned> position; // per node: its step
  std::vector<int> lastRead;      // per storage: last step reading it, or -1

  size_t numValues() const { return graph.valueBytes.size(); }

  bool isView(unsigned v) const {
    return v < graph.viewOf.size() && graph.viewOf[v] >= 0;
  }

  unsigned storage(unsigned v) const {
    for (size_t hops = 0; hops < numValues() && isView(v); ++hops)
      v = static_cast<unsigned>(graph.viewOf[v]);
    return v;
  }

  void analyze() {
    producer.assign(numValues(), kNone);
    position.assign(graph.nodes.size(), kNone);
    lastRead.assign(numValues(), -1);
    for (unsigned n = 0; n < graph.nodes.size(); ++n)
      for (unsigned r : graph.nodes[n].results)
        producer[r] = n;
    for (unsigned step = 0; step < order.size(); ++step) {
      position[order[step]] = step;
      for (unsigned v : graph.nodes[order[step]].operands)
        lastRead[storage(v)] = static_cast<int>(step);
    }
  }
};

/// Lower is better: (peak, steps at the peak).
using Objective = std::pair<uint64_t, size_t>;

Objective objectiveOf(const std::vector<uint64_t> &profile) {
  uint64_t peak = 0;
  size_t count = 0;
  for (uint64_t live : profile) {
    if (live > peak) {
      peak = live;
      count = 0;
    }
    if (live == peak)
      ++count;
  }
  return {peak, count};
}

/// One try: `value` recomputed for its readers after step `peakStep`.
struct Trial {
  ScheduleGraph graph;
  std::vector<unsigned> order;
  std::vector<unsigned> newNodes;   // copies, in the order they run
  std::vector<unsigned> copiedFrom; // per copy: the node it runs again
  uint64_t cost = 0;
  Objective objective;
};

/// Builds the try, or nothing when the value cannot be recomputed there.
std::optional<Trial> tryRecompute(const State &s, unsigned value,
                                  unsigned peakStep,
                                  const RematOptions &options) {
  const ScheduleGraph &g = s.graph;
  // The readers after the peak of the value or of a view of it.
  std::vector<unsigned> late;
  for (unsigned step = peakStep + 1; step < s.order.size(); ++step) {
    unsigned n = s.order[step];
    for (unsigned v : g.nodes[n].operands)
      if (s.storage(v) == value) {
        late.push_back(n);
        break;
      }
  }
  if (late.empty())
    return std::nullopt;
  int insertAt = static_cast<int>(s.position[late.front()]);

  Trial trial;
  trial.graph = g;
  ScheduleGraph &tg = trial.graph;
  tg.viewOf.resize(tg.valueBytes.size(), -1);
  std::map<unsigned, unsigned> copies; // value -> its copy
  bool failed = false;

  // The value to read in place of `v` at the insertion point.
  std::function<unsigned(unsigned, unsigned)> materialize =
      [&](unsigned v, unsigned depth) -> unsigned {
    if (failed)
      return v;
    if (auto it = copies.find(v); it != copies.end())
      return it->second;
    unsigned p = v < s.producer.size() ? s.producer[v] : kNone;
    unsigned st = s.storage(v);
    bool mustCopy = st == value;
    if (!mustCopy) {
      // Still available where the copy runs: a graph input, a value that
      // takes no planned memory, or one live until then anyway.
      bool freeValue = p == kNone || s.producer[st] == kNone ||
                       g.valueBytes[st] == 0;
      if (freeValue || s.lastRead[st] >= insertAt)
        return v;
      if (depth >= options.maxDepth || s.cost[p] == kNotRecomputable ||
          g.nodes[p].results.size() != 1)
        return v; // kept live longer instead
    } else if (p == kNone || depth >= options.maxDepth ||
               s.cost[p] == kNotRecomputable ||
               g.nodes[p].results.size() != 1) {
      failed = true;
      return v;
    }
    ScheduleNode copy;
    for (unsigned o : g.nodes[p].operands)
      copy.operands.push_back(materialize(o, depth + 1));
    if (failed)
      return v;
    unsigned result = static_cast<unsigned>(tg.valueBytes.size());
    unsigned original = g.nodes[p].results.front();
    tg.valueBytes.push_back(g.valueBytes[original]);
    int viewed = -1;
    if (s.isView(original)) {
      // The copy views the copy of what the original viewed.
      const std::vector<unsigned> &ops = g.nodes[p].operands;
      auto slot = std::find(ops.begin(), ops.end(),
                            static_cast<unsigned>(g.viewOf[original]));
      if (slot != ops.end())
        viewed = static_cast<int>(copy.operands[slot - ops.begin()]);
    }
    tg.viewOf.push_back(viewed);
    copy.results.push_back(result);
    unsigned node = static_cast<unsigned>(tg.nodes.size());
    tg.nodes.push_back(std::move(copy));
    trial.newNodes.push_back(node);
    trial.copiedFrom.push_back(p);
    trial.cost += s.cost[p];
    copies[v] = result;
    return result;
  };

  for (unsigned n : late)
    for (size_t i = 0; i < g.nodes[n].operands.size(); ++i) {
      unsigned v = g.nodes[n].operands[i];
      if (s.storage(v) != value)
        continue;
      unsigned replacement = materialize(v, 0);
      if (failed)
        return std::nullopt;
      tg.nodes[n].operands[i] = replacement;
    }

  trial.order.reserve(s.order.size() + trial.newNodes.size());
  trial.order.assign(s.order.begin(), s.order.begin() + insertAt);
  trial.order.insert(trial.order.end(), trial.newNodes.begin(),
                     trial.newNodes.end());
  trial.order.insert(trial.order.end(), s.order.begin() + insertAt,
                     s.order.end());
  trial.objective = objectiveOf(liveBytesPerStep(tg, trial.order));
  return trial;
}

} // namespace

RematResult kiln::rematerialize(const ScheduleGraph &graph,
                                const std::vector<uint64_t> &cost,
                                const RematOptions &options) {
  State s;
  s.graph = graph;
  size_t numValues = s.graph.valueBytes.size();
  for (const ScheduleNode &n : graph.nodes) {
    for (unsigned v : n.operands)
      numValues = std::max<size_t>(numValues, v + 1);
    for (unsigned v : n.results)
      numValues = std::max<size_t>(numValues, v + 1);
  }
  s.graph.valueBytes.resize(numValues, 0);
  s.graph.viewOf.resize(numValues, -1);
  s.cost = cost;
  s.cost.resize(graph.nodes.size(), kNotRecomputable);
  for (unsigned n = 0; n < graph.nodes.size(); ++n) {
    s.origin.push_back(n);
    s.order.push_back(n);
  }

  RematResult result;
  Objective current = objectiveOf(liveBytesPerStep(s.graph, s.order));
  result.peakBefore = current.first;
  for (unsigned round = 0;
       round < options.maxRounds && current.first > options.budget; ++round) {
    std::vector<uint64_t> profile = liveBytesPerStep(s.graph, s.order);
    unsigned peakStep = static_cast<unsigned>(
        std::find(profile.begin(), profile.end(), current.first) -
        profile.begin());
    s.analyze();
    const ScheduleNode &atPeak = s.graph.nodes[s.order[peakStep]];

    std::optional<Trial> best;
    unsigned bestValue = 0;
    for (unsigned v = 0; v < s.numValues(); ++v) {
      unsigned p = s.producer[v];
      if (p == kNone || s.cost[p] == kNotRecomputable || s.isView(v) ||
          s.graph.valueBytes[v] == 0 || s.position[p] >= peakStep ||
          s.lastRead[v] <= static_cast<int>(peakStep))
        continue;
      // A value the peak step reads is live there whatever happens later.
      bool readAtPeak = std::any_of(
          atPeak.operands.begin(), atPeak.operands.end(),
          [&](unsigned o) { return s.storage(o) == v; });
      if (readAtPeak)
        continue;
      std::optional<Trial> trial = tryRecompute(s, v, peakStep, options);
      if (!trial)
        continue;
      if (!best || std::tie(trial->objective, trial->cost) <
                       std::tie(best->objective, best->cost)) {
        best = std::move(trial);
        bestValue = v;
      }
    }
    if (!best || !(best->objective < current))
      break;

    for (unsigned copied : best->copiedFrom) {
      s.origin.push_back(s.origin[copied]);
      s.cost.push_back(s.cost[copied]);
    }
    s.graph = std::move(best->graph);
    s.order = std::move(best->order);
    result.recomputed.push_back(bestValue);
    result.recomputeCost += best->cost;
    current = best->objective;
  }

  result.peakAfter = current.first;
  result.fits = current.first <= options.budget;
  result.graph = std::move(s.graph);
  result.origin = std::move(s.origin);
  result.order = std::move(s.order);
  return result;
}

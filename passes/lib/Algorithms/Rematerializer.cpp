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
#include <map>
#include <optional>
#include <set>
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

/// One try: values recomputed for their readers after the peak step.
struct Trial {
  ScheduleGraph graph;
  std::vector<unsigned> order;
  std::vector<unsigned> newNodes;   // copies, in the order they run
  std::vector<unsigned> copiedFrom; // per copy: the node it runs again
  std::vector<unsigned> values;     // the values recomputed
  uint64_t cost = 0;
  Objective objective;
};

/// Builds a try: copies placed at one insertion point, made of the state's
/// nodes, with the late readers of each recomputed value pointed at them.
class TrialBuilder {
public:
  /// `late` holds, for each value that may be recomputed, the nodes after
  /// the peak that read it or a view of it, in schedule order.
  TrialBuilder(const State &s,
               const std::map<unsigned, std::vector<unsigned>> &late,
               const RematOptions &options)
      : s(s), late(late), options(options) {
    trial.graph = s.graph;
  }

  /// Recomputes `value` for its late readers, placing the copies before
  /// the first of them. Fails if it cannot be copied.
  bool recomputeFirst(unsigned value) {
    const std::vector<unsigned> &readers = late.at(value);
    insertAt = static_cast<int>(s.position[readers.front()]);
    return recompute(value, readers, /*rider=*/false);
  }

  /// Recomputes `value` too, at the same insertion point, if that keeps
  /// nothing live longer than the first value's copies already do and its
  /// late readers all come after that point; else leaves the try as it was.
  bool recomputeRider(unsigned value) {
    const std::vector<unsigned> &readers = late.at(value);
    if (static_cast<int>(s.position[readers.front()]) < insertAt)
      return false;
    // Undo everything if the value cannot ride along.
    size_t numNodes = trial.graph.nodes.size();
    size_t numValues = trial.graph.valueBytes.size();
    size_t numCopies = trial.newNodes.size();
    uint64_t cost = trial.cost;
    std::map<unsigned, unsigned> savedCopies = copies;
    if (recompute(value, readers, /*rider=*/true))
      return true;
    trial.graph.nodes.resize(numNodes);
    trial.graph.valueBytes.resize(numValues);
    trial.graph.viewOf.resize(numValues);
    trial.newNodes.resize(numCopies);
    trial.copiedFrom.resize(numCopies);
    trial.cost = cost;
    copies = std::move(savedCopies);
    killed.erase(value);
    return false;
  }

  /// The try as built so far, with its schedule simulated.
  Trial finish() const {
    Trial done = trial;
    done.order.reserve(s.order.size() + done.newNodes.size());
    done.order.assign(s.order.begin(), s.order.begin() + insertAt);
    done.order.insert(done.order.end(), done.newNodes.begin(),
                      done.newNodes.end());
    done.order.insert(done.order.end(), s.order.begin() + insertAt,
                      s.order.end());
    done.objective = objectiveOf(liveBytesPerStep(done.graph, done.order));
    return done;
  }

private:
  bool recompute(unsigned value, const std::vector<unsigned> &readers,
                 bool rider) {
    killed.insert(value);
    failed = false;
    // Redirect after all copies exist: a rider that fails half-way must
    // leave the readers untouched.
    std::vector<std::pair<unsigned, size_t>> slots;
    std::vector<unsigned> replacements;
    for (unsigned n : readers)
      for (size_t i = 0; i < s.graph.nodes[n].operands.size(); ++i) {
        unsigned v = s.graph.nodes[n].operands[i];
        if (s.storage(v) != value)
          continue;
        unsigned replacement = materialize(v, 0, rider);
        if (failed)
          return false;
        slots.push_back({n, i});
        replacements.push_back(replacement);
      }
    for (size_t k = 0; k < slots.size(); ++k)
      trial.graph.nodes[slots[k].first].operands[slots[k].second] =
          replacements[k];
    trial.values.push_back(value);
    return true;
  }

  /// The value to read in place of `v` at the insertion point.
  unsigned materialize(unsigned v, unsigned depth, bool rider) {
    if (failed)
      return v;
    if (auto it = copies.find(v); it != copies.end())
      return it->second;
    const ScheduleGraph &g = s.graph;
    unsigned p = v < s.producer.size() ? s.producer[v] : kNone;
    unsigned st = s.storage(v);
    bool copyable = p != kNone && depth < options.maxDepth &&
                    s.cost[p] != kNotRecomputable &&
                    g.nodes[p].results.size() == 1;
    if (!killed.count(st)) {
      // Still available where the copy runs: a graph input, a value that
      // takes no planned memory, one live until then anyway, or one the
      // copies already keep live until then.
      bool freeValue =
          p == kNone || s.producer[st] == kNone || g.valueBytes[st] == 0;
      if (freeValue || s.lastRead[st] >= insertAt || extended.count(st))
        return v;
      if (!copyable) {
        // Kept live longer instead; only the first value may do that.
        if (rider)
          failed = true;
        else
          extended.insert(st);
        return v;
      }
    } else if (!copyable) {
      failed = true; // a value being recomputed must be copied
      return v;
    }
    ScheduleNode copy;
    for (unsigned o : g.nodes[p].operands)
      copy.operands.push_back(materialize(o, depth + 1, rider));
    if (failed)
      return v;
    ScheduleGraph &tg = trial.graph;
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
  }

  const State &s;
  const std::map<unsigned, std::vector<unsigned>> &late;
  const RematOptions &options;
  Trial trial;
  int insertAt = 0;
  std::map<unsigned, unsigned> copies; // value -> its copy
  std::set<unsigned> killed;   // storages recomputed: never read as they are
  std::set<unsigned> extended; // storages the copies keep live longer
  bool failed = false;
};

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

    std::vector<unsigned> candidates;
    for (unsigned v = 0; v < s.numValues(); ++v) {
      unsigned p = s.producer[v];
      if (p == kNone || s.cost[p] == kNotRecomputable || s.isView(v) ||
          s.graph.valueBytes[v] == 0 || s.position[p] >= peakStep ||
          s.lastRead[v] <= static_cast<int>(peakStep))
        continue;
      // A value the peak step reads is live there whatever happens later.
      bool readAtPeak =
          std::any_of(atPeak.operands.begin(), atPeak.operands.end(),
                      [&](unsigned o) { return s.storage(o) == v; });
      if (!readAtPeak)
        candidates.push_back(v);
    }
    // Their readers after the peak (every candidate has one).
    std::map<unsigned, std::vector<unsigned>> late;
    for (unsigned v : candidates)
      late[v];
    for (unsigned step = peakStep + 1; step < s.order.size(); ++step) {
      unsigned n = s.order[step];
      std::set<unsigned> read;
      for (unsigned v : s.graph.nodes[n].operands)
        read.insert(s.storage(v));
      for (unsigned v : read)
        if (auto it = late.find(v); it != late.end())
          it->second.push_back(n);
    }

    // Each candidate alone, and with the other candidates its copies can
    // recompute without keeping anything else live longer: recomputing
    // from a value that must then stay live (a matmul's result) pays only
    // when several values are recomputed from it.
    std::optional<Trial> best;
    auto consider = [&](Trial trial) {
      if (!best || std::tie(trial.objective, trial.cost) <
                       std::tie(best->objective, best->cost))
        best = std::move(trial);
    };
    // Simulating a try costs a pass over the graph: only the largest
    // candidates lead one (ties to the earlier value); all may ride along.
    std::vector<unsigned> leaders = candidates;
    std::stable_sort(leaders.begin(), leaders.end(),
                     [&](unsigned a, unsigned b) {
                       return s.graph.valueBytes[a] > s.graph.valueBytes[b];
                     });
    if (leaders.size() > options.maxTries)
      leaders.resize(options.maxTries);
    for (unsigned v : leaders) {
      TrialBuilder builder(s, late, options);
      if (!builder.recomputeFirst(v))
        continue;
      consider(builder.finish());
      bool riders = false;
      for (unsigned w : candidates)
        if (w != v)
          riders |= builder.recomputeRider(w);
      if (riders)
        consider(builder.finish());
    }
    if (!best || !(best->objective < current))
      break;

    for (unsigned copied : best->copiedFrom) {
      s.origin.push_back(s.origin[copied]);
      s.cost.push_back(s.cost[copied]);
    }
    s.graph = std::move(best->graph);
    s.order = std::move(best->order);
    result.recomputed.insert(result.recomputed.end(), best->values.begin(),
                             best->values.end());
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

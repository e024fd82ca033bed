//===- Scheduler.cpp - a topological order that keeps memory low ----------===//
//
// Two greedy list schedulers are tried beside the original order: one picks
// the ready node with the smallest net change of live bytes (allocated minus
// freed), the other the node that frees the most, then allocates the least.
// Each candidate order is simulated and the one with the lowest peak wins;
// ties go to the original order, then to the earlier heuristic, so the pass
// never moves ops without a measured gain.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Scheduler.h"

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>

using namespace kiln;

namespace {

constexpr unsigned kNoProducer = ~0u;

/// Facts derived once from the graph.
struct Analysis {
  std::vector<unsigned> producer;              // per value
  std::vector<unsigned> readers;               // per storage: distinct nodes
  std::vector<std::vector<unsigned>> operands; // per node: distinct storages
  std::vector<std::vector<unsigned>> preds;    // per node: distinct nodes
  std::vector<std::vector<unsigned>> succs;    // per node

  explicit Analysis(const ScheduleGraph &g) {
    size_t numValues = g.valueBytes.size();
    for (const ScheduleNode &n : g.nodes) {
      for (unsigned v : n.operands)
        numValues = std::max<size_t>(numValues, v + 1);
      for (unsigned v : n.results)
        numValues = std::max<size_t>(numValues, v + 1);
    }
    producer.assign(numValues, kNoProducer);
    readers.assign(numValues, 0);
    operands.resize(g.nodes.size());
    preds.resize(g.nodes.size());
    succs.resize(g.nodes.size());
    for (unsigned i = 0; i < g.nodes.size(); ++i)
      for (unsigned v : g.nodes[i].results)
        producer[v] = i;
    // Liveness is tracked per storage: a view's readers read the value it
    // views (followed to the end of a chain of views).
    auto storage = [&](unsigned v) {
      for (unsigned hops = 0; hops < numValues; ++hops) {
        if (v >= g.viewOf.size() || g.viewOf[v] < 0)
          break;
        v = static_cast<unsigned>(g.viewOf[v]);
      }
      return v;
    };
    for (unsigned i = 0; i < g.nodes.size(); ++i) {
      std::vector<unsigned> ps = g.nodes[i].after;
      for (unsigned v : g.nodes[i].operands)
        if (producer[v] != kNoProducer)
          ps.push_back(producer[v]);
      std::vector<unsigned> ops;
      for (unsigned v : g.nodes[i].operands)
        ops.push_back(storage(v));
      std::sort(ops.begin(), ops.end());
      ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
      for (unsigned v : ops)
        ++readers[v];
      std::sort(ps.begin(), ps.end());
      ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
      ps.erase(std::remove(ps.begin(), ps.end(), i), ps.end());
      for (unsigned p : ps)
        succs[p].push_back(i);
      operands[i] = std::move(ops);
      preds[i] = std::move(ps);
    }
  }
};

uint64_t bytesOf(const ScheduleGraph &g, unsigned v) {
  if (v < g.viewOf.size() && g.viewOf[v] >= 0)
    return 0;
  return v < g.valueBytes.size() ? g.valueBytes[v] : 0;
}

/// Live bytes at each step of `order`; `profile` may be null when only the
/// peak is wanted.
uint64_t simulate(const ScheduleGraph &g, const Analysis &a,
                  const std::vector<unsigned> &order,
                  std::vector<uint64_t> *profile = nullptr) {
  std::vector<unsigned> remaining = a.readers;
  uint64_t live = 0, peak = 0;
  for (unsigned n : order) {
    for (unsigned r : g.nodes[n].results)
      live += bytesOf(g, r);
    peak = std::max(peak, live);
    if (profile)
      profile->push_back(live);
    for (unsigned v : a.operands[n])
      if (a.producer[v] != kNoProducer && --remaining[v] == 0)
        live -= bytesOf(g, v);
    for (unsigned r : g.nodes[n].results)
      if (a.readers[r] == 0)
        live -= bytesOf(g, r);
  }
  return peak;
}

/// Lexicographic score: lower is better. After the heuristic's own keys,
/// a node that makes more nodes ready wins (it finishes a branch rather
/// than opening a new one); the node index breaks remaining ties.
using Score = std::tuple<int64_t, int64_t, int64_t>;
using Scorer = std::function<Score(uint64_t allocated, uint64_t freed)>;

std::vector<unsigned> listSchedule(const ScheduleGraph &g, const Analysis &a,
                                   const Scorer &score) {
  size_t n = g.nodes.size();
  std::vector<unsigned> waiting(n), remaining = a.readers, order;
  std::set<unsigned> ready;
  for (unsigned i = 0; i < n; ++i)
    if ((waiting[i] = a.preds[i].size()) == 0)
      ready.insert(i);
  order.reserve(n);
  while (!ready.empty()) {
    unsigned best = 0;
    Score bestScore;
    bool first = true;
    for (unsigned i : ready) {
      uint64_t allocated = 0, freed = 0;
      for (unsigned r : g.nodes[i].results) {
        allocated += bytesOf(g, r);
        if (a.readers[r] == 0)
          freed += bytesOf(g, r);
      }
      for (unsigned v : a.operands[i])
        if (a.producer[v] != kNoProducer && remaining[v] == 1)
          freed += bytesOf(g, v);
      int64_t unlocks = 0;
      for (unsigned succ : a.succs[i])
        if (waiting[succ] == 1)
          ++unlocks;
      Score s = score(allocated, freed);
      std::get<2>(s) = -unlocks;
      if (first || s < bestScore) {
        best = i;
        bestScore = s;
        first = false;
      }
    }
    ready.erase(best);
    order.push_back(best);
    for (unsigned v : a.operands[best])
      --remaining[v];
    for (unsigned s : a.succs[best])
      if (--waiting[s] == 0)
        ready.insert(s);
  }
  return order;
}

} // namespace

uint64_t kiln::peakLiveBytes(const ScheduleGraph &graph,
                             const std::vector<unsigned> &order) {
  return simulate(graph, Analysis(graph), order);
}

std::vector<uint64_t>
kiln::liveBytesPerStep(const ScheduleGraph &graph,
                       const std::vector<unsigned> &order) {
  std::vector<uint64_t> profile;
  profile.reserve(order.size());
  simulate(graph, Analysis(graph), order, &profile);
  return profile;
}

bool kiln::isTopologicalOrder(const ScheduleGraph &graph,
                              const std::vector<unsigned> &order) {
  if (order.size() != graph.nodes.size())
    return false;
  Analysis a(graph);
  std::vector<int> position(order.size(), -1);
  for (unsigned i = 0; i < order.size(); ++i) {
    if (order[i] >= order.size() || position[order[i]] != -1)
      return false;
    position[order[i]] = static_cast<int>(i);
  }
  for (unsigned n = 0; n < graph.nodes.size(); ++n)
    for (unsigned p : a.preds[n])
      if (position[p] >= position[n])
        return false;
  return true;
}

ScheduleResult kiln::scheduleForMemory(const ScheduleGraph &graph) {
  Analysis a(graph);
  ScheduleResult result;
  result.order.resize(graph.nodes.size());
  for (unsigned i = 0; i < graph.nodes.size(); ++i)
    result.order[i] = i;
  result.strategy = "original";
  result.originalPeakBytes = result.peakBytes =
      simulate(graph, a, result.order);

  auto net = [](uint64_t allocated, uint64_t freed) {
    return Score{static_cast<int64_t>(allocated) - static_cast<int64_t>(freed),
                 0, 0};
  };
  auto mostFreed = [](uint64_t allocated, uint64_t freed) {
    return Score{-static_cast<int64_t>(freed), static_cast<int64_t>(allocated),
                 0};
  };
  std::vector<std::pair<std::string, Scorer>> heuristics = {
      {"least-net-allocation", net}, {"most-freed-first", mostFreed}};
  for (auto &[name, scorer] : heuristics) {
    std::vector<unsigned> order = listSchedule(graph, a, scorer);
    if (order.size() != graph.nodes.size())
      continue; // a cycle: keep the original order
    uint64_t peak = simulate(graph, a, order);
    if (peak < result.peakBytes) {
      result.peakBytes = peak;
      result.order = std::move(order);
      result.strategy = name;
    }
  }
  return result;
}

//===- ArenaPacker.cpp - place buffers with lifetimes in one arena --------===//
//
// Each strategy orders the buffers and places them one by one at the
// lowest-waste aligned offset that is free for the buffer's whole live
// range (best fit among the gaps left by already placed buffers that are
// live at the same time). Orders tried: largest first, longest-lived first,
// earliest first, and largest size*lifetime first. The packing with the
// smallest arena wins; ties go to the earlier strategy.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/ArenaPacker.h"

#include <algorithm>
#include <functional>
#include <numeric>

using namespace kiln;

namespace {

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool liveTogether(const PackBuffer &a, const PackBuffer &b) {
  return a.first <= b.last && b.first <= a.last;
}

/// Places buffers in `order`; returns offsets in input order.
std::vector<uint64_t> place(const std::vector<PackBuffer> &buffers,
                            const std::vector<size_t> &order) {
  std::vector<uint64_t> offsets(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const PackBuffer &b = buffers[i];
    // Memory ranges taken by placed buffers live at the same time, sorted.
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (size_t j : placed)
      if (liveTogether(b, buffers[j]) && buffers[j].size > 0)
        taken.push_back({offsets[j], offsets[j] + buffers[j].size});
    std::sort(taken.begin(), taken.end());
    // Best fit: the gap with the least room left over; else the end.
    uint64_t best = UINT64_MAX, bestWaste = UINT64_MAX, cursor = 0;
    auto consider = [&](uint64_t gapStart, uint64_t gapEnd, bool unbounded) {
      uint64_t start = alignUp(gapStart, b.alignment);
      if (!unbounded && (start > gapEnd || gapEnd - start < b.size))
        return;
      uint64_t waste = unbounded ? UINT64_MAX - 1 : gapEnd - start - b.size;
      if (waste < bestWaste) {
        bestWaste = waste;
        best = start;
      }
    };
    for (auto [start, end] : taken) {
      if (start > cursor)
        consider(cursor, start, false);
      cursor = std::max(cursor, end);
    }
    consider(cursor, 0, true);
    offsets[i] = best;
    placed.push_back(i);
  }
  return offsets;
}

uint64_t arenaEnd(const std::vector<PackBuffer> &buffers,
                  const std::vector<uint64_t> &offsets) {
  uint64_t end = 0;
  for (size_t i = 0; i < buffers.size(); ++i)
    end = std::max(end, offsets[i] + buffers[i].size);
  return end;
}

} // namespace

PackResult kiln::packArena(const std::vector<PackBuffer> &buffers,
                           uint64_t granule) {
  PackResult result;
  unsigned steps = 0;
  granule = std::max<uint64_t>(granule, 1);
  for (const PackBuffer &b : buffers) {
    result.noReuseBytes += alignUp(b.size, granule);
    steps = std::max(steps, b.last + 1);
  }
  std::vector<uint64_t> live(steps + 1, 0);
  for (const PackBuffer &b : buffers)
    for (unsigned s = b.first; s <= b.last; ++s)
      live[s] += alignUp(b.size, granule);
  for (unsigned s = 0; s < live.size(); ++s)
    if (live[s] > result.lowerBoundBytes) {
      result.lowerBoundBytes = live[s];
      result.peakStep = s;
    }

  using Key = std::function<bool(size_t, size_t)>;
  auto lifetime = [&](size_t i) {
    return buffers[i].last - buffers[i].first + 1;
  };
  // Every order breaks ties by input order, so results are deterministic.
  std::vector<std::pair<std::string, Key>> strategies = {
      {"largest-first",
       [&](size_t a, size_t b) {
         if (buffers[a].size != buffers[b].size)
           return buffers[a].size > buffers[b].size;
         return a < b;
       }},
      {"longest-lived-first",
       [&](size_t a, size_t b) {
         if (lifetime(a) != lifetime(b))
           return lifetime(a) > lifetime(b);
         if (buffers[a].size != buffers[b].size)
           return buffers[a].size > buffers[b].size;
         return a < b;
       }},
      {"earliest-first",
       [&](size_t a, size_t b) {
         if (buffers[a].first != buffers[b].first)
           return buffers[a].first < buffers[b].first;
         return a < b;
       }},
      {"largest-area-first",
       [&](size_t a, size_t b) {
         uint64_t ea = buffers[a].size * lifetime(a),
                  eb = buffers[b].size * lifetime(b);
         if (ea != eb)
           return ea > eb;
         return a < b;
       }},
  };
  bool first = true;
  for (auto &[name, key] : strategies) {
    std::vector<size_t> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), key);
    std::vector<uint64_t> offsets = place(buffers, order);
    uint64_t end = arenaEnd(buffers, offsets);
    if (first || end < result.arenaBytes) {
      result.arenaBytes = end;
      result.offsets = std::move(offsets);
      result.strategy = name;
      first = false;
    }
  }
  return result;
}

bool kiln::isValidPacking(const std::vector<PackBuffer> &buffers,
                          const std::vector<uint64_t> &offsets) {
  if (offsets.size() != buffers.size())
    return false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].alignment == 0 || offsets[i] % buffers[i].alignment)
      return false;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!liveTogether(buffers[i], buffers[j]) || !buffers[i].size ||
          !buffers[j].size)
        continue;
      bool disjoint = offsets[i] + buffers[i].size <= offsets[j] ||
                      offsets[j] + buffers[j].size <= offsets[i];
      if (!disjoint)
        return false;
    }
  }
  return true;
}

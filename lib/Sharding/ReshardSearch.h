//===- ReshardSearch.h - The search behind planReshard ----------*- C++ -*-===//
//
// Internal to lib/Sharding. planReshard (Cost.cpp) memoizes what
// searchCheapestReshard finds and falls back to naiveReshardPlan when it
// finds nothing.
//
// The search is a uniform-cost (Dijkstra) search with an A* bound. A state
// is a sharding in normal form (reshardNormalForm): per dimension an ordered
// list of mesh axes, and a set of partial axes with their kind, encoded as a
// short string. An edge is one primitive move of Cost.h, weighted by its
// estimated time on the local size of the state it leaves; ties go to fewer
// steps, then fewer bytes, then to the state found first (moves are
// generated in a fixed order), so the result is deterministic. Costs are
// compared as integers (picoseconds, millibytes) so that equal plans reached
// in different orders tie exactly. No path dearer than the naive plan is
// followed.
//
// Axes of size 1 never appear (they change no block and no group). Each
// axis appears at most once in a state, so a 3-axis mesh and a rank-3 tensor
// have a few hundred states. ReshardSearch.cpp holds the states and the
// search loop, ReshardMoves.cpp the moves.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_SHARDING_RESHARDSEARCH_H
#define PARTITA_LIB_SHARDING_RESHARDSEARCH_H

#include "partita/Sharding/Cost.h"

#include <cstdint>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace partita {
namespace detail {

/// The cheapest plan from `from` to `to` (see planReshard), without
/// memoization. False, leaving `plan` alone, when the input is invalid (an
/// unknown axis, mismatched ranks, more than 32 mesh axes) or the search
/// finds no plan of at most kMaxPlanSteps steps.
bool searchCheapestReshard(const Mesh &mesh, const Sharding &from,
                           const Sharding &to,
                           const std::vector<int64_t> &globalShape,
                           int64_t elementBytes,
                           const Interconnect &interconnect, ReshardPlan &plan);

/// Longest plan the search considers.
constexpr int kMaxPlanSteps = 12;
/// Masks of mesh axes are 32-bit.
constexpr int kMaxMeshAxes = 32;
/// Meshes with more axes of size > 1 than this search only the axes `from`
/// and `to` name.
constexpr int kMaxSearchAxes = 4;
/// Ends a dimension's axis list in a state code.
constexpr char kDimEnd = '\x7f';

/// Mesh axis indices, one per char: short lists stay in the string's inline
/// buffer, which keeps the search free of allocations per move.
using AxisIds = std::string;

/// Lexicographic search cost: time, then steps, then bytes.
struct PathCost {
  int64_t picoseconds = 0;
  int steps = 0;
  int64_t millibytes = 0;
  bool operator<(const PathCost &o) const {
    if (picoseconds != o.picoseconds)
      return picoseconds < o.picoseconds;
    if (steps != o.steps)
      return steps < o.steps;
    return millibytes < o.millibytes;
  }
  bool operator==(const PathCost &o) const {
    return picoseconds == o.picoseconds && steps == o.steps &&
           millibytes == o.millibytes;
  }
};

/// A sharding as mesh axis indices: the decoded form of a state code.
struct Arrangement {
  std::vector<AxisIds> dims;
  uint32_t partial = 0;
  PartialKind kind = PartialKind::None;

  uint32_t dimMask() const {
    uint32_t mask = 0;
    for (const AxisIds &dim : dims)
      for (int axis : dim)
        mask |= 1u << axis;
    return mask;
  }
};

/// The move that reached a state, with axes as mesh axis indices.
struct Move {
  CollectiveKind kind = CollectiveKind::AllSlice;
  AxisIds axes;
  int dim = -1;
  int concatDim = -1;
};

/// A state the search has reached, and how it got there cheapest.
struct SearchNode {
  std::string code;
  PathCost cost;
  /// A lower bound on the time from here to the target (A* heuristic).
  int64_t remainingPicoseconds = 0;
  int parent = -1;
  Move move;
  bool expanded = false;
};

/// One search from `from` to `to`; use once.
class ReshardSearch {
public:
  ReshardSearch(const Mesh &mesh, const Sharding &from, const Sharding &to,
                const std::vector<int64_t> &shape, int64_t elementBytes,
                const Interconnect &interconnect);

  /// Runs the search; false when `to` is not reached within kMaxPlanSteps
  /// or `boundPicoseconds`. Paths dearer than the bound are not followed.
  bool run(ReshardPlan &plan, const Sharding &to, int64_t bound);

private:
  const Mesh &mesh;
  const std::vector<int64_t> &shape;
  int64_t elementBytes;
  int rank;
  std::vector<int64_t> axisSizes;
  std::vector<AxisLink> axisLinks;
  Arrangement source, target;
  uint32_t universe = 0;
  int64_t minLatencyPicoseconds = 0;
  std::vector<int64_t> axisLatencyPicoseconds;
  double maxBandwidthGBps = 0;
  AxisIds partialOrder;
  std::string targetCode;
  /// No path dearer than this is followed: the naive plan's time, then the
  /// best time found to the target.
  int64_t boundPicoseconds = 0;
  std::vector<SearchNode> nodes;
  std::unordered_map<std::string, int> nodeOfCode;
  using QueueEntry = std::pair<PathCost, int>;
  struct LaterFirst {
    bool operator()(const QueueEntry &a, const QueueEntry &b) const {
      if (b.first < a.first)
        return true;
      return a.first == b.first && a.second > b.second;
    }
  };
  std::priority_queue<QueueEntry, std::vector<QueueEntry>, LaterFirst> queue;

  /// Mesh axis indices of `names`.
  AxisIds indices(const std::vector<std::string> &names) const;

  /// `sharding` (in normal form) as axis indices, and back.
  Arrangement toArrangement(const Sharding &sharding) const;

  Sharding toSharding(const Arrangement &arrangement) const;

  /// The state code: per dimension its axis indices and kDimEnd, then the
  /// partial kind and the partial axes in mesh order.
  static std::string encode(const Arrangement &arrangement);

  /// The code of `arrangement` with `dropCount` minor axes removed from
  /// `dropDim`, `added` appended to `addDim`, and the given partial state.
  static std::string encodeEdited(const Arrangement &arrangement, int dropDim,
                                  size_t dropCount, int addDim,
                                  const AxisIds &added, uint32_t partial,
                                  PartialKind kind);

  Arrangement decode(const std::string &code) const;

  /// Number of devices in a group over `axes` (product of their sizes).
  int64_t groupSize(const AxisIds &axes) const;

  /// Per dimension, the number of shards.
  std::vector<int64_t> shardCounts(const Arrangement &arrangement) const;

  /// Bytes each device holds (padded local shape), as bytesPerDevice.
  double localBytes(const Arrangement &arrangement) const;

  /// True when going between `fewer` and `more` shards of `dim` (more a
  /// multiple of fewer) keeps every padded block where the other layout
  /// expects it: one of them is whole, or the chunks nest exactly.
  bool blocksLineUp(int dim, int64_t fewer, int64_t more) const;

  /// The slowest bandwidth and largest latency among `axes`, as
  /// Interconnect::linkFor.
  AxisLink linkFor(const AxisIds &axes) const;

  /// Records that `code` is reachable at `cost` from node `parent` by
  /// `move`, unless that is no better than what is known or exceeds the
  /// bound.
  void addNode(std::string code, PathCost cost, int parent, Move move);

  /// A lower bound on the time from the state `code` to the target (the A*
  /// heuristic). Past the longest prefix a dimension shares with the
  /// target's, every axis must leave it at some point (only the minor-most
  /// axes can leave, and a collective_permute's group holds every axis of a
  /// dimension it changes), so some all_gather, all_to_all or
  /// collective_permute has the slowest such axis in its group. Likewise
  /// some all_reduce or reduce_scatter has the slowest partial axis the
  /// target does not keep. Those are different moves (a reduction removes no
  /// dimension axis, the others reduce nothing), each costing at least the
  /// latency of its slowest axis. Free moves only add axes, so the bound is
  /// consistent.
  int64_t remainingLowerBound(const std::string &code) const;

  /// Offers the edge by `move` from node `from` (local size
  /// `localInputBytes`) to the state `makeCode()` returns; the code is only
  /// built for edges within the bound.
  template <typename MakeCode>
  void relax(int from, Move move, double localInputBytes, MakeCode makeCode);

  /// Offers every move from node `id`.
  void expand(int id);
  /// Offers every collective_permute from node `id` (state `current`, local
  /// size `bytes`).
  void expandPermutes(int id, const Arrangement &current, double bytes);
  /// The plan along the best path to node `id`; the last step ends at `to`.
  ReshardPlan reconstruct(int id, const Sharding &to) const;
};

} // namespace detail
} // namespace partita

#endif // PARTITA_LIB_SHARDING_RESHARDSEARCH_H

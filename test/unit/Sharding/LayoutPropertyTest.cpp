//===- LayoutPropertyTest.cpp - Layout.h against an oracle ----------------===//
//
// Exhaustive check of the index math. Over every mesh of up to 8 devices
// with 1 to 3 axes (every ordered factorization, size-1 axes included),
// three device orders (identity, reversed, shuffled), every closed sharding
// of rank 1 to 3 (every assignment of ordered subsets of the axes to the
// dimensions, with and without the leftover axes as partial axes) and four
// global shapes per case (even, uneven, shorter than the shard count, and
// one with an empty dimension), the library must agree with a brute-force
// oracle written here without any library index math:
//
//   - coordinates by repeated division of the mesh position, ids through
//     the permutation;
//   - chunks as the smallest c with c * k >= d, and shard ranges by filling
//     the shards one after another from a cursor;
//   - holders of an element by scanning every device and every element.
//
// It then checks the invariants the rest of the compiler relies on: devices
// with the same shard indices hold the same block, distinct shard indices
// hold disjoint blocks that together cover the tensor once, and every
// element lives on exactly numDevices / prod(shard counts) devices.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Layout.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>

using namespace partita;

namespace {

/// Every ordered tuple of `rank` positive sizes whose product is `devices`.
void factorizations(int64_t devices, int rank, std::vector<int64_t> &prefix,
                    std::vector<std::vector<int64_t>> &out) {
  if (static_cast<int>(prefix.size()) == rank) {
    if (devices == 1)
      out.push_back(prefix);
    return;
  }
  for (int64_t size = 1; size <= devices; ++size) {
    if (devices % size)
      continue;
    prefix.push_back(size);
    factorizations(devices / size, rank, prefix, out);
    prefix.pop_back();
  }
}

/// Identity, reversed and a seeded shuffle; duplicates dropped.
std::vector<std::vector<int64_t>> deviceOrders(int64_t devices) {
  std::vector<int64_t> identity(devices);
  for (int64_t i = 0; i < devices; ++i)
    identity[i] = i;
  std::vector<int64_t> reversed(identity.rbegin(), identity.rend());
  std::vector<int64_t> shuffled = identity;
  uint64_t state = 0x9e3779b97f4a7c15ULL + devices;
  for (int64_t i = devices - 1; i > 0; --i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::swap(shuffled[i], shuffled[(state >> 33) % (i + 1)]);
  }
  std::vector<std::vector<int64_t>> orders = {identity};
  for (const auto &order : {reversed, shuffled})
    if (std::find(orders.begin(), orders.end(), order) == orders.end())
      orders.push_back(order);
  return orders;
}

/// Every closed sharding of rank `rank` over axes 0..numAxes-1: each axis
/// goes to one dimension or none, and each dimension takes its axes in every
/// order. Returned as per-dimension lists of axis indices.
std::vector<std::vector<std::vector<int>>> axisAssignments(int numAxes,
                                                           int rank) {
  std::vector<std::vector<std::vector<int>>> result;
  int combos = 1;
  for (int a = 0; a < numAxes; ++a)
    combos *= rank + 1;
  for (int code = 0; code < combos; ++code) {
    std::vector<std::vector<int>> dims(rank);
    int rest = code;
    for (int a = 0; a < numAxes; ++a, rest /= rank + 1)
      if (rest % (rank + 1) < rank)
        dims[rest % (rank + 1)].push_back(a);
    // Enumerate the orders of every dimension, odometer style.
    std::vector<std::vector<int>> current = dims;
    while (true) {
      result.push_back(current);
      int d = 0;
      while (d < rank &&
             !std::next_permutation(current[d].begin(), current[d].end()))
        ++d; // next_permutation wrapped this one back to sorted.
      if (d == rank)
        break;
    }
  }
  return result;
}

/// Shapes for shard counts `k`: even, uneven, shorter than k, and mixed with
/// an empty dimension.
std::vector<std::vector<int64_t>> shapesFor(const std::vector<int64_t> &k) {
  std::vector<std::vector<int64_t>> shapes(4);
  for (size_t d = 0; d < k.size(); ++d) {
    shapes[0].push_back(k[d] * (1 + static_cast<int64_t>(d % 2)));
    shapes[1].push_back(2 * k[d] + 1);
    shapes[2].push_back(std::max<int64_t>(k[d] - 1, 1));
    const int64_t mixed[3] = {0, k[d] + 1, 1};
    shapes[3].push_back(mixed[(d + k.size()) % 3]);
  }
  return shapes;
}

struct Case {
  Mesh mesh;
  std::vector<int64_t> sizes; // Oracle's copy of the axis sizes.
  std::vector<int64_t> idAt;  // Device id at each mesh position.
  std::vector<std::vector<int>> dimAxes;
  Sharding sharding;
  std::vector<int64_t> shape;
};

std::string describe(const Case &c) {
  std::ostringstream os;
  os << "mesh " << c.mesh.toString() << " ids [";
  for (size_t i = 0; i < c.idAt.size(); ++i)
    os << (i ? "," : "") << c.idAt[i];
  os << "] sharding " << c.sharding.toString() << " shape [";
  for (size_t i = 0; i < c.shape.size(); ++i)
    os << (i ? "," : "") << c.shape[i];
  os << "]";
  return os.str();
}

/// Counts checks and records the first few mismatches with their case.
struct Reporter {
  int64_t checks = 0;
  int64_t failures = 0;
  std::vector<std::string> first;
  const Case *current = nullptr;

  template <typename A, typename B>
  void expectEqual(const A &got, const B &want, const char *what) {
    expect(got == want, what);
  }
  void expect(bool ok, const char *what) {
    ++checks;
    if (!ok && failures++ < 10)
      first.push_back(describe(*current) + ": " + what);
  }
};

void checkCase(const Case &c, Reporter &report) {
  const int64_t devices = static_cast<int64_t>(c.idAt.size());
  const size_t rank = c.shape.size();

  // Oracle: coordinates, shard indices, chunks and per-shard ranges.
  std::vector<std::vector<int64_t>> coordsAt(devices);
  std::vector<std::vector<int64_t>> shardAt(devices,
                                            std::vector<int64_t>(rank));
  for (int64_t p = 0; p < devices; ++p) {
    std::vector<int64_t> coords(c.sizes.size());
    int64_t rest = p;
    for (size_t a = c.sizes.size(); a-- > 0;) {
      coords[a] = rest % c.sizes[a];
      rest /= c.sizes[a];
    }
    coordsAt[p] = coords;
    for (size_t d = 0; d < rank; ++d) {
      int64_t index = 0;
      for (int a : c.dimAxes[d])
        index = index * c.sizes[a] + coords[a];
      shardAt[p][d] = index;
    }
  }
  std::vector<int64_t> counts(rank, 1), chunks(rank, 0);
  std::vector<std::vector<IndexRange>> ranges(rank);
  int64_t shardProduct = 1, elements = 1, paddedVolume = 1;
  for (size_t d = 0; d < rank; ++d) {
    for (int a : c.dimAxes[d])
      counts[d] *= c.sizes[a];
    while (chunks[d] * counts[d] < c.shape[d])
      ++chunks[d];
    int64_t cursor = 0;
    for (int64_t i = 0; i < counts[d]; ++i) {
      int64_t end = std::min(cursor + chunks[d], c.shape[d]);
      ranges[d].push_back(IndexRange{cursor, end});
      cursor = end;
    }
    shardProduct *= counts[d];
    elements *= c.shape[d];
    paddedVolume *= chunks[d];
  }

  report.expect(validateSharding(c.mesh, c.sharding, &c.shape).ok(),
                "validateSharding");
  report.expectEqual(shardCounts(c.mesh, c.sharding), counts, "shardCounts");
  report.expectEqual(localShape(c.mesh, c.sharding, c.shape), chunks,
                     "localShape");
  report.expectEqual(bytesPerDevice(c.mesh, c.sharding, c.shape, 4),
                     paddedVolume * 4, "bytesPerDevice");
  bool even = true;
  for (size_t d = 0; d < rank; ++d)
    even = even && chunks[d] * counts[d] == c.shape[d];
  report.expectEqual(isEvenlySharded(c.mesh, c.sharding, c.shape), even,
                     "isEvenlySharded");

  // Per device: coordinates, shard indices and blocks.
  std::vector<std::vector<IndexRange>> blockAt(devices);
  for (int64_t p = 0; p < devices; ++p) {
    int64_t id = c.idAt[p];
    report.expectEqual(c.mesh.coordinates(id), coordsAt[p], "coordinates");
    report.expectEqual(c.mesh.deviceAt(coordsAt[p]), id, "deviceAt");
    report.expectEqual(shardIndices(c.mesh, c.sharding, id), shardAt[p],
                       "shardIndices");
    std::vector<IndexRange> want(rank);
    for (size_t d = 0; d < rank; ++d)
      want[d] = ranges[d][shardAt[p][d]];
    blockAt[p] = deviceBlock(c.mesh, c.sharding, c.shape, id);
    report.expectEqual(blockAt[p], want, "deviceBlock");
  }

  // Holders by scanning every device for every element, ids ascending.
  std::vector<int64_t> positionOf(devices);
  for (int64_t p = 0; p < devices; ++p)
    positionOf[c.idAt[p]] = p;
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < elements; ++e) {
    int64_t rest = e;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rest % c.shape[d];
      rest /= c.shape[d];
    }
    std::vector<int64_t> holders;
    std::vector<int64_t> holderShard;
    bool oneShard = true;
    for (int64_t id = 0; id < devices; ++id) {
      int64_t p = positionOf[id];
      bool holds = true;
      for (size_t d = 0; d < rank; ++d) {
        const IndexRange &r = ranges[d][shardAt[p][d]];
        holds = holds && r.begin <= index[d] && index[d] < r.end;
      }
      if (!holds)
        continue;
      holders.push_back(id);
      if (holderShard.empty())
        holderShard = shardAt[p];
      oneShard = oneShard && holderShard == shardAt[p];
    }
    report.expectEqual(devicesHolding(c.mesh, c.sharding, c.shape, index),
                       holders, "devicesHolding");
    report.expect(static_cast<int64_t>(holders.size()) ==
                      devices / shardProduct,
                  "element held by numDevices / prod(shard counts) devices");
    report.expect(oneShard, "element held by two distinct shards");
  }

  // Replica groups: same shard indices, same block; all shard indices
  // present, each on numDevices / prod(k) devices; volumes sum to the tensor.
  std::map<std::vector<int64_t>, std::vector<int64_t>> group;
  for (int64_t p = 0; p < devices; ++p)
    group[shardAt[p]].push_back(p);
  report.expect(static_cast<int64_t>(group.size()) == shardProduct,
                "every shard index tuple is held");
  int64_t coveredOnce = 0;
  for (const auto &entry : group) {
    const std::vector<int64_t> &members = entry.second;
    report.expect(static_cast<int64_t>(members.size()) ==
                      devices / shardProduct,
                  "replica group size");
    for (int64_t p : members)
      report.expect(blockAt[p] == blockAt[members.front()],
                    "replicas hold the same block");
    int64_t volume = 1;
    for (const IndexRange &r : blockAt[members.front()])
      volume *= r.size();
    coveredOnce += volume;
  }
  report.expect(coveredOnce == elements, "blocks cover the tensor once");
}

} // namespace

TEST_CASE("Layout agrees with a brute-force oracle on every small case",
          "[layout][property]") {
  const char *axisNames[3] = {"a", "b", "c"};
  Reporter report;
  int64_t meshes = 0, cases = 0;
  for (int meshRank = 1; meshRank <= 3; ++meshRank) {
    for (int64_t devices = 1; devices <= 8; ++devices) {
      std::vector<std::vector<int64_t>> sizeLists;
      std::vector<int64_t> prefix;
      factorizations(devices, meshRank, prefix, sizeLists);
      for (const std::vector<int64_t> &sizes : sizeLists) {
        std::vector<MeshAxis> axes;
        for (int a = 0; a < meshRank; ++a)
          axes.push_back(MeshAxis{axisNames[a], sizes[a]});
        for (const std::vector<int64_t> &order : deviceOrders(devices)) {
          Expected<Mesh> mesh = Mesh::create(axes, order);
          REQUIRE(mesh.ok());
          ++meshes;
          for (int rank = 1; rank <= 3; ++rank) {
            for (const auto &dimAxes : axisAssignments(meshRank, rank)) {
              Case c{*mesh, sizes, order, dimAxes, Sharding(), {}};
              std::vector<bool> used(meshRank, false);
              std::vector<int64_t> counts;
              for (const std::vector<int> &dim : dimAxes) {
                DimSharding dimSharding;
                counts.push_back(1);
                for (int a : dim) {
                  dimSharding.axes.push_back(axisNames[a]);
                  counts.back() *= sizes[a];
                  used[a] = true;
                }
                c.sharding.dims.push_back(dimSharding);
              }
              std::vector<Sharding> variants = {c.sharding};
              // Leftover axes as partial axes must not move any block.
              Sharding partial = c.sharding;
              for (int a = 0; a < meshRank; ++a)
                if (!used[a])
                  partial.partialAxes.push_back(axisNames[a]);
              if (!partial.partialAxes.empty()) {
                partial.partialKind = PartialKind::Sum;
                variants.push_back(partial);
              }
              for (const Sharding &sharding : variants) {
                c.sharding = sharding;
                for (const auto &shape : shapesFor(counts)) {
                  c.shape = shape;
                  report.current = &c;
                  checkCase(c, report);
                  ++cases;
                }
              }
            }
          }
        }
      }
    }
  }
  for (const std::string &failure : report.first)
    FAIL_CHECK(failure);
  INFO(meshes << " meshes, " << cases << " cases, " << report.checks
              << " checks");
  CHECK(report.failures == 0);
  // Guard against the enumeration silently shrinking: 66 axis-size lists,
  // 186 (axis sizes, device order) pairs, 122080 (sharding, shape) cases.
  CHECK(meshes == 186);
  CHECK(cases == 122080);
}

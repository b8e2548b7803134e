//===- ReshardTestSupport.h - Shared helpers of the reshard tests -*- C++
//-*-===//
//
// Enumeration of every closed sharding of a small mesh, a spelling that
// identifies shardings with the same layout, and a printable plan; used by
// ReshardTest.cpp and ReshardOptimalityTest.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TEST_UNIT_RESHARDTESTSUPPORT_H
#define PARTITA_TEST_UNIT_RESHARDTESTSUPPORT_H

#include "partita/Sharding/Cost.h"

#include <algorithm>
#include <string>
#include <vector>

namespace partita {
namespace reshard_test {

inline Mesh mesh(const char *spec) { return *parseMeshSpec(spec); }

/// Appends every placement of the axes from `axis` on: unused, partial (with
/// `partialKind` != None) or at any position of any dimension.
inline void arrangements(const Mesh &mesh, size_t axis, Sharding &current,
                         PartialKind partialKind, std::vector<Sharding> &out) {
  if (axis == mesh.axes().size()) {
    out.push_back(current);
    return;
  }
  const std::string &name = mesh.axes()[axis].name;
  arrangements(mesh, axis + 1, current, partialKind, out);
  if (partialKind != PartialKind::None) {
    current.partialAxes.push_back(name);
    current.partialKind = partialKind;
    arrangements(mesh, axis + 1, current, partialKind, out);
    current.partialAxes.pop_back();
    if (current.partialAxes.empty())
      current.partialKind = PartialKind::None;
  }
  for (DimSharding &dim : current.dims) {
    for (size_t at = 0; at <= dim.axes.size(); ++at) {
      dim.axes.insert(dim.axes.begin() + at, name);
      arrangements(mesh, axis + 1, current, partialKind, out);
      dim.axes.erase(dim.axes.begin() + at);
    }
  }
}

/// Every closed sharding of a rank-`rank` tensor on `mesh`; with
/// `partialKind` != None also those with partial axes of that kind.
inline std::vector<Sharding> allShardings(const Mesh &mesh, int rank,
                                          PartialKind partialKind) {
  Sharding start = Sharding::replicated(rank);
  std::vector<Sharding> out;
  arrangements(mesh, 0, start, partialKind, out);
  return out;
}

/// The normal form with sorted partial axes: equal for shardings with the
/// same layout (sameReshardLayout).
inline std::string canonical(const Mesh &mesh, const Sharding &sharding) {
  Sharding normal = reshardNormalForm(mesh, sharding);
  std::sort(normal.partialAxes.begin(), normal.partialAxes.end());
  return normal.toString();
}

/// One line per step, for failure messages.
inline std::string describePlan(const ReshardPlan &plan) {
  std::string text;
  for (const ReshardStep &step : plan.steps) {
    text += std::string("  ") + collectiveName(step.kind) + " [";
    for (const std::string &axis : step.axes)
      text += " " + axis;
    text += " ] dim " + std::to_string(step.dim) + " concat " +
            std::to_string(step.concatDim) + " -> " + step.after.toString() +
            " " + std::to_string(step.timeUs) + " us\n";
  }
  return text;
}

} // namespace reshard_test
} // namespace partita

#endif // PARTITA_TEST_UNIT_RESHARDTESTSUPPORT_H

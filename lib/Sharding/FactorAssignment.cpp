//===- FactorAssignment.cpp - Axes of an op's factors, written and applied ===//
//
// An assignment of mesh axes to an op's factors (Propagation.h): its text in
// explanations, and the sharding it gives a tensor of the op.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Propagation.h"

#include <string>
#include <vector>

using namespace partita;

std::string partita::factorAssignmentToString(
    const std::vector<std::vector<std::string>> &axes) {
  static const char letters[] = "ijklmnopqrstuvwxyzabcdefgh";
  std::string text = "{";
  bool first = true;
  for (size_t f = 0; f < axes.size(); ++f) {
    if (axes[f].empty())
      continue;
    text += first ? "" : "; ";
    first = false;
    text += letters[f % 26];
    if (f >= 26)
      text += std::to_string(f / 26);
    text += ":";
    for (const std::string &axis : axes[f])
      text += " \"" + axis + "\"";
  }
  return text + "}";
}

Sharding partita::shardingUnderAssignment(
    const TensorFactors &mapping,
    const std::vector<std::vector<std::string>> &assignment) {
  Sharding sharding;
  for (const std::vector<int> &factorIds : mapping) {
    DimSharding dim;
    for (int factor : factorIds)
      dim.axes.insert(dim.axes.end(), assignment[factor].begin(),
                      assignment[factor].end());
    sharding.dims.push_back(std::move(dim));
  }
  return sharding;
}

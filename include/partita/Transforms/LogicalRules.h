//===- LogicalRules.h - Logical axis names to mesh axes ---------*- C++ -*-===//
//
// Models name the dimensions of their parameters and inputs with logical
// axes (`batch`, `embed`, `heads`, `mlp`, ...); an ordered rules table maps
// each logical axis to mesh axes, so one model runs under data, tensor,
// sequence, expert and fully sharded data parallelism by changing the table
// (the way Flax's logical axis rules and MaxText's presets work).
//
// A rule may be qualified by role (`param`, `opt_state`, `grad`, `input`,
// `activation`). Unqualified rules apply to every function argument;
// `logical_constraint` ops on activations use only rules qualified
// `activation`, so a preset must say when it wants an activation layout.
// For each dimension the first rule whose logical axis and role match, whose
// mesh axes are all still unused on that tensor and which divides the
// dimension wins. A rule for the logical axis "*" applies afterwards to any
// dimension still whole (first dimension first): ZeRO uses it to split every
// optimizer state tensor, whatever its axes.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_LOGICALRULES_H
#define PARTITA_TRANSFORMS_LOGICALRULES_H

#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Sharding.h"

#include <string>
#include <string_view>
#include <vector>

namespace partita {

/// One entry of a rules table.
struct LogicalRule {
  std::string logical;
  /// Empty: every argument role (not activations).
  std::string role;
  /// Mesh axes, major to minor; empty: the dimension stays whole.
  std::vector<std::string> meshAxes;
  /// The tensor is left unreduced over these mesh axes instead (each device
  /// holds its own full-size partial sum): ZeRO-1's gradient buffer.
  bool partial = false;
};

/// An ordered rules table.
struct LogicalRules {
  /// The preset's name or the file's path, for messages.
  std::string source;
  std::vector<LogicalRule> rules;
};

/// The preset names, comma separated, for messages and help.
std::string logicalRulePresetNames();

/// The preset `name` for `mesh`: its rules whose mesh axes all exist in the
/// mesh. A preset none of whose axes exists in the mesh is an error.
Expected<LogicalRules> presetLogicalRules(std::string_view name,
                                          const Mesh &mesh);

/// A rules table in JSON: an array of
/// `{"logical": "embed", "mesh": "data" | ["data", "model"] | null,
///   "role": "param"}` (role optional), or an object with such an array
/// under "rules". Every mesh axis must exist in `mesh`: a misspelt axis is
/// an error naming the rule and the axis. `source` names the text.
Expected<LogicalRules> parseLogicalRules(std::string_view json,
                                         const std::string &source,
                                         const Mesh &mesh);

/// The role of a logical constraint on one micro-batch's gradient before
/// it is accumulated (partita-train-step): resolved with the "grad" rules
/// when those split the gradient over an axis the batch is split over, and
/// dropped otherwise (the accumulator then stays a partial sum).
inline constexpr const char kGradAccumulatorRole[] = "grad_accumulator";

/// A preset name, or else a path to a JSON rules file.
Expected<LogicalRules> loadLogicalRules(const std::string &presetOrFile,
                                        const Mesh &mesh);

/// The sharding of a tensor of `shape` whose dimensions have the logical
/// axes `axes` ("" for none), in role `role` ("activation" for
/// constraints). A named rule whose axes do not divide its dimension still
/// applies (the partitioner pads the dimension) unless the padding would be
/// more than `maxPadding` of the padded dimension: then it is skipped with a
/// note in `warnings`. The catch-all rule "*" takes only dimensions that
/// divide.
Sharding applyLogicalRules(const LogicalRules &rules, const Mesh &mesh,
                           const std::vector<std::string> &axes,
                           const std::vector<int64_t> &shape,
                           std::string_view role, double maxPadding,
                           std::vector<std::string> &warnings);

} // namespace partita

#endif // PARTITA_TRANSFORMS_LOGICALRULES_H

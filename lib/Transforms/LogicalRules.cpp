//===- LogicalRules.cpp - Logical axis names to mesh axes -----------------===//

#include "partita/Transforms/LogicalRules.h"
#include "partita/Sharding/TextLimits.h"
#include "partita/Transforms/Interconnect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace partita;

namespace {

struct PresetRule {
  const char *logical;
  const char *role;
  const char *axis;
  bool partial = false;
};

/// The presets. Each uses the mesh axes `data` and `model` (`ep` also
/// `expert`, the `cp` ones `context`); rules whose axis the mesh lacks are
/// dropped.
const std::vector<std::pair<std::string, std::vector<PresetRule>>> &
presets() {
  // Batch over data for inputs; activations only where a preset needs it.
  static const std::vector<PresetRule> dp = {{"batch", "input", "data"}};
  static const std::vector<PresetRule> tp = {{"heads", "", "model"},
                                             {"kv_heads", "", "model"},
                                             {"mlp", "", "model"},
                                             {"vocab", "", "model"}};
  // ZeRO: the `embed` dimension of optimizer state (1), of gradients too
  // (2), of parameters as well (3 = FSDP) over the data axis.
  // "*" (any dimension still whole, in order) covers tensors without an
  // embed dimension (norm scales, biases): ZeRO splits all of them. ZeRO-1's
  // gradient buffer is full size on every device but unreduced (partial
  // over data): the update reduce-scatters it into the split state.
  static const std::vector<PresetRule> zero1 = {
      {"batch", "input", "data"},
      {"embed", "opt_state", "data"},
      {"*", "opt_state", "data"},
      {"*", "grad", "data", /*partial=*/true}};
  static const std::vector<PresetRule> zero2 = {{"batch", "input", "data"},
                                                {"embed", "opt_state", "data"},
                                                {"embed", "grad", "data"},
                                                {"*", "opt_state", "data"},
                                                {"*", "grad", "data"}};
  // FSDP keeps the batch split over data between blocks too, so weights are
  // gathered before use rather than activations resharded (MaxText's
  // activation_batch rule).
  static const std::vector<PresetRule> fsdp = {{"batch", "input", "data"},
                                               {"embed", "param", "data"},
                                               {"embed", "opt_state", "data"},
                                               {"embed", "grad", "data"},
                                               {"*", "param", "data"},
                                               {"*", "opt_state", "data"},
                                               {"*", "grad", "data"},
                                               {"batch", "activation", "data"}};
  auto join = [](std::vector<PresetRule> a, const std::vector<PresetRule> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // Megatron's sequence parallelism: between blocks the residual stream is
  // split along the sequence over the tensor-parallel axis.
  static const std::vector<PresetRule> sp = {{"batch", "activation", "data"},
                                             {"seq", "activation", "model"}};
  // Context parallelism: the sequence split over the context axis from the
  // tokens through every block; attention on it is a ring or Ulysses
  // (docs/LongContext.md).
  static const std::vector<PresetRule> cp = {{"seq", "input", "context"},
                                             {"batch", "activation", "data"},
                                             {"seq", "activation", "context"}};
  static const std::vector<std::pair<std::string, std::vector<PresetRule>>>
      table = {
          {"dp", dp},
          {"zero1", zero1},
          {"zero2", zero2},
          {"fsdp", fsdp},
          {"tp", tp},
          {"dp+tp", join(dp, tp)},
          {"fsdp+tp", join(fsdp, tp)},
          {"tp+sp", join(join(dp, tp), sp)},
          {"cp", join(dp, cp)},
          {"dp+cp", join(dp, cp)},
          {"fsdp+cp", join(fsdp, cp)},
          {"cp+tp", join(join(dp, tp), cp)},
          {"fsdp+cp+tp", join(join(fsdp, tp), cp)},
          // `ep` resolves the expert axis per mesh (presetLogicalRules).
          // GShard's layout: routing and tokens split by group along the
          // batch, the dispatched tokens by expert, so that dispatch and
          // combine are each one all_to_all.
          {"ep", join(dp, {{"expert", "", "expert"},
                           {"batch", "activation", "data"},
                           {"expert", "activation", "expert"}})},
      };
  return table;
}

bool knownRole(std::string_view role) {
  return role.empty() || role == "param" || role == "opt_state" ||
         role == "grad" || role == "input" || role == "activation";
}

std::string meshAxisList(const Mesh &mesh) {
  std::string text;
  for (const MeshAxis &axis : mesh.axes())
    text += (text.empty() ? "" : ", ") + axis.name;
  return text;
}

} // namespace

std::string partita::logicalRulePresetNames() {
  std::string text;
  for (const auto &[name, rules] : presets())
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

Expected<LogicalRules> partita::presetLogicalRules(std::string_view name,
                                                   const Mesh &mesh) {
  for (const auto &[presetName, rules] : presets()) {
    if (presetName != name)
      continue;
    if (presetName.find("cp") != std::string::npos &&
        mesh.axisIndex("context") < 0)
      return Status::error("rules preset '" + presetName +
                           "' splits the sequence over the mesh's context "
                           "axis; the mesh (" +
                           meshAxisList(mesh) +
                           ") has none (e.g. --mesh data=2,context=4)");
    LogicalRules result;
    result.source = presetName;
    for (const PresetRule &rule : rules) {
      std::string axis = rule.axis;
      if (presetName == "ep" && axis == "expert" && mesh.axisIndex(axis) < 0)
        axis = "data";
      if (mesh.axisIndex(axis) < 0)
        continue;
      result.rules.push_back({rule.logical, rule.role, {axis}, rule.partial});
    }
    if (result.rules.empty())
      return Status::error(
          "rules preset '" + presetName + "' uses mesh axes the mesh (" +
          meshAxisList(mesh) + ") does not have (data, model" +
          (presetName == "ep" ? ", expert" : "") +
          (presetName.find("cp") != std::string::npos ? ", context" : "") +
          "): it would replicate everything");
    return result;
  }
  return Status::error("unknown rules preset '" + std::string(name) +
                       "' (presets: " + logicalRulePresetNames() +
                       "; or give a JSON rules file)");
}

Expected<LogicalRules> partita::parseLogicalRules(std::string_view json,
                                                  const std::string &source,
                                                  const Mesh &mesh) {
  if (Status deep = checkJsonNesting(json); !deep.ok())
    return Status::error(source + ": invalid JSON: " + deep.message());
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse(llvm::StringRef(json.data(), json.size()));
  if (!value)
    return Status::error(source + ": invalid JSON: " +
                         llvm::toString(value.takeError()));
  const llvm::json::Array *entries = value->getAsArray();
  if (const llvm::json::Object *object = value->getAsObject())
    entries = object->getArray("rules");
  if (!entries)
    return Status::error(source + ": expected an array of rules (or an "
                                  "object with one under \"rules\")");
  // No rules shards nothing: almost surely not what a rules file is for.
  if (entries->empty())
    return Status::error(source + ": the rules file holds no rules (to "
                                  "replicate everything, leave --rules out)");
  LogicalRules result;
  result.source = source;
  for (size_t i = 0; i < entries->size(); ++i) {
    std::string where = source + ": rule " + std::to_string(i);
    const llvm::json::Object *entry = (*entries)[i].getAsObject();
    if (!entry)
      return Status::error(where + " is not an object");
    LogicalRule rule;
    std::optional<llvm::StringRef> logical = entry->getString("logical");
    if (!logical || logical->empty())
      return Status::error(where + " has no \"logical\" axis name");
    rule.logical = logical->str();
    where += " (" + rule.logical + ")";
    if (const llvm::json::Value *role = entry->get("role")) {
      std::optional<llvm::StringRef> text = role->getAsString();
      if (!text || !knownRole(*text))
        return Status::error(where + ": \"role\" must be one of param, "
                                     "opt_state, grad, input, activation");
      rule.role = text->str();
    }
    const llvm::json::Value *axes = entry->get("mesh");
    if (!axes)
      return Status::error(where + " has no \"mesh\" (an axis, a list of "
                                   "axes, or null)");
    if (std::optional<llvm::StringRef> one = axes->getAsString())
      rule.meshAxes.push_back(one->str());
    else if (const llvm::json::Array *list = axes->getAsArray())
      for (const llvm::json::Value &axis : *list) {
        std::optional<llvm::StringRef> name = axis.getAsString();
        if (!name)
          return Status::error(where + ": mesh axes must be strings");
        rule.meshAxes.push_back(name->str());
      }
    else if (!axes->getAsNull())
      return Status::error(where + ": \"mesh\" must be an axis, a list of "
                                   "axes, or null");
    for (const std::string &axis : rule.meshAxes)
      if (mesh.axisIndex(axis) < 0)
        return Status::error(where + ": the mesh has no axis '" + axis +
                             "' (axes: " + meshAxisList(mesh) + ")");
    if (const llvm::json::Value *partial = entry->get("partial")) {
      std::optional<bool> flag = partial->getAsBoolean();
      if (!flag)
        return Status::error(where + ": \"partial\" must be true or false");
      rule.partial = *flag;
    }
    result.rules.push_back(std::move(rule));
  }
  return result;
}

Expected<LogicalRules> partita::loadLogicalRules(const std::string &spec,
                                                 const Mesh &mesh) {
  for (const auto &preset : presets())
    if (preset.first == spec)
      return presetLogicalRules(spec, mesh);
  if (!llvm::sys::fs::exists(spec))
    return Status::error("'" + spec + "' is neither a rules preset (" +
                         logicalRulePresetNames() +
                         ") nor a readable rules file");
  Expected<std::string> text = readJsonFile(spec);
  if (!text)
    return Status::error("rules file '" + spec + "' " +
                         text.status().message());
  return parseLogicalRules(*text, spec, mesh);
}

Sharding partita::applyLogicalRules(const LogicalRules &rules,
                                    const Mesh &mesh,
                                    const std::vector<std::string> &axes,
                                    const std::vector<int64_t> &shape,
                                    std::string_view role,
                                    double maxPadding,
                                    std::vector<std::string> &warnings) {
  Sharding sharding = Sharding::replicated(static_cast<int>(shape.size()));
  std::vector<std::string> used;
  // Named rules first, dimension by dimension; then "*" rules for the
  // dimensions still whole.
  for (bool wildcard : {false, true}) {
    for (size_t d = 0; d < axes.size() && d < shape.size(); ++d) {
      if (!sharding.dims[d].axes.empty() || (!wildcard && axes[d].empty()))
        continue;
      for (const LogicalRule &rule : rules.rules) {
        if ((rule.logical == "*") != wildcard ||
            (!wildcard && rule.logical != axes[d]))
          continue;
        bool roleMatches = rule.role.empty() ? role != "activation"
                                             : rule.role == role;
        if (!roleMatches || rule.meshAxes.empty())
          continue;
        if (rule.partial) {
          // The whole tensor stays unreduced over the axes.
          if (sharding.partialKind != PartialKind::None)
            break;
          sharding.partialKind = PartialKind::Sum;
          sharding.partialAxes = rule.meshAxes;
          used.insert(used.end(), rule.meshAxes.begin(), rule.meshAxes.end());
          break;
        }
        bool free = std::none_of(
            rule.meshAxes.begin(), rule.meshAxes.end(),
            [&](const std::string &a) {
              return std::find(used.begin(), used.end(), a) != used.end() ||
                     mesh.axisIndex(a) < 0;
            });
        if (!free)
          continue;
        int64_t devices = 1;
        for (const std::string &axis : rule.meshAxes)
          devices *= mesh.axisSize(axis);
        // A dimension that does not divide is padded to a multiple of the
        // device count; too much padding skips the rule.
        int64_t padded = (shape[d] + devices - 1) / devices * devices;
        double padding = padded > 0 ? static_cast<double>(padded - shape[d]) /
                                          static_cast<double>(padded)
                                    : 0.0;
        if (shape[d] % devices != 0 && (wildcard || padding > maxPadding)) {
          if (!wildcard) {
            std::string list;
            for (const std::string &axis : rule.meshAxes)
              list += (list.empty() ? "" : ",") + axis;
            warnings.push_back(
                "logical axis '" + axes[d] + "' (size " +
                std::to_string(shape[d]) + ") over mesh axes " + list + " (" +
                std::to_string(devices) + " devices) would be padded to " +
                std::to_string(padded) + ", " +
                std::to_string(static_cast<int>(100 * padding + 0.5)) +
                "% padding, more than --max-padding allows: that rule is "
                "skipped");
          }
          continue;
        }
        sharding.dims[d].axes = rule.meshAxes;
        used.insert(used.end(), rule.meshAxes.begin(), rule.meshAxes.end());
        break;
      }
    }
  }
  return sharding;
}

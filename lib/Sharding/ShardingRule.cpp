//===- ShardingRule.cpp - How an op's dimensions relate -------------------===//

#include "partita/Sharding/ShardingRule.h"
#include "partita/Sharding/Einsum.h"
#include "partita/Sharding/EnumName.h"

#include <numeric>

using namespace partita;

const char *partita::factorTypeName(FactorType type) {
  static const char *const names[] = {"pass-through", "reduction",
                                      "need-replication"};
  return enumName<FactorType::NeedReplication>(type, names);
}

int OpShardingRule::addFactor(int64_t size, FactorType type) {
  factors.push_back({size, type});
  return static_cast<int>(factors.size()) - 1;
}

bool OpShardingRule::allowsPartial(int operand, PartialKind kind) const {
  if (partialFlow == PartialFlow::None)
    return false;
  bool operandOk = false;
  for (int index : partialOperands)
    operandOk |= index == operand;
  bool kindOk = false;
  for (PartialKind allowed : partialKinds)
    kindOk |= allowed == kind;
  return operandOk && kindOk;
}

namespace {

Status checkTensors(const OpShardingRule &rule,
                    const std::vector<TensorFactors> &mappings,
                    const std::vector<std::vector<int64_t>> &shapes,
                    const char *what) {
  if (mappings.size() != shapes.size())
    return Status::error(std::string("rule maps ") +
                         std::to_string(mappings.size()) + " " + what +
                         "s but the op has " + std::to_string(shapes.size()));
  for (size_t t = 0; t < shapes.size(); ++t) {
    if (mappings[t].size() != shapes[t].size())
      return Status::error(std::string("rule maps ") +
                           std::to_string(mappings[t].size()) +
                           " dimensions of " + what + " " + std::to_string(t) +
                           " of rank " + std::to_string(shapes[t].size()));
    for (size_t d = 0; d < shapes[t].size(); ++d) {
      int64_t product = 1;
      for (int factor : mappings[t][d]) {
        if (factor < 0 || factor >= static_cast<int>(rule.factors.size()))
          return Status::error("rule names factor " + std::to_string(factor) +
                               " of " + std::to_string(rule.factors.size()));
        product *= rule.factors[factor].size;
      }
      if (product != shapes[t][d])
        return Status::error(std::string("rule factors of ") + what + " " +
                             std::to_string(t) + " dimension " +
                             std::to_string(d) + " multiply to " +
                             std::to_string(product) + ", not its size " +
                             std::to_string(shapes[t][d]));
    }
  }
  return Status::success();
}

std::string factorName(int index) {
  static const char letters[] = "ijklmnopqrstuvwxyzabcdefgh";
  std::string name(1, letters[index % 26]);
  if (index >= 26)
    name += std::to_string(index / 26);
  return name;
}

std::string tensorsToString(const std::vector<TensorFactors> &tensors) {
  std::string text = "(";
  for (size_t t = 0; t < tensors.size(); ++t) {
    text += t ? ", [" : "[";
    for (size_t d = 0; d < tensors[t].size(); ++d) {
      if (d)
        text += ", ";
      if (tensors[t][d].empty())
        text += "1";
      for (size_t f = 0; f < tensors[t][d].size(); ++f)
        text += (f ? "*" : "") + factorName(tensors[t][d][f]);
    }
    text += "]";
  }
  return text + ")";
}

const char *flowName(PartialFlow flow) {
  static const char *const names[] = {"none", "single", "joint", "per-value"};
  return enumName<PartialFlow::PerValue>(flow, names);
}

} // namespace

Status OpShardingRule::validate(
    const std::vector<std::vector<int64_t>> &operandShapes,
    const std::vector<std::vector<int64_t>> &resultShapes) const {
  if (Status status = checkTensors(*this, operands, operandShapes, "operand");
      !status.ok())
    return status;
  return checkTensors(*this, results, resultShapes, "result");
}

std::string OpShardingRule::toString() const {
  std::string text =
      tensorsToString(operands) + " -> " + tensorsToString(results);
  text += " {";
  bool hasReduction = false;
  for (size_t f = 0; f < factors.size(); ++f) {
    text += (f ? ", " : "") + factorName(static_cast<int>(f)) + "=" +
            std::to_string(factors[f].size);
    if (factors[f].type != FactorType::PassThrough)
      text += std::string(" ") + factorTypeName(factors[f].type);
    hasReduction |= factors[f].type == FactorType::Reduction;
  }
  text += "}";
  if (hasReduction)
    text += std::string(" reduction=") + partialKindName(reductionKind);
  if (partialFlow != PartialFlow::None) {
    text += std::string(" partial=") + flowName(partialFlow) + "(";
    for (size_t i = 0; i < partialOperands.size(); ++i)
      text += (i ? ", " : "") + std::to_string(partialOperands[i]);
    text += ")";
    for (size_t i = 0; i < partialKinds.size(); ++i)
      text += (i ? "," : " ") + std::string(partialKindName(partialKinds[i]));
  }
  return text;
}

OpShardingRule partita::elementwiseRule(const std::vector<int64_t> &shape,
                                        int numOperands, int numResults) {
  OpShardingRule rule;
  TensorFactors mapping;
  for (int64_t size : shape)
    mapping.push_back({rule.addFactor(size)});
  rule.operands.assign(numOperands, mapping);
  rule.results.assign(numResults, mapping);
  return rule;
}

OpShardingRule partita::reshapeRule(const std::vector<int64_t> &from,
                                    const std::vector<int64_t> &to) {
  OpShardingRule rule;
  TensorFactors source(from.size()), target(to.size());
  size_t i = 0, j = 0;
  // Sizes of the current dimensions not yet covered by factors.
  int64_t restFrom = i < from.size() ? from[i] : 1;
  int64_t restTo = j < to.size() ? to[j] : 1;
  auto advanceFrom = [&] {
    ++i;
    restFrom = i < from.size() ? from[i] : 1;
  };
  auto advanceTo = [&] {
    ++j;
    restTo = j < to.size() ? to[j] : 1;
  };
  while (i < from.size() || j < to.size()) {
    // Dimensions of size 1 (or fully covered) carry no factor.
    if (i < from.size() && restFrom == 1) {
      advanceFrom();
      continue;
    }
    if (j < to.size() && restTo == 1) {
      advanceTo();
      continue;
    }
    if (i >= from.size() || j >= to.size())
      break; // Only size-1 dimensions remain on the other side.
    int64_t common = std::gcd(restFrom, restTo);
    if (common > 1) {
      // The major `common` elements of both dimensions enumerate the same
      // blocks in row-major order: one shared factor.
      int factor = rule.addFactor(common);
      source[i].push_back(factor);
      target[j].push_back(factor);
      restFrom /= common;
      restTo /= common;
      continue;
    }
    // Misaligned: consume whole dimensions on the smaller side until both
    // sides have covered the same number of elements; every piece of that
    // span must stay unsharded.
    int64_t coveredFrom = restFrom, coveredTo = restTo;
    source[i].push_back(rule.addFactor(restFrom, FactorType::NeedReplication));
    target[j].push_back(rule.addFactor(restTo, FactorType::NeedReplication));
    advanceFrom();
    advanceTo();
    while (coveredFrom != coveredTo) {
      if (coveredFrom < coveredTo && i < from.size()) {
        if (restFrom > 1)
          source[i].push_back(
              rule.addFactor(restFrom, FactorType::NeedReplication));
        coveredFrom *= restFrom;
        advanceFrom();
      } else if (j < to.size()) {
        if (restTo > 1)
          target[j].push_back(
              rule.addFactor(restTo, FactorType::NeedReplication));
        coveredTo *= restTo;
        advanceTo();
      } else {
        break; // Sizes disagree; the op's verifier reports that.
      }
    }
  }
  rule.operands.push_back(std::move(source));
  rule.results.push_back(std::move(target));
  rule.partialFlow = PartialFlow::Single;
  rule.partialOperands = {0};
  rule.partialKinds = {PartialKind::Sum, PartialKind::Max, PartialKind::Min};
  return rule;
}

OpShardingRule
partita::einsumRule(const EinsumSpec &spec,
                    const std::vector<std::vector<int64_t>> &shapes) {
  OpShardingRule rule;
  std::string labels;
  std::vector<int> factorOfLabel;
  auto factorFor = [&](char label, int64_t size) {
    size_t at = labels.find(label);
    if (at != std::string::npos)
      return factorOfLabel[at];
    bool inOutput = spec.output.find(label) != std::string::npos;
    int factor = rule.addFactor(size, inOutput ? FactorType::PassThrough
                                               : FactorType::Reduction);
    labels.push_back(label);
    factorOfLabel.push_back(factor);
    return factor;
  };
  for (size_t i = 0; i < spec.inputs.size() && i < shapes.size(); ++i) {
    TensorFactors mapping;
    for (size_t d = 0; d < spec.inputs[i].size() && d < shapes[i].size(); ++d)
      mapping.push_back({factorFor(spec.inputs[i][d], shapes[i][d])});
    rule.operands.push_back(std::move(mapping));
  }
  TensorFactors output;
  for (char label : spec.output)
    output.push_back({factorFor(label, 1)});
  rule.results.push_back(std::move(output));
  rule.reductionKind = PartialKind::Sum;
  rule.partialFlow = PartialFlow::Single;
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    rule.partialOperands.push_back(static_cast<int>(i));
  rule.partialKinds = {PartialKind::Sum};
  return rule;
}

OpShardingRule
partita::identityRule(const std::vector<std::vector<int64_t>> &shapes) {
  OpShardingRule rule;
  for (size_t v = 0; v < shapes.size(); ++v) {
    TensorFactors mapping;
    for (int64_t size : shapes[v])
      mapping.push_back({rule.addFactor(size)});
    rule.operands.push_back(mapping);
    rule.results.push_back(mapping);
    rule.partialOperands.push_back(static_cast<int>(v));
  }
  rule.partialFlow = PartialFlow::PerValue;
  rule.partialKinds = {PartialKind::Sum, PartialKind::Max, PartialKind::Min};
  return rule;
}

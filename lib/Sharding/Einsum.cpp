//===- Einsum.cpp - Einsum specs ------------------------------------------===//

#include "partita/Sharding/Einsum.h"

#include <cctype>
#include <map>

using namespace partita;

std::string EinsumSpec::contractedLabels() const {
  std::string contracted;
  for (const std::string &input : inputs)
    for (char label : input)
      if (output.find(label) == std::string::npos &&
          contracted.find(label) == std::string::npos)
        contracted.push_back(label);
  return contracted;
}

std::string EinsumSpec::toString() const {
  std::string text;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i)
      text += ",";
    text += inputs[i];
  }
  return text + "->" + output;
}

namespace {
Status checkTerm(std::string_view term, const char *which, size_t index) {
  std::string seen;
  for (char label : term) {
    if (!std::isalpha(static_cast<unsigned char>(label)))
      return Status::error(std::string("einsum ") + which + " term " +
                           std::to_string(index) + " has '" + label +
                           "'; labels must be letters a-z or A-Z");
    if (seen.find(label) != std::string::npos)
      return Status::error(
          std::string("einsum label '") + label + "' repeats in " + which +
          " term " + std::to_string(index) + " (diagonals are not supported)");
    seen.push_back(label);
  }
  return Status::success();
}
} // namespace

bool partita::splitEinsumTerms(std::string_view text,
                               std::vector<std::string> &inputs,
                               std::string &output) {
  size_t arrow = text.find("->");
  if (arrow == std::string_view::npos)
    return false;
  std::string_view lhs = text.substr(0, arrow);
  output = std::string(text.substr(arrow + 2));
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    inputs.emplace_back(lhs.substr(start, comma - start));
    if (comma == std::string_view::npos)
      return true;
    start = comma + 1;
  }
}

Expected<EinsumSpec> partita::parseEinsumSpec(std::string_view text,
                                              int numOperands) {
  EinsumSpec spec;
  if (!splitEinsumTerms(text, spec.inputs, spec.output))
    return Status::error("einsum spec '" + std::string(text) +
                         "' needs an explicit output after '->'");
  if (numOperands >= 0 && static_cast<int>(spec.inputs.size()) != numOperands)
    return Status::error("einsum spec '" + std::string(text) + "' has " +
                         std::to_string(spec.inputs.size()) +
                         " input terms for " + std::to_string(numOperands) +
                         " operands");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (Status status = checkTerm(spec.inputs[i], "input", i); !status.ok())
      return status;
  if (Status status = checkTerm(spec.output, "output", 0); !status.ok())
    return status;
  for (char label : spec.output) {
    bool found = false;
    for (const std::string &input : spec.inputs)
      found |= input.find(label) != std::string::npos;
    if (!found)
      return Status::error(std::string("einsum output label '") + label +
                           "' appears in no input term");
  }
  return spec;
}

Expected<std::vector<int64_t>>
partita::einsumResultShape(const EinsumSpec &spec,
                           const std::vector<std::vector<int64_t>> &shapes) {
  if (shapes.size() != spec.inputs.size())
    return Status::error("einsum has " + std::to_string(spec.inputs.size()) +
                         " terms but " + std::to_string(shapes.size()) +
                         " operands");
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string &term = spec.inputs[i];
    if (term.size() != shapes[i].size())
      return Status::error("einsum term '" + term + "' has " +
                           std::to_string(term.size()) +
                           " labels but operand " + std::to_string(i) +
                           " has rank " + std::to_string(shapes[i].size()));
    for (size_t d = 0; d < term.size(); ++d) {
      auto [it, inserted] = sizes.emplace(term[d], shapes[i][d]);
      if (!inserted && it->second != shapes[i][d])
        return Status::error(std::string("einsum label '") + term[d] +
                             "' has size " + std::to_string(it->second) +
                             " and size " + std::to_string(shapes[i][d]));
    }
  }
  std::vector<int64_t> result;
  for (char label : spec.output)
    result.push_back(sizes[label]);
  return result;
}

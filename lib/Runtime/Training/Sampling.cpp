//===- Sampling.cpp - Choosing the next token -----------------------------===//

#include "partita/Runtime/Training/Sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>

using namespace partita;

double partita::samplingUniform(uint64_t seed, int64_t prompt, int64_t step) {
  // splitmix64 over the three numbers: independent draws for every
  // (prompt, step), whatever batch the prompt falls into.
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL ^
               (static_cast<uint64_t>(prompt) * 0xbf58476d1ce4e5b9ULL) ^
               (static_cast<uint64_t>(step) * 0x94d049bb133111ebULL);
  for (int round = 0; round < 2; ++round) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
  }
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

int32_t partita::chooseToken(const float *logits, int64_t count,
                             const SamplingOptions &sampling, double uniform) {
  if (sampling.temperature <= 0)
    return static_cast<int32_t>(std::max_element(logits, logits + count) -
                                logits);
  // The candidates, most likely first (ties: the lower id first).
  std::vector<int32_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  int64_t kept = sampling.topK > 0 ? std::min(sampling.topK, count) : count;
  auto before = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + kept, order.end(), before);
  order.resize(static_cast<size_t>(kept));
  std::vector<double> weights;
  double peak = logits[order[0]], total = 0;
  for (int32_t t : order) {
    weights.push_back(std::exp((logits[t] - peak) / sampling.temperature));
    total += weights.back();
  }
  // Nucleus: the fewest candidates whose probabilities reach top_p.
  if (sampling.topP < 1) {
    double sum = 0;
    size_t keep = 0;
    while (keep < weights.size() && sum < sampling.topP * total)
      sum += weights[keep++];
    weights.resize(std::max<size_t>(keep, 1));
    total = std::accumulate(weights.begin(), weights.end(), 0.0);
  }
  double target = uniform * total, sum = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    sum += weights[i];
    if (target < sum)
      return order[i];
  }
  return order[weights.size() - 1];
}

Expected<std::vector<std::vector<int32_t>>>
partita::readPrompts(const std::string &path, int64_t vocab, int64_t seq) {
  std::ifstream file(path);
  if (!file)
    return Status::error("cannot read prompts '" + path + "'");
  std::vector<std::vector<int32_t>> prompts;
  std::string line;
  for (int64_t number = 1; std::getline(file, line); ++number) {
    std::string where = path + ":" + std::to_string(number) + ": ";
    line = line.substr(0, line.find('|'));
    std::istringstream words(line);
    std::vector<int32_t> prompt;
    std::string word;
    while (words >> word) {
      char *end = nullptr;
      long long token = std::strtoll(word.c_str(), &end, 10);
      if (!end || *end || token < 0 || token >= vocab)
        return Status::error(where + "'" + word +
                             "' is not a token id in [0, " +
                             std::to_string(vocab) + ")");
      prompt.push_back(static_cast<int32_t>(token));
    }
    if (prompt.empty()) {
      if (line.find_first_not_of(" \t\r") == std::string::npos &&
          file.peek() == EOF)
        break;
      return Status::error(where + "an empty prompt (a prompt is one or "
                                   "more token ids)");
    }
    if (static_cast<int64_t>(prompt.size()) >= seq)
      return Status::error(
          where + "the prompt has " + std::to_string(prompt.size()) +
          " tokens: it must be shorter than the model's "
          "sequence (" +
          std::to_string(seq) + ") to leave room for a new one");
    prompts.push_back(std::move(prompt));
  }
  if (prompts.empty())
    return Status::error("'" + path + "' holds no prompts");
  return prompts;
}

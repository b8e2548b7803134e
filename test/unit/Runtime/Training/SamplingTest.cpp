//===- SamplingTest.cpp - Choosing the next token -------------------------===//
//
// Greedy takes the most likely token (the lowest id among ties); top-k and
// top-p keep only the most likely candidates; sampled frequencies follow
// softmax(logits / T); draws depend on (seed, prompt, step) alone; prompt
// files are read line by line with errors naming the line.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Training/Sampling.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

using namespace partita;

namespace {

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("partita-sampling-" + name))
          .string();
  std::ofstream(path) << text;
  return path;
}

} // namespace

TEST_CASE("greedy picks the largest logit, the lowest id among ties",
          "[sampling]") {
  SamplingOptions greedy;
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  CHECK(chooseToken(logits.data(), 4, greedy, 0.99) == 1);
  CHECK(chooseToken(logits.data(), 4, greedy, 0.0) == 1);
}

TEST_CASE("top-k 1 and a tiny top-p are greedy at any draw", "[sampling]") {
  std::vector<float> logits = {0.1f, 0.3f, 3.0f, 0.2f, -2.0f};
  SamplingOptions sampling;
  sampling.temperature = 1.0;
  sampling.topK = 1;
  for (double u : {0.0, 0.3, 0.999})
    CHECK(chooseToken(logits.data(), 5, sampling, u) == 2);
  sampling.topK = 0;
  sampling.topP = 1e-6;
  for (double u : {0.0, 0.5, 0.999})
    CHECK(chooseToken(logits.data(), 5, sampling, u) == 2);
}

TEST_CASE("top-k keeps only the k most likely tokens", "[sampling]") {
  std::vector<float> logits = {1.0f, 4.0f, 0.0f, 3.0f, 2.0f};
  SamplingOptions sampling;
  sampling.temperature = 5.0;
  sampling.topK = 2;
  std::set<int32_t> seen;
  for (int i = 0; i < 2000; ++i)
    seen.insert(
        chooseToken(logits.data(), 5, sampling, samplingUniform(7, 0, i)));
  CHECK(seen == std::set<int32_t>{1, 3});
}

TEST_CASE("sampled frequencies follow softmax(logits / T)", "[sampling]") {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  SamplingOptions sampling;
  sampling.temperature = 2.0;
  std::vector<int> counts(3, 0);
  int draws = 20000;
  for (int i = 0; i < draws; ++i)
    ++counts[chooseToken(logits.data(), 3, sampling,
                         samplingUniform(11, i, 0))];
  double total = 0;
  std::vector<double> expected;
  for (float l : logits)
    total += std::exp(l / 2.0);
  for (int t = 0; t < 3; ++t) {
    double p = std::exp(logits[t] / 2.0) / total;
    // Five standard deviations of a binomial count.
    double sd = std::sqrt(draws * p * (1 - p));
    CHECK(std::fabs(counts[t] - draws * p) < 5 * sd);
  }
}

TEST_CASE("draws are a function of seed, prompt and step", "[sampling]") {
  double a = samplingUniform(1, 2, 3);
  CHECK(a == samplingUniform(1, 2, 3));
  CHECK(a >= 0.0);
  CHECK(a < 1.0);
  std::set<double> distinct;
  for (int seed = 0; seed < 4; ++seed)
    for (int prompt = 0; prompt < 4; ++prompt)
      for (int step = 0; step < 4; ++step)
        distinct.insert(samplingUniform(seed, prompt, step));
  CHECK(distinct.size() == 64);
}

TEST_CASE("prompt files: one prompt per line, '|' ends it", "[sampling]") {
  std::string path = writeTemp("good", "1 2 3 | 4 5\n6\n7 8\n");
  Expected<std::vector<std::vector<int32_t>>> prompts =
      readPrompts(path, 16, 8);
  REQUIRE(prompts);
  CHECK(*prompts == std::vector<std::vector<int32_t>>{{1, 2, 3}, {6}, {7, 8}});
}

TEST_CASE("bad prompt files name the line", "[sampling]") {
  auto error = [](const std::string &text) {
    Expected<std::vector<std::vector<int32_t>>> prompts =
        readPrompts(writeTemp("bad", text), 16, 4);
    REQUIRE_FALSE(prompts);
    return prompts.status().message();
  };
  CHECK_THAT(error("1 2\n3 x\n"), Catch::Contains(":2: 'x' is not a token"));
  CHECK_THAT(error("1 16\n"), Catch::Contains("[0, 16)"));
  CHECK_THAT(error("1\n\n2\n"), Catch::Contains(":2: an empty prompt"));
  CHECK_THAT(error("1 2 3 4\n"), Catch::Contains("shorter than"));
  CHECK_THAT(error(""), Catch::Contains("holds no prompts"));
  CHECK_THAT(readPrompts("/nonexistent/prompts", 16, 4).status().message(),
             Catch::Contains("cannot read prompts"));
}

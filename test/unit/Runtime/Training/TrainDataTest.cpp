//===- TrainDataTest.cpp - What a train step is fed -----------------------===//
//
// Token-file windows: each window once per epoch in a seeded order, rank r
// reads only its rows, a trace line per window; bad files are errors.
// Synthetic data: deterministic per (seed, step).
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Training/TrainLoop.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace partita;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("partita-traindata-" + name))
      .string();
}

void writeTokens(const std::string &path, const std::vector<int32_t> &tokens) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char *>(tokens.data()),
             static_cast<std::streamsize>(4 * tokens.size()));
}

int32_t tokenAt(const HostArray &array, int64_t index) {
  int32_t value;
  std::memcpy(&value, array.bytes.data() + 4 * index, 4);
  return value;
}

} // namespace

TEST_CASE("token windows: each once per epoch, targets shifted by one",
          "[train]") {
  // 8 windows of seq + 1 = 4 tokens: window w holds 4w .. 4w+3.
  const int64_t seq = 3, batch = 4;
  std::vector<int32_t> tokens;
  for (int32_t t = 0; t < 32; ++t)
    tokens.push_back(t);
  std::string path = tempPath("tokens.bin");
  writeTokens(path, tokens);
  std::string trace = tempPath("trace.csv");
  std::set<int32_t> firsts;
  {
    TokenFileData data;
    data.setSeed(5);
    data.setRanks(2);
    REQUIRE(data.traceTo(trace).ok());
    REQUIRE(data.load(path, seq, 64).ok());
    HostArray in = HostArray::zeros(DType::I32, {batch, seq});
    HostArray out = HostArray::zeros(DType::I32, {batch, seq});
    std::vector<HostArray *> inputs = {&in, &out};
    for (int64_t step = 0; step < 2; ++step) { // one epoch: 8 / 4 steps
      REQUIRE(data.fill(step, inputs).ok());
      for (int64_t b = 0; b < batch; ++b) {
        int32_t first = tokenAt(in, b * seq);
        CHECK(first % 4 == 0);
        firsts.insert(first);
        for (int64_t s = 0; s < seq; ++s) {
          CHECK(tokenAt(in, b * seq + s) == first + s);
          CHECK(tokenAt(out, b * seq + s) == first + s + 1);
        }
      }
    }
  } // The trace is complete once the data source is gone.
  CHECK(firsts.size() == 8);
  // The trace has a header and a line per window read,
  // rows 0-1 from rank 0 and 2-3 from rank 1.
  std::ifstream file(trace);
  std::stringstream text;
  text << file.rdbuf();
  std::string lines = text.str();
  CHECK(lines.rfind("step,epoch,rank,row,window\n", 0) == 0);
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 1 + 8);
  CHECK(lines.find("\n0,0,0,1,") != std::string::npos);
  CHECK(lines.find("\n0,0,1,2,") != std::string::npos);
  std::remove(path.c_str());
  std::remove(trace.c_str());
}

TEST_CASE("bad token files are errors that name the file", "[train]") {
  TokenFileData data;
  CHECK(data.load("/nonexistent/tokens.bin", 3, 64).message() ==
        "cannot read token file '/nonexistent/tokens.bin'");
  std::string path = tempPath("odd.bin");
  {
    std::ofstream file(path, std::ios::binary);
    file << "abcdef";
  }
  CHECK(data.load(path, 3, 64).message() ==
        "token file '" + path +
            "' holds 6 bytes, not a whole number of int32 tokens");
  writeTokens(path, {1, 2, 70});
  CHECK(data.load(path, 3, 64).message() ==
        "token file '" + path +
            "': token 2 is 70, outside the vocabulary [0, 64)");
  writeTokens(path, {1, 2, 3, 4});
  REQUIRE(data.load(path, 3, 64).ok());
  HostArray in = HostArray::zeros(DType::I32, {2, 3});
  HostArray out = HostArray::zeros(DType::I32, {2, 3});
  CHECK(data.fill(0, {&in, &out}).message() ==
        "the token file holds 1 windows of 4 tokens, fewer than one batch "
        "of 2");
  CHECK(data.traceTo("/nonexistent/trace.csv").message() ==
        "cannot write '/nonexistent/trace.csv': No such file or directory");
  std::remove(path.c_str());
}

TEST_CASE("synthetic data are deterministic and follow their rule",
          "[train]") {
  SyntheticData data("gpt", 17, 3);
  HostArray in = HostArray::zeros(DType::I32, {2, 5});
  HostArray out = HostArray::zeros(DType::I32, {2, 5});
  REQUIRE(data.fill(4, {&in, &out}).ok());
  for (int64_t i = 0; i < 10; ++i) {
    CHECK(tokenAt(out, i) == (3 * tokenAt(in, i) + 1) % 17);
    if (i % 5 != 4)
      CHECK(tokenAt(in, i + 1) == tokenAt(out, i));
  }
  HostArray again = HostArray::zeros(DType::I32, {2, 5});
  HostArray againOut = HostArray::zeros(DType::I32, {2, 5});
  REQUIRE(SyntheticData("gpt", 17, 3).fill(4, {&again, &againOut}).ok());
  CHECK(again.bytes == in.bytes);
}

TEST_CASE("losses as CSV and SVG", "[train]") {
  CHECK(lossCsv({2.5, 1.25}, {0.5, 0.25}) ==
        "step,loss,seconds\n1,2.5,0.500000\n2,1.25,0.250000\n");
  std::string svg = lossPlotSvg({3, 2, 1}, "gpt dp on cpu:8");
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(svg.find("gpt dp on cpu:8") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
}

TEST_CASE("learning-rate schedules: warmup, then constant, cosine or linear",
          "[train]") {
  LearningRateSchedule schedule;
  schedule.peak = 1.0;
  schedule.minimum = 0.1;
  schedule.warmup = 4;
  schedule.total = 14;
  // Warmup: peak * (step + 1) / warmup.
  CHECK(schedule.at(0) == Approx(0.25));
  CHECK(schedule.at(3) == Approx(1.0));
  CHECK(schedule.at(13) == Approx(1.0)); // constant after the warmup
  schedule.kind = LearningRateSchedule::Kind::Cosine;
  CHECK(schedule.at(4) == Approx(1.0));
  // Halfway through the decay (steps 4 .. 13): the mean of peak and min.
  schedule.total = 15;
  CHECK(schedule.at(9) == Approx(0.55));
  CHECK(schedule.at(14) == Approx(0.1)); // the last step runs at the minimum
  CHECK(schedule.at(20) == Approx(0.1));
  schedule.kind = LearningRateSchedule::Kind::Linear;
  CHECK(schedule.at(9) == Approx(0.55));
  CHECK(schedule.at(6) == Approx(1.0 - 0.9 * 0.2));
  CHECK(schedule.at(14) == Approx(0.1));
}

TEST_CASE("fine-tuning examples: prompt then response, the mask on the "
          "response's targets, each once per epoch",
          "[train]") {
  std::string path = tempPath("sft.txt");
  {
    std::ofstream file(path);
    file << "1 10 11 2 | 12 13 3\n\n1 20 2 | 21 3\n1 30 31 32 2 | 33 3\n";
  }
  SftData data;
  data.setSeed(7);
  REQUIRE(data.load(path, /*sequence=*/6, /*vocabulary=*/64).ok());
  CHECK(data.size() == 3);
  HostArray tokens = HostArray::zeros(DType::I32, {3, 6});
  HostArray targets = HostArray::zeros(DType::I32, {3, 6});
  HostArray mask = HostArray::zeros(DType::F32, {3, 6});
  REQUIRE(data.fill(0, {&tokens, &targets, &mask}).ok());
  std::set<int32_t> seen;
  for (int64_t row = 0; row < 3; ++row) {
    int32_t second = tokenAt(tokens, row * 6 + 1);
    seen.insert(second);
    // Targets are the tokens shifted by one; the mask is 1 exactly where
    // the target belongs to the response.
    std::vector<float> weights(6);
    std::memcpy(weights.data(), mask.bytes.data() + 4 * row * 6, 24);
    if (second == 10) { // 1 10 11 2 | 12 13 3: targets 10 11 2 12 13 3
      CHECK(tokenAt(targets, row * 6 + 2) == 2);
      CHECK(tokenAt(targets, row * 6 + 3) == 12);
      CHECK(weights == std::vector<float>{0, 0, 0, 1, 1, 1});
    } else if (second == 20) { // 1 20 2 | 21 3, padded with 0
      CHECK(tokenAt(tokens, row * 6 + 5) == 0);
      CHECK(weights == std::vector<float>{0, 0, 1, 1, 0, 0});
    } else { // 1 30 31 32 2 | 33 3: cut at 7 tokens, the last target 3
      CHECK(second == 30);
      CHECK(tokenAt(targets, row * 6 + 5) == 3);
      CHECK(weights == std::vector<float>{0, 0, 0, 0, 1, 1});
    }
  }
  CHECK(seen == std::set<int32_t>{10, 20, 30}); // each example once

  {
    std::ofstream file(path);
    file << "1 10 2 | 12 3\n1 99 2 | 5\n";
  }
  Status bad = data.load(path, 6, 64);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message() == path + ":2: '99' is not a token id in [0, 64)");
  {
    std::ofstream file(path);
    file << "1 2 3 4 5 6 7 | 8\n";
  }
  bad = data.load(path, 6, 64);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find(":1: the prompt (7 tokens) leaves no room") !=
        std::string::npos);
  {
    std::ofstream file(path);
    file << "1 2 3\n";
  }
  CHECK(data.load(path, 6, 64).message() ==
        path + ":1: expected 'prompt tokens | response tokens'");
  std::filesystem::remove(path);
}

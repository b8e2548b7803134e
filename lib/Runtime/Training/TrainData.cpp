//===- TrainData.cpp - What a train step is fed, step by step -------------===//

#include "partita/Runtime/Training/TrainData.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>

namespace partita {

TrainData::~TrainData() = default;

Status SyntheticData::fill(int64_t step,
                           const std::vector<HostArray *> &inputs) {
  std::mt19937_64 random(seed * 7919 + static_cast<uint64_t>(step));
  if (model == "mlp") {
    HostArray &x = *inputs[0], &target = *inputs[1];
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < x.numElements(); ++i) {
      float value = uniform(random), goal = std::sin(3.0f * value);
      std::memcpy(x.bytes.data() + 4 * i, &value, 4);
      std::memcpy(target.bytes.data() + 4 * i, &goal, 4);
    }
    return Status::success();
  }
  // Token sequences t[k+1] = (3 t[k] + 1) mod V; targets are the next ones.
  HostArray &tokens = *inputs[0], &targets = *inputs[1];
  int64_t batch = tokens.shape[0], seq = tokens.shape[1];
  for (int64_t b = 0; b < batch; ++b) {
    int32_t token = static_cast<int32_t>(random() % vocab);
    for (int64_t s = 0; s < seq; ++s) {
      int32_t next = static_cast<int32_t>((3 * token + 1) % vocab);
      std::memcpy(tokens.bytes.data() + 4 * (b * seq + s), &token, 4);
      std::memcpy(targets.bytes.data() + 4 * (b * seq + s), &next, 4);
      token = next;
    }
  }
  return Status::success();
}

Status TokenFileData::load(const std::string &path, int64_t sequence,
                           int64_t vocabulary) {
  std::error_code error;
  std::ifstream file(path, std::ios::binary);
  if (!file || !std::filesystem::is_regular_file(path, error))
    return Status::error("cannot read token file '" + path + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), {});
  if (bytes.size() % 4 != 0)
    return Status::error("token file '" + path + "' holds " +
                         std::to_string(bytes.size()) +
                         " bytes, not a whole number of int32 tokens");
  tokens.resize(bytes.size() / 4);
  std::memcpy(tokens.data(), bytes.data(), bytes.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocabulary)
      return Status::error("token file '" + path + "': token " +
                           std::to_string(i) + " is " +
                           std::to_string(tokens[i]) +
                           ", outside the vocabulary [0, " +
                           std::to_string(vocabulary) + ")");
  seq = sequence;
  vocab = vocabulary;
  windows = static_cast<int64_t>(tokens.size()) / (seq + 1);
  return Status::success();
}

Status TokenFileData::traceTo(const std::string &path) {
  trace = std::make_unique<std::ofstream>(path);
  if (!*trace)
    return Status::error("cannot write '" + path + "'");
  *trace << "step,epoch,rank,row,window\n";
  return Status::success();
}

Status TokenFileData::fill(int64_t step,
                           const std::vector<HostArray *> &inputs) {
  HostArray &in = *inputs[0], &out = *inputs[1];
  int64_t batch = in.shape[0];
  if (windows < batch)
    return Status::error("the token file holds " + std::to_string(windows) +
                         " windows of " + std::to_string(seq + 1) +
                         " tokens, fewer than one batch of " +
                         std::to_string(batch));
  int64_t perEpoch = windows / batch;
  int64_t epoch = step / perEpoch, within = step % perEpoch;
  if (epoch != epochOf) {
    order.resize(windows);
    for (int64_t w = 0; w < windows; ++w)
      order[w] = w;
    std::mt19937_64 random(seed * 104729 + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), random);
    epochOf = epoch;
  }
  for (int64_t rank = 0; rank < ranks; ++rank)
    readRank(step, epoch, within, rank, batch, in, out);
  return Status::success();
}

void TokenFileData::readRank(int64_t step, int64_t epoch, int64_t within,
                             int64_t rank, int64_t batch, HostArray &in,
                             HostArray &out) {
  int64_t rows = batch / ranks;
  for (int64_t b = rank * rows; b < (rank + 1) * rows; ++b) {
    int64_t window = order[within * batch + b];
    const int32_t *start = tokens.data() + window * (seq + 1);
    std::memcpy(in.bytes.data() + 4 * b * seq, start, 4 * seq);
    std::memcpy(out.bytes.data() + 4 * b * seq, start + 1, 4 * seq);
    if (trace)
      *trace << step << "," << epoch << "," << rank << "," << b << ","
             << window << "\n";
  }
}

} // namespace partita

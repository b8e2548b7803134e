//===- TrainData.h - What a train step is fed, step by step -----*- C++ -*-===//
//
// The data inputs of a train step (docs/Training.md): deterministic
// synthetic data (token sequences that follow a fixed rule, or sin(3x) for
// the MLP), or windows of a token file visited in a per-epoch shuffled
// order, each data-parallel rank reading only its rows of a batch.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_TRAINING_TRAINDATA_H
#define PARTITA_RUNTIME_TRAINING_TRAINDATA_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace partita {

/// A source of the data inputs of every step.
/// Row `row` of tokens, targets and mask ([rows, seq] each) from `tokens`
/// (the first `prompt` of them the prompt): cut at seq + 1, padded with 0,
/// the mask 1 where the target is an answer token.
void fillAnswerRow(const std::vector<int32_t> &tokens, int64_t prompt,
                   int64_t seq, int64_t row, HostArray &in, HostArray &out,
                   HostArray &mask);

class TrainData {
public:
  virtual ~TrainData();
  /// Fills the data inputs of step `step` (the train step's non-parameter,
  /// non-scalar inputs, in order: inputs then targets).
  virtual Status fill(int64_t step, const std::vector<HostArray *> &inputs) = 0;
  /// Restricts fill() to rows [first, end) of every batch: the rows this
  /// process's devices hold in a multi-process run. The other rows are
  /// neither read nor generated (left as they were); a row's values do not
  /// depend on which rows are filled.
  void setRows(int64_t first, int64_t end) {
    rowBegin = first;
    rowEnd = end;
  }

protected:
  /// The rows of a batch of `batch` rows that fill() fills.
  int64_t firstRow(int64_t batch) const {
    return rowBegin < batch ? rowBegin : batch;
  }
  int64_t endRow(int64_t batch) const {
    return rowEnd < 0 || rowEnd > batch ? batch : rowEnd;
  }

private:
  int64_t rowBegin = 0, rowEnd = -1;
};

/// Deterministic synthetic data: for `mlp`, x uniform in [-1, 1) and the
/// target sin(3x); for token models, sequences t[k+1] = (3 t[k] + 1) mod
/// vocab from a random first token, the targets the next tokens.
class SyntheticData : public TrainData {
public:
  SyntheticData(std::string model, int64_t vocab, uint64_t seed)
      : model(std::move(model)), vocab(vocab), seed(seed) {}
  Status fill(int64_t step, const std::vector<HostArray *> &inputs) override;

private:
  std::string model;
  int64_t vocab;
  uint64_t seed;
};

/// Windows of `seq + 1` int32 tokens of a file, visited in an order shuffled
/// per epoch (seeded), each window once per epoch. With `ranks` data-parallel
/// ranks, rank r reads only its rows of each global batch (a contiguous
/// block of batch / ranks rows, the rows its devices hold).
class TokenFileData : public TrainData {
public:
  /// Reads `path`; every token must lie in [0, vocabulary).
  Status load(const std::string &path, int64_t sequence, int64_t vocabulary);
  /// Writes one CSV line per window read ("step,epoch,rank,row,window",
  /// after that header) to `path`.
  Status traceTo(const std::string &path);
  void setSeed(uint64_t value) { seed = value; }
  void setRanks(int64_t value) { ranks = value; }
  Status fill(int64_t step, const std::vector<HostArray *> &inputs) override;

private:
  /// Rank `rank`'s rows of the batch of `step`.
  void readRank(int64_t step, int64_t epoch, int64_t within, int64_t rank,
                int64_t batch, HostArray &in, HostArray &out);
  /// Flushes the trace; an error naming it when the write failed.
  Status checkTrace();

  std::vector<int32_t> tokens;
  std::vector<int64_t> order;
  int64_t vocab = 0, seq = 0, windows = 0, ranks = 1;
  uint64_t seed = 0;
  int64_t epochOf = -1;
  std::unique_ptr<std::ofstream> trace;
  std::string tracePath;
};

/// Supervised fine-tuning examples: a text file, one example per line,
/// "prompt tokens | response tokens" (token ids separated by spaces). An
/// example fills one row: the prompt then the response, cut at seq + 1
/// tokens and padded with 0; the targets are the tokens shifted by one, and
/// the loss mask is 1 where the target is a response token. Examples are
/// visited in an order shuffled per epoch by the seed, each once per epoch.
class SftData : public TrainData {
public:
  /// Reads `path`; errors name the file and line.
  Status load(const std::string &path, int64_t sequence, int64_t vocabulary);
  void setSeed(uint64_t value) { seed = value; }
  /// Fills tokens, targets and the loss mask of step `step`.
  Status fill(int64_t step, const std::vector<HostArray *> &inputs) override;
  /// The examples read.
  int64_t size() const { return static_cast<int64_t>(examples.size()); }

private:
  struct Example {
    std::vector<int32_t> tokens;
    /// Tokens before the response.
    int64_t prompt = 0;
  };
  std::vector<Example> examples;
  std::vector<int64_t> order;
  int64_t seq = 0, epochOf = -1;
  uint64_t seed = 0;
};

/// Preference pairs for DPO: a text file, one pair per line, "prompt |
/// chosen | rejected" (token ids). A pair fills two rows, the chosen answer
/// then the rejected one, each as SftData fills a row, and, for DPO,
/// `ref_logp` the reference policy's sequence log-probabilities of both
/// (setReference; a reward model's step has no such input). Pairs are
/// visited in an order shuffled per epoch by the seed.
class DpoData : public TrainData {
public:
  /// Reads `path`; errors name the file and line.
  Status load(const std::string &path, int64_t sequence, int64_t vocabulary);
  void setSeed(uint64_t value) { seed = value; }
  int64_t size() const { return static_cast<int64_t>(pairs.size()); }
  /// Per pair, the reference's log-probabilities of chosen then rejected.
  Status setReference(std::vector<double> logps);
  /// Fills tokens, targets and loss mask with pairs `first`, first + 1, ...
  /// in file order (wrapping around), for scoring every pair.
  Status fillInOrder(int64_t first, const std::vector<HostArray *> &inputs);
  /// Fills tokens, targets, loss mask and ref_logp of step `step`.
  Status fill(int64_t step, const std::vector<HostArray *> &inputs) override;

private:
  struct Pair {
    std::vector<int32_t> chosen, rejected;
    /// Tokens before the answer.
    int64_t prompt = 0;
  };
  Status fillPair(const Pair &pair, int64_t row,
                  const std::vector<HostArray *> &inputs);
  std::vector<Pair> pairs;
  std::vector<double> reference;
  std::vector<int64_t> order;
  int64_t seq = 0, epochOf = -1;
  uint64_t seed = 0;
};

} // namespace partita

#endif // PARTITA_RUNTIME_TRAINING_TRAINDATA_H

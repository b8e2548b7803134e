//===- TrainData.cpp - What a train step is fed, step by step -------------===//

#include "partita/Runtime/Training/TrainData.h"

#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/IO/Files.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>

namespace partita {

TrainData::~TrainData() = default;

Status SyntheticData::fill(int64_t step,
                           const std::vector<HostArray *> &inputs) {
  // One engine draw per element (mlp) or per row (tokens): a process
  // filling only some rows skips the draws of those before them.
  std::mt19937_64 random(seed * 7919 + static_cast<uint64_t>(step));
  if (model == "mlp") {
    HostArray &x = *inputs[0], &target = *inputs[1];
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    int64_t rows = x.shape.empty() ? 1 : x.shape[0];
    int64_t perRow = rows ? x.numElements() / rows : 0;
    random.discard(static_cast<unsigned long long>(firstRow(rows) * perRow));
    for (int64_t i = firstRow(rows) * perRow; i < endRow(rows) * perRow; ++i) {
      float value = uniform(random), goal = std::sin(3.0f * value);
      std::memcpy(x.bytes.data() + 4 * i, &value, 4);
      std::memcpy(target.bytes.data() + 4 * i, &goal, 4);
    }
    return Status::success();
  }
  // Token sequences t[k+1] = (3 t[k] + 1) mod V; targets are the next ones.
  HostArray &tokens = *inputs[0], &targets = *inputs[1];
  int64_t batch = tokens.shape[0], seq = tokens.shape[1];
  random.discard(static_cast<unsigned long long>(firstRow(batch)));
  for (int64_t b = firstRow(batch); b < endRow(batch); ++b) {
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
  // Checked before opening: opening a FIFO waits for a writer forever.
  if (Status regular = requireRegularFile(path); !regular.ok())
    return Status::error("token file '" + path + "' " + regular.message());
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
  tracePath = path;
  if (!*trace)
    return Status::error("cannot write '" + path + "': " +
                         std::strerror(errno));
  *trace << "step,epoch,rank,row,window\n";
  return checkTrace();
}

Status TokenFileData::checkTrace() {
  // Flushed every step: a full disk is reported at the step that met it,
  // not lost in a destructor at exit.
  errno = 0;
  if (trace && !trace->flush())
    return Status::error("cannot write the data trace '" + tracePath +
                         "': " +
                         std::strerror(errno ? errno : EIO));
  return Status::success();
}

namespace {

/// Makes `order` epoch `epoch`'s visiting order of `count` items, shuffled
/// by `seed` (each item once per epoch), unless `epochOf` says it is.
void orderForEpoch(int64_t epoch, int64_t count, uint64_t seed,
                   std::vector<int64_t> &order, int64_t &epochOf) {
  if (epoch == epochOf)
    return;
  order.resize(count);
  for (int64_t e = 0; e < count; ++e)
    order[e] = e;
  std::mt19937_64 random(seed * 104729 + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), random);
  epochOf = epoch;
}

/// The item the `global`-th draw visits in that order.
int64_t shuffledIndex(int64_t global, int64_t count, uint64_t seed,
                      std::vector<int64_t> &order, int64_t &epochOf) {
  orderForEpoch(global / count, count, seed, order, epochOf);
  return order[global % count];
}

} // namespace

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
  orderForEpoch(epoch, windows, seed, order, epochOf);
  for (int64_t rank = 0; rank < ranks; ++rank)
    readRank(step, epoch, within, rank, batch, in, out);
  return checkTrace();
}

void TokenFileData::readRank(int64_t step, int64_t epoch, int64_t within,
                             int64_t rank, int64_t batch, HostArray &in,
                             HostArray &out) {
  int64_t rows = batch / ranks;
  for (int64_t b = std::max(rank * rows, firstRow(batch));
       b < std::min((rank + 1) * rows, endRow(batch)); ++b) {
    int64_t window = order[within * batch + b];
    const int32_t *start = tokens.data() + window * (seq + 1);
    std::memcpy(in.bytes.data() + 4 * b * seq, start, 4 * seq);
    std::memcpy(out.bytes.data() + 4 * b * seq, start + 1, 4 * seq);
    if (trace)
      *trace << step << "," << epoch << "," << rank << "," << b << ","
             << window << "\n";
  }
}

void fillAnswerRow(const std::vector<int32_t> &tokens, int64_t prompt,
                   int64_t seq, int64_t row, HostArray &in, HostArray &out,
                   HostArray &mask) {
  int64_t length =
      std::min<int64_t>(static_cast<int64_t>(tokens.size()), seq + 1);
  for (int64_t k = 0; k < seq; ++k) {
    int32_t token = k < length ? tokens[k] : 0;
    int32_t target = k + 1 < length ? tokens[k + 1] : 0;
    float weight = (k + 1 < length && k + 1 >= prompt) ? 1.0f : 0.0f;
    std::memcpy(in.bytes.data() + 4 * (row * seq + k), &token, 4);
    std::memcpy(out.bytes.data() + 4 * (row * seq + k), &target, 4);
    setElementFromDouble(mask, row * seq + k, weight);
  }
}

namespace {

/// The token ids of `text`, each in [0, vocabulary); `where` prefixes
/// errors.
Expected<std::vector<int32_t>> parseTokens(const std::string &text,
                                           int64_t vocabulary,
                                           const std::string &where) {
  std::istringstream words(text);
  std::string word;
  std::vector<int32_t> tokens;
  while (words >> word) {
    char *end = nullptr;
    long long token = std::strtoll(word.c_str(), &end, 10);
    if (!end || *end || token < 0 || token >= vocabulary)
      return Status::error(where + "'" + word + "' is not a token id in [0, " +
                           std::to_string(vocabulary) + ")");
    tokens.push_back(static_cast<int32_t>(token));
  }
  return tokens;
}

/// Calls `each` with every non-blank line of the text file `path` and
/// "path:N: " for its errors; stops at the first failure.
Status forEachLine(
    const std::string &path,
    const std::function<Status(const std::string &, const std::string &)>
        &each) {
  if (Status regular = requireRegularFile(path); !regular.ok())
    return Status::error(path + ": " + regular.message());
  std::ifstream file(path);
  if (!file)
    return Status::error("cannot read '" + path + "'");
  std::string line;
  for (int64_t number = 1; std::getline(file, line); ++number) {
    if (line.find('\0') != std::string::npos)
      return Status::error(path + ":" + std::to_string(number) +
                           ": a NUL byte: this is not a text file");
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    if (Status status = each(line, path + ":" + std::to_string(number) + ": ");
        !status.ok())
      return status;
  }
  return Status::success();
}

} // namespace

Status SftData::load(const std::string &path, int64_t sequence,
                     int64_t vocabulary) {
  seq = sequence;
  examples.clear();
  Status read = forEachLine(path, [&](const std::string &line,
                                      const std::string &where) -> Status {
    size_t bar = line.find('|');
    if (bar == std::string::npos)
      return Status::error(where + "expected 'prompt tokens | response "
                                   "tokens'");
    Expected<std::vector<int32_t>> prompt =
        parseTokens(line.substr(0, bar), vocabulary, where);
    if (!prompt)
      return prompt.status();
    Expected<std::vector<int32_t>> response =
        parseTokens(line.substr(bar + 1), vocabulary, where);
    if (!response)
      return response.status();
    if (response->empty())
      return Status::error(where + "the response is empty");
    Example example;
    example.prompt = static_cast<int64_t>(prompt->size());
    example.tokens = std::move(*prompt);
    example.tokens.insert(example.tokens.end(), response->begin(),
                          response->end());
    if (example.prompt == 0)
      return Status::error(where + "the prompt is empty");
    if (example.prompt >= seq + 1)
      return Status::error(where + "the prompt (" +
                           std::to_string(example.prompt) +
                           " tokens) leaves no room for the response in " +
                           std::to_string(seq + 1) + " tokens");
    examples.push_back(std::move(example));
    return Status::success();
  });
  if (!read.ok())
    return read;
  if (examples.empty())
    return Status::error(path + ": no examples");
  return Status::success();
}

Status SftData::fill(int64_t step, const std::vector<HostArray *> &inputs) {
  if (inputs.size() != 3)
    return Status::error("fine-tuning data fills tokens, targets and a loss "
                         "mask; the step takes " +
                         std::to_string(inputs.size()) + " data inputs");
  HostArray &in = *inputs[0], &out = *inputs[1], &mask = *inputs[2];
  if (in.shape.size() != 2 || in.shape[1] != seq)
    return Status::error("fine-tuning data: the step's tokens are not "
                         "[batch, " + std::to_string(seq) + "]");
  int64_t batch = in.shape[0], count = size();
  for (int64_t row = firstRow(batch); row < endRow(batch); ++row) {
    int64_t index =
        shuffledIndex(step * batch + row, count, seed, order, epochOf);
    const Example &example = examples[index];
    fillAnswerRow(example.tokens, example.prompt, seq, row, in, out, mask);
  }
  return Status::success();
}

Status DpoData::load(const std::string &path, int64_t sequence,
                     int64_t vocabulary) {
  seq = sequence;
  pairs.clear();
  Status read = forEachLine(path, [&](const std::string &line,
                                      const std::string &where) -> Status {
    size_t first = line.find('|');
    size_t second =
        first == std::string::npos ? first : line.find('|', first + 1);
    if (second == std::string::npos)
      return Status::error(where +
                           "expected 'prompt | chosen | rejected' tokens");
    Expected<std::vector<int32_t>> prompt =
        parseTokens(line.substr(0, first), vocabulary, where);
    Expected<std::vector<int32_t>> chosen =
        parseTokens(line.substr(first + 1, second - first - 1), vocabulary,
                    where);
    Expected<std::vector<int32_t>> rejected =
        parseTokens(line.substr(second + 1), vocabulary, where);
    for (const Expected<std::vector<int32_t>> *part :
         {&prompt, &chosen, &rejected})
      if (!*part)
        return part->status();
    if (prompt->empty() || chosen->empty() || rejected->empty())
      return Status::error(where + "the prompt and both answers must be "
                                   "non-empty");
    if (static_cast<int64_t>(prompt->size()) >= seq + 1)
      return Status::error(where + "the prompt (" +
                           std::to_string(prompt->size()) +
                           " tokens) leaves no room for the answers in " +
                           std::to_string(seq + 1) + " tokens");
    Pair pair;
    pair.prompt = static_cast<int64_t>(prompt->size());
    pair.chosen = *prompt;
    pair.chosen.insert(pair.chosen.end(), chosen->begin(), chosen->end());
    pair.rejected = *prompt;
    pair.rejected.insert(pair.rejected.end(), rejected->begin(),
                         rejected->end());
    pairs.push_back(std::move(pair));
    return Status::success();
  });
  if (!read.ok())
    return read;
  if (pairs.empty())
    return Status::error(path + ": no pairs");
  return Status::success();
}

Status DpoData::setReference(std::vector<double> logps) {
  if (logps.size() != 2 * pairs.size())
    return Status::error("reference log-probabilities for " +
                         std::to_string(logps.size() / 2) + " pairs, the "
                         "data hold " + std::to_string(pairs.size()));
  reference = std::move(logps);
  return Status::success();
}

Status DpoData::fillPair(const Pair &pair, int64_t row,
                         const std::vector<HostArray *> &inputs) {
  HostArray &in = *inputs[0], &out = *inputs[1], &mask = *inputs[2];
  if (in.shape.size() != 2 || in.shape[1] != seq || in.shape[0] % 2 != 0)
    return Status::error("preference data: the step's tokens are not "
                         "[2 x pairs, " + std::to_string(seq) + "]");
  fillAnswerRow(pair.chosen, pair.prompt, seq, row, in, out, mask);
  fillAnswerRow(pair.rejected, pair.prompt, seq, row + 1, in, out, mask);
  return Status::success();
}

Status DpoData::fillInOrder(int64_t first,
                            const std::vector<HostArray *> &inputs) {
  if (inputs.size() < 3)
    return Status::error("preference data fill tokens, targets and a mask");
  int64_t rows = inputs[0]->shape.empty() ? 0 : inputs[0]->shape[0];
  for (int64_t p = 0; 2 * p < rows; ++p)
    if (Status status = fillPair(pairs[(first + p) % size()], 2 * p, inputs);
        !status.ok())
      return status;
  return Status::success();
}

Status DpoData::fill(int64_t step, const std::vector<HostArray *> &inputs) {
  // A reward model's step takes no ref_logp.
  if (inputs.size() != 3 && inputs.size() != 4)
    return Status::error("preference data fill tokens, targets, a loss mask "
                         "and (for DPO) ref_logp; the step takes " +
                         std::to_string(inputs.size()) + " data inputs");
  bool scored = inputs.size() == 4;
  if (scored && reference.empty())
    return Status::error("preference data: no reference log-probabilities");
  int64_t rows = inputs[0]->shape.empty() ? 0 : inputs[0]->shape[0];
  int64_t perStep = rows / 2, count = size();
  for (int64_t p = firstRow(rows) / 2;
       p < (endRow(rows) + 1) / 2 && p < perStep; ++p) {
    int64_t index =
        shuffledIndex(step * perStep + p, count, seed, order, epochOf);
    if (Status status = fillPair(pairs[index], 2 * p, inputs); !status.ok())
      return status;
    if (!scored)
      continue;
    setElementFromDouble(*inputs[3], 2 * p,
                         static_cast<float>(reference[2 * index]));
    setElementFromDouble(*inputs[3], 2 * p + 1,
                         static_cast<float>(reference[2 * index + 1]));
  }
  return Status::success();
}

} // namespace partita

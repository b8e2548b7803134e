//===- Reinforcement.cpp - RLHF: GRPO and PPO -----------------------------===//
//
// One iteration, between train steps (docs/Training.md, "RLHF"):
//   1. the policy's parameters, taken from the train step's devices, are
//      laid out for the generation programs (a reshard, timed);
//   2. B = prompts x group rows are sampled with the KV-cache generator;
//   3. each row is scored: a reward model's score function, or a rule;
//   4. the rollout policy's and the frozen reference's per-token
//      log-probabilities (and PPO's values) come from the per-token scorer,
//      compiled for the run's layout like the train step;
//   5. advantages: GRPO normalises each row's reward within its prompt's
//      group and gives it to every response token; PPO subtracts a per-token
//      KL penalty from the rewards and runs GAE (gamma 1) over the values;
//   6. the rows become the data of the next --ppo-epochs train steps.
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Reinforcement.h"

#include "partita/Runtime/Training/Checkpoint.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

using namespace partita;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The first `count` of `params`.
std::vector<HostArray> firstOf(const std::vector<HostArray> &params,
                               size_t count) {
  return std::vector<HostArray>(
      params.begin(), params.begin() + std::min(count, params.size()));
}

size_t parameterCount(const Executable &program) {
  return static_cast<size_t>(std::count_if(
      program.inputs.begin(), program.inputs.end(),
      [](const ExecutableValue &input) { return input.role == "param"; }));
}

/// Runs `program` on `params` and its data inputs `rows` (in order).
Expected<std::vector<HostArray>> runWith(const Executable &program,
                                         const std::vector<HostArray> &params,
                                         const std::vector<HostArray> &rows) {
  std::vector<HostArray> inputs;
  size_t param = 0, row = 0;
  for (const ExecutableValue &input : program.inputs) {
    const std::vector<HostArray> &from = input.role == "param" ? params : rows;
    size_t &at = input.role == "param" ? param : row;
    if (at >= from.size())
      return Status::error("'" + input.name + "': too few arrays given");
    inputs.push_back(from[at++]);
  }
  return runOnCpuDevices(program, inputs);
}

std::string formatMiB(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB",
                static_cast<double>(bytes) / (1 << 20));
  return text;
}

/// Per-device bytes of `program`'s inputs of `role`.
int64_t heldBytes(const Executable &program, const std::string &role) {
  int64_t bytes = 0;
  for (const ExecutableValue &input : program.inputs)
    if (input.role == role)
      bytes += program.slots[input.slot].bytes();
  return bytes;
}

} // namespace

Status RolloutData::fill(int64_t, const std::vector<HostArray *> &inputs) {
  if (inputs.size() != arrays.size())
    return Status::error("rollouts: the step takes " +
                         std::to_string(inputs.size()) + " data inputs, " +
                         std::to_string(arrays.size()) + " were made");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->shape != arrays[i].shape ||
        inputs[i]->dtype != arrays[i].dtype)
      return Status::error("rollouts: data input " + std::to_string(i) +
                           " has another shape");
    inputs[i]->bytes = arrays[i].bytes;
  }
  return Status::success();
}

double partita::ruleReward(const std::string &rule,
                           const std::vector<int32_t> &prompt,
                           const std::vector<int32_t> &response, double bonus) {
  double task = 0;
  if (rule == "reverse" && prompt.size() >= 2) {
    // BOS b1 .. bn SEP asks for bn .. b1 EOS (docs/examples/sft).
    std::vector<int32_t> expected(prompt.rbegin() + 1, prompt.rend() - 1);
    expected.push_back(3);
    size_t matches = 0;
    for (size_t i = 0; i < expected.size() && i < response.size(); ++i)
      matches += response[i] == expected[i];
    task = static_cast<double>(matches) / static_cast<double>(expected.size());
  }
  return task + bonus * static_cast<double>(response.size());
}

Expected<std::unique_ptr<Reinforcement>>
Reinforcement::start(Session &session, const TrainRequest &request,
                     RolloutData &data, const Executable &step,
                     const std::vector<HostArray> &inputs) {
  std::unique_ptr<Reinforcement> rl(new Reinforcement());
  rl->request = request;
  rl->data = &data;
  const ModelConfig &config = request.config;
  Expected<std::vector<std::vector<int32_t>>> prompts =
      readPrompts(*request.data, config.vocab, config.seq);
  if (!prompts)
    return Status::error("--data: " + prompts.status().message());
  rl->prompts = std::move(*prompts);
  if (!request.eval.data.empty()) {
    Expected<std::vector<std::vector<int32_t>>> held =
        readPrompts(request.eval.data, config.vocab, config.seq);
    if (!held)
      return Status::error("--eval-data: " + held.status().message());
    rl->heldOut = std::move(*held);
  }
  rl->order.resize(rl->prompts.size());
  std::iota(rl->order.begin(), rl->order.end(), size_t(0));
  std::mt19937_64 shuffle(static_cast<uint64_t>(request.seed) + 0x51ed);
  std::shuffle(rl->order.begin(), rl->order.end(), shuffle);

  // The generator (the language model without PPO's value head).
  TrainRequest model = request;
  model.config.valueHead = false;
  Expected<std::unique_ptr<Generator>> generator =
      Generator::create(session, model);
  if (!generator)
    return generator.status();
  rl->generator = std::move(*generator);
  // The per-token scorer.
  TrainRequest scoring = request;
  scoring.options.trainOptimizer = TrainOptimizer::None;
  scoring.options.trainMicroBatches = 1;
  scoring.config.objective = "tokenlogp";
  scoring.config.lossMask = false;
  Expected<Executable> scorer = compileTrainStep(session, scoring);
  if (!scorer)
    return scorer.status();
  rl->scorer = std::move(*scorer);
  // The reward model: its score function, its checkpoint's parameters.
  if (!request.rl.rewardModel.empty()) {
    TrainRequest reward = request;
    reward.options.trainOptimizer = TrainOptimizer::None;
    reward.options.trainMicroBatches = 1;
    reward.config.objective = "score";
    reward.config.lossMask = true;
    reward.config.valueHead = false;
    Expected<Executable> program = compileTrainStep(session, reward);
    if (!program)
      return program.status();
    rl->rewardModel = std::move(*program);
    Expected<CheckpointInfo> info =
        openCheckpoint(request.rl.rewardModel, "--reward-model");
    if (!info)
      return info.status();
    Expected<std::vector<HostArray>> params =
        checkpointParameters(*info, rl->rewardModel);
    if (!params)
      return Status::error("--reward-model: " + params.status().message() +
                           " (a reward model of the policy's shape, partita "
                           "train --objective reward)");
    rl->rewardParams = std::move(*params);
  }
  // The frozen reference: the policy as it starts.
  for (size_t k = 0; k < inputs.size() && step.inputs[k].role == "param"; ++k)
    rl->reference.push_back(inputs[k]);
  return rl;
}

Expected<std::vector<double>>
Reinforcement::rewardsOf(const std::vector<std::vector<int32_t>> &rowPrompts,
                         const std::vector<std::vector<int32_t>> &responses,
                         bool taskOnly) {
  std::vector<double> rewards;
  if (rewardParams.empty() || taskOnly) {
    for (size_t r = 0; r < responses.size(); ++r)
      rewards.push_back(ruleReward(request.rl.rewardRule, rowPrompts[r],
                                   responses[r],
                                   taskOnly ? 0 : request.rl.lengthBonus));
    return rewards;
  }
  // The reward model scores each row at its last response token.
  int64_t B = request.config.batch, S = request.config.seq;
  DType element = rewardModel.slots[rewardModel.inputs[2].slot].dtype;
  for (size_t first = 0; first < responses.size();
       first += static_cast<size_t>(B)) {
    HostArray in = HostArray::zeros(DType::I32, {B, S}),
              out = HostArray::zeros(DType::I32, {B, S}),
              mask = HostArray::zeros(element, {B, S});
    for (int64_t r = 0; r < B; ++r) {
      size_t row =
          std::min(first + static_cast<size_t>(r), responses.size() - 1);
      std::vector<int32_t> whole = rowPrompts[row];
      whole.insert(whole.end(), responses[row].begin(), responses[row].end());
      fillAnswerRow(whole, static_cast<int64_t>(rowPrompts[row].size()), S, r,
                    in, out, mask);
    }
    Expected<std::vector<HostArray>> scores =
        runWith(rewardModel, rewardParams, {in, out, mask});
    if (!scores)
      return Status::error("the reward model: " + scores.status().message());
    for (int64_t r = 0; r < B && first + r < responses.size(); ++r)
      rewards.push_back((*scores)[0].elementAsDouble(r) +
                        request.rl.lengthBonus *
                            static_cast<double>(responses[first + r].size()));
  }
  return rewards;
}

Expected<std::vector<HostArray>>
Reinforcement::tokenScores(const std::vector<HostArray> &params,
                           const std::vector<HostArray> &rows) {
  Expected<std::vector<HostArray>> scores = runWith(scorer, params, rows);
  if (!scores)
    return Status::error("per-token scores: " + scores.status().message());
  return scores;
}

Status
Reinforcement::advantages(const std::vector<std::vector<int32_t>> &rowPrompts,
                          const std::vector<std::vector<int32_t>> &responses,
                          const std::vector<double> &rewards,
                          std::vector<HostArray> &rows, RolloutStats &stats) {
  // rows: tokens, targets, mask, advantages, old_logp, ref_logp|returns;
  // scores ride in `old` and `ref` (and `values` for ppo) below.
  int64_t B = request.config.batch, S = request.config.seq;
  int64_t G = request.rl.group;
  const HostArray &mask = rows[2], &old = rows[4];
  HostArray &advantage = rows[3];
  bool ppo = request.config.objective == "ppo";
  const HostArray &ref = ppo ? rows[6] : rows[5];
  double kl = 0, tokens = 0;
  for (int64_t i = 0; i < B * S; ++i) {
    double m = mask.elementAsDouble(i);
    kl += m * (old.elementAsDouble(i) - ref.elementAsDouble(i));
    tokens += m;
  }
  stats.kl = kl / std::max(1.0, tokens);
  if (!ppo) {
    // GRPO: each reward against its group's, over the group's spread.
    for (int64_t p = 0; p * G < B; ++p) {
      double mean = 0, spread = 0;
      for (int64_t g = 0; g < G; ++g)
        mean += rewards[p * G + g];
      mean /= static_cast<double>(G);
      for (int64_t g = 0; g < G; ++g)
        spread += (rewards[p * G + g] - mean) * (rewards[p * G + g] - mean);
      spread = std::sqrt(spread / static_cast<double>(G));
      for (int64_t g = 0; g < G; ++g) {
        int64_t r = p * G + g;
        double a = (rewards[r] - mean) / (spread + 1e-4);
        for (int64_t s = 0; s < S; ++s)
          setElementFromDouble(advantage, r * S + s,
                               mask.elementAsDouble(r * S + s) * a);
      }
    }
    return Status::success();
  }
  // PPO: per-token rewards (the KL penalty, the reward at the last
  // response token), GAE with gamma 1 over the rollout policy's values,
  // returns = advantages + values; advantages whitened over the batch.
  const HostArray &values = rows[7];
  HostArray &returns = rows[5];
  std::vector<double> raw(static_cast<size_t>(B * S), 0.0);
  double sum = 0, squares = 0;
  for (int64_t r = 0; r < B; ++r) {
    int64_t first = static_cast<int64_t>(rowPrompts[r].size()) - 1;
    int64_t last = first + static_cast<int64_t>(responses[r].size()) - 1;
    double gae = 0, next = 0;
    for (int64_t s = std::min(last, S - 1); s >= first && s >= 0; --s) {
      int64_t i = r * S + s;
      double v = values.elementAsDouble(i);
      double reward = -request.rl.klBeta *
                      (old.elementAsDouble(i) - ref.elementAsDouble(i));
      if (s == last)
        reward += rewards[r];
      gae = reward + next - v + request.rl.lambda * gae;
      next = v;
      raw[i] = gae;
      setElementFromDouble(returns, i, gae + v);
      sum += gae;
      squares += gae * gae;
    }
  }
  double mean = sum / std::max(1.0, tokens);
  double spread =
      std::sqrt(std::max(0.0, squares / std::max(1.0, tokens) - mean * mean));
  for (int64_t i = 0; i < B * S; ++i)
    setElementFromDouble(advantage, i,
                         mask.elementAsDouble(i) * (raw[i] - mean) /
                             (spread + 1e-8));
  return Status::success();
}

Status Reinforcement::rollout(const std::vector<HostArray> &params,
                              int64_t stepsDone) {
  int64_t B = request.config.batch, S = request.config.seq;
  int64_t G = request.rl.group, P = B / G;
  int64_t iteration = static_cast<int64_t>(history.size());
  RolloutStats stats;
  stats.steps = stepsDone;
  std::vector<std::vector<int32_t>> rowPrompts;
  for (int64_t p = 0; p < P; ++p) {
    size_t index = order[static_cast<size_t>(iteration * P + p) % order.size()];
    for (int64_t g = 0; g < G; ++g)
      rowPrompts.push_back(prompts[index]);
  }
  // The policy, laid out for generation.
  auto started = std::chrono::steady_clock::now();
  size_t generated = parameterCount(generator->prefill());
  std::vector<HostArray> language = firstOf(params, generated);
  for (const HostArray &array : language)
    stats.relayoutBytes += array.numBytes();
  if (Status status = generator->setParameters(language); !status.ok())
    return status;
  stats.relayoutSeconds = secondsSince(started);
  SamplingOptions sampling = request.rl.sampling;
  sampling.seed = static_cast<uint64_t>(request.seed) * 1000003ULL +
                  static_cast<uint64_t>(iteration);
  started = std::chrono::steady_clock::now();
  Expected<GeneratedRows> rollouts =
      generator->generate(rowPrompts, sampling, 0);
  if (!rollouts)
    return Status::error("rollouts: " + rollouts.status().message());
  stats.generateSeconds = secondsSince(started);
  const std::vector<std::vector<int32_t>> &responses = rollouts->tokens;

  started = std::chrono::steady_clock::now();
  std::vector<double> rewards, tasks;
  if (Status status = rewardsAndTasks(rowPrompts, responses, rewards, tasks);
      !status.ok())
    return status;
  DType element = scorer.slots[scorer.inputs[0].slot].dtype;
  for (const ExecutableValue &input : scorer.inputs)
    if (input.role == "param")
      element = scorer.slots[input.slot].dtype;
  HostArray in = HostArray::zeros(DType::I32, {B, S}),
            out = HostArray::zeros(DType::I32, {B, S}),
            mask = HostArray::zeros(element, {B, S});
  for (int64_t r = 0; r < B; ++r) {
    std::vector<int32_t> whole = rowPrompts[r];
    whole.insert(whole.end(), responses[r].begin(), responses[r].end());
    fillAnswerRow(whole, static_cast<int64_t>(rowPrompts[r].size()), S, r, in,
                  out, mask);
    stats.length += static_cast<double>(responses[r].size()) / B;
    stats.reward += rewards[r] / static_cast<double>(B);
    stats.task += tasks[r] / static_cast<double>(B);
  }
  Expected<std::vector<HostArray>> policy = tokenScores(params, {in, out});
  if (!policy)
    return policy.status();
  Expected<std::vector<HostArray>> frozen = tokenScores(reference, {in, out});
  if (!frozen)
    return frozen.status();
  bool ppo = request.config.objective == "ppo";
  // tokens, targets, mask, advantages, old_logp, ref_logp | returns (then,
  // for ppo, the reference's and the values, which advantages() reads).
  std::vector<HostArray> rows = {
      in, out, mask, HostArray::zeros(element, {B, S}), (*policy)[0]};
  if (ppo)
    rows.insert(rows.end(), {HostArray::zeros(element, {B, S}), (*frozen)[0],
                             (*policy)[1]});
  else
    rows.push_back((*frozen)[0]);
  if (Status status = advantages(rowPrompts, responses, rewards, rows, stats);
      !status.ok())
    return status;
  rows.resize(6);
  if (request.check)
    recorded.push_back(rows);
  data->arrays = std::move(rows);
  stats.scoreSeconds = secondsSince(started);
  history.push_back(stats);
  llvm::outs() << "rollout " << iteration + 1 << " (after step " << stepsDone
               << "): reward " << llvm::format("%.4f", stats.reward)
               << ", task " << llvm::format("%.4f", stats.task) << ", KL "
               << llvm::format("%.4f", stats.kl) << ", length "
               << llvm::format("%.2f", stats.length) << " (" << B
               << " samples of " << P << " prompts; generated in "
               << llvm::format("%.0f", stats.generateSeconds * 1e3)
               << " ms, scored in "
               << llvm::format("%.0f", stats.scoreSeconds * 1e3)
               << " ms, the policy's " << formatMiB(stats.relayoutBytes)
               << " laid out for generation in "
               << llvm::format("%.0f", stats.relayoutSeconds * 1e3) << " ms)\n";
  llvm::outs().flush();
  return Status::success();
}

Status Reinforcement::rollout(const Executable &step,
                              const TrainSnapshot &snapshot) {
  Expected<std::vector<HostArray>> params = snapshotParameters(step, snapshot);
  if (!params)
    return Status::error("rollouts: " + params.status().message());
  return rollout(*params, snapshot.steps);
}

Status Reinforcement::evaluate(const Executable &step,
                               const TrainSnapshot &snapshot) {
  if (heldOut.empty())
    return Status::error("--objective " + request.config.objective +
                         " evaluates on --eval-data FILE (held-out prompts)");
  Expected<std::vector<HostArray>> params = snapshotParameters(step, snapshot);
  if (!params)
    return Status::error("evaluation: " + params.status().message());
  if (Status status = generator->setParameters(
          firstOf(*params, parameterCount(generator->prefill())));
      !status.ok())
    return status;
  SamplingOptions greedy = request.rl.sampling;
  greedy.temperature = 0;
  std::vector<std::vector<int32_t>> responses;
  int64_t B = generator->rows();
  for (size_t first = 0; first < heldOut.size(); first += B) {
    std::vector<std::vector<int32_t>> batch(
        heldOut.begin() + first,
        heldOut.begin() + std::min(heldOut.size(), first + B));
    Expected<GeneratedRows> rows = generator->generate(batch, greedy, 0);
    if (!rows)
      return Status::error("evaluation: " + rows.status().message());
    responses.insert(responses.end(), rows->tokens.begin(), rows->tokens.end());
  }
  std::vector<double> rewards, tasks;
  if (Status status = rewardsAndTasks(heldOut, responses, rewards, tasks);
      !status.ok())
    return status;
  double reward = std::accumulate(rewards.begin(), rewards.end(), 0.0) /
                  static_cast<double>(heldOut.size());
  double task = std::accumulate(tasks.begin(), tasks.end(), 0.0) /
                static_cast<double>(heldOut.size());
  evaluations.push_back({snapshot.steps, {reward, task}});
  llvm::outs() << "eval after step " << snapshot.steps << ": held-out reward "
               << llvm::format("%.4f", reward) << ", task "
               << llvm::format("%.4f", task) << " (greedy, " << heldOut.size()
               << " prompts)\n";
  llvm::outs().flush();
  return Status::success();
}

std::vector<double> Reinforcement::rewards() const {
  std::vector<double> values;
  for (const RolloutStats &s : history)
    values.push_back(s.reward);
  return values;
}

std::vector<std::pair<int64_t, double>> Reinforcement::heldOutPoints() const {
  std::vector<std::pair<int64_t, double>> points;
  for (const auto &[steps, figures] : evaluations)
    points.emplace_back(steps, figures.first);
  return points;
}

std::string Reinforcement::describeMemory(const Executable &step) const {
  const Executable &decode = generator->decode();
  int64_t referenceBytes = 0, rewardBytes = 0;
  for (const HostArray &array : reference)
    referenceBytes += array.numBytes();
  for (const HostArray &array : rewardParams)
    rewardBytes += array.numBytes();
  return "per device: policy train step " + formatMiB(step.allocatedBytes()) +
         " planned (parameters " + formatMiB(heldBytes(step, "param")) +
         ", optimizer state " + formatMiB(heldBytes(step, "opt_state")) +
         "); generation: prefill " +
         formatMiB(generator->prefill().allocatedBytes()) + ", decode " +
         formatMiB(decode.allocatedBytes()) + " planned (parameters " +
         formatMiB(heldBytes(decode, "param")) + ", " +
         generator->describeCache() + "); per-token scorer " +
         formatMiB(scorer.allocatedBytes()) +
         "\n  on the host: the frozen reference " + formatMiB(referenceBytes) +
         (rewardParams.empty()
              ? std::string()
              : ", the reward model " + formatMiB(rewardBytes)) +
         " (sliced to the devices at each use)";
}

void Reinforcement::startValueHead(const TrainRequest &request,
                                   const Executable &step, size_t updated,
                                   std::vector<HostArray> &inputs) {
  size_t params = 0;
  while (params < updated && step.inputs[params].role == "param")
    ++params;
  // The values start at 0, and the first value losses do not shake the
  // shared trunk (with a random head PPO's reward fell: docs/Training.md).
  if (request.config.valueHead && params > 0)
    std::fill(inputs[params - 1].bytes.begin(), inputs[params - 1].bytes.end(),
              0);
}

namespace {

/// The rows each step of the run trained on, again.
class ReplayedRollouts : public TrainData {
public:
  ReplayedRollouts(const std::vector<std::vector<HostArray>> &rows,
                   int64_t epochs)
      : rows(rows), epochs(epochs) {}
  Status fill(int64_t step, const std::vector<HostArray *> &inputs) override {
    size_t iteration = static_cast<size_t>(step / epochs);
    if (iteration >= rows.size())
      return Status::error("the check: no rollouts recorded for step " +
                           std::to_string(step + 1));
    RolloutData data;
    data.arrays = rows[iteration];
    return data.fill(step, inputs);
  }

private:
  const std::vector<std::vector<HostArray>> &rows;
  int64_t epochs;
};

} // namespace

Status
Reinforcement::checkAgainstOneDevice(const std::vector<double> &losses,
                                     const std::vector<HostArray> &params) {
  Expected<TrainRequest> single = oneDeviceRequest(request, request.mesh);
  if (!single)
    return single.status();
  Session session;
  Expected<Executable> program = compileTrainStep(session, *single);
  if (!program)
    return program.status();
  TrainStepLayout layout;
  std::vector<HostArray> inputs;
  if (Status status = startTrainInputs(
          *program, static_cast<uint64_t>(request.seed), layout, inputs);
      !status.ok())
    return status;
  if (!request.checkpoints.initFrom.empty())
    if (Status status = initializeFromCheckpoint(*single, *program, inputs,
                                                 /*quiet=*/true);
        !status.ok())
      return status;
  startValueHead(*single, *program, layout.updated, inputs);
  ReplayedRollouts replay(recorded, request.rl.epochs);
  std::vector<double> reference;
  TrainLoopOptions loop;
  if (request.lrSchedule)
    loop.learningRate = [schedule = *request.lrSchedule](int64_t step) {
      return schedule.at(step);
    };
  if (Status status = trainOnCpuDevices(
          *program, layout, inputs, replay, static_cast<int64_t>(losses.size()),
          [&](const TrainStepResult &result) {
            reference.push_back(result.loss);
            return Status::success();
          },
          loop);
      !status.ok())
    return Status::error("the check on one device: " + status.message());
  // An RL loss is a sum of terms of either sign that crosses zero, so a
  // step's difference is taken against the run's mean |loss|.
  double worst = 0, worstParam = 0, scale = 0;
  for (double loss : reference)
    scale += std::fabs(loss) / static_cast<double>(reference.size());
  for (size_t s = 0; s < losses.size() && s < reference.size(); ++s)
    worst = std::max(worst, std::fabs(losses[s] - reference[s]) /
                                std::max(1e-6, scale));
  for (size_t p = 0; p < params.size() && p < inputs.size(); ++p)
    worstParam = std::max(worstParam, relativeDifference(params[p], inputs[p]));
  // GRPO's KL term: at the start the policy is its reference, so the
  // term's gradient is the rounding difference between the train step's
  // log-probabilities and the scorer's, and Adam turns a gradient that is
  // only rounding into a step of the learning rate's size either way. Its
  // runs part by up to 4.2e-3 of the mean |loss| and 3.3e-4 normwise in 30
  // steps (measured over kernels and dp, fsdp, dp+tp; without the KL term
  // 6e-6 and 1e-6, PPO 5e-5 and 7e-6), against the ~1e-2 a wrong gradient
  // moves. docs/Training.md, "RLHF".
  bool noisy = request.config.objective == "grpo" && request.config.klBeta > 0;
  bool narrow = request.config.dtype == "bf16";
  double lossTolerance = narrow ? 1.0 / 64 : noisy ? 2e-2 : 1e-3;
  double paramTolerance = narrow ? 1e-2 : noisy ? 2e-3 : 1e-4;
  bool same = worst <= lossTolerance && worstParam <= paramTolerance &&
              reference.size() == losses.size();
  llvm::outs() << "check against one device, on this run's rollouts: largest "
               << "relative difference " << llvm::format("%.2e", worst)
               << " in the losses (" << losses.size() << " steps), "
               << llvm::format("%.2e", worstParam)
               << " in the parameters (normwise): "
               << (same ? "same" : "DIFFERENT") << "\n";
  if (!same)
    return Status::error("the run differs from the same steps on one device");
  return Status::success();
}

bool Reinforcement::wantsSnapshot(int64_t done) const {
  int64_t last = request.steps, every = request.eval.every;
  bool rollout = done < last && done % request.rl.epochs == 0;
  bool evaluation = every > 0 && (done == last || done % every == 0);
  return rollout || evaluation || (request.check && done == last);
}

Status Reinforcement::onSnapshot(const Executable &step,
                                 const TrainSnapshot &snapshot) {
  int64_t done = snapshot.steps, last = request.steps,
          every = request.eval.every;
  if (every > 0 && (done == last || done % every == 0))
    if (Status status = evaluate(step, snapshot); !status.ok())
      return status;
  if (done < last && done % request.rl.epochs == 0)
    if (Status status = rollout(step, snapshot); !status.ok())
      return status;
  if (request.check && done == last) {
    Expected<std::vector<HostArray>> params =
        snapshotParameters(step, snapshot);
    if (!params)
      return Status::error("--check: " + params.status().message());
    finalParams = std::move(*params);
  }
  return Status::success();
}

Status Reinforcement::rewardsAndTasks(
    const std::vector<std::vector<int32_t>> &rowPrompts,
    const std::vector<std::vector<int32_t>> &responses,
    std::vector<double> &rewards, std::vector<double> &tasks) {
  Expected<std::vector<double>> scored =
      rewardsOf(rowPrompts, responses, false);
  if (!scored)
    return scored.status();
  rewards = std::move(*scored);
  if (request.rl.rewardRule.empty()) {
    tasks = rewards;
    return Status::success();
  }
  Expected<std::vector<double>> rule = rewardsOf(rowPrompts, responses, true);
  if (!rule)
    return rule.status();
  tasks = std::move(*rule);
  return Status::success();
}

std::string Reinforcement::csv() const {
  std::vector<std::vector<double>> rows;
  for (const RolloutStats &s : history)
    rows.push_back({static_cast<double>(s.steps), s.reward, s.task, s.kl,
                    s.length, s.generateSeconds, s.scoreSeconds});
  return csvTable("step,reward,task,kl,length,generate_s,score_s", rows);
}

std::string Reinforcement::evalCsv() const {
  std::vector<std::vector<double>> rows;
  for (const auto &[steps, figures] : evaluations)
    rows.push_back({static_cast<double>(steps), figures.first, figures.second});
  return csvTable("step,reward,task", rows);
}

int64_t Reinforcement::residentBytes() const {
  int64_t held = generator->heldBytes();
  for (const std::vector<HostArray> *params : {&reference, &rewardParams})
    for (const HostArray &array : *params)
      held += array.numBytes();
  // While a program runs: its buffers on every device and, for the scorers
  // (run from whole arrays), every device's blocks of their parameters.
  int64_t running = 0;
  for (const Executable *program :
       {&generator->prefill(), &generator->decode(), &scorer, &rewardModel}) {
    if (program->inputs.empty())
      continue;
    int64_t devices = program->mesh.numDevices();
    int64_t bytes = devices * program->allocatedBytes();
    if (program == &scorer || program == &rewardModel)
      bytes += devices * heldBytes(*program, "param");
    running = std::max(running, bytes);
  }
  return held + running;
}

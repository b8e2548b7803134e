//===- Reinforcement.h - RLHF: GRPO and PPO ---------------------*- C++ -*-===//
//
// `partita train --objective grpo|ppo` (docs/Training.md, "RLHF"): each
// iteration generates rollouts with the current policy (Generation.h),
// scores them (a reward model's checkpoint, or a rule), computes the
// rollout policy's and the frozen reference's per-token log-probabilities
// (and, for PPO, the values), turns rewards into advantages (GRPO: group-
// normalised; PPO: per-token KL penalty and GAE), and hands the rows to the
// train step's next steps. Every model is compiled for the run's mesh and
// rules.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRAINER_REINFORCEMENT_H
#define PARTITA_TRAINER_REINFORCEMENT_H

#include "partita/Trainer/Generation.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace partita {

/// The rollouts the next train steps train on, in the step's data input
/// order (tokens, targets, loss_mask, advantages, old_logp, then ref_logp
/// or returns); every step copies them in.
class RolloutData : public TrainData {
public:
  Status fill(int64_t step, const std::vector<HostArray *> &inputs) override;
  std::vector<HostArray> arrays;
};

/// The demo task's reward rules (docs/Training.md, "RLHF"): "reverse"
/// scores a response to a prompt `BOS b1 .. bn SEP` by how many of the
/// expected tokens `bn .. b1 EOS` it has in place, over n + 1; the length
/// bonus adds `bonus` per response token (a reward a policy can hack).
double ruleReward(const std::string &rule, const std::vector<int32_t> &prompt,
                  const std::vector<int32_t> &response, double bonus);

/// What one iteration's rollouts came to.
struct RolloutStats {
  int64_t steps = 0;
  double reward = 0, task = 0, kl = 0, length = 0;
  double generateSeconds = 0, scoreSeconds = 0, relayoutSeconds = 0;
  /// The policy's parameters sliced to the generation programs' layout.
  int64_t relayoutBytes = 0;
};

class Reinforcement {
public:
  /// Compiles the generator, the per-token scorer and the reward model's
  /// score function for the run's layout; the reference is the policy
  /// `inputs` holds now (after --init-from).
  static Expected<std::unique_ptr<Reinforcement>>
  start(Session &session, const TrainRequest &request, RolloutData &data,
        const Executable &step, const std::vector<HostArray> &inputs);
  /// Makes the rollouts of the steps after `stepsDone` with `params` (the
  /// policy's, global arrays in the train step's order).
  Status rollout(const std::vector<HostArray> &params, int64_t stepsDone);
  /// The same with the policy of `snapshot`.
  Status rollout(const Executable &step, const TrainSnapshot &snapshot);
  /// The mean reward of greedy responses to the held-out prompts.
  Status evaluate(const Executable &step, const TrainSnapshot &snapshot);
  /// rl.csv: one line per iteration; eval.csv: held-out rewards.
  std::string csv() const;
  std::string evalCsv() const;
  /// (steps done, mean reward) per iteration, for the plot.
  std::vector<double> rewards() const;
  std::vector<std::pair<int64_t, double>> heldOutPoints() const;
  /// What the rollouts hold beside the train step (RunMemory::alongside):
  /// the generator's parameter blocks, the frozen reference and reward
  /// model, and at their largest the generation or scoring programs'
  /// buffers on every device with the scorer's parameter blocks.
  int64_t residentBytes() const;
  /// What each model holds per device, for the run's header.
  std::string describeMemory(const Executable &step) const;
  /// Whether the loop hands its state over after `done` steps: new
  /// rollouts every --ppo-epochs steps, a held-out evaluation, the last
  /// step's parameters for --check. A pure function (device threads call
  /// it).
  bool wantsSnapshot(int64_t done) const;
  /// What wantsSnapshot() asked for, with the state after those steps.
  Status onSnapshot(const Executable &step, const TrainSnapshot &snapshot);
  /// --check after the run: checkAgainstOneDevice() with the last step's
  /// parameters.
  Status check(const std::vector<double> &losses) {
    return checkAgainstOneDevice(losses, finalParams);
  }
  /// PPO's value head (the last parameter of `inputs`, the train step's)
  /// set to zero: the values start at 0.
  static void startValueHead(const TrainRequest &request,
                             const Executable &step, size_t updated,
                             std::vector<HostArray> &inputs);
  /// --check: the train step compiled for one device, trained from the
  /// same start on the rollouts this run made (kept since it started);
  /// each step's loss against `losses` and its final parameters against
  /// `params` (the run's last). An error when they differ.
  Status checkAgainstOneDevice(const std::vector<double> &losses,
                               const std::vector<HostArray> &params);

private:
  Reinforcement() = default;
  Expected<std::vector<double>>
  rewardsOf(const std::vector<std::vector<int32_t>> &prompts,
            const std::vector<std::vector<int32_t>> &responses, bool taskOnly);
  /// Each row's reward, and its task score (the rule's without the length
  /// bonus; with a reward model and no rule, the reward).
  Status rewardsAndTasks(const std::vector<std::vector<int32_t>> &prompts,
                         const std::vector<std::vector<int32_t>> &responses,
                         std::vector<double> &rewards,
                         std::vector<double> &tasks);
  Expected<std::vector<HostArray>>
  tokenScores(const std::vector<HostArray> &params,
              const std::vector<HostArray> &rows);
  Status advantages(const std::vector<std::vector<int32_t>> &prompts,
                    const std::vector<std::vector<int32_t>> &responses,
                    const std::vector<double> &rewards,
                    std::vector<HostArray> &rows, RolloutStats &stats);

  TrainRequest request;
  RolloutData *data = nullptr;
  std::unique_ptr<Generator> generator;
  /// Per-token log-probabilities (and values, ppo) of the policy.
  Executable scorer;
  std::vector<HostArray> reference;
  /// The reward model's score function and parameters (empty: a rule).
  Executable rewardModel;
  std::vector<HostArray> rewardParams;
  std::vector<std::vector<int32_t>> prompts, heldOut;
  std::vector<size_t> order;
  std::vector<RolloutStats> history;
  /// With --check: the parameters after the last step.
  std::vector<HostArray> finalParams;
  /// With --check: every iteration's rows.
  std::vector<std::vector<HostArray>> recorded;
  std::vector<std::pair<int64_t, std::pair<double, double>>> evaluations;
};

} // namespace partita

#endif // PARTITA_TRAINER_REINFORCEMENT_H

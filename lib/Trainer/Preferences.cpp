//===- Preferences.cpp - Direct preference optimisation ------------------===//
//
// `--objective dpo --reference D` (docs/Training.md, "Preference
// optimisation"): the reference policy is frozen, so its sequence
// log-probabilities of every chosen and rejected answer are computed once,
// before training, with the model's log-probability function compiled for
// the run's layout, and travel with the data as the step's `ref_logp`
// input. The held-out preference — the mean margin (c - ref_c) - (r -
// ref_r) and how often the chosen answer is preferred — is measured the
// same way with the policy's parameters after evaluation steps.
//
// `--objective reward` trains a reward model on the same pairs; its
// held-out pairwise accuracy (how often the chosen answer scores higher)
// and mean margin r_chosen - r_rejected are measured with the model's
// score function and written to eval.csv.
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Runtime/Training/Checkpoint.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;

Expected<std::unique_ptr<PreferenceTraining>>
PreferenceTraining::start(Session &session, const TrainRequest &request,
                          DpoData &pairs, bool quiet) {
  std::unique_ptr<PreferenceTraining> training(new PreferenceTraining());
  training->quiet = quiet;
  if (request.eval.every > 0 && request.eval.data.empty())
    return Status::error("--objective " + request.config.objective +
                         " evaluates on --eval-data FILE (lines of 'prompt "
                         "| chosen | rejected' tokens)");
  TrainRequest scoring = request;
  scoring.options.trainOptimizer = TrainOptimizer::None;
  training->rewardModel = request.config.objective == "reward";
  scoring.config.objective = training->rewardModel ? "score" : "logprob";
  Expected<Executable> program = compileTrainStep(session, scoring);
  if (!program)
    return program.status();
  training->program = std::move(*program);
  // The function's arguments: its data (tokens, targets, mask), then the
  // parameters.
  for (size_t i = 0; i < training->program.inputs.size(); ++i)
    (training->program.inputs[i].role == "param" ? training->paramIndex
                                                 : training->dataIndex)
        .push_back(i);

  // The held-out pairs (--eval-data).
  if (!request.eval.data.empty()) {
    training->heldOut = std::make_unique<DpoData>();
    if (Status status = training->heldOut->load(
            request.eval.data, request.config.seq, request.config.vocab);
        !status.ok())
      return status;
  }
  // A reward model has no reference: the model alone scores the pairs.
  if (training->rewardModel)
    return training;
  // The reference's parameters.
  Expected<CheckpointInfo> info =
      openCheckpoint(request.dpoReference, "--reference");
  if (!info)
    return info.status();
  Expected<std::vector<HostArray>> loaded =
      checkpointParameters(*info, training->program);
  if (!loaded)
    return Status::error("--reference: " + loaded.status().message());
  std::vector<HostArray> params = std::move(*loaded);

  Expected<std::vector<double>> reference = training->score(params, pairs);
  if (!reference)
    return reference.status();
  if (Status status = pairs.setReference(*reference); !status.ok())
    return status;
  if (!quiet)
    llvm::outs() << "reference " << info->directory << ": scored "
                 << pairs.size() << " preference pairs\n";
  if (training->heldOut) {
    Expected<std::vector<double>> held =
        training->score(params, *training->heldOut);
    if (!held)
      return held.status();
    training->heldOutReference = std::move(*held);
  }
  return training;
}

Expected<std::vector<double>>
PreferenceTraining::score(const std::vector<HostArray> &params,
                          DpoData &pairs) {
  if (params.size() != paramIndex.size())
    return Status::error(
        "scoring preference pairs: " + std::to_string(params.size()) +
        " parameters for " + std::to_string(paramIndex.size()));
  std::vector<HostArray> inputs(program.inputs.size());
  for (size_t k = 0; k < paramIndex.size(); ++k)
    inputs[paramIndex[k]] = params[k];
  std::vector<HostArray *> data;
  for (size_t i : dataIndex) {
    inputs[i] = HostArray::zeros(program.slots[program.inputs[i].slot].dtype,
                                 program.inputs[i].globalShape);
    data.push_back(&inputs[i]);
  }
  int64_t rows = program.inputs[dataIndex[0]].globalShape[0];
  int64_t perRun = rows / 2, count = pairs.size();
  std::vector<double> logps(2 * count);
  for (int64_t first = 0; first < count; first += perRun) {
    if (Status status = pairs.fillInOrder(first, data); !status.ok())
      return status;
    Expected<std::vector<HostArray>> outputs = runOnCpuDevices(program, inputs);
    if (!outputs)
      return Status::error("scoring preference pairs: " +
                           outputs.status().message());
    for (int64_t p = 0; p < perRun && first + p < count; ++p)
      for (int64_t side = 0; side < 2; ++side)
        logps[2 * (first + p) + side] =
            elementAsDouble((*outputs)[0], 2 * p + side);
  }
  return logps;
}

Status PreferenceTraining::evaluate(const Executable &step,
                                    const TrainSnapshot &snapshot) {
  if (!heldOut)
    return Status::error("--objective dpo evaluates on --eval-data FILE "
                         "(lines of 'prompt | chosen | rejected' tokens)");
  Expected<std::vector<HostArray>> params = snapshotParameters(step, snapshot);
  if (!params)
    return Status::error("evaluation: " + params.status().message());
  Expected<std::vector<double>> policy = score(*params, *heldOut);
  if (!policy)
    return policy.status();
  if (rewardModel)
    return reportRewards(snapshot.steps, *policy);
  const std::vector<double> &ref = heldOutReference;
  double margin = 0;
  int64_t preferred = 0, referencePreferred = 0, count = heldOut->size();
  for (int64_t p = 0; p < count; ++p) {
    double chosen = (*policy)[2 * p] - ref[2 * p];
    double rejected = (*policy)[2 * p + 1] - ref[2 * p + 1];
    margin += chosen - rejected;
    preferred += (*policy)[2 * p] > (*policy)[2 * p + 1];
    referencePreferred += ref[2 * p] > ref[2 * p + 1];
  }
  llvm::outs() << "preference after step " << snapshot.steps
               << ": held-out margin "
               << llvm::format("%.4f", margin / static_cast<double>(count))
               << ", chosen preferred in " << preferred << "/" << count
               << " pairs (reference: " << referencePreferred << "/" << count
               << ")\n";
  llvm::outs().flush();
  return Status::success();
}

Status PreferenceTraining::reportRewards(int64_t steps,
                                         const std::vector<double> &rewards) {
  int64_t count = heldOut->size(), preferred = 0;
  double margin = 0;
  for (int64_t p = 0; p < count; ++p) {
    margin += rewards[2 * p] - rewards[2 * p + 1];
    preferred += rewards[2 * p] > rewards[2 * p + 1];
  }
  double accuracy = static_cast<double>(preferred) / static_cast<double>(count);
  margin /= static_cast<double>(count);
  points.push_back({steps, accuracy, margin});
  if (quiet)
    return Status::success();
  llvm::outs() << "reward after step " << steps << ": held-out accuracy "
               << llvm::format("%.4f", accuracy) << " (" << preferred << "/"
               << count << " pairs), margin " << llvm::format("%.4f", margin)
               << "\n";
  llvm::outs().flush();
  return Status::success();
}

std::string PreferenceTraining::csv() const {
  std::vector<std::vector<double>> rows;
  for (const Point &point : points)
    rows.push_back(
        {static_cast<double>(point.steps), point.accuracy, point.margin});
  return csvTable("step,accuracy,margin", rows);
}

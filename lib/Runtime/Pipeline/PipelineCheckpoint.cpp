//===- PipelineCheckpoint.cpp - A pipelined run's parameters and state ---===//
//
// The parameters, gradient buffers and optimizer state a PipelineRunner's
// stages hold, as checkpoint values keyed like the non-pipelined train
// step's (a checkpoint moves between pipelined and non-pipelined layouts),
// and loading them back. docs/Training.md, "Checkpoints".
//
//===----------------------------------------------------------------------===//

#include "PipelineState.h"

#include <map>
#include <string>

using namespace partita;

std::vector<HostArray> PipelineRunner::parameters() const {
  size_t count = 0;
  for (const PipelineStage &stage : state->step.stages)
    count += stage.paramIndex.size();
  std::vector<HostArray> params(count);
  for (size_t s = 0; s < state->step.stages.size(); ++s) {
    const PipelineStage &stage = state->step.stages[s];
    for (size_t j = 0; state->isLocalStage(s) && j < stage.paramIndex.size();
         ++j)
      if (Expected<HostArray> param = state->stages[s].wholeInput(j))
        params[stage.paramIndex[j]] = std::move(*param);
  }
  return params;
}

std::vector<int64_t> PipelineRunner::persistentBytesPerDevice() const {
  const PipelineSchedule &schedule = state->step.schedule;
  std::vector<int64_t> bytes(schedule.ranks, 0);
  for (size_t s = 0; s < state->step.stages.size(); ++s) {
    const Executable &update = state->step.stages[s].update;
    for (size_t i = 0; i < state->stages[s].layout.updated; ++i)
      bytes[schedule.rankOfStage(static_cast<int>(s))] +=
          update.slots[update.inputs[i].slot].bytes();
  }
  return bytes;
}

namespace {

/// The checkpoint key of each updated input of stage `stage`'s update.
std::vector<std::string> stageCheckpointKeys(const PipelinedStep &step,
                                             size_t stage, size_t updated) {
  size_t total = 0;
  for (const PipelineStage &each : step.stages)
    total += each.paramIndex.size();
  const PipelineStage &s = step.stages[stage];
  size_t own = s.paramIndex.size();
  std::map<std::string, size_t> seen;
  std::vector<std::string> keys;
  for (size_t k = 0; k < updated; ++k) {
    std::string role = s.update.inputs[k].role;
    size_t r = seen[role]++;
    int64_t whole = -1;
    if ((role == "param" || role == "grad") && r < own)
      whole = s.paramIndex[r];
    else if (role == "opt_state" && own > 0)
      whole = static_cast<int64_t>((r / own) * total) + s.paramIndex[r % own];
    keys.push_back(whole >= 0 ? role + "/" + std::to_string(whole)
                              : role + "/stage" + std::to_string(stage) + "." +
                                    std::to_string(r));
  }
  return keys;
}

} // namespace

std::vector<CheckpointValue> PipelineRunner::checkpointValues() const {
  std::vector<CheckpointValue> values;
  for (size_t s = 0; s < state->step.stages.size(); ++s) {
    if (!state->isLocalStage(s))
      continue;
    const StageState &stage = state->stages[s];
    const Executable &update = state->step.stages[s].update;
    std::vector<std::string> keys =
        stageCheckpointKeys(state->step, s, stage.layout.updated);
    for (size_t k = 0; k < stage.layout.updated; ++k) {
      CheckpointValue value;
      value.key = keys[k];
      value.dtype = stage.updateInputs[k].dtype;
      value.globalShape = update.inputs[k].globalShape;
      value.sharding =
          Sharding::replicated(static_cast<int>(value.globalShape.size()));
      value.whole = true;
      Expected<HostArray> whole = stage.wholeInput(k);
      value.blocks.push_back(whole ? std::move(*whole) : HostArray());
      values.push_back(std::move(value));
    }
  }
  return values;
}

Status PipelineRunner::loadCheckpoint(const CheckpointInfo &checkpoint,
                                      const std::string &onlyRole) {
  for (size_t s = 0; s < state->step.stages.size(); ++s) {
    if (!state->isLocalStage(s))
      continue;
    StageState &stage = state->stages[s];
    const Executable &update = state->step.stages[s].update;
    // The loaded values replace the devices' (cut again at the next step).
    if (Status status = stage.assemble(); !status.ok())
      return status;
    std::vector<std::string> keys =
        stageCheckpointKeys(state->step, s, stage.layout.updated);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!checkpointKeyOfRole(keys[k], onlyRole))
        continue;
      Expected<const CheckpointTensor *> tensor = findCheckpointTensor(
          checkpoint, keys[k], update.slots[update.inputs[k].slot].dtype,
          update.inputs[k].globalShape, "stage " + std::to_string(s) + "'s");
      if (!tensor)
        return tensor.status();
      Expected<HostArray> value = readCheckpointTensor(checkpoint, **tensor);
      if (!value)
        return value.status();
      stage.updateInputs[k] = std::move(*value);
    }
  }
  return Status::success();
}

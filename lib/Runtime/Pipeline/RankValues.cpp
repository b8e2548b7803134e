//===- RankValues.cpp - Values on a pipeline rank's devices ---------------===//
//
// See RankValues.h.
//
//===----------------------------------------------------------------------===//
#include "RankValues.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"

namespace partita {
namespace rank_values {

namespace {

/// Whether blocks laid out by `have` (of `haveOwner`) are what `want` (of
/// `wantOwner`) takes on every device.
bool sameLayout(const Executable &haveOwner, const ExecutableValue &have,
                const Executable &wantOwner, const ExecutableValue &want) {
  const TensorType &a = haveOwner.slots[have.slot];
  const TensorType &b = wantOwner.slots[want.slot];
  return have.sharding == want.sharding &&
         have.globalShape == want.globalShape && a.dtype == b.dtype &&
         a.shape == b.shape &&
         haveOwner.mesh.numDevices() == wantOwner.mesh.numDevices() &&
         haveOwner.mesh.toString() == wantOwner.mesh.toString();
}

} // namespace

int64_t RankValue::bytes() const {
  if (!inBlocks())
    return whole.numBytes();
  int64_t total = 0;
  for (const HostArray &block : blocks)
    total += block.numBytes();
  return total;
}

RankValue wholeValue(HostArray array) {
  RankValue value;
  value.whole = std::move(array);
  return value;
}

Expected<HostArray> toWhole(const RankValue &value) {
  if (!value.inBlocks())
    return value.whole;
  Executable view;
  view.mesh = value.owner->mesh;
  view.outputs = {*value.layout};
  std::vector<std::vector<HostArray>> byDevice(value.blocks.size());
  for (size_t d = 0; d < value.blocks.size(); ++d)
    byDevice[d].push_back(value.blocks[d]);
  Expected<std::vector<HostArray>> assembled = assembleOutputs(view, byDevice);
  if (!assembled)
    return assembled.status();
  return std::move((*assembled)[0]);
}

bool laidOutAs(const RankValue &value, const Executable &program,
               size_t index) {
  return value.inBlocks() && sameLayout(*value.owner, *value.layout, program,
                                        program.inputs[index]);
}

Expected<RankValue> relayout(const RankValue &value, const Executable &program,
                             size_t index) {
  Expected<HostArray> whole = toWhole(value);
  if (!whole)
    return whole.status();
  Expected<std::vector<HostArray>> blocks =
      inputBlocksByDevice(program, index, *whole, PartialInputs::FirstMember);
  if (!blocks)
    return blocks.status();
  RankValue laidOut;
  laidOut.blocks = std::move(*blocks);
  laidOut.owner = &program;
  laidOut.layout = &program.inputs[index];
  return laidOut;
}

Expected<std::vector<RankValue>>
runOnRank(const Executable &program,
          const std::vector<const RankValue *> &inputs) {
  if (inputs.size() != program.inputs.size())
    return Status::error("a program of " +
                         std::to_string(program.inputs.size()) +
                         " inputs given " + std::to_string(inputs.size()));
  int64_t devices = program.mesh.numDevices();
  // Inputs in another layout (or whole) cut for this program; the others'
  // blocks read where they are.
  std::vector<std::vector<HostArray>> cut(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const RankValue &value = *inputs[i];
    if (laidOutAs(value, program, i))
      continue;
    Expected<HostArray> whole = toWhole(value);
    if (!whole)
      return Status::error("input " + std::to_string(i) + ": " +
                           whole.status().message());
    Expected<std::vector<HostArray>> blocks =
        inputBlocksByDevice(program, i, *whole, PartialInputs::FirstMember);
    if (!blocks)
      return Status::error("input " + std::to_string(i) + ": " +
                           blocks.status().message());
    cut[i] = std::move(*blocks);
  }
  std::vector<int64_t> ids;
  for (int64_t d = 0; d < devices; ++d)
    ids.push_back(d);
  InProcessCommunicator communicator(program.mesh);
  std::vector<std::vector<HostArray>> outputs;
  Status ran = runDevicesAsThreads(
      program, ids, &communicator,
      [&](size_t index, int64_t device, HostArray &,
          void *) -> Expected<const HostArray *> {
        return cut[index].empty() ? &inputs[index]->blocks[device]
                                  : &cut[index][device];
      },
      outputs);
  if (!ran.ok())
    return ran;
  std::vector<RankValue> values(program.outputs.size());
  for (size_t k = 0; k < values.size(); ++k) {
    values[k].owner = &program;
    values[k].layout = &program.outputs[k];
    for (int64_t d = 0; d < devices; ++d)
      values[k].blocks.push_back(std::move(outputs[d][k]));
  }
  return values;
}

} // namespace rank_values
} // namespace partita

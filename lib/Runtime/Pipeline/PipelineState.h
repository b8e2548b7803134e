//===- PipelineState.h - A pipelined run's state (internal) -----*- C++ -*-===//
//
// Inside the pipeline runtime: what a PipelineRunner keeps from step to
// step (each stage's parameters and optimizer state, who reads which
// output, which process runs which ranks), shared by the step's run
// (PipelineRun.cpp) and the checkpoints (PipelineCheckpoint.cpp).
// docs/Pipeline.md, "The runtime".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_PIPELINE_PIPELINESTATE_H
#define PARTITA_LIB_RUNTIME_PIPELINE_PIPELINESTATE_H

#include "RankValues.h"

#include "partita/Runtime/Pipeline/PipelineRun.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include <map>
#include <tuple>
#include <vector>

namespace partita {

/// A program output of every micro-batch: (stage, program, output).
using OutputKey = std::tuple<int32_t, int, int32_t>;

/// A stage's parameters and optimizer state (its update program's inputs):
/// whole arrays, and on CPU devices, from the first step on, the devices'
/// blocks, which stay there from step to step (`updateInputs` is then
/// stale until wholeInput() assembles it).
struct StageState {
  std::vector<HostArray> updateInputs;
  TrainStepLayout layout;
  std::vector<rank_values::RankValue> onDevices;
  bool wholeCurrent = true;

  /// Updated input `k` as a whole array.
  Expected<HostArray> wholeInput(size_t k) const {
    if (wholeCurrent || k >= onDevices.size())
      return updateInputs[k];
    return rank_values::toWhole(onDevices[k]);
  }
  /// Makes updateInputs current (before it is read or overwritten).
  Status assemble() {
    for (size_t k = 0; !wholeCurrent && k < onDevices.size(); ++k) {
      Expected<HostArray> whole = rank_values::toWhole(onDevices[k]);
      if (!whole)
        return whole.status();
      updateInputs[k] = std::move(*whole);
    }
    wholeCurrent = true;
    onDevices.clear();
    return Status::success();
  }
};

struct PipelineRunner::State {
  PipelinedStep step;
  std::vector<StageState> stages;
  /// How many program inputs of each pipeline rank read each output (per
  /// micro-batch).
  std::map<OutputKey, std::map<int, int>> readers;
  /// The same, counting forward programs only (an evaluation).
  std::map<OutputKey, std::map<int, int>> forwardReaders;
  /// The other processes, under MPI (null: every rank in this process).
  PipelinePeers *peers = nullptr;
  int processes = 1;
  int process = 0;
  /// Ranks per process (all of them in one process).
  int ranksPerProcess = 1;

  int processOfRank(int rank) const { return rank / ranksPerProcess; }
  bool isLocalStage(size_t stage) const {
    return processOfRank(step.schedule.rankOfStage(static_cast<int>(stage))) ==
           process;
  }
};

} // namespace partita

#endif // PARTITA_LIB_RUNTIME_PIPELINE_PIPELINESTATE_H

//===- PipelineFigures.h - What a pipelined step does, in figures -*- C++
//-*-===//
//
// Each stage's FLOPs, the activations it keeps per micro-batch, what it
// sends to other stages, and the schedule's bubble by the published
// formulas and by simulation: what the planner prices and what
// `partita train --pp` and `partita compile --pp` show (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PLANNING_PIPELINEFIGURES_H
#define PARTITA_PLANNING_PIPELINEFIGURES_H

#include "partita/Runtime/Pipeline/PipelineRun.h"
#include "partita/Runtime/Pipeline/PipelinedStep.h"
#include "partita/Runtime/Pipeline/Schedule.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace partita {

/// A pipelined step's schedule in figures : the
/// published formula's bubble (-1 where there is none), and the schedule
/// simulated with uniform stages and with the stages' FLOPs.
struct PipelineFigures {
  double formula = -1;
  ScheduleTimeline uniform, byFlops;
};

Expected<PipelineFigures> scheduleFigures(const PipelinedStep &step);

/// Bytes a stage keeps per micro-batch between its forward and backward
/// passes (what its forward program outputs), global.
int64_t activationBytes(const PipelineStage &stage);

/// Bytes stage `s` sends to other stages per micro-batch, global:
/// activations from its forward program, gradients from its backward.
struct StageTraffic {
  int64_t forward = 0, backward = 0;
};
StageTraffic stageTraffic(const PipelinedStep &step, int s);

/// One line per stage (what it holds, FLOPs, activations, what it sends)
/// and the bubble.
void printPipelineStages(llvm::raw_ostream &os, const PipelinedStep &step,
                         const PipelineFigures &figures);

/// Writes the figures (and a run's measurements, when given) as JSON to
/// `path`; false after reporting a file that cannot be written.
bool writePipelineReport(const std::string &path, const PipelinedStep &step,
                         const PipelineFigures &figures,
                         const PipelineStepResult *measured);

} // namespace partita

#endif // PARTITA_PLANNING_PIPELINEFIGURES_H

//===- PipelineFigures.cpp - What a pipelined step does, in figures -------===//
//
// The figures `partita train --pp` and `partita compile --pp` show: each
// stage's FLOPs, the activations it keeps per micro-batch, what it sends
// to other stages, and the schedule's bubble and memory, by the published
// formulas, by simulation, and (after a run) as measured
// (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/PipelineFigures.h"

#include "partita/Driver/Session.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <set>

using namespace partita;

namespace {

/// The schedule's bubble by the published formulas; -1 for zero-bubble
/// schedules, which have none in closed form.
double bubbleFormula(const PipelineSchedule &schedule) {
  double p = schedule.ranks, m = schedule.microBatches,
         v = schedule.virtualStages;
  switch (schedule.kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
    return (p - 1) / (m + p - 1);
  case ScheduleKind::Interleaved:
    return (p - 1) / (v * m + p - 1);
  case ScheduleKind::ZeroBubble:
    return -1;
  }
  return -1;
}

/// Per-stage costs for the simulator: uniform (what the formulas assume),
/// or from each stage's forward FLOPs (backward twice the forward; a split
/// backward half input gradient, half weight gradient).
std::vector<PipeCosts> stageCosts(const PipelinedStep &step, bool byFlops) {
  std::vector<PipeCosts> costs;
  bool split = step.schedule.splitBackward;
  double v = step.schedule.virtualStages;
  for (const PipelineStage &stage : step.stages) {
    double forward = byFlops ? static_cast<double>(stage.forwardFlops) : 1 / v;
    PipeCosts cost;
    cost.forward = forward;
    cost.backward = split ? forward : 2 * forward;
    cost.weightGrad = split ? forward : 0;
    costs.push_back(cost);
  }
  return costs;
}

} // namespace

/// Bytes a stage keeps per micro-batch between its forward and backward
/// passes: what its forward program outputs (saved and sent values).
int64_t partita::activationBytes(const PipelineStage &stage) {
  int64_t bytes = 0;
  for (const ExecutableValue &output : stage.forward.executable.outputs) {
    int64_t elements = 1;
    for (int64_t d : output.globalShape)
      elements *= d;
    bytes +=
        elements * dtypeSize(stage.forward.executable.slots[output.slot].dtype);
  }
  return bytes;
}

static int64_t outputBytes(const Executable &program, size_t k) {
  int64_t elements = 1;
  for (int64_t d : program.outputs[k].globalShape)
    elements *= d;
  return elements * dtypeSize(program.slots[program.outputs[k].slot].dtype);
}

StageTraffic partita::stageTraffic(const PipelinedStep &step, int s) {
  // Each output another stage reads counts once, however many read it.
  std::set<std::pair<int, int32_t>> sent;
  for (size_t c = 0; c < step.stages.size(); ++c) {
    if (static_cast<int>(c) == s)
      continue;
    const PipelineStage &consumer = step.stages[c];
    for (const StageProgram *program :
         {&consumer.forward, &consumer.backward, &consumer.weightGrad})
      for (const StageInput &input : program->inputs)
        if (input.kind == StageInput::Kind::Output && input.stage == s)
          sent.insert({static_cast<int>(input.program), input.index});
  }
  StageTraffic traffic;
  const PipelineStage &stage = step.stages[s];
  for (auto [program, index] : sent) {
    if (program == static_cast<int>(StageProgramKind::Forward))
      traffic.forward += outputBytes(stage.forward.executable, index);
    else
      traffic.backward += outputBytes(stage.backward.executable, index);
  }
  return traffic;
}

Expected<PipelineFigures> partita::scheduleFigures(const PipelinedStep &step) {
  PipelineFigures figures;
  figures.formula = bubbleFormula(step.schedule);
  Expected<ScheduleTimeline> uniform =
      simulateSchedule(step.schedule, stageCosts(step, false));
  if (!uniform)
    return uniform.status();
  Expected<ScheduleTimeline> byFlops =
      simulateSchedule(step.schedule, stageCosts(step, true));
  if (!byFlops)
    return byFlops.status();
  figures.uniform = *uniform;
  figures.byFlops = *byFlops;
  return figures;
}

namespace {

/// The collectives a device of stage `stage`'s rank runs in one step: its
/// programs' for every micro-batch, then its update's (and norm's).
CommunicationSummary stepCommunication(const PipelinedStep &step,
                                       const PipelineStage &stage) {
  CommunicationSummary total;
  auto add = [&](const Executable &program, double times) {
    CommunicationSummary one = summarizeCommunication(program);
    total.collectives += static_cast<int64_t>(one.collectives * times);
    total.bytesPerDevice += one.bytesPerDevice * times;
  };
  double micro = static_cast<double>(step.schedule.microBatches);
  for (const StageProgram *program :
       {&stage.forward, &stage.backward, &stage.weightGrad})
    if (program->present)
      add(program->executable, micro);
  add(stage.update, 1);
  if (stage.normInput >= 0)
    add(stage.norm, 1);
  return total;
}

} // namespace

void partita::printPipelineStages(llvm::raw_ostream &os,
                                  const PipelinedStep &step,
                                  const PipelineFigures &figures) {
  const PipelineSchedule &schedule = step.schedule;
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const PipelineStage &stage = step.stages[s];
    os << "  stage " << s << " (rank "
       << schedule.rankOfStage(static_cast<int>(s)) << "): " << stage.summary
       << ", " << stage.paramIndex.size() << " parameters, "
       << stage.forwardFlops << " forward FLOPs, " << activationBytes(stage)
       << " activation bytes per micro-batch"
       << (stage.weightGrad.present ? ", weight gradients apart" : "");
    int64_t collectives = 0;
    for (const StageProgram *program :
         {&stage.forward, &stage.backward, &stage.weightGrad})
      if (program->present)
        collectives += summarizeCommunication(program->executable).collectives;
    os << ", " << collectives << " collectives per micro-batch, "
       << summarizeCommunication(stage.update).collectives << " per update";
    StageTraffic traffic = stageTraffic(step, static_cast<int>(s));
    if (traffic.forward || traffic.backward)
      os << "; sends " << traffic.forward << " bytes forward, "
         << traffic.backward << " back";
    os << "\n";
  }
  os << "bubble: " << llvm::format("%.4f", figures.uniform.bubbleFraction)
     << " by the schedule";
  if (figures.formula >= 0)
    os << " (formula " << llvm::format("%.4f", figures.formula) << ")";
  os << ", " << llvm::format("%.4f", figures.byFlops.bubbleFraction)
     << " with the stages' FLOPs\n";
}

/// pipeline.json: the stages, the schedule's figures and the last step's
/// measurements.
bool partita::writePipelineReport(const std::string &path,
                                  const PipelinedStep &step,
                                  const PipelineFigures &figures,
                                  const PipelineStepResult *measured) {
  return writeOutputFile(path, [&](llvm::raw_ostream &os) {
    llvm::json::OStream json(os, 2);
    const PipelineSchedule &schedule = step.schedule;
    json.object([&] {
      json.attribute("schedule", scheduleKindName(schedule.kind));
      json.attribute("ranks", schedule.ranks);
      json.attribute("virtual_stages", schedule.virtualStages);
      json.attribute("micro_batches", schedule.microBatches);
      json.attribute("devices_per_rank", step.devicesPerRank);
      json.attribute("bubble_fraction", figures.uniform.bubbleFraction);
      if (figures.formula >= 0)
        json.attribute("bubble_formula", figures.formula);
      else
        json.attribute("bubble_formula", nullptr);
      json.attribute("bubble_fraction_by_flops",
                     figures.byFlops.bubbleFraction);
      if (measured) {
        json.attribute("measured_bubble_fraction",
                       measured->timeline.bubbleFraction);
        json.attribute("measured_step_seconds", measured->seconds);
      }
      json.attributeArray("stages", [&] {
        for (size_t s = 0; s < step.stages.size(); ++s) {
          const PipelineStage &stage = step.stages[s];
          json.object([&] {
            json.attribute("stage", static_cast<int64_t>(s));
            json.attribute("rank", schedule.rankOfStage(static_cast<int>(s)));
            json.attribute("holds", stage.summary);
            json.attribute("parameters",
                           static_cast<int64_t>(stage.paramIndex.size()));
            json.attribute("forward_flops", stage.forwardFlops);
            json.attribute("activation_bytes_per_micro_batch",
                           activationBytes(stage));
            StageTraffic traffic = stageTraffic(step, static_cast<int>(s));
            json.attribute("sends_forward_bytes", traffic.forward);
            json.attribute("sends_backward_bytes", traffic.backward);
            CommunicationSummary comm = stepCommunication(step, stage);
            json.attribute("collectives_per_step", comm.collectives);
            json.attribute("collective_bytes_per_device_per_step",
                           comm.bytesPerDevice);
          });
        }
      });
      json.attributeArray("per_rank", [&] {
        for (int r = 0; r < schedule.ranks; ++r) {
          int64_t perMicroBatch = 0;
          for (size_t s = 0; s < step.stages.size(); ++s)
            if (schedule.rankOfStage(static_cast<int>(s)) == r)
              perMicroBatch =
                  std::max(perMicroBatch, activationBytes(step.stages[s]));
          CommunicationSummary comm;
          for (size_t s = 0; s < step.stages.size(); ++s)
            if (schedule.rankOfStage(static_cast<int>(s)) == r) {
              CommunicationSummary one =
                  stepCommunication(step, step.stages[s]);
              comm.collectives += one.collectives;
              comm.bytesPerDevice += one.bytesPerDevice;
            }
          json.object([&] {
            json.attribute("rank", r);
            json.attribute("bubble", figures.uniform.bubble[r]);
            json.attribute("collectives_per_step", comm.collectives);
            json.attribute("collective_bytes_per_device_per_step",
                           comm.bytesPerDevice);
            json.attribute("peak_micro_batches_held",
                           figures.uniform.peakInFlight[r]);
            json.attribute("peak_activation_bytes",
                           perMicroBatch * figures.uniform.peakInFlight[r]);
            if (!measured)
              return;
            json.attribute("measured_bubble", measured->timeline.bubble[r]);
            json.attribute("measured_peak_micro_batches_held",
                           measured->timeline.peakInFlight[r]);
            json.attribute("measured_peak_held_bytes",
                           measured->peakHeldBytes[r]);
          });
        }
      });
    });
    os << "\n";
  });
}

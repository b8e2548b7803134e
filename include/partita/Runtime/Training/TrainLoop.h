//===- TrainLoop.h - A train step run step after step -----------*- C++ -*-===//
//
// The loop of `partita train` (docs/Training.md) on a compiled train step:
// data in, the step run on the devices, the updated parameters and optimizer
// state fed back as the next step's inputs, the loss out. No MLIR: the
// layout of the step is read from its Executable, so any front end (the
// CLI, a deployed job's partita-exec, a Python package) trains the same way.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_TRAINING_TRAINLOOP_H
#define PARTITA_RUNTIME_TRAINING_TRAINLOOP_H

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Training/TrainData.h"

#include <functional>
#include <string>
#include <vector>

namespace partita {

/// Where a train step keeps what (the train-step builder's convention,
/// docs/Autodiff.md): output 0 is the loss and output 1 + k the new value of
/// input k for k < `updated` (parameters, optimizer state, gradient
/// buffers); of the later inputs with role "input", a scalar is the step
/// number and the others are data (inputs, then targets).
struct TrainStepLayout {
  size_t updated = 0;
  std::vector<size_t> dataInputs;
  /// The scalar i32 step-number input, or -1.
  int stepInput = -1;
  /// The scalar f32 learning-rate input (a step compiled without a constant
  /// learning rate), or -1.
  int lrInput = -1;
};

/// A learning rate per step: a linear warmup from peak/warmup to `peak`
/// over the first `warmup` steps, then constant, or a cosine or linear
/// decay from `peak` to `minimum` at the last of `total` steps.
struct LearningRateSchedule {
  enum class Kind { Constant, Cosine, Linear };
  Kind kind = Kind::Constant;
  double peak = 1e-3, minimum = 0;
  int64_t warmup = 0, total = 1;
  /// The rate of step `step` (counting from 0).
  double at(int64_t step) const;
};

/// The layout of `program`; fails when it has no loss output or more
/// updated values than inputs.
Expected<TrainStepLayout> trainStepLayout(const Executable &program);

/// The inputs of the first step: parameters initialised as randomInputs
/// does with `seed`, optimizer state zero; fails as randomInputs does.
Expected<std::vector<HostArray>> initialTrainInputs(const Executable &program,
                                                    uint64_t seed);

/// One step's outcome.
struct TrainStepResult {
  int64_t step = 0;
  double loss = 0;
  /// The step's run time (data filling excluded).
  double seconds = 0;
};

/// A train step's state after a step, for a checkpoint: per updated input
/// (the first `updated`), its blocks as the devices hold them (indexed by
/// device id), or, for a value the step moves off the devices each step,
/// its global value alone (`whole`).
struct TrainSnapshot {
  /// Steps done.
  int64_t steps = 0;
  std::vector<std::vector<HostArray>> blocks;
  std::vector<bool> whole;
};

/// Where a training loop starts, and when it hands out its state.
struct TrainLoopOptions {
  /// The first step to run (a resumed run: the steps done before).
  int64_t firstStep = 0;
  /// The learning rate of each step, for a step with an lr input.
  std::function<double(int64_t step)> learningRate;
  /// After how many steps done a snapshot is taken; called on the device
  /// threads, so a pure function.
  std::function<bool(int64_t stepsDone)> snapshotAfter;
  /// Takes the snapshot (on the caller's thread, after that step's onStep);
  /// its failure stops the loop.
  std::function<Status(TrainSnapshot &snapshot)> onSnapshot;
  /// The step whose device timelines are recorded into `*timelines` (one
  /// per device), or -1.
  int64_t traceStep = -1;
  std::vector<DeviceTimeline> *timelines = nullptr;
  /// Whether the values kept on the devices come back into `inputs` when
  /// the loop ends (a caller that has saved what it needs, or needs
  /// nothing, spares their download beside the devices' memory).
  bool finalValues = true;
};

/// Runs steps `0 .. steps-1` of `program` on its mesh's CPU devices
/// (threads): fills the data inputs from `data`, sets the step number, runs,
/// moves the updated values into `inputs`, and calls `onStep`; a failure of
/// any of these (`onStep`'s included) stops the loop and is returned, a run
/// failure's message starting with "step N: ".
/// With `options`, runs steps `firstStep .. steps-1` and takes snapshots.
Status trainOnCpuDevices(
    const Executable &program, const TrainStepLayout &layout,
    std::vector<HostArray> &inputs, TrainData &data, int64_t steps,
    const std::function<Status(const TrainStepResult &)> &onStep,
    const TrainLoopOptions &options = {});

/// This process's share of a mesh's devices in a multi-process run.
struct LocalDevices {
  /// The devices this process drives, in mesh order.
  std::vector<int64_t> devices;
  /// Their communicator (the other processes' devices beyond it).
  Communicator *communicator = nullptr;
};

/// trainOnCpuDevices() on this process's `local` devices only, started
/// from their input blocks (`blocks[d]` for each local device d, indexed by
/// device id; the others empty). `inputs` holds the data, step-number and
/// learning-rate inputs (the updated ones may be empty arrays); `data`
/// fills only the rows the local devices hold (TrainData::setRows). The
/// loss is read from a local replica; snapshots hold the local devices'
/// blocks only. Every updated value must stay on the devices (no layout
/// change in the step) and keep no partial sum, and the loss must be
/// replicated: otherwise an error before the first step.
Status trainOnLocalDevices(
    const Executable &program, const TrainStepLayout &layout,
    std::vector<HostArray> &inputs,
    std::vector<std::vector<HostArray>> &&blocks, const LocalDevices &local,
    TrainData &data, int64_t steps,
    const std::function<Status(const TrainStepResult &)> &onStep,
    const TrainLoopOptions &options = {});

/// The rows [first, end) of dimension 0 of data input `index` that
/// `devices` hold (the smallest range covering their blocks).
std::pair<int64_t, int64_t> rowsHeldBy(const Executable &program, size_t index,
                                       const std::vector<int64_t> &devices);

/// The losses as CSV: "step,loss,seconds" and one line per step.
std::string lossCsv(const std::vector<double> &losses,
                    const std::vector<double> &seconds);

/// The losses as an SVG line plot titled `title`.
/// With `evalPoints` ((steps done, loss) pairs), the held-out losses are
/// drawn too, as a second line with dots, labelled `evalLabel` (an RL run's
/// plot of rewards: its held-out rewards).
std::string
lossPlotSvg(const std::vector<double> &losses, const std::string &title,
            const std::vector<std::pair<int64_t, double>> &evalPoints = {},
            const std::string &evalLabel = "held-out loss");

} // namespace partita

#endif // PARTITA_RUNTIME_TRAINING_TRAINLOOP_H

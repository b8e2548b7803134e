//===- TrainLoop.cpp - A train step run step after step -------------------===//

#include "partita/Runtime/Training/TrainLoop.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Sharding/Layout.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace partita {

Expected<TrainStepLayout> trainStepLayout(const Executable &program) {
  if (program.outputs.empty())
    return Status::error("a train step returns its loss first; this program "
                         "has no outputs");
  TrainStepLayout layout;
  layout.updated = program.outputs.size() - 1;
  if (layout.updated > program.inputs.size())
    return Status::error("a train step updates at most its inputs; this "
                         "program returns " +
                         std::to_string(program.outputs.size()) +
                         " values for " +
                         std::to_string(program.inputs.size()) + " inputs");
  for (size_t i = layout.updated; i < program.inputs.size(); ++i) {
    const ExecutableValue &input = program.inputs[i];
    if (input.role != "input")
      continue;
    if (input.globalShape.empty() &&
        program.slots[input.slot].dtype == DType::F32)
      layout.lrInput = static_cast<int>(i);
    else if (input.globalShape.empty())
      layout.stepInput = static_cast<int>(i);
    else
      layout.dataInputs.push_back(i);
  }
  return layout;
}

Expected<std::vector<HostArray>> initialTrainInputs(const Executable &program,
                                                    uint64_t seed) {
  Expected<std::vector<HostArray>> random = randomInputs(program, seed);
  if (!random)
    return random.status();
  std::vector<HostArray> inputs = std::move(*random);
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (program.inputs[i].role == "opt_state")
      std::fill(inputs[i].bytes.begin(), inputs[i].bytes.end(), 0);
  return inputs;
}

namespace {

/// Whether updated value `k` (input k, output 1 + k) has the same blocks on
/// every device before and after the step: then the blocks stay on the
/// devices from one step to the next. A partial sum stays too (each device
/// keeps its addend; ZeRO-1's unreduced gradients): assembling and
/// splitting it again every step changes no sum and cost ZeRO-1 three
/// quarters of its step on the small GPT.
bool staysOnDevices(const Executable &program, size_t k) {
  const ExecutableValue &input = program.inputs[k];
  const ExecutableValue &output = program.outputs[1 + k];
  const TensorType &in = program.slots[input.slot];
  const TensorType &out = program.slots[output.slot];
  return input.sharding == output.sharding &&
         input.globalShape == output.globalShape && in.dtype == out.dtype &&
         in.shape == out.shape &&
         (input.sharding.partialKind == PartialKind::None ||
          input.sharding.partialKind == PartialKind::Sum);
}

/// A program with only `values` as outputs, for assembleOutputs (which reads
/// the mesh and the outputs' layouts).
Executable outputsView(const Executable &program,
                       std::vector<ExecutableValue> values) {
  Executable view;
  view.mesh = program.mesh;
  view.outputs = std::move(values);
  return view;
}

/// What a device uploads before a step: (program input index, block) pairs,
/// per device id.
using StepUploads = std::vector<std::vector<std::pair<size_t, HostArray>>>;

/// A train loop on the CPU devices: the plan of what moves between the host
/// and the devices, and the state its steps' callbacks share.
class CpuTrainLoop {
public:
  CpuTrainLoop(const Executable &program, const TrainStepLayout &layout,
               std::vector<HostArray> &inputs, TrainData &data,
               const std::function<Status(const TrainStepResult &)> &onStep,
               const TrainLoopOptions &options,
               const LocalDevices *local = nullptr)
      : program(program), layout(layout), inputs(inputs), data(data),
        onStep(onStep), options(options), local(local),
        first(options.firstStep), devices(program.mesh.numDevices()) {}
  // `run`'s callbacks point at this loop.
  CpuTrainLoop(const CpuTrainLoop &) = delete;
  CpuTrainLoop &operator=(const CpuTrainLoop &) = delete;

  /// Plans which inputs are split and uploaded before every step (data,
  /// step number, learning rate, and updated values whose layout changes)
  /// and which updated values stay on the devices.
  Status planUploads();

  /// The updated values that stay on the devices from step to step.
  const std::vector<size_t> &keptValues() const { return kept; }

  /// Runs steps [options.firstStep, steps) from the devices' input
  /// `blocks`, then downloads the values kept on the devices into the
  /// inputs, however the run ended.
  Status runSteps(int64_t steps, std::vector<std::vector<HostArray>> &&blocks);

private:
  /// Sets up `run`: its steps, what it traces, snapshots and downloads,
  /// and its callbacks.
  void configureRun(int64_t steps);
  /// Notes that a callback failed with `status`, and returns it.
  Status failed(Status status);
  /// Before the run's step `s`: fills the data, step number and learning
  /// rate inputs and splits what is uploaded each step into `uploads`.
  Status beforeStep(int64_t s, StepUploads &uploads);
  /// After the run's step `local`: takes the loss and the moved values from
  /// the devices' `outputs`, reports the step and takes a snapshot if one
  /// is due.
  Status afterStep(int64_t local, std::vector<std::vector<HostArray>> &outputs);
  /// The step's outputs (the loss alone) from the first local device.
  Expected<std::vector<HostArray>>
  localReplicas(std::vector<std::vector<HostArray>> &outputs);
  /// Hands options.onSnapshot the updated values after step `s`: the kept
  /// ones from the devices' snapshots, the moved ones from the inputs.
  Status takeSnapshot(int64_t s);
  /// Assembles the kept values as the devices hold them at the end of the
  /// run into the inputs, setting `status` when that fails after a
  /// successful run.
  void collectKeptValues(Status &status);

  const Executable &program;
  const TrainStepLayout &layout;
  std::vector<HostArray> &inputs;
  TrainData &data;
  const std::function<Status(const TrainStepResult &)> &onStep;
  const TrainLoopOptions &options;
  /// The devices of this process in a multi-process run (else null: all).
  const LocalDevices *local;
  int64_t first;
  int64_t devices;
  std::vector<HostArray *> dataInputs;
  std::vector<size_t> splitEachStep;
  std::vector<size_t> kept, moved;
  StepwiseRun run;
  Executable stepView;
  Executable keptView;
  std::chrono::steady_clock::time_point begin;
  int64_t current = 0;
  bool callbackFailed = false;
};

Status CpuTrainLoop::planUploads() {
  for (size_t index : layout.dataInputs)
    dataInputs.push_back(&inputs[index]);
  // The device threads stay up from the first step to the last, and
  // parameters and optimizer state stay in their memory (JAX keeps them on
  // its devices too): a step uploads only its data and step number, and
  // downloads only its loss. Updated values whose layout changes in the
  // step (none in the models' steps) are assembled and split again.
  splitEachStep = layout.dataInputs;
  if (layout.stepInput >= 0)
    splitEachStep.push_back(static_cast<size_t>(layout.stepInput));
  if (layout.lrInput >= 0) {
    if (!options.learningRate)
      return Status::error("the train step takes its learning rate as an "
                           "input; the loop needs a schedule");
    splitEachStep.push_back(static_cast<size_t>(layout.lrInput));
  }
  for (size_t k = 0; k < layout.updated; ++k)
    (staysOnDevices(program, k) ? kept : moved).push_back(k);
  splitEachStep.insert(splitEachStep.end(), moved.begin(), moved.end());
  if (!local)
    return Status::success();
  // Across processes nothing is assembled on the host: the loss is read
  // from a local replica and the state never leaves its devices.
  const ExecutableValue &loss = program.outputs[0];
  if (!loss.sharding.isReplicated())
    return Status::error("across processes the loss must be replicated; "
                         "this step returns it as " +
                         loss.sharding.toString());
  if (!moved.empty())
    return Status::error("across processes every updated value stays on its "
                         "devices; the step changes the layout of input " +
                         std::to_string(moved.front()) + " (" +
                         program.inputs[moved.front()].name + ")");
  return Status::success();
}

void CpuTrainLoop::configureRun(int64_t steps) {
  run.steps = steps - first;
  if (options.timelines && options.traceStep >= first &&
      options.traceStep < steps)
    run.timelineStep = options.traceStep - first;
  if (options.snapshotAfter)
    run.snapshotAfter = [&options = options, first = first](int64_t s) {
      return options.snapshotAfter(first + s + 1);
    };
  run.readEachStep.push_back(0);
  std::vector<ExecutableValue> stepValues = {program.outputs[0]};
  for (size_t k : moved) {
    run.readEachStep.push_back(1 + k);
    stepValues.push_back(program.outputs[1 + k]);
  }
  stepView = outputsView(program, stepValues);
  std::vector<ExecutableValue> keptValues;
  for (size_t k : kept) {
    run.carried.emplace_back(1 + k, k);
    run.readAtEnd.push_back(k);
    keptValues.push_back(program.inputs[k]);
  }
  // readAtEnd also names what snapshots download; the end's download is
  // skipped when not wanted.
  run.downloadAtEnd = options.finalValues;
  keptView = outputsView(program, keptValues);
  run.before = [this](int64_t s, StepUploads &uploads) {
    return beforeStep(s, uploads);
  };
  run.after = [this](int64_t local,
                     std::vector<std::vector<HostArray>> &outputs) {
    return afterStep(local, outputs);
  };
}

Status CpuTrainLoop::failed(Status status) {
  callbackFailed = true;
  return status;
}

Status CpuTrainLoop::beforeStep(int64_t s, StepUploads &uploads) {
  s += first;
  current = s;
  if (Status status = data.fill(s, dataInputs); !status.ok())
    return failed(status);
  if (layout.stepInput >= 0) {
    int32_t number = static_cast<int32_t>(s);
    std::memcpy(inputs[layout.stepInput].bytes.data(), &number, 4);
  }
  if (layout.lrInput >= 0) {
    float rate = static_cast<float>(options.learningRate(s));
    std::memcpy(inputs[layout.lrInput].bytes.data(), &rate, 4);
  }
  begin = std::chrono::steady_clock::now();
  for (size_t index : splitEachStep) {
    Expected<std::vector<HostArray>> split =
        inputBlocksByDevice(program, index, inputs[index]);
    if (!split)
      return failed(Status::error("step " + std::to_string(s) + ": " +
                                  split.status().message()));
    for (int64_t d = 0; d < devices; ++d)
      uploads[d].emplace_back(index, std::move((*split)[d]));
  }
  return Status::success();
}

Expected<std::vector<HostArray>>
CpuTrainLoop::localReplicas(std::vector<std::vector<HostArray>> &outputs) {
  std::vector<HostArray> &first = outputs[local->devices.front()];
  if (first.empty())
    return Status::error("device " + std::to_string(local->devices.front()) +
                         " returned no loss");
  return std::move(first);
}

Status CpuTrainLoop::afterStep(int64_t local,
                               std::vector<std::vector<HostArray>> &outputs) {
  int64_t s = first + local;
  Expected<std::vector<HostArray>> values =
      this->local ? localReplicas(outputs) : assembleOutputs(stepView, outputs);
  if (!values)
    return failed(Status::error("step " + std::to_string(s) + ": " +
                                values.status().message()));
  for (size_t j = 0; j < moved.size(); ++j)
    inputs[moved[j]] = std::move((*values)[1 + j]);
  TrainStepResult result;
  result.step = s;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  result.loss = elementAsDouble((*values)[0], 0);
  if (Status status = onStep(result); !status.ok())
    return failed(status);
  if (options.onSnapshot && options.snapshotAfter &&
      options.snapshotAfter(s + 1))
    return takeSnapshot(s);
  return Status::success();
}

Status CpuTrainLoop::takeSnapshot(int64_t s) {
  TrainSnapshot snapshot;
  snapshot.steps = s + 1;
  snapshot.blocks.resize(layout.updated);
  snapshot.whole.assign(layout.updated, true);
  for (size_t j = 0; j < kept.size(); ++j) {
    size_t k = kept[j];
    std::vector<HostArray> blocks(devices);
    for (int64_t d = 0; d < devices; ++d)
      if (!run.snapshots[d].empty())
        blocks[d] = std::move(run.snapshots[d][j]);
    if (program.inputs[k].sharding.partialKind == PartialKind::None) {
      snapshot.whole[k] = false;
      snapshot.blocks[k] = std::move(blocks);
      continue;
    }
    // Checkpoints hold values, not addends: a partial sum is summed.
    if (local)
      return failed(Status::error(
          "step " + std::to_string(s) + ": " + program.inputs[k].name +
          " is a partial sum whose addends live in several processes; a "
          "snapshot across processes holds values only"));
    std::vector<std::vector<HostArray>> byDevice(devices);
    for (int64_t d = 0; d < devices; ++d)
      byDevice[d].push_back(std::move(blocks[d]));
    Expected<std::vector<HostArray>> value =
        assembleOutputs(outputsView(program, {program.inputs[k]}), byDevice);
    if (!value)
      return failed(Status::error("step " + std::to_string(s) + ": " +
                                  value.status().message()));
    snapshot.blocks[k].push_back(std::move((*value)[0]));
  }
  for (size_t k : moved)
    snapshot.blocks[k].push_back(inputs[k]);
  if (Status status = options.onSnapshot(snapshot); !status.ok())
    return failed(status);
  return Status::success();
}

void CpuTrainLoop::collectKeptValues(Status &status) {
  // The kept values as the devices hold them, however the run ended (after
  // a failure, as of the last step every device finished).
  bool complete = !kept.empty() &&
                  static_cast<int64_t>(run.finalInputs.size()) == devices;
  for (const std::vector<HostArray> &device : run.finalInputs)
    complete = complete && device.size() == kept.size() &&
               std::all_of(device.begin(), device.end(),
                           [](const HostArray &a) { return !a.bytes.empty(); });
  if (!complete)
    return;
  Expected<std::vector<HostArray>> values =
      assembleOutputs(keptView, run.finalInputs);
  if (!values && status.ok())
    status = values.status();
  if (values)
    for (size_t j = 0; j < kept.size(); ++j)
      inputs[kept[j]] = std::move((*values)[j]);
}

Status CpuTrainLoop::runSteps(int64_t steps,
                              std::vector<std::vector<HostArray>> &&blocks) {
  configureRun(steps);
  if (local) {
    run.devices = local->devices;
    run.communicator = local->communicator;
    run.downloadAtEnd = false;
  }
  Status status = runDevicesStepwise(program, std::move(blocks), run);
  if (options.timelines && status.ok())
    *options.timelines = std::move(run.timelines);
  collectKeptValues(status);
  // A device's failure says in which step; a callback's is as it was.
  if (!status.ok() && !callbackFailed)
    return Status::error("step " + std::to_string(current) + ": " +
                         status.message());
  return status;
}

} // namespace

namespace {

Status checkFirstStep(int64_t first, int64_t steps) {
  if (first < 0 || first > steps)
    return Status::error("cannot start at step " + std::to_string(first) +
                         " of " + std::to_string(steps));
  return Status::success();
}

} // namespace

Status
trainOnCpuDevices(const Executable &program, const TrainStepLayout &layout,
                  std::vector<HostArray> &inputs, TrainData &data,
                  int64_t steps,
                  const std::function<Status(const TrainStepResult &)> &onStep,
                  const TrainLoopOptions &options) {
  if (Status status = checkFirstStep(options.firstStep, steps); !status.ok())
    return status;
  CpuTrainLoop loop(program, layout, inputs, data, onStep, options);
  if (Status status = loop.planUploads(); !status.ok())
    return status;
  Expected<std::vector<std::vector<HostArray>>> blocks =
      deviceInputBlocks(program, inputs);
  if (!blocks)
    return blocks.status();
  // The values kept on the devices live there until the run ends (then
  // they are downloaded and assembled again): their whole arrays are not
  // held beside the devices' blocks.
  for (size_t k : loop.keptValues())
    std::vector<uint8_t>().swap(inputs[k].bytes);
  return loop.runSteps(steps, std::move(*blocks));
}

Status trainOnLocalDevices(
    const Executable &program, const TrainStepLayout &layout,
    std::vector<HostArray> &inputs,
    std::vector<std::vector<HostArray>> &&blocks, const LocalDevices &local,
    TrainData &data, int64_t steps,
    const std::function<Status(const TrainStepResult &)> &onStep,
    const TrainLoopOptions &options) {
  if (Status status = checkFirstStep(options.firstStep, steps); !status.ok())
    return status;
  if (local.devices.empty() || !local.communicator)
    return Status::error("a multi-process train loop needs its devices and "
                         "their communicator");
  CpuTrainLoop loop(program, layout, inputs, data, onStep, options, &local);
  if (Status status = loop.planUploads(); !status.ok())
    return status;
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (size_t index : layout.dataInputs)
    rows.push_back(rowsHeldBy(program, index, local.devices));
  // Inputs and targets hold the same rows; one range for all.
  if (!rows.empty())
    data.setRows(rows.front().first, rows.front().second);
  return loop.runSteps(steps, std::move(blocks));
}

std::pair<int64_t, int64_t> rowsHeldBy(const Executable &program, size_t index,
                                       const std::vector<int64_t> &devices) {
  const ExecutableValue &input = program.inputs[index];
  if (input.globalShape.empty())
    return {0, 1};
  int64_t begin = input.globalShape[0], end = 0;
  for (int64_t device : devices) {
    std::vector<IndexRange> block =
        deviceBlock(program.mesh, input.sharding, input.globalShape, device);
    begin = std::min(begin, block[0].begin);
    end = std::max(end, block[0].end);
  }
  return {begin, std::max(begin, end)};
}

double LearningRateSchedule::at(int64_t step) const {
  if (step < warmup)
    return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (kind == Kind::Constant)
    return peak;
  // The last step (total - 1) runs at the minimum.
  double span = static_cast<double>(std::max<int64_t>(1, total - warmup - 1));
  double progress =
      std::min(1.0, static_cast<double>(step - warmup) / span);
  if (kind == Kind::Linear)
    return peak - (peak - minimum) * progress;
  return minimum + 0.5 * (peak - minimum) * (1 + std::cos(M_PI * progress));
}

std::string lossCsv(const std::vector<double> &losses,
                    const std::vector<double> &seconds) {
  std::string csv = "step,loss,seconds\n";
  char line[96];
  for (size_t i = 0; i < losses.size(); ++i) {
    std::snprintf(line, sizeof(line), "%zu,%.9g,%.6f\n", i + 1, losses[i],
                  seconds[i]);
    csv += line;
  }
  return csv;
}

std::string
lossPlotSvg(const std::vector<double> &losses, const std::string &title,
            const std::vector<std::pair<int64_t, double>> &evalPoints,
            const std::string &evalLabel) {
  double low = *std::min_element(losses.begin(), losses.end());
  double high = *std::max_element(losses.begin(), losses.end());
  for (const auto &point : evalPoints) {
    low = std::min(low, point.second);
    high = std::max(high, point.second);
  }
  if (high - low < 1e-12)
    high = low + 1;
  const double width = 640, height = 360, left = 60, right = 20, top = 30,
               bottom = 40;
  auto x = [&](size_t i) {
    return left + (losses.size() > 1 ? i * (width - left - right) /
                                           (losses.size() - 1)
                                     : 0.0);
  };
  auto y = [&](double value) {
    return top + (high - value) * (height - top - bottom) / (high - low);
  };
  std::string svg;
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer),
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                width, height);
  svg += buffer;
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::snprintf(buffer, sizeof(buffer),
                "<text x=\"%.0f\" y=\"18\">%s</text>\n", left, title.c_str());
  svg += buffer;
  std::snprintf(buffer, sizeof(buffer),
                "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
                "stroke=\"black\"/>\n<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
                "y2=\"%.0f\" stroke=\"black\"/>\n",
                left, top, left, height - bottom, left, height - bottom,
                width - right, height - bottom);
  svg += buffer;
  for (double value : {low, high}) {
    std::snprintf(buffer, sizeof(buffer),
                  "<text x=\"4\" y=\"%.1f\">%.4g</text>\n", y(value) + 4, value);
    svg += buffer;
  }
  std::snprintf(buffer, sizeof(buffer),
                "<text x=\"%.0f\" y=\"%.0f\">step</text>\n",
                width / 2, height - 10);
  svg += buffer;
  svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
  for (size_t i = 0; i < losses.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%s%.1f,%.1f", i ? " " : "", x(i),
                  y(losses[i]));
    svg += buffer;
  }
  svg += "\"/>\n";
  if (!evalPoints.empty()) {
    // Step s's loss sits at x(s - 1); an evaluation after s steps there too.
    svg += "<polyline fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"2\" "
           "points=\"";
    for (size_t i = 0; i < evalPoints.size(); ++i) {
      std::snprintf(buffer, sizeof(buffer), "%s%.1f,%.1f", i ? " " : "",
                    x(static_cast<size_t>(
                        std::max<int64_t>(0, evalPoints[i].first - 1))),
                    y(evalPoints[i].second));
      svg += buffer;
    }
    svg += "\"/>\n";
    for (const auto &[step, loss] : evalPoints) {
      std::snprintf(buffer, sizeof(buffer),
                    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                    "fill=\"#ff7f0e\"/>\n",
                    x(static_cast<size_t>(std::max<int64_t>(0, step - 1))),
                    y(loss));
      svg += buffer;
    }
    // The label ends at the plot's right edge.
    std::snprintf(buffer, sizeof(buffer),
                  "<text x=\"%.0f\" y=\"18\" fill=\"#ff7f0e\" "
                  "text-anchor=\"end\">",
                  width - right);
    svg += buffer;
    svg += evalLabel + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

} // namespace partita

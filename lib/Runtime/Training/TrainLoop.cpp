//===- TrainLoop.cpp - A train step run step after step -------------------===//

#include "partita/Runtime/Training/TrainLoop.h"

#include <algorithm>
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
    if (input.globalShape.empty())
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

Status trainOnCpuDevices(
    const Executable &program, const TrainStepLayout &layout,
    std::vector<HostArray> &inputs, TrainData &data, int64_t steps,
    const std::function<Status(const TrainStepResult &)> &onStep) {
  std::vector<HostArray *> dataInputs;
  for (size_t index : layout.dataInputs)
    dataInputs.push_back(&inputs[index]);
  for (int64_t s = 0; s < steps; ++s) {
    if (Status status = data.fill(s, dataInputs); !status.ok())
      return status;
    if (layout.stepInput >= 0) {
      int32_t number = static_cast<int32_t>(s);
      std::memcpy(inputs[layout.stepInput].bytes.data(), &number, 4);
    }
    auto begin = std::chrono::steady_clock::now();
    Expected<std::vector<HostArray>> outputs =
        runOnCpuDevices(program, inputs);
    if (!outputs)
      return Status::error("step " + std::to_string(s) + ": " +
                           outputs.status().message());
    TrainStepResult result;
    result.step = s;
    result.seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - begin)
                         .count();
    for (size_t k = 0; k < layout.updated; ++k)
      inputs[k] = std::move((*outputs)[1 + k]);
    result.loss = elementAsDouble((*outputs)[0], 0);
    if (Status status = onStep(result); !status.ok())
      return status;
  }
  return Status::success();
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

std::string lossPlotSvg(const std::vector<double> &losses,
                        const std::string &title) {
  double low = *std::min_element(losses.begin(), losses.end());
  double high = *std::max_element(losses.begin(), losses.end());
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
  svg += "\"/>\n</svg>\n";
  return svg;
}

} // namespace partita

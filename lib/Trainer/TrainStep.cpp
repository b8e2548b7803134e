//===- TrainStep.cpp - The compiled step and what a run writes ------------===//
//
// A training run's train step compiled for its mesh and rules, its output
// directory checked before it starts, and the losses written after
// (docs/Training.md).
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <unistd.h>

using namespace partita;

Status partita::checkWritableDirectory(const std::string &directory) {
  if (std::error_code error = llvm::sys::fs::create_directories(directory))
    return Status::error("cannot create '" + directory +
                         "': " + error.message());
  int fd = -1;
  llvm::SmallString<256> probe;
  if (std::error_code error = llvm::sys::fs::createUniqueFile(
          directory + "/.partita-write-check-%%%%%%", fd, probe))
    return Status::error("cannot write in '" + directory +
                         "': " + error.message());
  ::close(fd);
  llvm::sys::fs::remove(probe);
  return Status::success();
}

std::string partita::formatRate(double rate) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", rate);
  return text;
}

std::string partita::formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fs", seconds);
  return text;
}

Expected<Executable> partita::compileTrainStep(Session &session,
                                               const TrainRequest &request) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModelOrReport(session, request.config, request.mesh);
  if (!module)
    return Status::error("");
  if (!runPipeline(session, *module, request.options))
    return Status::error("");
  Expected<Executable> program = lowerToExecutable(*module, request.lowering);
  if (program && request.count == 1)
    program->mesh = Mesh();
  return program;
}

bool partita::writeLosses(const TrainRequest &request,
                          const ProgressPrinter &progress,
                          const Evaluator *evaluator) {
  const std::vector<double> &losses = progress.losses;
  std::string csvPath = request.outputDir + "/loss.csv",
              svgPath = request.outputDir + "/loss.svg";
  bool written = writeOutputFile(csvPath, [&](llvm::raw_ostream &os) {
    os << lossCsv(losses, progress.seconds);
  });
  if (!losses.empty())
    written = written && writeOutputFile(svgPath, [&](llvm::raw_ostream &os) {
                os << lossPlotSvg(
                    losses,
                    request.config.model + " " + request.options.rules +
                        " on " + request.devices,
                    evaluator ? evaluator->points
                              : std::vector<std::pair<int64_t, double>>());
              });
  std::string evalPath = request.outputDir + "/eval.csv";
  if (evaluator)
    written = written && writeOutputFile(evalPath, [&](llvm::raw_ostream &os) {
                os << evaluator->csv();
              });
  if (!written)
    return false;
  if (!losses.empty())
    llvm::outs() << "loss " << llvm::format("%.6g", losses.front()) << " -> "
                 << llvm::format("%.6g", losses.back()) << " in "
                 << request.steps << " steps; wrote " << csvPath
                 << (evaluator ? ", " + evalPath : std::string()) << " and "
                 << svgPath << "\n";
  return true;
}

Expected<TrainRequest> partita::oneDeviceRequest(const TrainRequest &request,
                                                 const Mesh &mesh) {
  TrainRequest single = request;
  single.count = 1;
  // MoE dispatch groups default to the data axis's size: the reference
  // keeps the run's, or it would route (and drop) other tokens.
  if (single.config.groups == 0)
    single.config.groups = moeGroups(request.config, request.mesh);
  std::vector<MeshAxis> ones;
  for (const MeshAxis &axis : mesh.axes())
    ones.push_back(MeshAxis{axis.name, 1});
  Expected<Mesh> oneDevice = Mesh::create(ones);
  if (!oneDevice)
    return oneDevice.status();
  single.mesh = *oneDevice;
  single.options.stage = Stage::Verified;
  return single;
}

Expected<std::vector<HostArray>>
partita::checkpointParameters(const CheckpointInfo &checkpoint,
                              const Executable &program) {
  std::vector<HostArray> inputs;
  for (const ExecutableValue &input : program.inputs)
    inputs.push_back(
        HostArray::zeros(program.slots[input.slot].dtype, input.globalShape));
  if (Status status = loadCheckpoint(checkpoint, program, program.inputs.size(),
                                     inputs, "param");
      !status.ok())
    return status;
  std::vector<HostArray> params;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (program.inputs[i].role == "param")
      params.push_back(std::move(inputs[i]));
  return params;
}

Status partita::startTrainInputs(const Executable &program, uint64_t seed,
                                 TrainStepLayout &layout,
                                 std::vector<HostArray> &inputs) {
  Expected<TrainStepLayout> found = trainStepLayout(program);
  if (!found)
    return found.status();
  Expected<std::vector<HostArray>> initial = initialTrainInputs(program, seed);
  if (!initial)
    return initial.status();
  layout = std::move(*found);
  inputs = std::move(*initial);
  return Status::success();
}

std::string partita::csvTable(const std::string &header,
                              const std::vector<std::vector<double>> &rows) {
  std::string text = header + "\n";
  char value[40];
  for (const std::vector<double> &row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i == 0)
        std::snprintf(value, sizeof(value), "%lld",
                      static_cast<long long>(row[i]));
      else
        std::snprintf(value, sizeof(value), ",%.9g", row[i]);
      text += value;
    }
    text += "\n";
  }
  return text;
}

Expected<CheckpointInfo> partita::openCheckpoint(const std::string &path,
                                                 const std::string &flag) {
  std::string directory = path;
  if (!llvm::sys::fs::exists(path + "/checkpoint.json")) {
    Expected<std::string> latest = latestCheckpoint(path);
    if (!latest)
      return Status::error(flag + ": " + latest.status().message());
    directory = *latest;
  }
  Expected<CheckpointInfo> info = readCheckpoint(directory, /*verify=*/true);
  if (!info)
    return Status::error(flag + ": " + info.status().message());
  return info;
}

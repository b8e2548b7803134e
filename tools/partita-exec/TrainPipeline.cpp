//===- TrainPipeline.cpp - partita-exec train -----------------------------===//
//
// Runs a pipelined train step the compiler wrote (`partita compile --train
// --pp -o DIR`, docs/Pipeline.md) for a number of steps, on CPU device
// threads or, through the CUDA plugin, on GPUs: each pipeline rank's
// programs on its own devices. Data are deterministic per seed and step, so
// a run on one machine can be compared with a run on another (--losses
// writes the losses, --expect compares with them).
//
//===----------------------------------------------------------------------===//
#include "TrainPipeline.h"

#include "../common/CommandLine.h"
#include "../common/RuntimeBackends.h"
#include "partita/API/CommandOptions.h"

#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/Pipeline/PipelineRun.h"
#include "partita/Runtime/Pipeline/PipelinedStepFile.h"
#include "partita/Runtime/Plugins/MpiPlugin.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

using namespace partita;
using namespace partita::tools;

namespace {

/// Step `step`'s data: integers in [0, 4) (valid token ids for any model),
/// floats uniform in [-1, 1], from `seed`.
void fillData(const PipelinedStep &pipelined, int64_t step, uint64_t seed,
              std::vector<HostArray> &data) {
  data.clear();
  for (size_t k = 0; k < pipelined.dataShapes.size(); ++k) {
    HostArray array =
        HostArray::zeros(pipelined.dataTypes[k], pipelined.dataShapes[k]);
    std::mt19937_64 random(seed * 1000003ULL + static_cast<uint64_t>(step) *
                                                   7919ULL + k);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    bool isFloat = array.dtype == DType::F32 || array.dtype == DType::F64 ||
                   array.dtype == DType::BF16 || array.dtype == DType::F16;
    size_t size = dtypeSize(array.dtype);
    for (int64_t e = 0; e < array.numElements(); ++e) {
      double value =
          isFloat ? uniform(random) : static_cast<double>(random() % 4);
      uint8_t *at = array.bytes.data() + e * size;
      float narrow = static_cast<float>(value);
      uint16_t half = 0;
      int32_t i32 = static_cast<int32_t>(value);
      int64_t i64 = static_cast<int64_t>(value);
      switch (array.dtype) {
      case DType::F64:
        std::memcpy(at, &value, 8);
        break;
      case DType::F32:
        std::memcpy(at, &narrow, 4);
        break;
      case DType::BF16:
        half = floatToBFloat16(narrow);
        std::memcpy(at, &half, 2);
        break;
      case DType::F16:
        half = floatToHalf(narrow);
        std::memcpy(at, &half, 2);
        break;
      case DType::I64:
        std::memcpy(at, &i64, 8);
        break;
      default: // I32 and narrower integers: little-endian low bytes
        std::memcpy(at, &i32, size < 4 ? size : 4);
        break;
      }
    }
    data.push_back(std::move(array));
  }
}

Expected<std::vector<double>> readLosses(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    return Status::error("cannot read '" + path + "'");
  std::vector<double> losses;
  std::string line;
  std::getline(file, line); // step,loss,seconds
  while (std::getline(file, line)) {
    size_t comma = line.find(',');
    if (comma == std::string::npos)
      return Status::error(path + ": malformed line '" + line + "'");
    char *end = nullptr;
    double loss = std::strtod(line.c_str() + comma + 1, &end);
    if (!end || (*end != ',' && *end != '\0'))
      return Status::error(path + ": malformed line '" + line + "'");
    losses.push_back(loss);
  }
  return losses;
}

/// What process 0 prints and checks after the steps: the measured
/// timeline, the peaks, the losses written (--losses) and compared
/// (--expect).
Status reportRun(const Arguments &args, const std::vector<double> &losses,
                 const std::vector<double> &seconds,
                 const PipelineStepResult &last, bool ran) {
  if (ran) {
    std::printf("measured timeline of the last step:\n%s",
                renderTimeline(last.timeline, 72).c_str());
    std::printf("peak bytes held per rank:");
    for (int64_t bytes : last.peakHeldBytes)
      std::printf(" %lld", static_cast<long long>(bytes));
    std::printf("\n");
  }
  if (ran && args.has("--trace"))
    if (Status status = writeFileAtomically(args.get("--trace"),
                                            timelineTraceJson(last.timeline));
        !status.ok())
      return status;
  if (args.has("--losses")) {
    std::string csv = lossCsv(losses, seconds);
    if (Status status = writeFileAtomically(args.get("--losses"), csv);
        !status.ok())
      return status;
  }
  if (args.has("--expect")) {
    Expected<std::vector<double>> expected = readLosses(args.get("--expect"));
    if (!expected)
      return expected.status();
    double tolerance = 1e-4;
    if (args.has("--tolerance"))
      tolerance = std::strtod(args.get("--tolerance").c_str(), nullptr);
    if (expected->size() != losses.size())
      return Status::error(args.get("--expect") + " holds " +
                           std::to_string(expected->size()) +
                           " losses, this run made " +
                           std::to_string(losses.size()));
    double worst = 0;
    for (size_t i = 0; i < losses.size(); ++i)
      worst = std::max(worst, std::fabs(losses[i] - (*expected)[i]) /
                                  std::max(1e-12, std::fabs((*expected)[i])));
    std::printf("losses against %s: largest relative difference %.2e "
                "(tolerance %.0e): %s\n",
                args.get("--expect").c_str(), worst, tolerance,
                worst <= tolerance ? "same" : "DIFFERENT");
    if (worst > tolerance)
      return Status::error("the losses differ from " + args.get("--expect"));
  }
  std::fflush(stdout);
  return Status::success();
}

} // namespace

namespace {

/// The processes of a `train --distributed` run (null: this process alone)
/// and how each reports: every process names itself in its errors, and
/// only process 0 speaks for the run.
struct Processes {
  std::unique_ptr<PipelinePeers> peers;
  bool speaks() const { return !peers || peers->process() == 0; }
  /// `status` as this process's error, printed here under MPI (where every
  /// process prints its own) and returned silent; as is otherwise.
  Status report(Status status) const {
    if (!peers || status.ok() || status.message().empty())
      return status;
    std::string line = "error: rank " + std::to_string(peers->process()) +
                       ": " + status.message() + "\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    return Status::error("");
  }
  /// After a failure in the middle of a step: messages to or from this
  /// process may never complete, so it leaves at once.
  [[noreturn]] void abandon(const Status &status) const {
    (void)report(status);
    std::fflush(stdout);
    peers->exitAfterFailure(1);
    // The call above does not return; a compiler cannot see that through
    // the virtual call.
    std::_Exit(1);
  }
};

Expected<Processes> startProcesses(const Arguments &args) {
  Processes processes;
  if (!args.has("--distributed")) {
    if (args.has("--timeout"))
      return Status::error("--timeout applies to --distributed runs");
    return processes;
  }
  std::chrono::milliseconds timeout = defaultDistributedTimeout;
  if (args.has("--timeout")) {
    Expected<int64_t> parsed = parseTimeoutMilliseconds(args.get("--timeout"));
    if (!parsed)
      return parsed.status();
    timeout = std::chrono::milliseconds(*parsed);
  }
  Expected<const MpiPlugin *> mpi = loadMpiPlugin();
  if (!mpi)
    return mpi.status();
  Expected<std::unique_ptr<PipelinePeers>> peers =
      (*mpi)->createPipelinePeers(timeout);
  if (!peers)
    return peers.status();
  processes.peers = std::move(*peers);
  return processes;
}

} // namespace

Status partita::tools::trainPipelineCommand(const Arguments &args) {
  Expected<Processes> started = startProcesses(args);
  if (!started)
    return started.status();
  const Processes &processes = *started;
  PipelinePeers *peers = processes.peers.get();
  // Every process reads the directory (on one host, or a shared file
  // system) and all agree that they could before any step starts.
  Expected<PipelinedStep> step = readPipelinedStep(args.positional[0]);
  if (peers) {
    Expected<bool> everyone =
        peers->allTrue(static_cast<bool>(step), "reading the step");
    if (!everyone)
      processes.abandon(everyone.status());
    if (step && !*everyone)
      return processes.report(
          Status::error("another process could not read the step"));
  }
  if (!step)
    return processes.report(step.status());
  const PipelineSchedule &schedule = step->schedule;
  int64_t devices = schedule.ranks * step->devicesPerRank;
  DeviceSpec spec;
  spec.count = devices;
  if (args.has("--devices")) {
    Expected<DeviceSpec> parsed = parseDeviceSpec(args.get("--devices"));
    if (!parsed)
      return processes.report(parsed.status());
    spec = *parsed;
    if (Status status = checkDeviceCount(
            "the pipelined step (" + std::to_string(schedule.ranks) +
                " ranks of " + std::to_string(step->devicesPerRank) +
                " devices)",
            devices, spec.count);
        !status.ok())
      return processes.report(status);
  }
  // Range-checked as partita train checks them: 99999999999999999999
  // steps was clamped and trained "forever".
  auto integer = [&](const char *flag, long fallback,
                     int64_t max) -> Expected<long> {
    if (!args.has(flag))
      return fallback;
    Expected<int64_t> value =
        api::parseIntegerFlag(flag, args.get(flag), 0, max);
    if (!value)
      return value.status();
    return static_cast<long>(*value);
  };
  Expected<long> steps = integer("--steps", 3, 1000000000000);
  Expected<long> seed =
      integer("--seed", 0, std::numeric_limits<int64_t>::max());
  if (!steps || !seed)
    return processes.report(steps ? seed.status() : steps.status());

  Expected<std::unique_ptr<PipelineRunner>> runner =
      PipelineRunner::create(*step, static_cast<uint64_t>(*seed), peers);
  if (!runner)
    return processes.report(runner.status());
  PipelineProgramRunner run;
  if (spec.isCuda()) {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin)
      return processes.report(plugin.status());
    int64_t perRank = step->devicesPerRank;
    // Under MPI the processes of a host split its GPUs in order, each
    // taking its ranks' devices.
    int ranksHere = peers ? schedule.ranks / peers->processes() : 0;
    int64_t firstOfProcess =
        peers ? peers->localProcess() * ranksHere * perRank : 0;
    bool tf32 = args.has("--tf32");
    run = [cuda = *plugin, perRank, tf32, ranksHere,
           firstOfProcess](const Executable &program,
                           const std::vector<HostArray> &inputs, int rank) {
      CudaBackendOptions options;
      options.allowTF32 = tf32;
      int64_t rankHere = ranksHere > 0 ? rank % ranksHere : rank;
      options.firstDevice =
          static_cast<int>(firstOfProcess + rankHere * perRank);
      options.partialInputs = PartialInputs::FirstMember;
      return cuda->runOnDevices(program, inputs, options, nullptr);
    };
  }
  if (processes.speaks()) {
    std::printf("pipelined step: %d stages on %d ranks of %lld devices (%s), "
                "%s, %d micro-batches\n",
                schedule.stages(), schedule.ranks,
                static_cast<long long>(step->devicesPerRank),
                spec.toString().c_str(), scheduleKindName(schedule.kind),
                schedule.microBatches);
    if (peers)
      std::printf("distributed: %d processes, %d pipeline rank(s) each "
                  "with its devices\n",
                  peers->processes(), schedule.ranks / peers->processes());
    std::fflush(stdout);
  }
  std::vector<double> losses, seconds;
  std::vector<HostArray> data;
  PipelineStepResult last;
  for (long s = 0; s < *steps; ++s) {
    fillData(*step, s, static_cast<uint64_t>(*seed), data);
    Expected<PipelineStepResult> result = (*runner)->runStep(s, data, run);
    if (!result) {
      Status failed = Status::error("step " + std::to_string(s) + ": " +
                                    result.status().message());
      if (peers)
        processes.abandon(failed);
      return failed;
    }
    losses.push_back(result->loss);
    seconds.push_back(result->seconds);
    if (processes.speaks())
      std::printf("step %ld loss %.9g in %.1f ms (bubble %.3f)\n", s + 1,
                  result->loss, result->seconds * 1e3,
                  result->timeline.bubbleFraction);
    last = std::move(*result);
  }
  Status verdict = processes.speaks() ? reportRun(args, losses, seconds, last,
                                                  *steps > 0)
                                      : Status::success();
  if (!peers)
    return verdict;
  Expected<bool> agreed = peers->allTrue(verdict.ok(), "the check");
  if (!agreed)
    processes.abandon(agreed.status());
  if (!verdict.ok())
    return processes.report(verdict);
  return *agreed ? Status::success()
                 : processes.report(Status::error(
                       "process 0 found that the losses do not match"));
}

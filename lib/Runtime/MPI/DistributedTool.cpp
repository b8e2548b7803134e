//===- DistributedTool.cpp - The report of a multi-process run ------------===//
//
// The command-line side of runDistributed(), shared by `partita run` and
// `partita-exec run`: rank 0 speaks for the job, every rank reports its own
// errors, and every rank exits with the same code when all are alive.
//
//===----------------------------------------------------------------------===//
#include "MpiInternal.h"

#include <algorithm>
#include <cstdio>

namespace partita {

int runDistributedAndReport(MpiProcess &process, const Executable &program,
                            const DistributedRunOptions &options,
                            const OutputCheck &check) {
  int rank = process.rank();
  auto printError = [&](const Status &status) {
    std::fprintf(stderr, "error: rank %d: %s\n", rank,
                 status.message().c_str());
    std::fflush(stderr);
  };
  Expected<ProcessLayout> layout =
      ProcessLayout::create(program.mesh, process.size(), rank);
  if (!layout) {
    printError(layout.status());
    return 1;
  }
  if (rank == 0) {
    std::printf("distributed: %d processes drive the %lld devices of mesh "
                "%s, %lld each\n%s",
                process.size(),
                static_cast<long long>(program.mesh.numDevices()),
                program.mesh.toString().c_str(),
                static_cast<long long>(program.mesh.numDevices() /
                                       process.size()),
                layout->describe(program.mesh).c_str());
    std::fflush(stdout);
  }
  DistributedRunOptions runOptions = options;
  // Rank 0 prints fingerprints of the assembled outputs, unless they go to
  // disk shard by shard (a model's outputs may not fit one process).
  runOptions.gatherOutputs |= static_cast<bool>(check) || options.outputs.empty();
  Expected<DistributedRunResult> result =
      runDistributed(process, program, runOptions);
  if (!result) {
    printError(result.status());
    // Requests to a rank that stopped may never complete.
    process.exitAfterFailure(1);
  }
  CommunicationSummary communication = summarizeCommunication(program);
  Status verdict = Status::success();
  if (rank == 0) {
    std::printf("ran on %s:%lld as %d processes in %.3f ms (%zu "
                "instructions; %lld collectives per step, %.0f bytes per "
                "device)\n",
                options.devices.kind.c_str(),
                static_cast<long long>(program.mesh.numDevices()),
                process.size(), result->seconds * 1e3,
                program.instructions.size(),
                static_cast<long long>(communication.collectives),
                communication.bytesPerDevice);
    std::vector<double> steps = result->statistics.stepSeconds;
    if (options.repeats > 1 && !steps.empty()) {
      std::sort(steps.begin(), steps.end());
      std::printf("step: median %.3f ms over %d runs (min %.3f, max %.3f)\n",
                  steps[steps.size() / 2] * 1e3, options.repeats,
                  steps.front() * 1e3, steps.back() * 1e3);
    }
    // Where rank 0's first device spent its steps.
    if (!layout->localDevices.empty())
      std::printf("%s", describeStepTimes(result->statistics.stepTimes,
                                          layout->localDevices.front())
                            .c_str());
    std::printf("memory: peak %lld bytes per device measured (buffer plan "
                "arena %lld)\n",
                static_cast<long long>(result->statistics.peakBytesPerDevice),
                static_cast<long long>(program.allocatedBytes()));
    for (size_t o = 0; o < result->outputs.size(); ++o)
      std::printf("  %s: %s\n", program.outputs[o].name.c_str(),
                  summarizeArray(result->outputs[o]).c_str());
    if (!options.outputs.empty())
      std::printf("outputs: %s (one sharded-array directory per output, "
                  "written shard by shard by every process)\n",
                  options.outputs.c_str());
    if (check) {
      std::string report;
      verdict = check(result->outputs, report);
      std::printf("%s", report.c_str());
    }
    std::fflush(stdout);
  }
  Expected<bool> agreed = process.allTrue(verdict.ok(), "the check");
  if (!agreed) {
    printError(agreed.status());
    process.exitAfterFailure(1);
  }
  if (!verdict.ok()) {
    printError(verdict);
    return 1;
  }
  if (!*agreed) {
    printError(Status::error("rank 0 found that the outputs do not match"));
    return 1;
  }
  if (rank == 0 && check)
    std::printf("check passed on %d processes\n", process.size());
  return 0;
}

} // namespace partita

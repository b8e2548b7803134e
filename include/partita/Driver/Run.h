//===- Run.h - A program run, checked against its reference -----*- C++ -*-===//
//
// `partita run` as a library: a module compiled to the per-device program
// (or an Executable read) and run on the devices asked for, its outputs
// written, compared with expected ones, or checked against the
// unpartitioned program on one device (docs/Runtime.md, "Differential
// testing"); or the same across the processes `mpirun` started.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DRIVER_RUN_H
#define PARTITA_DRIVER_RUN_H

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Status.h"
#include "partita/Transforms/Pipeline.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace partita {

/// What to run and how; every path empty when not asked for. Compiling
/// settles `options` (the mesh), which the check's reference run reuses.
struct RunRequest {
  /// A module's text file ("-": standard input) or an Executable file.
  std::string input;
  PipelineOptions options;
  DeviceSpec devices;
  /// The seed of the deterministic random inputs.
  uint64_t seed = 0;
  /// Global inputs: comma-separated .npy files or sharded-array
  /// directories; where the outputs go; expected outputs to compare with;
  /// where the run's timeline goes.
  std::string inputsPath, outputsPath, expectDirectory, tracePath;
  /// Also run the reference and compare every output.
  bool check = false;
  /// Chains of elementwise ops run fused.
  bool fusion = true;
  /// Across processes: fail a collective that makes no progress this long.
  std::optional<int64_t> timeoutMilliseconds;
  /// Inputs handed over in memory (they replace inputsPath), made for the
  /// compiled program; and where the outputs go in memory.
  std::function<Expected<std::vector<HostArray>>(const Executable &)>
      inputsInMemory;
  std::vector<HostArray> *outputsInMemory = nullptr;
};

/// Whether `path` is an Executable file (by its magic), not a module.
bool isExecutableFile(const std::string &path);

/// Runs `request` in this process: prints each output's summary, the time,
/// collectives and memory (a module's), and the check's comparison. An
/// empty message after the diagnostics were printed.
Status runInProcess(RunRequest &request);

/// Runs `request` as one of the processes `mpirun` started (the MPI
/// plugin): rank 0 compiles and broadcasts the program, every rank runs its
/// devices, rank 0 checks. The run's exit code, or an error before it.
Expected<int> runAcrossProcesses(RunRequest &request);

} // namespace partita

#endif // PARTITA_DRIVER_RUN_H

//===- RunSupport.h - Inputs, outputs and checks of a run -------*- C++ -*-===//
//
// What `partita run` and `partita-exec run` share: reading the inputs a user
// gives (.npy files or sharded-array directories), writing outputs,
// comparing outputs with per-dtype tolerances, and checking them against
// expected .npy files.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_RUNSUPPORT_H
#define PARTITA_RUNTIME_RUNSUPPORT_H

#include "partita/Runtime/Execution/Run.h"

#include <string>
#include <vector>

namespace partita {

/// Where a program runs: `cpu:N` (N emulated devices, threads) or `cuda:N`
/// (N logical devices over the visible GPUs), as `--devices` spells it.
struct DeviceSpec {
  enum class Kind { Cpu, Cuda };
  Kind kind = Kind::Cpu;
  int64_t count = 1;

  bool isCuda() const { return kind == Kind::Cuda; }
  /// "cpu:8", "cuda:2".
  std::string toString() const;
};

/// Parses `--devices`: `cpu:N` or `cuda:N` with N >= 1. The error names the
/// flag and the text.
Expected<DeviceSpec> parseDeviceSpec(const std::string &text);

/// The most devices parseDeviceSpec accepts: one process runs each device
/// on a thread of its own.
constexpr int64_t kMaxDevicesPerProcess = 4096;

/// The one check every runner makes before running: `meshDescription`
/// ("the program's mesh", "the mesh data=2") with `meshDevices` devices
/// against the `requested` count of `--devices`.
Status checkDeviceCount(const std::string &meshDescription, int64_t meshDevices,
                        int64_t requested);

/// Parses a `--timeout` in seconds (a positive number) into milliseconds.
Expected<int64_t> parseTimeoutMilliseconds(const std::string &text);

/// Parses a `--seed` (a non-negative integer).
Expected<uint64_t> parseSeed(const std::string &text);

/// "a,b,,c" -> {"a", "b", "", "c"} ("" -> {""}).
std::vector<std::string> splitCommaList(const std::string &text);

/// Checks that `array` can be input `index` of `program` (its dtype and
/// global shape); the failure starts with `what` (a path, "inputs[0]").
Status checkInput(const Executable &program, size_t index,
                  const HostArray &array, const std::string &what);
Status checkInput(const Executable &program, size_t index, DType dtype,
                  const std::vector<int64_t> &shape, const std::string &what);

/// The paths of a comma-separated `--inputs` list, one per program input.
Expected<std::vector<std::string>> inputPaths(const Executable &program,
                                              const std::string &paths);

/// Reads the program's global inputs from a comma-separated list of paths,
/// one per input in order: a `.npy` file or a sharded-array directory. The
/// dtype and global shape must be the program's.
Expected<std::vector<HostArray>>
readInputs(const Executable &program, const std::string &commaSeparatedPaths);

/// Writes each global output as `<directory>/result_<i>.npy` (creating the
/// directory).
Status writeOutputs(const std::string &directory,
                    const std::vector<HostArray> &outputs);

/// How far `got` is from `want`: |got - want| <= rel·|want| + abs·scale,
/// scale = max(1, largest |want|); f32 rel 1e-4 abs 1e-5, bf16/f16 2e-2 and
/// 1e-2, f64 1e-10 and 1e-12; integers and booleans exact.
struct Comparison {
  bool sameType = true;
  double maxAbsError = 0;
  /// Largest relative error where |want| >= 1e-3 of the scale.
  double maxRelError = 0;
  double scale = 1;
  bool within = true;
};

/// The rule's tolerances for one dtype.
struct Tolerance {
  double relative = 0, absolute = 0;
};
Tolerance toleranceOf(DType dtype);

/// Adds one element of `got` and its `want` to `result`, whose scale is
/// already the largest |want| (at least 1) of the whole array.
void compareElement(Comparison &result, double got, double want,
                    Tolerance tolerance, double slack);

/// Compares two arrays by the rule above.
/// `slack` is added to the allowed difference of every element.
Comparison compareArrays(const HostArray &got, const HostArray &want,
                         double slack = 0);

/// One line per output: "<name>: max abs error …, max rel error …: ok".
std::string describeComparison(const std::string &name,
                               const Comparison &comparison);

/// What `<directory>/tolerance.json` ({"spread": [...]}, one per result:
/// how far the producer's own result moves when only the order of its sums
/// changes) adds to each result's tolerance: four times its spread; zeros
/// when there is no such file.
Expected<std::vector<double>> readToleranceSlack(const std::string &directory,
                                                 size_t count);

/// Compares `outputs` with `<directory>/result_<i>.npy`; appends one line
/// per output to `report` and fails when one is missing or out of tolerance.
/// An optional `<directory>/tolerance.json`, {"spread": [...]}, widens each
/// output's tolerance by four times its spread (docs/JAX.md).
Status expectOutputs(const std::string &directory, const Executable &program,
                     const std::vector<HostArray> &outputs,
                     std::string &report);

} // namespace partita

#endif // PARTITA_RUNTIME_RUNSUPPORT_H

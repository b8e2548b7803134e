//===- StepCost.h - What a compiled step costs on a measured machine -*- C++
//-*-===//
//
// The work one device does in a step, read from the Executable (loop bodies
// counted once per trip), and the figures `partita calibrate` measures to
// turn it into time: a cost per instruction dispatched, GEMM and
// elementwise throughput with every device of the machine busy, and per
// collective kind and group size a latency and a bandwidth
// (docs/Planning.md, "Calibration").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PLANNING_STEPCOST_H
#define PARTITA_PLANNING_STEPCOST_H

#include "partita/Runtime/Program/Executable.h"
#include "partita/Sharding/Cost.h"
#include "partita/Sharding/Status.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace partita {

/// One device's work in one step of an Executable.
struct StepProfile {
  /// Instructions run (collectives, waits and loops excluded).
  double instructions = 0;
  /// FLOPs of einsums (2 per multiply-add).
  double einsumFlops = 0;
  /// Elements read and written by every other computing instruction.
  double elements = 0;
  struct Calls {
    double count = 0;
    double bytes = 0; // local input bytes, summed over calls
  };
  /// Per collective kind ("all_reduce", ...) and group size.
  std::map<std::pair<std::string, int64_t>, Calls> collectives;
};

StepProfile profileExecutable(const Executable &program);

/// A latency and a bandwidth (time = latency + bytes / bandwidth).
struct CollectiveFit {
  double latencyUs = 0;
  double bandwidthGBps = 1;
};

/// The measured machine: what `partita calibrate` writes under
/// "calibration" in a cluster file.
struct Calibration {
  std::string devices; // what was measured, e.g. "cpu:8"
  double instructionUs = 0;
  double einsumFlopsPerSecond = 1e11;
  double elementsPerSecond = 1e10;
  /// Running a program apart (a pipeline stage's action): a fixed cost and
  /// the host's copy rate for its global inputs and outputs (0: not
  /// measured, or too small to see beside the fixed cost; calibrations
  /// written before it had neither).
  double launchUs = 0;
  double hostBytesPerSecond = 0;
  /// Per collective kind and group size.
  std::map<std::pair<std::string, int64_t>, CollectiveFit> collectives;

  /// The fit for `kind` on `group` devices: the measured group size, else
  /// the nearest measured one of the same kind scaled by its ring factor;
  /// nullptr when the kind was not measured.
  const CollectiveFit *fitFor(const std::string &kind, int64_t group,
                              double &scale) const;
};

/// Predicted compute and communication seconds of `profile`. A collective
/// kind the calibration did not measure is costed by the cost model on
/// `unmeasured` (an all_slice, which moves nothing, as an instruction).
std::pair<double, double> predictSeconds(const StepProfile &profile,
                                         const Calibration &calibration,
                                         const AxisLink &unmeasured);

/// What running `program` apart costs beyond its instructions: the
/// calibration's launch cost and its global inputs and outputs copied at
/// the host's rate.
double launchSeconds(const Executable &program, const Calibration &calibration);

/// Predicted compute and communication seconds of `profile` without a
/// calibration: einsum FLOPs and one FLOP per element written (a third of
/// the elements read and written) at `flopsPerSecond`, each collective by
/// the cost model on `link`.
std::pair<double, double> predictSecondsOnLink(const StepProfile &profile,
                                               double flopsPerSecond,
                                               const AxisLink &link);

/// Reads the "calibration" object of a cluster file; errors name `where`
/// and the field.
Expected<Calibration> parseCalibration(const llvm::json::Object &object,
                                       const std::string &where);

/// A calibration as the cluster file holds it.
llvm::json::Object calibrationObject(const Calibration &calibration);

} // namespace partita

#endif // PARTITA_PLANNING_STEPCOST_H

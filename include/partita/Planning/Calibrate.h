//===- Calibrate.h - Measuring this machine for the planner -----*- C++ -*-===//
//
// `partita calibrate` as a library: probe programs on N emulated CPU
// devices, every device busy at once, fitted into the figures the planner
// costs a compiled step with (docs/Planning.md, "Calibration").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_PLANNING_CALIBRATE_H
#define PARTITA_PLANNING_CALIBRATE_H

#include "partita/Planning/StepCost.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace partita {

/// Measures `devices` emulated CPU devices (named `devicesText` in the
/// result), each probe timed over `steps` steps (the median); what it
/// measures and any warning about noise is written to `log` as it goes.
Expected<Calibration> calibrateCpuDevices(int64_t devices,
                                          const std::string &devicesText,
                                          int64_t steps,
                                          llvm::raw_ostream &log);

/// The cluster file `partita plan --interconnect` reads, for a machine of
/// `devices` devices: the calibration, and the links (from the whole
/// machine's all_reduce) and throughput the quick estimate uses; JSON text.
std::string clusterFileText(const Calibration &calibration, int64_t devices);

} // namespace partita

#endif // PARTITA_PLANNING_CALIBRATE_H

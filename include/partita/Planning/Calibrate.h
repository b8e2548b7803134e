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

/// A collective's latency and bandwidth fitted from two calls, of
/// `bytes[0]` and `bytes[1]` per device, that took `seconds[0]` and
/// `seconds[1]`. A fit outside what any link does (above 10^4 GB/s, under
/// 0.01 us: a busy machine times the small call as long as the large one)
/// is kept within the range the cost model reads and sets `*warning` to
/// say so; otherwise `*warning` is left empty.
CollectiveFit fitCollective(const char *kind, int64_t group,
                            const double seconds[2], const double bytes[2],
                            std::string *warning);

/// The cluster file `partita plan --interconnect` reads, for a machine of
/// `devices` devices: the calibration, and the links (from the whole
/// machine's all_reduce) and throughput the quick estimate uses; JSON text.
std::string clusterFileText(const Calibration &calibration, int64_t devices);

} // namespace partita

#endif // PARTITA_PLANNING_CALIBRATE_H

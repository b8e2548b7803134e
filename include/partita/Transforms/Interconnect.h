//===- Interconnect.h - Reading interconnect specs --------------*- C++ -*-===//
//
// The `--interconnect spec.json` file: per mesh axis, the link bandwidth and
// latency the cost model uses.
//
//   {"axes": {"data":  {"bandwidth_GBps": 50,  "latency_us": 20},
//             "model": {"bandwidth_GBps": 450, "latency_us": 5}},
//    "default": {"bandwidth_GBps": 450, "latency_us": 5},
//    "combine_bytes": 26214400}
//
// "default" is optional (450 GB/s, 5 µs: one NVLink node); "combine_bytes"
// is the collective combiner's bucket size (default 25 MiB; 0: off).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_INTERCONNECT_H
#define PARTITA_TRANSFORMS_INTERCONNECT_H

#include "partita/Sharding/Cost.h"

#include "llvm/ADT/StringRef.h"

namespace partita {

/// Parses the JSON text of an interconnect spec; failures name the field.
Expected<Interconnect> parseInterconnect(llvm::StringRef json);

/// Reads and parses an interconnect spec file.
Expected<Interconnect> readInterconnect(llvm::StringRef path);

/// The text of a JSON input file (an interconnect spec, a rules file, a
/// cluster file): a regular file of at most 64 MiB. A device or FIFO
/// (/dev/zero) would be read without end; the error says what it is.
Expected<std::string> readJsonFile(llvm::StringRef path);

} // namespace partita

#endif // PARTITA_TRANSFORMS_INTERCONNECT_H

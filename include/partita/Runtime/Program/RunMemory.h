//===- RunMemory.h - Refusing a run that cannot fit, before it starts -*- C++
//-*-===//
//
// A run on N emulated devices holds, at least, what the plan gives each
// device (the Executable's buffers) N times, and its inputs as whole
// arrays on the host while they are made and cut into blocks. When that is
// more than the process can allocate the run is refused before anything
// is allocated, with the figures, instead of being killed by the kernel
// part-way (docs/Robustness.md, "Memory, up front").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PROGRAM_RUNMEMORY_H
#define PARTITA_RUNTIME_PROGRAM_RUNMEMORY_H

#include "partita/Runtime/Program/Executable.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>

namespace partita {

/// Bytes this process can still allocate: the least of the machine's
/// available memory (MemAvailable plus free swap), the address-space and
/// data limits (ulimit -v, -d) less what the process maps, and its cgroup's
/// memory.max less memory.current; -1 when nothing bounds it.
int64_t allocatableBytes();

/// "1.50 GiB".
std::string formatGiB(double bytes);

/// What a run of `program` on its mesh's devices in this process holds by
/// the plan: every device's buffers, and the inputs whole on the host.
struct RunMemory {
  int64_t devices = 0;
  double perDevice = 0;  // the Executable's buffers on one device
  double hostInputs = 0; // the inputs as whole arrays
  double total() const { return perDevice * devices + hostInputs; }
};
RunMemory runMemory(const Executable &program);

/// An error naming the figures when runMemory(program) is more than the
/// process can allocate; `what` names the run ("training", "the run").
Status checkRunMemory(const Executable &program, const std::string &what);

} // namespace partita

#endif // PARTITA_RUNTIME_PROGRAM_RUNMEMORY_H

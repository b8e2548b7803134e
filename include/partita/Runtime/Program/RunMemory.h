//===- RunMemory.h - Refusing a run that cannot fit, before it starts -*- C++
//-*-===//
//
// A run on N emulated devices holds what the plan gives each device (the
// Executable's buffers) N times, and on the host its inputs and outputs,
// whole and in blocks, as the kind of run keeps them. The sum at its
// largest is the process's predicted peak resident memory; when it is
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

/// How the run holds its values on the host (docs/Robustness.md, "Memory,
/// up front").
enum class RunKind {
  /// partita run, partita-exec run: the inputs whole and in blocks for the
  /// whole run, every device's output blocks, then the outputs whole.
  Run,
  /// partita run, partita-exec run without whole arrays (BlockwiseRun.h):
  /// each device writes its inputs straight into its buffers (a partial
  /// sum's through one block), the outputs are every device's blocks, then
  /// one summed block at a time; hostInputs counts only inputs read whole
  /// (sharded-array directories, added by the caller).
  Blockwise,
  /// partita train: each device's input blocks let go once on the device,
  /// the values kept on the devices not held whole meanwhile, downloaded
  /// at the end one device at a time or in snapshots (finalDownload,
  /// snapshots).
  Train,
};

/// What a run of `program` on its mesh's devices in this process holds by
/// the plan, item by item, and its predicted peak resident memory.
struct RunMemory {
  RunKind kind = RunKind::Run;
  int64_t devices = 0;
  double perDevice = 0;    // the Executable's buffers on one device
  double hostInputs = 0;   // the inputs as whole arrays
  double inputBlocks = 0;  // every device's blocks of the inputs
  double outputBlocks = 0; // every device's blocks of the outputs
  double hostOutputs = 0;  // the outputs as whole arrays
  /// Blockwise: the largest partial-sum input block, and output block.
  double largestInputBlock = 0, largestOutputBlock = 0;
  double process = 0;      // what the process held when it was measured
  /// Train: whether the values kept on the devices are downloaded at the
  /// end (one device at a time), and whether snapshots (checkpoints,
  /// evaluation) download every device's at once during the run.
  bool finalDownload = true;
  bool snapshots = false;
  /// Train: what the run holds beside the step while it runs, and what it
  /// is (RLHF's generation and scoring: their parameter blocks, the frozen
  /// reference, the programs' buffers while they run).
  double alongside = 0;
  std::string alongsideWhat;
  /// While the inputs are made and cut into blocks.
  double making() const;
  /// While the devices run (and download their outputs).
  double running() const;
  /// While the outputs are assembled (the devices' buffers freed).
  double assembling() const;
  /// The largest of the three: the process's predicted peak.
  double peak() const;
  /// "9.12 GiB: 8 devices x 1.36 GiB buffers, ..." with the items that
  /// matter at the peak.
  std::string describe() const;
};
RunMemory runMemory(const Executable &program, RunKind kind);

/// Makes a failed allocation (std::bad_alloc: more than the plan foresaw,
/// e.g. under ulimit -v, whose address space thread stacks and allocator
/// arenas also take) end the process with a clear error and exit code 1
/// instead of an abort. For the command-line tools, not for a library
/// embedded in another program.
void exitWhenOutOfMemory();

/// Hands the pages of freed memory back to the system now: jemalloc's
/// arenas purged when the process allocates with it (the tools do), else
/// glibc's malloc_trim. A run calls it once large host blocks are let go,
/// so that the devices' buffers do not fill beside pages the allocator
/// keeps for reuse.
void releaseFreedMemory();

/// This process's resident memory now (VmRSS) and at its largest so far
/// (VmHWM), in bytes; 0 when unknown.
int64_t residentBytes();
int64_t peakResidentBytes();

/// An error naming the figures when `memory`'s peak is more than the
/// process can allocate; `what` names the run ("training", "the run").
Status checkRunMemory(const RunMemory &memory, const std::string &what);

} // namespace partita

#endif // PARTITA_RUNTIME_PROGRAM_RUNMEMORY_H

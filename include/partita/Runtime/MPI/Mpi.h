//===- Mpi.h - The multi-process runtime over MPI ---------------*- C++ -*-===//
//
// One program, many processes: `mpirun -np P partita-exec run prog.exe
// --distributed` runs the N devices of the program's mesh as P processes of
// N/P device threads each (ProcessLayout.h). This header is the MPI side of
// it, with no MPI type in sight, so tools include it without mpi.h:
//
//   * MpiProcess: MPI's lifetime in a process, and the few process-level
//     collectives the run needs (broadcast the program, gather outputs,
//     agree on success), each waiting without burning a core and failing
//     after a timeout instead of hanging;
//   * createMpiCommunicator(): the Communicator across processes;
//   * bootstrapUniqueIds(): NCCL's bootstrap — an opaque id made on one rank
//     per communicator and broadcast to the others;
//   * runDistributed(): the whole run of an Executable on this process's
//     devices — inputs read and outputs written shard by shard;
//   * createMpiPipelinePeers(): the processes of a pipelined train step.
//
// docs/Distributed.md describes launching, the mapping and failures.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_MPI_H
#define PARTITA_RUNTIME_MPI_H

#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Runtime/Communication/ProcessLayout.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Pipeline/PipelinePeers.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace partita {

/// How long a multi-process wait may make no progress before it fails.
inline constexpr std::chrono::milliseconds defaultDistributedTimeout =
    std::chrono::seconds(60);

/// MPI in this process: initialised once, finalised on destruction.
class MpiProcess {
public:
  /// Initialises MPI (asking for MPI_THREAD_MULTIPLE; Partita serialises
  /// its MPI calls, so MPI_THREAD_SERIALIZED suffices) with errors
  /// returned, not fatal. Fails when MPI is already initialised or the
  /// thread level is below MPI_THREAD_SERIALIZED.
  static Expected<std::unique_ptr<MpiProcess>> initialize(int *argc,
                                                         char ***argv);
  /// Finalises MPI (skipped after exitAfterFailure()).
  ~MpiProcess();
  MpiProcess(const MpiProcess &) = delete;
  MpiProcess &operator=(const MpiProcess &) = delete;

  /// This process's rank and the number of processes.
  int rank() const;
  int size() const;
  /// This process's index among the processes on its host (ranks sharing
  /// memory, MPI_COMM_TYPE_SHARED, in rank order): which GPUs it drives.
  int localRank() const;

  /// The no-progress timeout of every wait (default 60 s).
  std::chrono::milliseconds timeout() const;
  void setTimeout(std::chrono::milliseconds timeout);

  /// Root's `bytes` to every process (resized there). `what` names the
  /// data in messages.
  Status broadcast(std::vector<uint8_t> &bytes, int root,
                   const std::string &what);
  /// Every process's `mine` to `root`, by rank (`all` is filled on root).
  Status gather(const std::vector<uint8_t> &mine, int root,
                std::vector<std::vector<uint8_t>> &all,
                const std::string &what);
  /// True on every process when `mine` is true on every process.
  Expected<bool> allTrue(bool mine, const std::string &what);
  /// The largest `mine` of all processes, on every process.
  Expected<int64_t> allMax(int64_t mine, const std::string &what);

  /// Leaves the process with `code` without finalising MPI: after a rank
  /// stopped making progress, requests to it never complete and
  /// MPI_Finalize could wait for them forever. Output streams are flushed.
  [[noreturn]] void exitAfterFailure(int code);

  /// The implementation's state (MpiInternal.h).
  struct Impl;
  Impl &impl() { return *state; }

private:
  MpiProcess();
  std::unique_ptr<Impl> state;
};

/// MpiProcess::initialize() without argv, its waits failing after
/// `timeout` without progress.
Expected<std::unique_ptr<MpiProcess>>
startMpiProcess(std::chrono::milliseconds timeout);

/// The Communicator for this process's devices of `mesh` laid out by
/// `layout`: groups inside the process meet in shared memory (the
/// in-process communicator); groups across processes reduce, gather or
/// pack inside each process first and exchange one message per pair of
/// processes on a communicator per process set (MPI_Comm_split), so every
/// process combines the same values in the same order and replicas agree
/// bit for bit. A call that makes no progress for `timeout` fails naming
/// the collective, its group and the ranks (and their devices) that did not
/// send. Every process must create it at the same point (it is collective).
Expected<std::unique_ptr<Communicator>>
createMpiCommunicator(MpiProcess &process, const Mesh &mesh,
                      const ProcessLayout &layout,
                      std::chrono::milliseconds timeout =
                          defaultDistributedTimeout);

/// Makes one opaque id of `idBytes` for a new communicator.
using UniqueIdFactory = std::function<Status(std::vector<uint8_t> &id)>;

/// NCCL's bootstrap over MPI: for each set of process ranks in
/// `processSets` (ascending ranks; every process passes the same list), the
/// set's lowest rank calls `create` and the id is broadcast to the set's
/// other members. Returns, per set, the id (empty where this process is not
/// a member). For NCCL, `create` wraps ncclGetUniqueId and the ids feed
/// ncclCommInitRank with the rank's index in its set.
Expected<std::vector<std::vector<uint8_t>>>
bootstrapUniqueIds(MpiProcess &process,
                   const std::vector<std::vector<int>> &processSets,
                   size_t idBytes, const UniqueIdFactory &create);

/// Rank 0's program to every process (serialised in the Executable file
/// format and checked by the same loader). Rank 0 passes it; the others
/// pass null. A rank 0 that has no program passes an error instead, and
/// every process fails with it.
Expected<Executable> broadcastExecutable(MpiProcess &process,
                                         const Expected<Executable> *onRoot);

/// How a process of a multi-process run drives its devices. Empty
/// functions mean CPU device threads with the MPI communicator; the CUDA
/// backend supplies GPUs with NCCL (cudaDistributedDevices(),
/// MPI/CudaDistributed.h).
struct DistributedDevices {
  /// The communicator for this process's devices of `layout`.
  std::function<Expected<std::unique_ptr<Communicator>>(
      MpiProcess &process, const Mesh &mesh, const ProcessLayout &layout)>
      communicator;
  /// Runs `devices` with `communicator`, as runDevicesAsThreads().
  std::function<Status(
      const Executable &program, const std::vector<int64_t> &devices,
      Communicator *communicator,
      const std::vector<std::vector<HostArray>> &inputsByDevice,
      std::vector<std::vector<HostArray>> &outputsByDevice,
      RunStatistics *statistics)>
      run;
  /// "cpu" or "cuda", for the report.
  std::string kind = "cpu";
};

/// What one multi-process run does besides running.
struct DistributedRunOptions {
  /// Seed of the deterministic random inputs (used when `inputs` is empty).
  uint64_t seed = 0;
  /// Comma-separated global inputs: .npy files (every process reads the
  /// file and keeps its blocks) or sharded-array directories (a directory
  /// laid out as the program's input is read shard by shard: each process
  /// opens only its devices' files).
  std::string inputs;
  /// When set, the outputs are written here as sharded-array directories
  /// `result_<i>` (a partial-sum output as `result_<i>.npy`, summed on rank
  /// 0), each process writing its devices' shards into `<outputs>.partial`,
  /// which rank 0 renames once every shard is written.
  std::string outputs;
  /// Rank 0 receives the assembled global outputs (--check, --expect).
  bool gatherOutputs = false;
  /// The no-progress timeout of every collective and wait.
  std::chrono::milliseconds timeout = defaultDistributedTimeout;
  /// Where the devices run (default: CPU threads, MPI communicator).
  DistributedDevices devices;
  /// Run the program this many times on inputs loaded once (a steady-state
  /// timing, as RunStatistics::repeats); the outputs are the last run's.
  int repeats = 1;
};

/// The result of runDistributed().
struct DistributedRunResult {
  ProcessLayout layout;
  /// The global outputs, on rank 0 with gatherOutputs.
  std::vector<HostArray> outputs;
  /// The most memory any device of any process held, and this process's
  /// first device's time per run (RunStatistics::stepSeconds).
  RunStatistics statistics;
  /// Wall time of the program on this process, from a common start.
  double seconds = 0;
};

/// Runs `program` (the same on every process) on this process's devices.
Expected<DistributedRunResult>
runDistributed(MpiProcess &process, const Executable &program,
               const DistributedRunOptions &options);

/// Compares rank 0's assembled outputs with something (a reference run, or
/// expected files); appends one line per output to `report`.
using OutputCheck = std::function<Status(const std::vector<HostArray> &outputs,
                                         std::string &report)>;

/// What `partita run --distributed` and `partita-exec run --distributed`
/// share after the program is known on every process: runs it, prints on
/// rank 0 the rank/device mapping, time, traffic, measured memory and the
/// fingerprints of the outputs (gathered on rank 0 unless they are written
/// shard by shard to `options.outputs`), runs `check` on rank 0 when given
/// (gathering the outputs) and makes every process agree on its verdict. Returns the exit
/// code: 0, or 1 on any failure (every process prints its own error as
/// "error: rank R: ..."). When a rank stopped making progress the process
/// exits at once without finalising MPI (MpiProcess::exitAfterFailure).
int runDistributedAndReport(MpiProcess &process, const Executable &program,
                            const DistributedRunOptions &options,
                            const OutputCheck &check = {});

/// Starts MPI in this process for a pipelined step (PipelinePeers.h): the
/// values crossing processes go on a communicator of their own, and every
/// wait fails after `timeout` without progress. MPI is finalised when the
/// result is destroyed.
Expected<std::unique_ptr<PipelinePeers>>
createMpiPipelinePeers(std::chrono::milliseconds timeout =
                           defaultDistributedTimeout);

/// The same over MPI already started in this process (`process`, which
/// must outlive the result); collective: every process calls it at the
/// same point.
Expected<std::unique_ptr<PipelinePeers>>
createMpiPipelinePeersOn(MpiProcess &process);

} // namespace partita

#endif // PARTITA_RUNTIME_MPI_H

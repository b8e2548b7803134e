//===- MpiInternal.h - What the MPI files share -----------------*- C++ -*-===//
//
// Error checking of MPI calls, the process state behind MpiProcess, and the
// one way Partita waits for MPI requests: test, sleep, test again — a
// blocked MPI call would spin a core (OpenMPI polls) and could never time
// out, and a rank that stops must not hang the others.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_MPI_MPIINTERNAL_H
#define PARTITA_LIB_RUNTIME_MPI_MPIINTERNAL_H

#include "partita/Runtime/MPI/Mpi.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace partita {

/// A failed MPI call as a Status: the call, file:line and MPI's message.
Status mpiError(int code, const char *call, const char *file, int line);

/// Evaluates an MPI call; on failure returns its Status from the enclosing
/// function.
#define PARTITA_MPI_CHECK(call)                                                \
  do {                                                                         \
    int partitaMpiCode = (call);                                               \
    if (partitaMpiCode != MPI_SUCCESS)                                         \
      return ::partita::mpiError(partitaMpiCode, #call, __FILE__, __LINE__);   \
  } while (false)

class Heartbeat;

struct MpiProcess::Impl {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  std::chrono::milliseconds timeout = defaultDistributedTimeout;
  bool finalize = true;
  /// Every MPI call of the process holds this lock.
  std::mutex lock;
  /// The agreements' own communicator (their messages never mix with
  /// broadcasts and gathers on MPI_COMM_WORLD).
  MPI_Comm agreement = MPI_COMM_NULL;
  /// Buffers of requests a failed wait left pending.
  std::vector<std::shared_ptr<std::vector<int64_t>>> abandoned;
  /// The heartbeat's own communicator and thread (more than one process).
  MPI_Comm heartbeatComm = MPI_COMM_NULL;
  std::unique_ptr<Heartbeat> heartbeat;
};

/// Liveness across processes (Heartbeat.cpp): a thread that sends a beat
/// to every other process every quarter timeout (at most a second apart)
/// and receives theirs. A peer silent for the timeout plus two such
/// intervals calls `fail` with a message naming it (the process exits
/// there). Destruction says goodbye
/// and waits until every peer has said it too (or went silent), so no beat
/// is left unreceived when MPI is finalised.
class Heartbeat {
public:
  using FailureHandler = std::function<void(const std::string &message)>;
  Heartbeat(MpiProcess::Impl &mpi, MPI_Comm comm,
            std::chrono::milliseconds timeout, FailureHandler fail);
  ~Heartbeat();
  Heartbeat(const Heartbeat &) = delete;
  Heartbeat &operator=(const Heartbeat &) = delete;
  void setTimeout(std::chrono::milliseconds timeout);
  /// Whether `rank`'s beats still come: heard within the last three
  /// intervals. The caller holds the process's MPI lock.
  bool beating(int rank) const;
  /// How long a wait whose missing peers are all beating may go on: an
  /// interval past the silence limit, so that the rank they wait on, if it
  /// stopped, is named first (by its own peers' waits or by this
  /// heartbeat) rather than a live rank that waits on it.
  std::chrono::milliseconds patience() const;

private:
  struct Peer;
  /// Receives what arrived from every peer and sends the next beat (or
  /// the goodbye) where the previous one has left.
  Status exchange(bool goodbye);
  /// The timeout plus two intervals.
  std::chrono::milliseconds silenceLimit() const;
  /// A peer that has not said goodbye and was silent for the limit, or -1.
  int silentPeer() const;
  std::chrono::milliseconds interval() const;
  void beat();

  MpiProcess::Impl &mpi;
  MPI_Comm comm;
  std::atomic<int64_t> timeoutMs;
  FailureHandler fail;
  std::vector<Peer> peers;
  std::mutex stopLock;
  std::condition_variable stopSignal;
  bool stopping = false;
  std::thread thread;
};

/// Words a stall: given the indices of the requests still pending.
using StallDescription = std::function<std::string(const std::vector<int> &)>;
/// The ranks (MPI_COMM_WORLD) the pending requests wait for.
using PendingRanks = std::function<std::vector<int>(const std::vector<int> &)>;

/// Waits for every request, testing them under the process's lock and
/// sleeping between tests (from a few microseconds up to a millisecond).
/// Fails when none completes for `timeout` ("<what>: no progress for N ms"
/// plus `stalled(pending)`), when `interrupted` returns a failure, or when
/// MPI reports an error. On failure the requests are left pending; the
/// caller must keep their buffers alive.
/// `what` is built only when it is needed. With `pendingRanks` and a
/// heartbeat, a wait whose missing ranks all still beat goes on up to the
/// heartbeat's patience() (docs/Distributed.md, "Failure behaviour").
Status waitForRequests(MpiProcess::Impl &mpi,
                       std::vector<MPI_Request> &requests,
                       std::chrono::milliseconds timeout,
                       const std::function<std::string()> &what,
                       const StallDescription &stalled = {},
                       const std::function<Status()> &interrupted = {},
                       const PendingRanks &pendingRanks = {});
inline Status waitForRequests(MpiProcess::Impl &mpi,
                              std::vector<MPI_Request> &requests,
                              std::chrono::milliseconds timeout,
                              const std::string &what,
                              const StallDescription &stalled = {},
                              const std::function<Status()> &interrupted = {}) {
  return waitForRequests(
      mpi, requests, timeout, std::function<std::string()>([&] { return what; }),
      stalled, interrupted);
}

/// Parses PARTITA_DEBUG_STOP=RANK:K (tests): on rank RANK, K; elsewhere (or
/// unset) 0. The process stops itself with SIGSTOP as it starts its K-th
/// cross-process exchange (MPI communicator) or its K-th send of a
/// pipelined step's value (PipelinePeers), so tests see how the others
/// fail.
int64_t debugStopPoint(int rank);

} // namespace partita

#endif // PARTITA_LIB_RUNTIME_MPI_MPIINTERNAL_H

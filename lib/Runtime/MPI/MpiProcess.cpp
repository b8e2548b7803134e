//===- MpiProcess.cpp - MPI in one process --------------------------------===//
//
// Initialisation, the polling wait every MPI wait goes through, and the
// process-level collectives of a run (program broadcast, output gather,
// agreement), all non-blocking MPI calls waited for with a timeout.
//
//===----------------------------------------------------------------------===//
#include "MpiInternal.h"

#include "partita/Runtime/Program/ExecutableFile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>

namespace partita {

using Clock = std::chrono::steady_clock;

Status mpiError(int code, const char *call, const char *file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    std::snprintf(text, sizeof(text), "MPI error %d", code);
  const char *base = std::strrchr(file, '/');
  return Status::error(std::string(call) + " failed at " +
                       (base ? base + 1 : file) + ":" + std::to_string(line) +
                       ": " + text);
}

Status waitForRequests(MpiProcess::Impl &mpi,
                       std::vector<MPI_Request> &requests,
                       std::chrono::milliseconds timeout,
                       const std::function<std::string()> &what,
                       const StallDescription &stalled,
                       const std::function<Status()> &interrupted,
                       const PendingRanks &pendingRanks) {
  auto count = static_cast<int>(requests.size());
  thread_local std::vector<int> indices; // Reused: no allocation per call.
  if (indices.size() < requests.size())
    indices.resize(requests.size());
  int remaining = 0;
  for (MPI_Request request : requests)
    remaining += request != MPI_REQUEST_NULL;
  // Poll: test back to back for a few microseconds after any progress (a
  // message is often that close; a yield is a system call of about a
  // microsecond, and yielding after every test cost a 64 KiB all_gather
  // between two processes 0.5 us of its 9), reading the clock only every
  // 64th test; then yield the core between tests for a short spell
  // (sleeping costs at least the kernel's timer slack, ~50 us), then sleep,
  // longer as the wait grows, so a rank waiting seconds for another burns
  // no core.
  Clock::time_point lastProgress = Clock::now();
  constexpr auto busyWindow = std::chrono::microseconds(50);
  constexpr auto spinWindow = std::chrono::milliseconds(20);
  constexpr unsigned testsPerClock = 64;
  unsigned tests = 0;
  bool busy = true; // Within busyWindow of the last progress.
  bool progressed = false; // Since the clock was last read.
  while (remaining > 0) {
    int completed = 0;
    {
      std::lock_guard<std::mutex> guard(mpi.lock);
      int code = MPI_Testsome(count, requests.data(), &completed,
                              indices.data(), MPI_STATUSES_IGNORE);
      if (code != MPI_SUCCESS)
        return mpiError(code, "MPI_Testsome", __FILE__, __LINE__);
    }
    if (completed == MPI_UNDEFINED)
      break;
    if (completed > 0) {
      // The clock is read at the next check, not here: most waits end
      // before one (a clock read per completion was a tenth of a 4 KiB
      // exchange's time).
      remaining -= completed;
      progressed = true;
      tests = 0;
      busy = true;
      continue;
    }
    if (busy && ++tests < testsPerClock)
      continue;
    tests = 0;
    Clock::time_point now = Clock::now();
    if (progressed) {
      lastProgress = now;
      progressed = false;
    }
    auto idle = now - lastProgress;
    busy = idle < busyWindow;
    if (busy)
      continue;
    if (interrupted)
      if (Status status = interrupted(); !status)
        return status;
    if (idle >= timeout) {
      std::vector<int> pending;
      for (int i = 0; i < count; ++i)
        if (requests[i] != MPI_REQUEST_NULL)
          pending.push_back(i);
      // Missing ranks that still beat are alive and most likely wait on a
      // rank that stopped: that rank's peers or this heartbeat name it
      // within the patience, so waiting on lets the culprit be reported
      // (mpirun ends the job at the first error).
      bool alive = false;
      if (pendingRanks && mpi.heartbeat) {
        std::vector<int> ranks = pendingRanks(pending);
        std::lock_guard<std::mutex> guard(mpi.lock);
        alive = !ranks.empty() &&
                std::all_of(ranks.begin(), ranks.end(), [&](int rank) {
                  return mpi.heartbeat->beating(rank);
                });
        if (alive && idle < mpi.heartbeat->patience()) {
          std::this_thread::sleep_for(std::chrono::microseconds(1000));
          continue;
        }
      }
      auto waited = alive ? std::chrono::duration_cast<
                                std::chrono::milliseconds>(idle)
                          : timeout;
      std::string text = what() + ": no progress for " +
                         std::to_string(waited.count()) + " ms";
      if (stalled)
        text += "; " + stalled(pending);
      if (alive)
        text += "; its heartbeat still comes: it is waiting elsewhere (do "
                "the processes run the same program?)";
      return Status::error(text);
    }
    if (idle < spinWindow)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(idle < std::chrono::milliseconds(20)
                                      ? std::chrono::microseconds(50)
                                      : std::chrono::microseconds(1000));
  }
  return Status::success();
}

int64_t debugStopPoint(int rank) {
  const char *spec = std::getenv("PARTITA_DEBUG_STOP");
  if (!spec)
    return 0;
  int stopRank = -1;
  long long point = 0;
  if (std::sscanf(spec, "%d:%lld", &stopRank, &point) != 2 ||
      stopRank != rank)
    return 0;
  return point;
}

MpiProcess::MpiProcess() : state(std::make_unique<Impl>()) {}

Expected<std::unique_ptr<MpiProcess>> MpiProcess::initialize(int *argc,
                                                             char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return Status::error("MPI is already initialised in this process");
  // OpenMPI's non-blocking all_reduce picks its algorithm by size, and for
  // the sizes the MPI communicator hands it (32 KiB and up) the ring is the
  // fastest on every size bench/mpi.sh measures (16 MiB between two
  // processes: 2.3 ms, against 5.0-6.2 ms for the default choice and 3.7 ms
  // for the blocking MPI_Allreduce). A value the user set wins; other MPIs
  // ignore the variable.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  int provided = 0;
  PARTITA_MPI_CHECK(
      MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  std::unique_ptr<MpiProcess> process(new MpiProcess());
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    process->state->finalize = false;
    return Status::error("this MPI provides thread level " +
                         std::to_string(provided) +
                         "; Partita's device threads need at least "
                         "MPI_THREAD_SERIALIZED");
  }
  PARTITA_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD,
                                            MPI_ERRORS_RETURN));
  PARTITA_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &process->state->rank));
  PARTITA_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &process->state->size));
  PARTITA_MPI_CHECK(
      MPI_Comm_dup(MPI_COMM_WORLD, &process->state->agreement));
  MPI_Comm host = MPI_COMM_NULL;
  PARTITA_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                        process->state->rank, MPI_INFO_NULL,
                                        &host));
  PARTITA_MPI_CHECK(MPI_Comm_rank(host, &process->state->localRank));
  MPI_Comm_free(&host);
  if (process->state->size > 1) {
    PARTITA_MPI_CHECK(
        MPI_Comm_dup(MPI_COMM_WORLD, &process->state->heartbeatComm));
    MpiProcess *self = process.get();
    process->state->heartbeat = std::make_unique<Heartbeat>(
        *process->state, process->state->heartbeatComm,
        process->state->timeout, [self](const std::string &message) {
          std::fprintf(stderr, "error: rank %d: %s\n", self->rank(),
                       message.c_str());
          self->exitAfterFailure(1);
        });
  }
  return process;
}

MpiProcess::~MpiProcess() {
  if (!state->finalize)
    return;
  state->heartbeat.reset();
  if (state->heartbeatComm != MPI_COMM_NULL)
    MPI_Comm_free(&state->heartbeatComm);
  if (state->agreement != MPI_COMM_NULL)
    MPI_Comm_free(&state->agreement);
  MPI_Finalize();
}

int MpiProcess::rank() const { return state->rank; }
int MpiProcess::size() const { return state->size; }
int MpiProcess::localRank() const { return state->localRank; }
std::chrono::milliseconds MpiProcess::timeout() const {
  return state->timeout;
}
void MpiProcess::setTimeout(std::chrono::milliseconds timeout) {
  state->timeout = timeout;
  if (state->heartbeat)
    state->heartbeat->setTimeout(timeout);
}

void MpiProcess::exitAfterFailure(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  state->finalize = false;
  _exit(code);
}

Status MpiProcess::broadcast(std::vector<uint8_t> &bytes, int root,
                             const std::string &what) {
  uint64_t size = bytes.size();
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> guard(state->lock);
    PARTITA_MPI_CHECK(MPI_Ibcast(&size, 1, MPI_UINT64_T, root, MPI_COMM_WORLD,
                                 &requests[0]));
  }
  std::string text = "broadcast of " + what + " from rank " +
                     std::to_string(root);
  if (Status status = waitForRequests(*state, requests, state->timeout, text);
      !status)
    return status;
  bytes.resize(size);
  if (size == 0)
    return Status::success();
  if (size > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    return Status::error(text + ": " + std::to_string(size) +
                         " bytes is more than one MPI message carries");
  {
    std::lock_guard<std::mutex> guard(state->lock);
    PARTITA_MPI_CHECK(MPI_Ibcast(bytes.data(), static_cast<int>(size),
                                 MPI_BYTE, root, MPI_COMM_WORLD,
                                 &requests[0]));
  }
  return waitForRequests(*state, requests, state->timeout, text);
}

Status MpiProcess::gather(const std::vector<uint8_t> &mine, int root,
                          std::vector<std::vector<uint8_t>> &all,
                          const std::string &what) {
  std::string text = "gather of " + what + " on rank " + std::to_string(root);
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Status::error(text + ": too many bytes for one MPI message");
  int size = static_cast<int>(mine.size());
  std::vector<int> sizes(state->size, 0);
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> guard(state->lock);
    PARTITA_MPI_CHECK(MPI_Igather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT,
                                  root, MPI_COMM_WORLD, &requests[0]));
  }
  if (Status status = waitForRequests(*state, requests, state->timeout, text);
      !status)
    return status;
  std::vector<int> offsets(state->size, 0);
  int64_t total = 0;
  for (int r = 0; r < state->size; ++r) {
    offsets[r] = static_cast<int>(total);
    total += sizes[r];
  }
  if (total > std::numeric_limits<int>::max())
    return Status::error(text + ": too many bytes for one MPI message");
  std::vector<uint8_t> received(state->rank == root ? total : 0);
  {
    std::lock_guard<std::mutex> guard(state->lock);
    PARTITA_MPI_CHECK(MPI_Igatherv(mine.data(), size, MPI_BYTE,
                                   received.data(), sizes.data(),
                                   offsets.data(), MPI_BYTE, root,
                                   MPI_COMM_WORLD, &requests[0]));
  }
  if (Status status = waitForRequests(*state, requests, state->timeout, text);
      !status)
    return status;
  all.clear();
  if (state->rank == root)
    for (int r = 0; r < state->size; ++r)
      all.emplace_back(received.begin() + offsets[r],
                       received.begin() + offsets[r] + sizes[r]);
  return Status::success();
}

Expected<int64_t> MpiProcess::allMax(int64_t mine, const std::string &what) {
  // Every process sends its value to every other (P is small), so a stalled
  // process is named by everyone waiting for it, which a tree-shaped
  // MPI_Allreduce cannot tell.
  int size = state->size;
  // values[0, size) receive, values[size] is sent; kept alive past a
  // failed wait, since MPI may still use them.
  auto values = std::make_shared<std::vector<int64_t>>(size + 1, mine);
  int64_t *received = values->data();
  int64_t *sent = values->data() + size;
  std::vector<MPI_Request> requests(2 * size, MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> guard(state->lock);
    for (int r = 0; r < size; ++r) {
      if (r == state->rank)
        continue;
      PARTITA_MPI_CHECK(MPI_Irecv(received + r, 1, MPI_INT64_T, r, 0,
                                  state->agreement, &requests[2 * r]));
      PARTITA_MPI_CHECK(MPI_Isend(sent, 1, MPI_INT64_T, r, 0,
                                  state->agreement, &requests[2 * r + 1]));
    }
  }
  auto stalled = [&](const std::vector<int> &pending) {
    std::string ranks;
    for (int index : pending)
      if (index % 2 == 0)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(index / 2);
    return "rank(s) " + ranks + " did not arrive (this is rank " +
           std::to_string(state->rank) + ")";
  };
  if (Status status = waitForRequests(*state, requests, state->timeout,
                                      "agreement on " + what, stalled);
      !status) {
    state->abandoned.push_back(values);
    return status;
  }
  return *std::max_element(values->begin(), values->end());
}

Expected<bool> MpiProcess::allTrue(bool mine, const std::string &what) {
  // All true <=> the largest "failed" flag is 0.
  Expected<int64_t> failed = allMax(mine ? 0 : 1, what);
  if (!failed)
    return failed.status();
  return *failed == 0;
}

Expected<Executable> broadcastExecutable(MpiProcess &process,
                                         const Expected<Executable> *onRoot) {
  // First byte: 1 when a program follows, 0 when rank 0 failed (its
  // message follows instead).
  std::vector<uint8_t> bytes;
  if (process.rank() == 0) {
    if (onRoot && *onRoot) {
      bytes = serializeExecutable(**onRoot);
      bytes.insert(bytes.begin(), 1);
    } else {
      std::string message = onRoot ? onRoot->status().message()
                                   : std::string("rank 0 has no program");
      bytes.assign(message.begin(), message.end());
      bytes.insert(bytes.begin(), 0);
    }
  }
  if (Status status = process.broadcast(bytes, 0, "the program"); !status)
    return status;
  if (bytes.empty())
    return Status::error("rank 0 broadcast an empty program");
  if (bytes[0] == 0)
    return Status::error("rank 0 has no program to run: " +
                         std::string(bytes.begin() + 1, bytes.end()));
  bytes.erase(bytes.begin());
  return deserializeExecutable(bytes, "the program broadcast by rank 0");
}

Expected<std::unique_ptr<MpiProcess>>
startMpiProcess(std::chrono::milliseconds timeout) {
  Expected<std::unique_ptr<MpiProcess>> process =
      MpiProcess::initialize(nullptr, nullptr);
  if (process)
    (*process)->setTimeout(timeout);
  return process;
}

} // namespace partita

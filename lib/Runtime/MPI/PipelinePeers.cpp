//===- PipelinePeers.cpp - A pipelined step's processes over MPI ----------===//
//
// PipelinePeers (Pipeline/PipelinePeers.h) over MPI: the values crossing
// processes are non-blocking sends on a communicator of their own, taken in
// by one receiving thread with matched probes in the order they come, so a
// receiver needs to know neither the sender nor the size in advance. Every
// wait polls under the process's MPI lock and fails after the timeout
// instead of hanging (MpiInternal.h).
//
//===----------------------------------------------------------------------===//
#include "MpiInternal.h"

#include "partita/Runtime/MPI/Mpi.h"

#include <csignal>
#include <limits>
#include <thread>

namespace partita {

namespace {

using Clock = std::chrono::steady_clock;

class MpiPipelinePeers final : public PipelinePeers {
public:
  /// Over `process`, which it owns when `owned` holds it.
  MpiPipelinePeers(MpiProcess &process, std::unique_ptr<MpiProcess> owned)
      : owned(std::move(owned)), mpiProcess(&process) {}

  Status initialize() {
    MpiProcess::Impl &mpi = mpiProcess->impl();
    std::lock_guard<std::mutex> guard(mpi.lock);
    PARTITA_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    void *value = nullptr;
    int found = 0;
    PARTITA_MPI_CHECK(
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found));
    tagUpper = found && value ? *static_cast<int *>(value) : 32767;
    stopAtSend = debugStopPoint(mpi.rank);
    return Status::success();
  }

  ~MpiPipelinePeers() override {
    if (comm != MPI_COMM_NULL && sends.empty() && abandoned.empty()) {
      std::lock_guard<std::mutex> guard(mpiProcess->impl().lock);
      MPI_Comm_free(&comm);
    }
  }

  int process() const override { return mpiProcess->rank(); }
  int processes() const override { return mpiProcess->size(); }
  int localProcess() const override { return mpiProcess->localRank(); }
  int maxTag() const override { return tagUpper; }

  Status send(int to, int tag, std::vector<uint8_t> bytes) override {
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
      return Status::error("a value of " + std::to_string(bytes.size()) +
                           " bytes is more than one MPI message carries");
    auto buffer = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    std::lock_guard<std::mutex> sending(sendsMutex);
    if (stopAtSend > 0 && ++sent == stopAtSend)
      std::raise(SIGSTOP);
    if (Status status = reclaimSends(); !status)
      return status;
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard<std::mutex> guard(mpiProcess->impl().lock);
      PARTITA_MPI_CHECK(MPI_Isend(buffer->data(),
                                  static_cast<int>(buffer->size()), MPI_BYTE,
                                  to, tag, comm, &request));
    }
    sends.push_back(request);
    sendBuffers.push_back(std::move(buffer));
    return Status::success();
  }

  Expected<Message>
  receive(const std::function<bool()> &stop,
          const std::function<std::string()> &missing) override {
    MpiProcess::Impl &mpi = mpiProcess->impl();
    Clock::time_point since = Clock::now();
    while (true) {
      int flag = 0;
      MPI_Message handle = MPI_MESSAGE_NULL;
      MPI_Status status;
      {
        std::lock_guard<std::mutex> guard(mpi.lock);
        PARTITA_MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag,
                                      &handle, &status));
      }
      if (flag)
        return take(handle, status);
      {
        std::lock_guard<std::mutex> sending(sendsMutex);
        if (Status status = reclaimSends(); !status)
          return status;
      }
      if (stop && stop())
        return Status::error("");
      auto idle = Clock::now() - since;
      if (idle >= mpi.timeout) {
        std::string text = "no message from another process for " +
                           std::to_string(mpi.timeout.count()) +
                           " ms (this is process " + std::to_string(process()) +
                           ")";
        std::string waiting = missing ? missing() : std::string();
        return Status::error(text + (waiting.empty() ? "" : "; " + waiting));
      }
      // Stage programs take milliseconds: after a short spell of yielding,
      // sleep, so the receiving thread leaves the cores to the devices.
      if (idle < std::chrono::microseconds(200))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(idle < std::chrono::milliseconds(20)
                                        ? std::chrono::microseconds(50)
                                        : std::chrono::microseconds(500));
    }
  }

  Status flush() override {
    std::lock_guard<std::mutex> sending(sendsMutex);
    Status status =
        waitForRequests(mpiProcess->impl(), sends, mpiProcess->timeout(),
                        "sending values to the other pipeline processes");
    if (!status)
      return status;
    sends.clear();
    sendBuffers.clear();
    return Status::success();
  }

  Status gather(const std::vector<uint8_t> &mine,
                std::vector<std::vector<uint8_t>> &all,
                const std::string &what) override {
    return mpiProcess->gather(mine, 0, all, what);
  }

  Status broadcast(std::vector<uint8_t> &bytes, int root,
                   const std::string &what) override {
    return mpiProcess->broadcast(bytes, root, what);
  }

  Expected<bool> allTrue(bool mine, const std::string &what) override {
    return mpiProcess->allTrue(mine, what);
  }

  [[noreturn]] void exitAfterFailure(int code) override {
    mpiProcess->exitAfterFailure(code);
  }

private:
  /// Receives the probed message into a buffer of its size.
  Expected<Message> take(MPI_Message &handle, MPI_Status &status) {
    MpiProcess::Impl &mpi = mpiProcess->impl();
    int count = 0;
    Message message;
    message.from = status.MPI_SOURCE;
    message.tag = status.MPI_TAG;
    auto buffer = std::make_shared<std::vector<uint8_t>>();
    std::vector<MPI_Request> request(1, MPI_REQUEST_NULL);
    {
      std::lock_guard<std::mutex> guard(mpi.lock);
      PARTITA_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
      buffer->resize(static_cast<size_t>(count));
      PARTITA_MPI_CHECK(
          MPI_Imrecv(buffer->data(), count, MPI_BYTE, &handle, &request[0]));
    }
    Status received = waitForRequests(mpi, request, mpiProcess->timeout(),
                                      "receiving a value from process " +
                                          std::to_string(message.from));
    if (!received) {
      abandoned.push_back(buffer); // MPI may still write into it.
      return received;
    }
    message.bytes = std::move(*buffer);
    return message;
  }

  /// Forgets the sends that have completed (under sendsMutex).
  Status reclaimSends() {
    if (sends.empty())
      return Status::success();
    int completed = 0;
    std::vector<int> indices(sends.size());
    {
      std::lock_guard<std::mutex> guard(mpiProcess->impl().lock);
      PARTITA_MPI_CHECK(MPI_Testsome(static_cast<int>(sends.size()),
                                     sends.data(), &completed, indices.data(),
                                     MPI_STATUSES_IGNORE));
    }
    if (completed == MPI_UNDEFINED || completed == 0)
      return Status::success();
    size_t kept = 0;
    for (size_t i = 0; i < sends.size(); ++i) {
      if (sends[i] == MPI_REQUEST_NULL)
        continue;
      sends[kept] = sends[i];
      sendBuffers[kept] = std::move(sendBuffers[i]);
      ++kept;
    }
    sends.resize(kept);
    sendBuffers.resize(kept);
    return Status::success();
  }

  // Destroyed after everything that uses it (members go in reverse).
  std::unique_ptr<MpiProcess> owned;
  MpiProcess *mpiProcess;
  MPI_Comm comm = MPI_COMM_NULL;
  int tagUpper = 32767;
  int64_t stopAtSend = 0, sent = 0;
  std::mutex sendsMutex;
  std::vector<MPI_Request> sends;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> sendBuffers;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> abandoned;
};

} // namespace

Expected<std::unique_ptr<PipelinePeers>>
createMpiPipelinePeers(std::chrono::milliseconds timeout) {
  Expected<std::unique_ptr<MpiProcess>> process = startMpiProcess(timeout);
  if (!process)
    return process.status();
  MpiProcess &mpi = **process;
  auto peers = std::make_unique<MpiPipelinePeers>(mpi, std::move(*process));
  if (Status status = peers->initialize(); !status)
    return status;
  return std::unique_ptr<PipelinePeers>(std::move(peers));
}

Expected<std::unique_ptr<PipelinePeers>>
createMpiPipelinePeersOn(MpiProcess &process) {
  auto peers = std::make_unique<MpiPipelinePeers>(process, nullptr);
  if (Status status = peers->initialize(); !status)
    return status;
  return std::unique_ptr<PipelinePeers>(std::move(peers));
}

} // namespace partita

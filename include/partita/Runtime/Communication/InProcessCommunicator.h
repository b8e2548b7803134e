//===- InProcessCommunicator.h - Collectives between threads ----*- C++ -*-===//
//
// The communicator of the CPU backend: every device of the mesh is a thread
// of one process, and a collective is a rendezvous in shared memory. It is
// the numerical reference the MPI and NCCL communicators are tested against.
//
// A call from device d finds its group's rendezvous slot, keyed by the
// group's device set and by how many collectives d has already made on that
// set (so consecutive collectives never mix), publishes its buffers and
// sleeps on a condition variable until the whole group has arrived. Then
// every device computes its own output from all inputs in parallel
// (all_reduce splits the reduction into one slice per device and copies the
// slices across in a second step), and nobody leaves before everybody is
// done reading, so buffers may be reused as soon as a call returns. Small
// collectives skip the parallel steps: the device that completes the group
// computes every output while the others sleep.
//
// Where the data lives is a CollectiveMemory: host memory by default; the
// CUDA backend's logical devices plug in device memory (copies and
// reductions as kernels on the calling device's stream), so the rendezvous
// and the split of the work — the part tested here against the reference —
// are the same for both. The communicator never dereferences a buffer
// itself, and it calls complete() for a worker before anyone may read what
// that worker wrote.
//
// Asynchronous collectives (startCollective/finishCollective): the call
// publishes the device's buffers and returns; the arrival that completes
// the group hands the whole collective to a pool of worker threads (as
// many as the machine has cores, at most four), which compute every
// member's output while the devices run other instructions; finishing
// waits for that. A start never blocks, so devices that start collectives
// in the same order cannot deadlock, and several collectives of one group
// may be in flight at once (each has its own slot). With a CollectiveMemory
// whose calls must come from the device's own thread (CUDA), starting
// runs the collective to completion instead.
//
// Failure: a rendezvous that sees no new arrival for `timeout` (default
// 60 s) fails every waiting device with a message naming the collective, the
// group and the devices that never arrived; abort() fails every pending and
// future call. Once the whole group has arrived a call always completes,
// because other devices may be reading its buffers.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_INPROCESSCOMMUNICATOR_H
#define PARTITA_RUNTIME_INPROCESSCOMMUNICATOR_H

#include "partita/Runtime/Communication/Communicator.h"

#include <chrono>
#include <memory>

namespace partita {

/// The data movement of the in-process rendezvous, issued by the thread of
/// device `worker` (the device doing that share of the work). Calls may be
/// asynchronous; complete(worker) returns once everything `worker` issued
/// has finished. Pointers are the buffers the devices passed in, possibly
/// not host-addressable: an implementation only offsets and forwards them.
class CollectiveMemory {
public:
  virtual ~CollectiveMemory();
  /// copyTensorBox()'s contract.
  virtual Status copyBox(int64_t worker, const void *src,
                         const std::vector<int64_t> &srcShape,
                         const std::vector<int64_t> &srcOffset, void *dst,
                         const std::vector<int64_t> &dstShape,
                         const std::vector<int64_t> &dstOffset,
                         const std::vector<int64_t> &box,
                         int64_t elementSize) = 0;
  /// All of `src` (shape `shape`) into the box at `dstOffset` of each of
  /// `dsts` (shape `dstShape`): an all_gather's push of one input. By
  /// default one copyBox() per destination; host memory reads a large
  /// input once, a cache-sized slab at a time, for all of them.
  virtual Status copyToEach(int64_t worker, const void *src,
                            const std::vector<int64_t> &shape,
                            const std::vector<void *> &dsts,
                            const std::vector<int64_t> &dstShape,
                            const std::vector<int64_t> &dstOffset,
                            int64_t elementSize);
  /// For each row r < rows: elements [r*count, (r+1)*count) of `output` are
  /// reduceElements() of `count` elements at inputs[i] + r*inputRowStride
  /// (strides in elements). `output` may be one of the inputs.
  virtual Status reduce(int64_t worker, ReductionCode kind, DType dtype,
                        const std::vector<const void *> &inputs,
                        int64_t inputRowStride, void *output, int64_t rows,
                        int64_t count) = 0;
  /// `bytes` bytes from `src` to `dst` (disjoint).
  virtual Status copy(int64_t worker, void *dst, const void *src,
                      int64_t bytes) = 0;
  /// `bytes` zero bytes at `dst`.
  virtual Status zero(int64_t worker, void *dst, int64_t bytes) = 0;
  /// A temporary buffer of `bytes` bytes in the same memory as the devices'
  /// buffers, released by releaseTemporary() after complete(worker).
  virtual Expected<void *> temporary(int64_t worker, int64_t bytes) = 0;
  virtual void releaseTemporary(int64_t worker, void *block) = 0;
  /// Waits for everything `worker` issued.
  virtual Status complete(int64_t worker) = 0;
  /// Whether any thread may issue the calls for any worker (host memory),
  /// so that a collective can be moved by a thread of the communicator's
  /// own while the devices compute. Otherwise only a device's own thread
  /// issues its calls, and collectives complete where they are called.
  virtual bool anyThreadMayIssue() const;
};

/// Host memory: every call runs synchronously with memcpy, copyTensorBox()
/// and reduceElements(); copies of kStreamingCopyBytes or more stream
/// (copyStreaming()).
std::shared_ptr<CollectiveMemory> hostCollectiveMemory();

/// Collectives between the threads of one process, one thread per device.
class InProcessCommunicator final : public CallForwardingCommunicator {
public:
  /// How long a rendezvous waits without a new arrival before failing.
  static constexpr std::chrono::milliseconds defaultTimeout =
      std::chrono::seconds(60);

  /// Collectives whose results, all devices together, take at most this
  /// many bytes are computed by one thread: waking the whole group twice
  /// more costs more than moving them (partita-bench-collectives).
  static constexpr int64_t defaultSingleThreadedBytes = 512 * 1024;

  /// A communicator for the devices of `mesh`.
  explicit InProcessCommunicator(
      Mesh mesh, std::chrono::milliseconds timeout = defaultTimeout,
      std::shared_ptr<CollectiveMemory> memory = hostCollectiveMemory());
  ~InProcessCommunicator() override;
  InProcessCommunicator(const InProcessCommunicator &) = delete;
  InProcessCommunicator &operator=(const InProcessCommunicator &) = delete;

  const Mesh &mesh() const override;

  /// Changes the no-progress timeout for rendezvous that start waiting
  /// afterwards.
  void setTimeout(std::chrono::milliseconds timeout);
  /// The current no-progress timeout.
  std::chrono::milliseconds timeout() const;
  /// Changes the single-threaded limit for collectives that start
  /// afterwards (0: every collective runs on all of its devices' threads).
  void setSingleThreadedBytes(int64_t bytes);

  PendingCollective startCollective(const CollectiveCall &call) override;
  Status finishCollective(PendingCollective &pending) override;

  void abort(const Status &reason) override;
  /// True once abort() has been called.
  bool aborted() const;

private:
  struct State;
  Status runCall(const CollectiveCall &call) override;
  std::unique_ptr<State> state;
};

} // namespace partita

#endif // PARTITA_RUNTIME_INPROCESSCOMMUNICATOR_H

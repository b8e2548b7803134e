//===- Communicator.h - The collectives a device program calls --*- C++ -*-===//
//
// A Communicator performs the collectives of the `partita` dialect for the
// devices of one mesh. Every implementation (in-process threads, MPI, NCCL)
// implements the same few virtual calls, so a backend picks one at start-up
// and the interpreter of an Executable never knows which it has.
//
// Semantics (PartitaCollectiveOps.td). A collective names mesh axes; its
// group is the set of devices whose coordinates agree on every axis *not*
// named. A device's position in its group is the mixed-radix number of its
// coordinates on the named axes, in the order they are named (the first named
// axis is the most significant digit). Group order is position order.
//
// Buffers are raw bytes plus a dtype and a local shape, C order, so a device
// buffer (host memory here, CUDA memory for NCCL) fits without copying into
// a HostArray. How an implementation maps onto the calls:
//   * in-process: every device is a thread; a call blocks until the group
//     has arrived and the results are written (InProcessCommunicator.h);
//   * MPI (Mpi.h): groups inside a process go to the in-process
//     communicator; a group across processes reduces or packs inside each
//     process, then exchanges one message per pair of processes on an
//     MPI_Comm per process set, every process combining with
//     reduceElements() in the same order;
//   * NCCL: the same split (ncclCommSplit), calls issued on the device's
//     stream; dims other than 0 are packed to / unpacked from contiguous
//     blocks with copyTensorBox-style kernels.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_COMMUNICATOR_H
#define PARTITA_RUNTIME_COMMUNICATOR_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Runtime/Program/Instruction.h"
#include "partita/Sharding/Mesh.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace partita {

/// Seconds the calling thread has spent in collectives waiting for the
/// other members (not moving or reducing data itself): the in-process
/// communicator adds to it, and the interpreter reads it to split a step
/// into computing, communicating and waiting.
double &threadCollectiveWaitSeconds();

/// How all_reduce and reduce_scatter combine the group's values.
/// `And`/`Or` need integer or bool elements; on bool, `Sum` and `Max` are a
/// logical or and `Min` a logical and (numpy's add on bool arrays).
/// (ReductionCode itself is defined with the instruction set, Instruction.h.)

/// "sum", "max", "min", "and", "or" (the dialect's spelling).
const char *reductionCodeName(ReductionCode kind);

/// The collectives that move data (all_slice is local: see allSlice()).
enum class CommunicatorOp {
  AllGather,
  AllReduce,
  ReduceScatter,
  AllToAll,
  CollectivePermute
};

/// "all_gather", "all_reduce", ... (the dialect's op names).
const char *communicatorOpName(CommunicatorOp kind);

/// A device's read-only input: `shape` elements of `dtype`, C order, at
/// `data` (which may be null only when the shape has no elements).
struct ConstBufferRef {
  const void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// A device's output buffer, laid out as ConstBufferRef.
struct BufferRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// One `source -> target` pair of group positions of collective_permute.
using SourceTargetPair = std::pair<int64_t, int64_t>;

struct CollectiveCall;

/// A collective that Communicator::startCollective() started for one
/// device and finishCollective() has not finished yet.
struct PendingCollective {
  /// The implementation's record of the call; null when the call already
  /// ran to completion (then `status` is its outcome).
  std::shared_ptr<void> state;
  Status status;
  /// Set by finishCollective(): when this device's output was complete
  /// (never later than finishCollective() returning).
  std::chrono::steady_clock::time_point completedAt;
};

/// The collectives of one mesh, called per device.
///
/// Contract for every call:
///   * `deviceId` is the calling device (Mesh::deviceAt numbering, so
///     `device_ids` are honoured); `axes` are mesh axis names, non-empty and
///     distinct, in the order the op lists them;
///   * every device of a group makes the same sequence of calls on that
///     group, with the same kind, axes, dtype, input shape and attributes;
///     calls on different groups may interleave freely;
///   * the output's dtype and shape are what the op's result type says
///     (collectiveResultShape()); a mismatch is an error, not a resize;
///   * a call returns when this device's output is complete and its input
///     may be reused; in-place calls (output.data == input.data) are allowed
///     for all_reduce and collective_permute, other calls need disjoint
///     input and output;
///   * errors (bad arguments, devices disagreeing, a timeout, abort()) come
///     back as a Status naming the collective, its axes and its group.
///
/// Implementations are thread-safe: different devices may call
/// concurrently (the in-process communicator requires it).
class Communicator {
public:
  virtual ~Communicator();

  /// The mesh whose devices this communicator connects.
  virtual const Mesh &mesh() const = 0;

  /// Concatenation of the group's inputs along `dim`, in group order.
  virtual Status allGather(int64_t deviceId,
                           const std::vector<std::string> &axes, int64_t dim,
                           const ConstBufferRef &input,
                           const BufferRef &output) = 0;

  /// Elementwise reduction of the group's inputs (same shape as the input).
  /// Every device receives bit-identical results: values are combined in
  /// group order, floating-point types below f32 accumulate in f32 and are
  /// rounded to nearest-even once.
  virtual Status allReduce(int64_t deviceId,
                           const std::vector<std::string> &axes,
                           ReductionCode kind, const ConstBufferRef &input,
                           const BufferRef &output) = 0;

  /// The reduction of allReduce, split along `dim` into group-size blocks;
  /// this device receives the block at its group position.
  virtual Status reduceScatter(int64_t deviceId,
                               const std::vector<std::string> &axes,
                               ReductionCode kind, int64_t dim,
                               const ConstBufferRef &input,
                               const BufferRef &output) = 0;

  /// Each device splits its input along `splitDim` into group-size blocks
  /// and sends block j to position j; received blocks are concatenated
  /// along `concatDim` in group order.
  virtual Status allToAll(int64_t deviceId,
                          const std::vector<std::string> &axes,
                          int64_t splitDim, int64_t concatDim,
                          const ConstBufferRef &input,
                          const BufferRef &output) = 0;

  /// For each pair, the device at `target` receives the input of the device
  /// at `source` (group positions); devices that are no target get zeros.
  virtual Status collectivePermute(int64_t deviceId,
                                   const std::vector<std::string> &axes,
                                   const std::vector<SourceTargetPair> &pairs,
                                   const ConstBufferRef &input,
                                   const BufferRef &output) = 0;

  /// Runs `call` with the method its kind names (the default);
  /// implementations that take the call whole override it, so a call made
  /// as a CollectiveCall is not unpacked and packed again.
  virtual Status run(const struct CollectiveCall &call);

  /// Starts this device's part of `call` and returns; the output is
  /// written, and the input read, until finishCollective() returns. The
  /// device must not write the input or read the output in between, and
  /// must finish every collective it starts (after a failure too: peers may
  /// be reading its buffers). Devices start collectives in the same order
  /// as they would call them. The default runs the call to completion at
  /// once, so every implementation is correct; the in-process communicator
  /// returns at the arrival and moves the data on a worker thread.
  virtual PendingCollective startCollective(const CollectiveCall &call);

  /// Waits until the collective `pending` (from startCollective() on this
  /// communicator) is complete for the device that started it; its outcome.
  /// Idempotent: a second call returns the same status at once.
  virtual Status finishCollective(PendingCollective &pending);

  /// Makes every pending and every future call fail with a message that
  /// includes `reason`. A device that fails calls this so that the others do
  /// not wait for it forever. Idempotent: the first reason is kept.
  virtual void abort(const Status &reason) = 0;
};

/// A Communicator whose five collectives all go through one function that
/// takes the call as a CollectiveCall (declared below): implementations
/// that queue, match or forward calls derive from it.
class CallForwardingCommunicator : public Communicator {
public:
  Status allGather(int64_t deviceId, const std::vector<std::string> &axes,
                   int64_t dim, const ConstBufferRef &input,
                   const BufferRef &output) override;
  Status allReduce(int64_t deviceId, const std::vector<std::string> &axes,
                   ReductionCode kind, const ConstBufferRef &input,
                   const BufferRef &output) override;
  Status reduceScatter(int64_t deviceId, const std::vector<std::string> &axes,
                       ReductionCode kind, int64_t dim,
                       const ConstBufferRef &input,
                       const BufferRef &output) override;
  Status allToAll(int64_t deviceId, const std::vector<std::string> &axes,
                  int64_t splitDim, int64_t concatDim,
                  const ConstBufferRef &input,
                  const BufferRef &output) override;
  Status collectivePermute(int64_t deviceId,
                           const std::vector<std::string> &axes,
                           const std::vector<SourceTargetPair> &pairs,
                           const ConstBufferRef &input,
                           const BufferRef &output) override;
  Status run(const struct CollectiveCall &call) override {
    return runCall(call);
  }

protected:
  /// Performs one device's call.
  virtual Status runCall(const struct CollectiveCall &call) = 0;
};

//===----------------------------------------------------------------------===//
// Helpers shared by implementations (no threads, no communication)
//===----------------------------------------------------------------------===//

/// Where slice `index` of `count` elements cut into `parts` slices starts
/// (slices balanced to within one element): the share each device (or
/// process) reduces in an all_reduce.
inline int64_t sliceStart(int64_t count, int64_t index, int64_t parts) {
  return count / parts * index + (index < count % parts ? index : count % parts);
}

/// The local result shape of `kind` on `inputShape` in a group of
/// `groupSize` devices; `dim` is all_gather's and reduce_scatter's
/// dimension, `splitDim`/`concatDim` all_to_all's. Fails on dimensions out
/// of range or a group size that does not divide a split dimension.
Expected<std::vector<int64_t>>
collectiveResultShape(CommunicatorOp kind,
                      const std::vector<int64_t> &inputShape, int64_t groupSize,
                      int64_t dim = 0, int64_t splitDim = 0,
                      int64_t concatDim = 0);

/// Checks one device's buffers for `kind`: matching dtypes, a valid input
/// shape, the output shape collectiveResultShape() gives, non-null data for
/// non-empty buffers, and no overlap between input and output unless the
/// call is all_reduce or collective_permute with identical buffers.
Status checkCollectiveBuffers(CommunicatorOp kind, int64_t groupSize,
                              const ConstBufferRef &input,
                              const BufferRef &output, int64_t dim = 0,
                              int64_t splitDim = 0, int64_t concatDim = 0);

/// Copies the box of shape `box` starting at `srcOffset` in the C-order
/// tensor `src` (shape `srcShape`) to `dstOffset` in `dst` (shape
/// `dstShape`). Elements are `elementSize` bytes. The box must fit in both.
/// With `streaming`, contiguous runs are copied with copyStreaming().
void copyTensorBox(const void *src, const std::vector<int64_t> &srcShape,
                   const std::vector<int64_t> &srcOffset, void *dst,
                   const std::vector<int64_t> &dstShape,
                   const std::vector<int64_t> &dstOffset,
                   const std::vector<int64_t> &box, int64_t elementSize,
                   bool streaming = false);

/// Copies `bytes` bytes between disjoint buffers, like memcpy, with stores
/// that bypass the caches where the processor has them (x86 with AVX;
/// memcpy elsewhere): for copies larger than the caches, whose data is not
/// read again at once. docs/Runtime.md "In-process collectives" measures
/// it; the in-process communicator streams copies of kStreamingCopyBytes
/// or more.
void copyStreaming(void *dst, const void *src, size_t bytes);
inline constexpr size_t kStreamingCopyBytes = size_t(4) << 20;

/// Fails when `kind` does not apply to `dtype`: and/or on floating point.
Status checkReduction(ReductionCode kind, DType dtype);

/// Writes to `output[0, count)` the reduction, in order, of
/// `inputs[i][0, count)`. `output` may equal any input. Fails when `kind`
/// does not apply to `dtype` (and/or on floating point).
Status reduceElements(ReductionCode kind, DType dtype,
                      const std::vector<const void *> &inputs, void *output,
                      int64_t count);

/// all_slice, which moves no data: splits `input` along `dim` into as many
/// blocks as the device's group has members and copies the block at the
/// device's position to `output`.
Status allSlice(const Mesh &mesh, int64_t deviceId,
                const std::vector<std::string> &axes, int64_t dim,
                const ConstBufferRef &input, const BufferRef &output);

/// One device's collective call, as the Communicator methods receive it;
/// implementations that queue or forward calls keep them in this form.
struct CollectiveCall {
  CommunicatorOp kind = CommunicatorOp::AllReduce;
  int64_t deviceId = 0;
  std::vector<std::string> axes;
  ReductionCode reduction = ReductionCode::Sum;
  int64_t dim = 0, splitDim = 0, concatDim = 0;
  std::vector<SourceTargetPair> pairs;
  ConstBufferRef input;
  BufferRef output;
};

/// "all_reduce sum over mesh axes [data] on f32[4x8]" plus the attributes
/// that matter (dim, split/concat dims, pairs).
std::string describeCollective(const CollectiveCall &call);

/// Whether two devices' calls are the same collective (kind, axes,
/// attributes, input dtype and shape).
bool sameCollective(const CollectiveCall &a, const CollectiveCall &b);

/// Every check of a call that needs no other device: its buffers
/// (checkCollectiveBuffers), collective_permute's pairs (positions inside
/// the group, each at most once as source and as target) and the reduction
/// against the dtype.
Status checkCollectiveCall(const CollectiveCall &call, int64_t groupSize);

/// Calls the method of `communicator` that `call` names.
Status dispatchCollective(Communicator &communicator,
                          const CollectiveCall &call);

/// "[0, 4, 2]" for messages.
std::string formatDeviceList(const std::vector<int64_t> &devices);

} // namespace partita

#endif // PARTITA_RUNTIME_COMMUNICATOR_H

//===- NcclCommunicator.cu - Collectives between GPUs with NCCL -----------===//
//
// One NCCL communicator per device over all devices of the mesh (rank =
// row-major mesh position), split once per ordered set of mesh axes with
// ncclCommSplit (color: the group, key: the position in it), so every
// collective of the dialect is one NCCL call on its group's communicator,
// issued on the device's compute stream — ordered with the kernels before
// and after it without extra events.
//
//   all_reduce      ncclAllReduce (and/or: max/min on booleans only)
//   all_gather      ncclAllGather into [group, input...], then each block
//                   placed at its offset along `dim`
//   reduce_scatter  blocks along `dim` packed to [group, block...], then
//                   ncclReduceScatter
//   all_to_all      blocks along split_dim packed per peer, grouped
//                   ncclSend/ncclRecv, blocks placed along concat_dim
//   collective_permute  grouped ncclSend/ncclRecv; non-targets get zeros
//
// Not yet run on a GPU (docs/GPU.md).
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "CudaOps.h"

#include "partita/Runtime/CUDA/CudaBackend.h"
#include "partita/Runtime/Program/DeviceMath.h"

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

namespace partita {

namespace {

Status ncclFailure(ncclResult_t code, const char *call, const char *file,
                   int line) {
  return failureAt(call, file, line, ncclGetErrorString(code));
}

#define PARTITA_NCCL_CHECK(call)                                               \
  do {                                                                         \
    ncclResult_t partitaNcclCode = (call);                                     \
    if (partitaNcclCode != ncclSuccess)                                        \
      return ncclFailure(partitaNcclCode, #call, __FILE__, __LINE__);          \
  } while (false)

Expected<ncclDataType_t> ncclTypeOf(DType dtype) {
  switch (dtype) {
  case DType::F64: return ncclFloat64;
  case DType::F32: return ncclFloat32;
  case DType::F16: return ncclFloat16;
  case DType::BF16: return ncclBfloat16;
  case DType::I64: return ncclInt64;
  case DType::I32: return ncclInt32;
  case DType::I8: return ncclInt8;
  case DType::U8:
  case DType::Bool: return ncclUint8;
  default: break;
  }
  return Status::error(std::string("NCCL has no ") + dtypeName(dtype));
}

Expected<ncclRedOp_t> ncclOpOf(ReductionCode kind, DType dtype) {
  switch (kind) {
  case ReductionCode::Sum:
    return dtype == DType::Bool ? ncclMax : ncclSum; // Or on booleans.
  case ReductionCode::Max: return ncclMax;
  case ReductionCode::Min: return ncclMin;
  case ReductionCode::And:
    if (dtype == DType::Bool)
      return ncclMin;
    break;
  case ReductionCode::Or:
    if (dtype == DType::Bool)
      return ncclMax;
    break;
  }
  return Status::error(std::string("NCCL cannot reduce ") +
                       reductionCodeName(kind) + " on " + dtypeName(dtype));
}

class NcclCommunicator final : public CallForwardingCommunicator {
public:
  explicit NcclCommunicator(Mesh mesh) : meshValue(std::move(mesh)) {}

  ~NcclCommunicator() override {
    for (auto &entry : comms)
      ncclCommDestroy(entry.second);
    for (auto &entry : world)
      ncclCommDestroy(entry.second);
  }

  /// One process drives every device: device d on GPU gpus[d].
  Status initializeAll(const std::vector<int> &gpus) {
    int64_t count = meshValue.numDevices();
    std::vector<ncclComm_t> all(count);
    // Rank r is mesh position r; ncclCommInitAll numbers ranks by the
    // device list's order.
    std::vector<int64_t> order = positionsToDevices();
    std::vector<int> devices;
    for (int64_t position = 0; position < count; ++position)
      devices.push_back(gpus[order[position]]);
    PARTITA_NCCL_CHECK(
        ncclCommInitAll(all.data(), static_cast<int>(count), devices.data()));
    for (int64_t position = 0; position < count; ++position)
      world[order[position]] = all[position];
    return splitAll();
  }

  /// Devices spread over processes: this one drives `localDevices`, all
  /// with the id every process was given.
  Status initializeRanks(const std::vector<int64_t> &localDevices,
                         const std::vector<int> &gpus,
                         const std::vector<uint8_t> &uniqueId) {
    if (uniqueId.size() != sizeof(ncclUniqueId))
      return Status::error("an NCCL unique id has " +
                           std::to_string(sizeof(ncclUniqueId)) +
                           " bytes, got " + std::to_string(uniqueId.size()));
    ncclUniqueId id;
    std::memcpy(&id, uniqueId.data(), sizeof(id));
    auto count = static_cast<int>(meshValue.numDevices());
    std::vector<int64_t> order = positionsToDevices();
    std::vector<int> positionOf(count);
    for (int position = 0; position < count; ++position)
      positionOf[order[position]] = position;
    // Several ranks in one process: one group, or the first init waits
    // for the others forever.
    PARTITA_NCCL_CHECK(ncclGroupStart());
    for (int64_t d : localDevices) {
      cudaError_t code = cudaSetDevice(gpus[d]);
      if (code != cudaSuccess) {
        ncclGroupEnd();
        return cudaFailure(code, "cudaSetDevice", __FILE__, __LINE__);
      }
      ncclResult_t result =
          ncclCommInitRank(&world[d], count, id, positionOf[d]);
      if (result != ncclSuccess) {
        ncclGroupEnd();
        return ncclFailure(result, "ncclCommInitRank", __FILE__, __LINE__);
      }
    }
    PARTITA_NCCL_CHECK(ncclGroupEnd());
    return splitAll();
  }

  void setStream(int64_t deviceId, cudaStream_t stream) {
    std::lock_guard<std::mutex> guard(mutex);
    streams[deviceId] = stream;
  }

  const Mesh &mesh() const override { return meshValue; }
  void abort(const Status &reason) override {
    std::lock_guard<std::mutex> guard(mutex);
    if (!aborted) {
      aborted = true;
      abortReason = reason;
      for (auto &entry : world)
        ncclCommAbort(entry.second);
      world.clear();
      comms.clear();
    }
  }

private:
  std::vector<int64_t> positionsToDevices() const {
    std::vector<int64_t> order(meshValue.numDevices());
    for (int64_t d = 0; d < meshValue.numDevices(); ++d) {
      std::vector<int64_t> coords = meshValue.coordinates(d);
      int64_t position = 0;
      for (size_t a = 0; a < coords.size(); ++a)
        position = position * meshValue.axes()[a].size + coords[a];
      order[position] = d;
    }
    return order;
  }

  /// Every ordered set of axes, split once for all devices together.
  Status splitAll() {
    std::vector<std::string> names;
    for (const MeshAxis &axis : meshValue.axes())
      names.push_back(axis.name);
    int rank = meshValue.rank();
    for (int mask = 1; mask < (1 << rank); ++mask) {
      std::vector<std::string> chosen;
      for (int a = 0; a < rank; ++a)
        if (mask & (1 << a))
          chosen.push_back(names[a]);
      std::sort(chosen.begin(), chosen.end());
      do {
        if (Status status = split(chosen); !status)
          return status;
      } while (std::next_permutation(chosen.begin(), chosen.end()));
    }
    return Status::success();
  }

  Status split(const std::vector<std::string> &axes) {
    PARTITA_NCCL_CHECK(ncclGroupStart());
    for (auto &entry : world) {
      Expected<CollectiveGroup> group =
          resolveGroup(meshValue, entry.first, axes);
      if (!group)
        return group.status();
      // The group's lowest device id: the same color on every process
      // without talking to the others.
      int color = static_cast<int>(
          *std::min_element(group->members.begin(), group->members.end()));
      ncclComm_t &sub = comms[{entry.first, axes}];
      ncclResult_t code =
          ncclCommSplit(entry.second, color,
                        static_cast<int>(group->position), &sub, nullptr);
      if (code != ncclSuccess) {
        ncclGroupEnd();
        return ncclFailure(code, "ncclCommSplit", __FILE__, __LINE__);
      }
    }
    PARTITA_NCCL_CHECK(ncclGroupEnd());
    return Status::success();
  }

  Status runCall(const CollectiveCall &call) override;

  Mesh meshValue;
  std::mutex mutex;
  bool aborted = false;
  Status abortReason;
  std::map<int64_t, ncclComm_t> world;
  std::map<std::pair<int64_t, std::vector<std::string>>, ncclComm_t> comms;
  std::map<int64_t, cudaStream_t> streams;
};

/// One checked collective as NCCL runs it: the call, its group's
/// communicator and the device's stream, and scratch for packing (freed
/// after the stream has finished with it). The steps' checked calls keep
/// the names they had in NcclCommunicator::runCall.
class NcclCall {
public:
  NcclCall(const CollectiveCall &call, const std::string &what, ncclComm_t comm,
           cudaStream_t stream, const Expected<ncclDataType_t> &type,
           int64_t groupSize, int64_t position)
      : call(call), what(what), comm(comm), stream(stream), type(type),
        groupSize(groupSize), position(position),
        elementSize(dtypeSize(call.input.dtype)),
        count(*checkedNumElements(call.input.shape)), inShape(call.input.shape),
        outShape(call.output.shape), zeros(inShape.size(), 0) {}

  /// Issues the call on the stream, by its kind.
  Status run() {
    switch (call.kind) {
    case CommunicatorOp::AllReduce:
      return allReduce();
    case CommunicatorOp::AllGather:
      return allGather();
    case CommunicatorOp::ReduceScatter:
      return reduceScatter();
    case CommunicatorOp::AllToAll:
      return allToAll();
    case CommunicatorOp::CollectivePermute:
      return collectivePermute();
    }
    return Status::error(what + ": unknown collective");
  }

private:
  /// Allocates `bytes` of scratch (at least one) on the stream.
  Status allocateScratch(int64_t bytes) {
    PARTITA_CUDA_CHECK(
        cudaMallocAsync(&scratch, std::max<int64_t>(bytes, 1), stream));
    return Status::success();
  }
  /// Frees the scratch, if any, once the stream is done with it.
  Status freeScratch() {
    if (scratch)
      PARTITA_CUDA_CHECK(cudaFreeAsync(scratch, stream));
    return Status::success();
  }

  /// all_reduce: one ncclAllReduce.
  Status allReduce() {
    Expected<ncclRedOp_t> op = ncclOpOf(call.reduction, call.input.dtype);
    if (!op)
      return Status::error(what + ": " + op.status().message());
    PARTITA_NCCL_CHECK(ncclAllReduce(call.input.data, call.output.data, count,
                                     *type, *op, comm, stream));
    return Status::success();
  }

  /// all_gather: ncclAllGather into [group, input...] (the output itself
  /// when `dim` leads), then each block placed at its offset along `dim`.
  Status allGather() {
    bool leading = call.dim == 0;
    if (!leading)
      if (Status status = allocateScratch(count * groupSize * elementSize);
          !status)
        return status;
    void *gathered = leading ? call.output.data : scratch;
    PARTITA_NCCL_CHECK(
        ncclAllGather(call.input.data, gathered, count, *type, comm, stream));
    if (leading)
      return Status::success();
    std::vector<int64_t> offset = zeros;
    for (int64_t j = 0; j < groupSize; ++j) {
      offset[call.dim] = j * inShape[call.dim];
      device::StridedView view;
      if (!device::placementView(outShape, inShape, offset, view))
        return Status::error(what + ": bad shapes");
      if (Status status = cudaPlace(stream,
                                    static_cast<const uint8_t *>(gathered) +
                                        j * count * elementSize,
                                    call.output.data, view, elementSize);
          !status)
        return status;
    }
    return freeScratch();
  }

  /// reduce_scatter: blocks along `dim` packed to [group, block...]
  /// (unless `dim` leads), then ncclReduceScatter.
  Status reduceScatter() {
    Expected<ncclRedOp_t> op = ncclOpOf(call.reduction, call.input.dtype);
    if (!op)
      return Status::error(what + ": " + op.status().message());
    int64_t block = *checkedNumElements(outShape);
    const void *packed = call.input.data;
    if (call.dim != 0) {
      if (Status status = allocateScratch(count * elementSize); !status)
        return status;
      for (int64_t j = 0; j < groupSize; ++j) {
        std::vector<int64_t> start = zeros, ones(inShape.size(), 1);
        start[call.dim] = j * outShape[call.dim];
        device::StridedView view;
        if (!device::sliceView(inShape, start, ones, outShape, view))
          return Status::error(what + ": bad shapes");
        if (Status status = cudaStridedCopy(stream, call.input.data,
                                            static_cast<uint8_t *>(scratch) +
                                                j * block * elementSize,
                                            view, elementSize);
            !status)
          return status;
      }
      packed = scratch;
    }
    PARTITA_NCCL_CHECK(ncclReduceScatter(packed, call.output.data, block, *type,
                                         *op, comm, stream));
    return freeScratch();
  }

  /// all_to_all: blocks along split_dim packed per peer, grouped
  /// ncclSend/ncclRecv, blocks placed along concat_dim.
  Status allToAll() {
    std::vector<int64_t> box = inShape;
    box[call.splitDim] /= groupSize;
    int64_t block = *checkedNumElements(box);
    if (Status status = allocateScratch(2 * count * elementSize); !status)
      return status;
    auto *send = static_cast<uint8_t *>(scratch);
    uint8_t *receive = send + count * elementSize;
    std::vector<int64_t> ones(inShape.size(), 1);
    for (int64_t j = 0; j < groupSize; ++j) {
      std::vector<int64_t> start = zeros;
      start[call.splitDim] = j * box[call.splitDim];
      device::StridedView view;
      if (!device::sliceView(inShape, start, ones, box, view))
        return Status::error(what + ": bad shapes");
      if (Status status = cudaStridedCopy(stream, call.input.data,
                                          send + j * block * elementSize, view,
                                          elementSize);
          !status)
        return status;
    }
    PARTITA_NCCL_CHECK(ncclGroupStart());
    for (int64_t j = 0; j < groupSize; ++j) {
      ncclSend(send + j * block * elementSize, block, *type,
               static_cast<int>(j), comm, stream);
      ncclRecv(receive + j * block * elementSize, block, *type,
               static_cast<int>(j), comm, stream);
    }
    PARTITA_NCCL_CHECK(ncclGroupEnd());
    std::vector<int64_t> offset = zeros;
    for (int64_t j = 0; j < groupSize; ++j) {
      offset[call.concatDim] = j * box[call.concatDim];
      device::StridedView view;
      if (!device::placementView(outShape, box, offset, view))
        return Status::error(what + ": bad shapes");
      if (Status status = cudaPlace(stream, receive + j * block * elementSize,
                                    call.output.data, view, elementSize);
          !status)
        return status;
    }
    return freeScratch();
  }

  /// collective_permute: grouped ncclSend/ncclRecv (from a copy when in
  /// place); non-targets get zeros.
  Status collectivePermute() {
    int64_t bytes = count * elementSize;
    const void *source = call.input.data;
    if (call.input.data == call.output.data) { // In place: send a copy.
      if (Status status = allocateScratch(bytes); !status)
        return status;
      PARTITA_CUDA_CHECK(cudaMemcpyAsync(scratch, source, bytes,
                                         cudaMemcpyDeviceToDevice, stream));
      source = scratch;
    }
    bool target = false;
    for (const SourceTargetPair &pair : call.pairs)
      target |= pair.second == position;
    if (!target)
      PARTITA_CUDA_CHECK(cudaMemsetAsync(call.output.data, 0, bytes, stream));
    PARTITA_NCCL_CHECK(ncclGroupStart());
    for (const SourceTargetPair &pair : call.pairs) {
      if (pair.first == position)
        ncclSend(source, count, *type, static_cast<int>(pair.second), comm,
                 stream);
      if (pair.second == position)
        ncclRecv(call.output.data, count, *type, static_cast<int>(pair.first),
                 comm, stream);
    }
    PARTITA_NCCL_CHECK(ncclGroupEnd());
    return freeScratch();
  }

  const CollectiveCall &call;
  const std::string &what;
  ncclComm_t comm;
  cudaStream_t stream;
  const Expected<ncclDataType_t> &type;
  int64_t groupSize;
  /// The device's position in its group.
  int64_t position;
  int64_t elementSize;
  int64_t count;
  const std::vector<int64_t> &inShape;
  const std::vector<int64_t> &outShape;
  std::vector<int64_t> zeros;
  void *scratch = nullptr;
};

Status NcclCommunicator::runCall(const CollectiveCall &call) {
  std::string what =
      describeCollective(call) + " on device " + std::to_string(call.deviceId);
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  {
    std::lock_guard<std::mutex> guard(mutex);
    if (aborted)
      return Status::error(
          what + ": the communicator was aborted: " + abortReason.message());
    auto found = comms.find({call.deviceId, call.axes});
    if (found == comms.end())
      return Status::error(what + ": no communicator for these axes");
    comm = found->second;
    stream = streams[call.deviceId];
  }
  Expected<CollectiveGroup> group =
      resolveGroup(meshValue, call.deviceId, call.axes);
  if (!group)
    return Status::error(what + ": " + group.status().message());
  auto groupSize = static_cast<int64_t>(group->members.size());
  if (Status status = checkCollectiveCall(call, groupSize); !status)
    return Status::error(what + ": " + status.message());
  Expected<ncclDataType_t> type = ncclTypeOf(call.input.dtype);
  if (!type)
    return Status::error(what + ": " + type.status().message());
  return NcclCall(call, what, comm, stream, type, groupSize, group->position)
      .run();
}

} // namespace

Expected<std::unique_ptr<Communicator>>
createNcclCommunicator(const Mesh &mesh, const std::vector<int> &gpus) {
  auto communicator = std::make_unique<NcclCommunicator>(mesh);
  if (Status status = communicator->initializeAll(gpus); !status)
    return status;
  return std::unique_ptr<Communicator>(std::move(communicator));
}

Expected<std::unique_ptr<Communicator>>
createNcclCommunicatorForRanks(const Mesh &mesh,
                               const std::vector<int64_t> &localDevices,
                               const std::vector<int> &gpus,
                               const std::vector<uint8_t> &uniqueId) {
  auto communicator = std::make_unique<NcclCommunicator>(mesh);
  if (Status status =
          communicator->initializeRanks(localDevices, gpus, uniqueId);
      !status)
    return status;
  return std::unique_ptr<Communicator>(std::move(communicator));
}

void setNcclStream(Communicator &communicator, int64_t deviceId,
                   void *stream) {
  static_cast<NcclCommunicator &>(communicator)
      .setStream(deviceId, static_cast<cudaStream_t>(stream));
}

} // namespace partita

//===- DeviceCommunicator.cu - Collectives of logical devices on a GPU ----===//
//
// When several logical devices share a GPU (cuda:8 on one H200), NCCL
// cannot connect them (it refuses two ranks on one GPU) and copying every
// collective through the host costs two PCIe crossings. Their buffers are
// all in memory this process can address, so the collectives are the
// in-process communicator's rendezvous — the reference, with its tested
// split of the work — whose copies and reductions are device operations:
// cudaMemcpyAsync for contiguous runs, a two-view copy kernel for boxes, and
// a reduction kernel that combines the group's inputs in group order (f32
// accumulation for bf16/f16, rounded once; integers wrap), all on the
// calling device's compute stream.
//
// Ordering: a device synchronizes its stream before it joins a rendezvous
// (its input is complete when others read it) and the rendezvous completes
// each worker's share before anyone reads it (CollectiveMemory::complete).
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "CudaElements.cuh"

#include "partita/Runtime/CUDA/CudaBackend.h"
#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <map>
#include <mutex>

namespace partita {

using device::StridedView;
using namespace cuda_detail;

namespace {

/// The most inputs one reduction kernel combines: a group of 128 logical
/// devices (the pointers travel as a 1 KiB kernel parameter).
constexpr int maxReduceInputs = 128;

struct ReduceInputs {
  const void *data[maxReduceInputs];
};

template <typename C>
__device__ C combineValues(int kind, C a, C b) {
  switch (static_cast<ReductionCode>(kind)) {
  case ReductionCode::Sum:
    if constexpr (std::is_floating_point<C>::value)
      return a + b;
    else // Two's complement wrap-around, as the CPU reduction does.
      return static_cast<C>(static_cast<uint64_t>(a) +
                            static_cast<uint64_t>(b));
  case ReductionCode::Max: // NaN wins, as on the CPU.
    return (a > b || a != a) ? a : b;
  case ReductionCode::Min:
    return (a < b || a != a) ? a : b;
  case ReductionCode::And:
    if constexpr (!std::is_floating_point<C>::value)
      return a & b;
    break;
  case ReductionCode::Or:
    if constexpr (!std::is_floating_point<C>::value)
      return a | b;
    break;
  }
  return a;
}

/// out[r*count + j] = combination in input order of in_k[r*rowStride + j].
template <typename T>
__global__ void reduceRowsKernel(ReduceInputs in, int inputs,
                                 int64_t rowStride,
                                 typename T::Storage *out, int64_t rows,
                                 int64_t count, int kind) {
  using S = typename T::Storage;
  using C = typename T::Compute;
  PARTITA_GRID_LOOP(i, rows * count) {
    int64_t at = (i / count) * rowStride + i % count;
    C acc = T::load(static_cast<const S *>(in.data[0])[at]);
    for (int k = 1; k < inputs; ++k)
      acc = combineValues<C>(kind, acc,
                             T::load(static_cast<const S *>(in.data[k])[at]));
    out[i] = T::store(acc);
  }
}

/// Element i of the box moves from source offset(from, i) to destination
/// offset(to, i).
template <int Bytes>
__global__ void boxCopyKernel(const Chunk<Bytes> *source, StridedView from,
                              Chunk<Bytes> *destination, StridedView to,
                              int64_t count) {
  PARTITA_GRID_LOOP(i, count)
  destination[device::sourceOffset(to, i)] =
      source[device::sourceOffset(from, i)];
}

/// Device memory behind the in-process rendezvous: work is issued on the
/// worker's registered stream and waited for in complete().
class DeviceCollectiveMemory final : public CollectiveMemory {
public:
  void setStream(int64_t deviceId, cudaStream_t stream) {
    std::lock_guard<std::mutex> guard(mutex);
    streams[deviceId] = stream;
  }

  Expected<cudaStream_t> streamOf(int64_t deviceId) {
    std::lock_guard<std::mutex> guard(mutex);
    auto found = streams.find(deviceId);
    if (found == streams.end())
      return Status::error("device " + std::to_string(deviceId) +
                           " has no stream registered with the device "
                           "communicator");
    return found->second;
  }

  Status copyBox(int64_t worker, const void *src,
                 const std::vector<int64_t> &srcShape,
                 const std::vector<int64_t> &srcOffset, void *dst,
                 const std::vector<int64_t> &dstShape,
                 const std::vector<int64_t> &dstOffset,
                 const std::vector<int64_t> &box,
                 int64_t elementSize) override {
    Expected<cudaStream_t> stream = streamOf(worker);
    if (!stream)
      return stream.status();
    StridedView from, to;
    if (!device::boxCopyViews(srcShape, srcOffset, dstShape, dstOffset, box,
                              from, to))
      return Status::error("a box copy of rank " +
                           std::to_string(box.size()) +
                           " does not fit the device views (at most " +
                           std::to_string(device::maxRank) + " dims)");
    int64_t count = device::viewElements(from);
    if (count == 0)
      return Status::success();
    if (device::isContiguous(from) && device::isContiguous(to)) {
      PARTITA_CUDA_CHECK(cudaMemcpyAsync(
          static_cast<uint8_t *>(dst) + to.offset * elementSize,
          static_cast<const uint8_t *>(src) + from.offset * elementSize,
          count * elementSize, cudaMemcpyDefault, *stream));
      return Status::success();
    }
    switch (elementSize) {
#define PARTITA_BOX_CASE(B)                                                    \
  case B:                                                                      \
    boxCopyKernel<B><<<blocksFor(count), threadsPerBlock, 0, *stream>>>(       \
        static_cast<const Chunk<B> *>(src), from,                              \
        static_cast<Chunk<B> *>(dst), to, count);                              \
    return launched("collective box copy");
      PARTITA_BOX_CASE(1)
      PARTITA_BOX_CASE(2)
      PARTITA_BOX_CASE(4)
      PARTITA_BOX_CASE(8)
#undef PARTITA_BOX_CASE
    }
    return Status::error("box copy of " + std::to_string(elementSize) +
                         "-byte elements");
  }

  Status reduce(int64_t worker, ReductionCode kind, DType dtype,
                const std::vector<const void *> &inputs,
                int64_t inputRowStride, void *output, int64_t rows,
                int64_t count) override {
    if (Status status = checkReduction(kind, dtype); !status)
      return status;
    if (inputs.empty() ||
        inputs.size() > static_cast<size_t>(maxReduceInputs))
      return Status::error("the device communicator reduces groups of 1 to " +
                           std::to_string(maxReduceInputs) + " devices, not " +
                           std::to_string(inputs.size()));
    if (rows * count == 0)
      return Status::success();
    Expected<cudaStream_t> stream = streamOf(worker);
    if (!stream)
      return stream.status();
    ReduceInputs pointers = {};
    for (size_t i = 0; i < inputs.size(); ++i)
      pointers.data[i] = inputs[i];
    auto n = static_cast<int>(inputs.size());
    int code = static_cast<int>(kind);
    return withDType(dtype, [&](auto tag) -> Status {
      using T = decltype(tag);
      reduceRowsKernel<T>
          <<<blocksFor(rows * count), threadsPerBlock, 0, *stream>>>(
              pointers, n, inputRowStride,
              static_cast<typename T::Storage *>(output), rows, count, code);
      return launched("collective reduction");
    });
  }

  Status copy(int64_t worker, void *dst, const void *src,
              int64_t bytes) override {
    Expected<cudaStream_t> stream = streamOf(worker);
    if (!stream)
      return stream.status();
    if (bytes > 0)
      PARTITA_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, *stream));
    return Status::success();
  }

  Status zero(int64_t worker, void *dst, int64_t bytes) override {
    Expected<cudaStream_t> stream = streamOf(worker);
    if (!stream)
      return stream.status();
    if (bytes > 0)
      PARTITA_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, *stream));
    return Status::success();
  }

  Expected<void *> temporary(int64_t worker, int64_t bytes) override {
    Expected<cudaStream_t> stream = streamOf(worker);
    if (!stream)
      return stream.status();
    void *block = nullptr;
    cudaError_t code =
        cudaMallocAsync(&block, std::max<int64_t>(bytes, 1), *stream);
    if (code != cudaSuccess)
      return cudaFailure(code, "cudaMallocAsync", __FILE__, __LINE__);
    return block;
  }

  void releaseTemporary(int64_t worker, void *block) override {
    if (Expected<cudaStream_t> stream = streamOf(worker))
      cudaFreeAsync(block, *stream);
  }

  Status complete(int64_t worker) override {
    Expected<cudaStream_t> stream = streamOf(worker);
    if (!stream)
      return stream.status();
    PARTITA_CUDA_CHECK(cudaStreamSynchronize(*stream));
    return Status::success();
  }

private:
  std::mutex mutex;
  std::map<int64_t, cudaStream_t> streams;
};

class DeviceCommunicator final : public CallForwardingCommunicator {
public:
  explicit DeviceCommunicator(Mesh mesh)
      : memory(std::make_shared<DeviceCollectiveMemory>()),
        local(std::move(mesh), InProcessCommunicator::defaultTimeout,
              memory) {}

  const Mesh &mesh() const override { return local.mesh(); }
  void abort(const Status &reason) override { local.abort(reason); }
  void setStream(int64_t deviceId, cudaStream_t stream) {
    memory->setStream(deviceId, stream);
  }

private:
  Status runCall(const CollectiveCall &call) override {
    Expected<cudaStream_t> stream = memory->streamOf(call.deviceId);
    if (!stream)
      return Status::error(describeCollective(call) + ": " +
                           stream.status().message());
    // The input is complete before any other device can read it.
    PARTITA_CUDA_CHECK(cudaStreamSynchronize(*stream));
    return dispatchCollective(local, call);
  }

  std::shared_ptr<DeviceCollectiveMemory> memory;
  InProcessCommunicator local;
};

} // namespace

std::unique_ptr<Communicator> createDeviceCommunicator(const Mesh &mesh) {
  return std::make_unique<DeviceCommunicator>(mesh);
}

void setDeviceCommunicatorStream(Communicator &communicator, int64_t deviceId,
                                 void *stream) {
  static_cast<DeviceCommunicator &>(communicator)
      .setStream(deviceId, static_cast<cudaStream_t>(stream));
}

} // namespace partita

//===- CudaBackend.cu - The Backend interface on a GPU ---------------------===//
//
// Memory: a caching allocator per backend — freed blocks go to a free list
// by size and are reused, so a program's steady state makes no cudaMalloc
// (the Executable's arena plan makes one allocation per device anyway).
// Work: one non-default blocking stream per backend; copies to the host
// and reads of scalar indices synchronize it. Scratch memory of an op
// (einsum's permuted operands) is returned to the cache when the op ends.
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"

#include "partita/Runtime/CUDA/CudaBackend.h"
#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <algorithm>
#include <map>

namespace partita {

Status runCudaKernel(const CudaContext &ctx, const Instruction &inst,
                     const std::vector<TensorType> &operandTypes,
                     const std::vector<const void *> &operands,
                     const std::vector<TensorType> &resultTypes,
                     const std::vector<void *> &results,
                     const std::vector<HostArray> &constants);

int cudaDeviceCount(std::string *why) {
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    if (why)
      *why = std::string("no usable CUDA device: ") + cudaGetErrorString(code);
    cudaGetLastError(); // Clear the sticky error for later calls.
    return 0;
  }
  if (count == 0 && why)
    *why = "no CUDA device is visible";
  return count;
}

namespace {

/// Freed blocks by size, reused before asking cudaMalloc.
class CachingAllocator {
public:
  ~CachingAllocator() {
    for (auto &entry : free)
      cudaFree(entry.second);
  }

  Expected<void *> allocate(int64_t bytes) {
    size_t size = roundUp(std::max<int64_t>(bytes, 1));
    auto found = free.lower_bound(size);
    // Reuse a block at most twice the size asked for.
    if (found != free.end() && found->first <= 2 * size) {
      void *block = found->second;
      sizes[block] = found->first;
      free.erase(found);
      held += sizes[block];
      peak = std::max(peak, held);
      return block;
    }
    void *block = nullptr;
    cudaError_t code = cudaMalloc(&block, size);
    if (code != cudaSuccess) {
      // Give the cache back and try once more.
      for (auto &entry : free)
        cudaFree(entry.second);
      free.clear();
      code = cudaMalloc(&block, size);
    }
    if (code != cudaSuccess)
      return cudaFailure(code, "cudaMalloc", __FILE__, __LINE__);
    sizes[block] = size;
    held += size;
    peak = std::max(peak, held);
    return block;
  }

  void release(void *block) {
    auto found = sizes.find(block);
    if (found == sizes.end())
      return;
    held -= found->second;
    free.emplace(found->second, block);
    sizes.erase(found);
  }

  int64_t peakBytes() const { return peak; }

private:
  static size_t roundUp(int64_t bytes) {
    size_t granule = bytes < (1 << 20) ? 512 : (1 << 20);
    return (static_cast<size_t>(bytes) + granule - 1) / granule * granule;
  }

  std::multimap<size_t, void *> free;
  std::map<void *, size_t> sizes;
  int64_t held = 0, peak = 0;
};

class CudaBackend final : public Backend {
public:
  CudaBackend(int device, const CudaBackendOptions &options)
      : device(device), options(options) {}

  ~CudaBackend() override {
    if (blas)
      cublasDestroy(blas);
    if (stream)
      cudaStreamDestroy(stream);
  }

  Status initialize() {
    PARTITA_CUDA_CHECK(cudaSetDevice(device));
    // A blocking stream: it orders with the legacy default stream, which
    // the staging communicator's copies use.
    PARTITA_CUDA_CHECK(cudaStreamCreate(&stream));
    PARTITA_CUBLAS_CHECK(cublasCreate(&blas));
    PARTITA_CUBLAS_CHECK(cublasSetStream(blas, stream));
    return Status::success();
  }

  const char *name() const override { return "cuda"; }

  Expected<void *> allocate(int64_t bytes) override {
    Expected<void *> block = cache.allocate(bytes);
    if (!block)
      return block;
    cudaError_t code =
        cudaMemsetAsync(*block, 0, std::max<int64_t>(bytes, 1), stream);
    if (code != cudaSuccess)
      return cudaFailure(code, "cudaMemsetAsync", __FILE__, __LINE__);
    return block;
  }
  void release(void *block) override {
    // The stream may still use it: wait before it can be handed out again.
    cudaStreamSynchronize(stream);
    cache.release(block);
  }
  int64_t peakBytes() const override { return cache.peakBytes(); }

  Status copyToDevice(void *to, const void *from, int64_t bytes) override {
    if (bytes > 0)
      PARTITA_CUDA_CHECK(
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream));
    PARTITA_CUDA_CHECK(cudaStreamSynchronize(stream));
    return Status::success();
  }
  Status copyToHost(void *to, const void *from, int64_t bytes) override {
    if (bytes > 0)
      PARTITA_CUDA_CHECK(
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, stream));
    PARTITA_CUDA_CHECK(cudaStreamSynchronize(stream));
    return Status::success();
  }
  Status copyOnDevice(void *to, const void *from, int64_t bytes) override {
    if (bytes > 0 && to != from)
      PARTITA_CUDA_CHECK(
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }

  Status run(const Instruction &inst,
             const std::vector<TensorType> &operandTypes,
             const std::vector<const void *> &operands,
             const std::vector<TensorType> &resultTypes,
             const std::vector<void *> &results,
             const std::vector<HostArray> &constants) override {
    CudaContext context;
    context.stream = stream;
    context.blas = blas;
    context.allowTF32 = options.allowTF32;
    context.backend = this;
    context.scratch = [](void *self, int64_t bytes) -> void * {
      auto *backend = static_cast<CudaBackend *>(self);
      Expected<void *> block = backend->cache.allocate(bytes);
      if (!block)
        return nullptr;
      backend->scratch.push_back(*block);
      return *block;
    };
    Status status = runCudaKernel(context, inst, operandTypes, operands,
                                  resultTypes, results, constants);
    if (!scratch.empty()) {
      cudaError_t code = cudaStreamSynchronize(stream);
      for (void *block : scratch)
        cache.release(block);
      scratch.clear();
      if (status && code != cudaSuccess)
        return cudaFailure(code, "cudaStreamSynchronize", __FILE__, __LINE__);
    }
    return status;
  }

  Status synchronize() override {
    PARTITA_CUDA_CHECK(cudaStreamSynchronize(stream));
    return Status::success();
  }

  cudaStream_t workStream() const { return stream; }

private:
  int device;
  CudaBackendOptions options;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  CachingAllocator cache;
  std::vector<void *> scratch;
};

/// Collectives of logical devices on GPUs through host memory: each call
/// copies the device's input to the host, meets the others in the
/// in-process communicator, and copies the result back. The copies run on
/// the legacy default stream, which waits for the backends' blocking
/// streams, so the input is complete when it is read.
class StagingCommunicator final : public CallForwardingCommunicator {
public:
  explicit StagingCommunicator(Mesh mesh) : local(std::move(mesh)) {}

  const Mesh &mesh() const override { return local.mesh(); }
  void abort(const Status &reason) override { local.abort(reason); }

private:
  Status runCall(const CollectiveCall &call) override {
    Expected<int64_t> inBytes =
        checkedNumBytes(call.input.dtype, call.input.shape);
    Expected<int64_t> outBytes =
        checkedNumBytes(call.output.dtype, call.output.shape);
    if (!inBytes || !outBytes)
      return Status::error(describeCollective(call) + ": bad buffer shapes");
    std::vector<uint8_t> input(*inBytes), output(*outBytes);
    if (*inBytes > 0)
      PARTITA_CUDA_CHECK(cudaMemcpy(input.data(), call.input.data, *inBytes,
                                    cudaMemcpyDeviceToHost));
    CollectiveCall host = call;
    host.input.data = input.data();
    host.output.data = output.data();
    // In place on the device is two buffers on the host.
    if (Status status = dispatchCollective(local, host); !status)
      return status;
    if (*outBytes > 0)
      PARTITA_CUDA_CHECK(cudaMemcpy(call.output.data, output.data(), *outBytes,
                                    cudaMemcpyHostToDevice));
    return Status::success();
  }

  InProcessCommunicator local;
};

/// Lets each of GPUs [0, gpus) read the others' memory; false when a pair
/// cannot (the devices' collectives are then staged through the host).
bool enablePeerAccess(int64_t gpus) {
  for (int a = 0; a < gpus; ++a)
    for (int b = 0; b < gpus; ++b) {
      if (a == b)
        continue;
      int possible = 0;
      if (cudaDeviceCanAccessPeer(&possible, a, b) != cudaSuccess ||
          !possible)
        return false;
      if (cudaSetDevice(a) != cudaSuccess)
        return false;
      cudaError_t code = cudaDeviceEnablePeerAccess(b, 0);
      if (code == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else if (code != cudaSuccess)
        return false;
    }
  return true;
}

} // namespace

std::unique_ptr<Communicator> createStagingCommunicator(const Mesh &mesh) {
  return std::make_unique<StagingCommunicator>(mesh);
}

void *cudaStreamOf(Backend &backend) {
  return static_cast<CudaBackend &>(backend).workStream();
}

Expected<std::unique_ptr<Backend>>
createCudaBackend(int device, const CudaBackendOptions &options) {
  std::string why;
  int count = cudaDeviceCount(&why);
  if (count == 0)
    return Status::error(why);
  if (device < 0 || device >= count)
    return Status::error("CUDA device " + std::to_string(device) +
                         " does not exist (" + std::to_string(count) +
                         " visible)");
  auto backend = std::make_unique<CudaBackend>(device, options);
  if (Status status = backend->initialize(); !status)
    return status;
  return std::unique_ptr<Backend>(std::move(backend));
}

Status runDevicesOnCuda(
    const Executable &program, const std::vector<int64_t> &devices,
    const std::vector<int> &gpuOf, Communicator *communicator,
    CudaCollectives collectives,
    const std::vector<std::vector<HostArray>> &inputsByDevice,
    std::vector<std::vector<HostArray>> &outputsByDevice,
    const CudaBackendOptions &options, RunStatistics *statistics) {
  auto makeBackend =
      [&](int64_t d) -> Expected<std::unique_ptr<Backend>> {
    Expected<std::unique_ptr<Backend>> backend =
        createCudaBackend(gpuOf[d], options);
    if (backend && collectives == CudaCollectives::Nccl)
      setNcclStream(*communicator, d, cudaStreamOf(**backend));
    if (backend && collectives == CudaCollectives::DeviceMemory)
      setDeviceCommunicatorStream(*communicator, d, cudaStreamOf(**backend));
    return backend;
  };
  return runDevicesAsThreads(program, devices, communicator, inputsByDevice,
                             outputsByDevice, statistics, makeBackend);
}

Expected<std::vector<HostArray>>
runOnCudaDevices(const Executable &program,
                 const std::vector<HostArray> &globalInputs,
                 const CudaBackendOptions &options,
                 RunStatistics *statistics) {
  std::string why;
  int gpus = cudaDeviceCount(&why);
  if (gpus == 0)
    return Status::error(why);
  Expected<std::vector<std::vector<HostArray>>> inputs =
      deviceInputBlocks(program, globalInputs, options.partialInputs);
  if (!inputs)
    return inputs.status();
  int64_t devices = program.mesh.numDevices();
  std::vector<int64_t> all(devices);
  std::vector<int> gpuOf(devices);
  for (int64_t d = 0; d < devices; ++d) {
    all[d] = d;
    gpuOf[d] = static_cast<int>((options.firstDevice + d) % gpus);
  }
  // Every device on its own GPU: NCCL. Logical devices sharing GPUs: the
  // device-memory communicator where one process can address all their
  // buffers, staging through the host otherwise (or when asked to).
  std::unique_ptr<Communicator> owned;
  CudaCollectives collectives = CudaCollectives::Staging;
  if (devices <= gpus && devices > 1 && !options.forceStaging) {
    Expected<std::unique_ptr<Communicator>> created =
        createNcclCommunicator(program.mesh, gpuOf);
    if (!created)
      return created.status();
    owned = std::move(*created);
    collectives = CudaCollectives::Nccl;
  } else if (!options.forceStaging && devices > 1 &&
             enablePeerAccess(options.firstDevice == 0
                                  ? std::min<int64_t>(gpus, devices)
                                  : gpus)) {
    owned = createDeviceCommunicator(program.mesh);
    collectives = CudaCollectives::DeviceMemory;
  } else {
    owned = std::make_unique<StagingCommunicator>(program.mesh);
  }
  std::vector<std::vector<HostArray>> outputs;
  if (Status status =
          runDevicesOnCuda(program, all, gpuOf, owned.get(), collectives,
                           *inputs, outputs, options, statistics);
      !status)
    return status;
  return assembleOutputs(program, outputs);
}

} // namespace partita

//===- CudaBackend.h - Partitioned programs on NVIDIA GPUs ------*- C++ -*-===//
//
// The CUDA implementation of the runtime's Backend (Backend.h): device
// memory from a caching allocator (no cudaMalloc per op), one stream per
// device, host<->device copies, einsum through cuBLAS (f32, optional TF32,
// bf16/f16 with f32 accumulation, f64; batched), and our kernels for every
// other tensor op (lib/Runtime/CUDA/CudaKernels.cu), whose index math is
// DeviceMath.h, tested on the CPU. No MLIR here; built when CUDA is found
// (PARTITA_HAVE_CUDA), and every CUDA/cuBLAS call is checked and reported
// with file:line and the library's message. docs/GPU.md.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_CUDA_CUDABACKEND_H
#define PARTITA_RUNTIME_CUDA_CUDABACKEND_H

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Program/Backend.h"

#include <memory>
#include <string>
#include <vector>

namespace partita {

/// How many CUDA devices this process sees; 0 with `why` set when there is
/// no GPU or no usable driver.
int cudaDeviceCount(std::string *why = nullptr);

/// Options of the CUDA backend.
struct CudaBackendOptions {
  /// f32 einsums may use TF32 tensor cores (cuBLAS's FAST_TF32 compute).
  bool allowTF32 = false;
  /// Stage collectives through the host (the staging communicator) instead
  /// of NCCL (every device on its own GPU) or the device-memory
  /// communicator (logical devices sharing GPUs): a baseline to compare.
  bool forceStaging = false;
  /// runOnCudaDevices: logical device d runs on GPU (firstDevice + d) modulo
  /// the GPUs (a pipeline rank's devices start past the earlier ranks').
  int firstDevice = 0;
  /// runOnCudaDevices: how a partial-sum input is split (Execution/Run.h).
  PartialInputs partialInputs = PartialInputs::RandomAddends;
};

/// A backend on CUDA device `device`.
Expected<std::unique_ptr<Backend>>
createCudaBackend(int device, const CudaBackendOptions &options = {});

/// Collectives of logical devices through host memory (device buffers in,
/// device buffers out; the in-process communicator in between): what
/// runOnCudaDevices uses when devices share a GPU.
std::unique_ptr<Communicator> createStagingCommunicator(const Mesh &mesh);

/// Collectives of logical devices whose buffers this process can address
/// in device memory (several devices on one GPU, or GPUs with peer access
/// between all of them): the in-process communicator's rendezvous with its
/// copies and reductions done on the GPU (DeviceCommunicator.cu), on each
/// device's stream given by setDeviceCommunicatorStream().
std::unique_ptr<Communicator> createDeviceCommunicator(const Mesh &mesh);

/// The stream device `deviceId`'s share of a collective runs on (its
/// backend's, cudaStreamOf()); `communicator` is createDeviceCommunicator's.
void setDeviceCommunicatorStream(Communicator &communicator, int64_t deviceId,
                                 void *stream);

/// The stream a CUDA backend issues its work on (a cudaStream_t).
void *cudaStreamOf(Backend &backend);

/// NCCL collectives for the devices of `mesh`, all driven by this process,
/// device d on GPU gpus[d] (distinct GPUs: NCCL refuses two ranks on one).
/// One communicator per device over the whole mesh, split per ordered set
/// of mesh axes; calls are issued on the stream given by setNcclStream().
Expected<std::unique_ptr<Communicator>>
createNcclCommunicator(const Mesh &mesh, const std::vector<int> &gpus);

/// The stream device `deviceId`'s collectives are issued on (its backend's,
/// cudaStreamOf()), so they are ordered with its kernels.
void setNcclStream(Communicator &communicator, int64_t deviceId, void *stream);

/// Which communicator the devices of a CUDA run use (each device thread
/// registers its backend's stream with it).
enum class CudaCollectives { Nccl, DeviceMemory, Staging };

/// Runs `program` on `devices` (device ids), one host thread and backend
/// each, device d on GPU gpuOf[d], with `communicator` of kind
/// `collectives`; inputs and outputs are indexed by device id, as
/// runDevicesAsThreads's. A failing device aborts the communicator; the
/// status is the first failure that is not merely such an abort.
Status runDevicesOnCuda(
    const Executable &program, const std::vector<int64_t> &devices,
    const std::vector<int> &gpuOf, Communicator *communicator,
    CudaCollectives collectives,
    const std::vector<std::vector<HostArray>> &inputsByDevice,
    std::vector<std::vector<HostArray>> &outputsByDevice,
    const CudaBackendOptions &options = {},
    RunStatistics *statistics = nullptr);

/// NCCL collectives for the devices of `mesh` spread over processes (one
/// or more per process, under mpirun): this process drives
/// `localDevices`, device d on GPU gpus[d]; every process passes the same
/// `uniqueId` (ncclGetUniqueId's bytes, made on one rank and broadcast:
/// bootstrapNcclUniqueIds). Rank = mesh position, split per ordered set of
/// mesh axes as createNcclCommunicator's.
Expected<std::unique_ptr<Communicator>>
createNcclCommunicatorForRanks(const Mesh &mesh,
                               const std::vector<int64_t> &localDevices,
                               const std::vector<int> &gpus,
                               const std::vector<uint8_t> &uniqueId);

/// Runs `program` on its mesh's N devices, one host thread each. With at
/// least N GPUs, device d runs on GPU d and collectives go through NCCL;
/// with fewer, the devices are logical devices spread over the GPUs
/// (device d on GPU d mod count) whose collectives run in device memory
/// (createDeviceCommunicator) when one GPU holds them all or every pair of
/// GPUs has peer access, and are staged through host memory otherwise, so
/// partitioned programs run on a single GPU. Inputs, outputs and the partial-sum
/// handling are runOnCpuDevices's.
Expected<std::vector<HostArray>>
runOnCudaDevices(const Executable &program,
                 const std::vector<HostArray> &globalInputs,
                 const CudaBackendOptions &options = {},
                 RunStatistics *statistics = nullptr);

} // namespace partita

#endif // PARTITA_RUNTIME_CUDA_CUDABACKEND_H

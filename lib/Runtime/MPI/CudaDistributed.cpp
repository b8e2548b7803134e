//===- CudaDistributed.cpp - One process per GPU under mpirun -------------===//
//
// The CUDA side of runDistributed(): GPUs for this process's devices, one
// NCCL communicator over every device of every process (its unique id
// broadcast over MPI), and the device threads of runDevicesOnCuda().
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/MPI/CudaDistributed.h"
#include "partita/Runtime/MPI/NcclBootstrap.h"

#include <memory>
#include <numeric>

namespace partita {

DistributedDevices cudaDistributedDevices(const CudaBackendOptions &options) {
  DistributedDevices devices;
  devices.kind = "cuda";
  // Filled when the communicator is made, read by the device threads.
  auto gpuOf = std::make_shared<std::vector<int>>();
  devices.communicator =
      [gpuOf](MpiProcess &process, const Mesh &mesh,
              const ProcessLayout &layout)
      -> Expected<std::unique_ptr<Communicator>> {
    std::string why;
    int gpus = cudaDeviceCount(&why);
    Status mine = gpus == 0 ? Status::error(why) : Status::success();
    if (mine) {
      Expected<std::vector<int>> assigned =
          gpusForLocalDevices(mesh.numDevices(), layout.localDevices,
                              process.rank(), process.localRank(), gpus);
      if (assigned)
        *gpuOf = std::move(*assigned);
      else
        mine = assigned.status();
    }
    // NCCL's initialisation waits for every rank: agree first, so one rank
    // without GPUs fails the job at once.
    Expected<bool> everyone = process.allTrue(mine.ok(), "finding GPUs");
    if (!mine)
      return mine;
    if (!everyone)
      return everyone.status();
    if (!*everyone)
      return Status::error("another rank found no GPU for its devices (its "
                           "own error says why)");
    std::vector<int> allRanks(process.size());
    std::iota(allRanks.begin(), allRanks.end(), 0);
    Expected<std::vector<std::vector<uint8_t>>> ids =
        bootstrapNcclUniqueIds(process, {allRanks});
    if (!ids)
      return ids.status();
    return createNcclCommunicatorForRanks(mesh, layout.localDevices, *gpuOf,
                                          (*ids)[0]);
  };
  devices.run = [gpuOf, options](
                    const Executable &program,
                    const std::vector<int64_t> &localDevices,
                    Communicator *communicator,
                    const std::vector<std::vector<HostArray>> &inputsByDevice,
                    std::vector<std::vector<HostArray>> &outputsByDevice,
                    RunStatistics *statistics) {
    return runDevicesOnCuda(program, localDevices, *gpuOf, communicator,
                            CudaCollectives::Nccl, inputsByDevice,
                            outputsByDevice, options, statistics);
  };
  return devices;
}

} // namespace partita

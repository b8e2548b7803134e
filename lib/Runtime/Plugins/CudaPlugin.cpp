//===- CudaPlugin.cpp - The entry point of libpartita-cuda.so -------------===//
//
// The table the tools find with dlsym (CudaPlugin.h). Only this symbol is
// exported; everything else in the plugin is its own.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Plugins/CudaPlugin.h"

#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
#include "partita/Runtime/MPI/CudaDistributed.h"
#endif

using namespace partita;

namespace {

Expected<std::vector<HostArray>>
runOnDevices(const Executable &program,
             const std::vector<HostArray> &globalInputs,
             const CudaBackendOptions &options, RunStatistics *statistics) {
  return runOnCudaDevices(program, globalInputs, options, statistics);
}

#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
void distributedDevices(const CudaBackendOptions &options,
                        DistributedDevices &devices) {
  devices = cudaDistributedDevices(options);
}
#endif

const CudaPlugin plugin = {
    kCudaPluginAbi,
    [](std::string *why) { return cudaDeviceCount(why); },
    runOnDevices,
#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
    distributedDevices,
#else
    nullptr,
#endif
};

} // namespace

extern "C" __attribute__((visibility("default"))) const CudaPlugin *
partita_cuda_plugin() {
  return &plugin;
}

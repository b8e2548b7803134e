//===- CudaPlugin.h - The CUDA backend, loaded when a run asks for it -*- C++
//-*-===//
//
// The CUDA backend and everything it needs (the CUDA runtime, cuBLAS, NCCL)
// live in a plugin, libpartita-cuda.so, that the tools open with dlopen the
// first time a run asks for CUDA devices. A run on CPU devices never loads
// them: the tools link none of the GPU libraries and start in milliseconds
// (mapping cuBLAS and NCCL took 65 ms at every start). The plugin is built
// with the tools, from the same sources, so the types below cross its
// boundary unchanged (docs/GPU.md, "The CUDA plugin").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PLUGINS_CUDAPLUGIN_H
#define PARTITA_RUNTIME_PLUGINS_CUDAPLUGIN_H

#include "partita/Runtime/CUDA/CudaBackend.h"

#include <string>
#include <vector>

namespace partita {

struct DistributedDevices;

/// The plugin's entry points. A plugin from another build is refused (its
/// `abi` differs).
struct CudaPlugin {
  /// kCudaPluginAbi of the build that made the plugin.
  int abi;
  /// cudaDeviceCount().
  int (*deviceCount)(std::string *why);
  /// runOnCudaDevices().
  Expected<std::vector<HostArray>> (*runOnDevices)(
      const Executable &program, const std::vector<HostArray> &globalInputs,
      const CudaBackendOptions &options, RunStatistics *statistics);
  /// cudaDistributedDevices() into `devices`; null when the plugin was
  /// built without MPI and NCCL.
  void (*distributedDevices)(const CudaBackendOptions &options,
                             DistributedDevices &devices);
};

/// Changes whenever CudaPlugin or a type it passes changes.
inline constexpr int kCudaPluginAbi = 4;

/// The plugin's file name, and the symbol its table is found by.
inline constexpr const char *kCudaPluginFile = "libpartita-cuda.so";
inline constexpr const char *kCudaPluginSymbol = "partita_cuda_plugin";

/// Loads the plugin once per process: from $PARTITA_CUDA_PLUGIN when set,
/// else from the lib directory next to the running tool's bin directory,
/// else by name through the dynamic loader's search path. Fails naming the
/// file and the loader's reason (a missing libcublas, say) when it cannot.
Expected<const CudaPlugin *> loadCudaPlugin();

} // namespace partita

#endif // PARTITA_RUNTIME_PLUGINS_CUDAPLUGIN_H

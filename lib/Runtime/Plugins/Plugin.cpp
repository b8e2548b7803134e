//===- Plugin.cpp - Opening the runtime's plugins -------------------------===//

#include "partita/Runtime/Plugins/Plugin.h"
#include "partita/Runtime/Plugins/CudaPlugin.h"
#include "partita/Runtime/Plugins/MpiPlugin.h"

#include <string>

using namespace partita;

Expected<const CudaPlugin *> partita::loadCudaPlugin() {
  return openPluginTable<CudaPlugin>(kCudaPluginFile, "PARTITA_CUDA_PLUGIN",
                                     kCudaPluginSymbol, "CUDA devices",
                                     kCudaPluginAbi);
}

Expected<const MpiPlugin *> partita::loadMpiPlugin() {
  return openPluginTable<MpiPlugin>(kMpiPluginFile, "PARTITA_MPI_PLUGIN",
                                    kMpiPluginSymbol, "--distributed runs",
                                    kMpiPluginAbi);
}

//===- Plugin.cpp - Opening the runtime's plugins -------------------------===//

#include "partita/Runtime/IO/Plugin.h"
#include "partita/Runtime/CUDA/CudaPlugin.h"
#include "partita/Runtime/MPI/MpiPlugin.h"

#include <string>

using namespace partita;

namespace {

/// The table of plugin `file` as a `Table` (whose first member is its `abi`),
/// refused when another build made it.
template <typename Table>
Expected<const Table *> openTable(const char *file, const char *environment,
                                  const char *symbol, const char *what,
                                  int abi) {
  Expected<const void *> opened = openPlugin(file, environment, symbol, what);
  if (!opened)
    return opened.status();
  auto table = static_cast<const Table *>(*opened);
  if (!table || table->abi != abi)
    return Status::error(std::string(file) +
                         " is from another build of Partita (plugin "
                         "interface " +
                         std::to_string(table ? table->abi : -1) +
                         ", this tool needs " + std::to_string(abi) + ")");
  return table;
}

} // namespace

Expected<const CudaPlugin *> partita::loadCudaPlugin() {
  return openTable<CudaPlugin>(kCudaPluginFile, "PARTITA_CUDA_PLUGIN",
                               kCudaPluginSymbol, "CUDA devices",
                               kCudaPluginAbi);
}

Expected<const MpiPlugin *> partita::loadMpiPlugin() {
  return openTable<MpiPlugin>(kMpiPluginFile, "PARTITA_MPI_PLUGIN",
                              kMpiPluginSymbol, "--distributed runs",
                              kMpiPluginAbi);
}

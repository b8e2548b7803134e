//===- Plugin.cpp - Opening the runtime's plugins -------------------------===//

#include "partita/Runtime/IO/Plugin.h"
#include "partita/Runtime/CUDA/CudaPlugin.h"
#include "partita/Runtime/MPI/MpiPlugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace partita;

namespace {

/// <dir of the running executable>/../lib/<file>, or "" when unknown.
std::string besideTools(const char *file) {
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0)
    return "";
  std::string exe(path, static_cast<size_t>(length));
  size_t slash = exe.rfind('/');
  if (slash == std::string::npos)
    return "";
  std::string bin = exe.substr(0, slash);
  size_t parent = bin.rfind('/');
  if (parent == std::string::npos)
    return "";
  return bin.substr(0, parent) + "/lib/" + file;
}

Expected<const void *> open(const char *file, const char *environment,
                            const char *symbol, const char *what) {
  std::vector<std::string> candidates;
  if (const char *chosen = std::getenv(environment); chosen && *chosen) {
    candidates.push_back(chosen);
  } else {
    std::string beside = besideTools(file);
    if (!beside.empty() && access(beside.c_str(), F_OK) == 0)
      candidates.push_back(beside);
    candidates.push_back(file);
  }
  std::string reasons;
  for (const std::string &candidate : candidates) {
    void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      reasons += std::string(reasons.empty() ? "" : "; ") +
                 (why ? why : candidate + ": cannot be opened");
      continue;
    }
    // The plugin stays loaded: its code runs in device threads and in
    // callbacks a run keeps.
    auto entry = reinterpret_cast<const void *(*)()>(dlsym(handle, symbol));
    if (!entry)
      return Status::error(candidate + " is not Partita's plugin " + file +
                           " (no " + symbol + ")");
    return entry();
  }
  return Status::error(std::string(what) + " need the plugin " + file +
                       ", which could not be loaded: " + reasons);
}

} // namespace

Expected<const void *> partita::openPlugin(const char *file,
                                           const char *environment,
                                           const char *symbol,
                                           const char *what) {
  static std::mutex mutex;
  static std::map<std::string, Expected<const void *>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = opened.find(file);
  if (it == opened.end())
    it = opened.emplace(file, open(file, environment, symbol, what)).first;
  return it->second;
}

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

//===- CudaPluginLoader.cpp - Opening libpartita-cuda.so ------------------===//
//
// Part of the runtime proper (no CUDA here): finds and opens the plugin the
// first time a run asks for CUDA devices (CudaPlugin.h).
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/CUDA/CudaPlugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>

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

Expected<const CudaPlugin *> open() {
  std::vector<std::string> candidates;
  if (const char *chosen = std::getenv("PARTITA_CUDA_PLUGIN");
      chosen && *chosen) {
    candidates.push_back(chosen);
  } else {
    std::string beside = besideTools(kCudaPluginFile);
    if (!beside.empty() && access(beside.c_str(), F_OK) == 0)
      candidates.push_back(beside);
    candidates.push_back(kCudaPluginFile);
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
    // The plugin stays loaded for the life of the process: its code runs
    // in device threads and in callbacks the run keeps.
    auto entry = reinterpret_cast<const CudaPlugin *(*)()>(
        dlsym(handle, kCudaPluginSymbol));
    if (!entry)
      return Status::error(candidate + " is not Partita's CUDA plugin (no " +
                           kCudaPluginSymbol + ")");
    const CudaPlugin *plugin = entry();
    if (!plugin || plugin->abi != kCudaPluginAbi)
      return Status::error(candidate + " is from another build of Partita "
                           "(plugin interface " +
                           std::to_string(plugin ? plugin->abi : -1) +
                           ", this tool needs " +
                           std::to_string(kCudaPluginAbi) + ")");
    return plugin;
  }
  return Status::error("CUDA devices need the CUDA plugin " +
                       std::string(kCudaPluginFile) +
                       ", which could not be loaded: " + reasons);
}

} // namespace

Expected<const CudaPlugin *> partita::loadCudaPlugin() {
  static std::once_flag once;
  static Expected<const CudaPlugin *> loaded =
      Status::error("the CUDA plugin was not loaded");
  std::call_once(once, [] { loaded = open(); });
  return loaded;
}

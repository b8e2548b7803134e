//===- OpenPlugin.cpp - Opening a shared object a tool needs late ---------===//
//
// The search and the errors of openPlugin() (Plugin.h). A library of its own
// (PartitaPluginLoader, which needs only the dynamic loader) so that the
// `partita` driver opens the compiler with it without linking the runtime.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Plugins/Plugin.h"

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
                            const char *symbol, const char *what, bool lazy) {
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
    void *handle =
        dlopen(candidate.c_str(), (lazy ? RTLD_LAZY : RTLD_NOW) | RTLD_LOCAL);
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
                                           const char *symbol, const char *what,
                                           bool lazy) {
  static std::mutex mutex;
  static std::map<std::string, Expected<const void *>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = opened.find(file);
  if (it == opened.end())
    it =
        opened.emplace(file, open(file, environment, symbol, what, lazy)).first;
  return it->second;
}

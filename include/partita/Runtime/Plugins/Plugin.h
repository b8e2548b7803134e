//===- Plugin.h - Optional runtime parts opened when a run needs them -*- C++
//-*-===//
//
// The CUDA backend (libpartita-cuda.so) and the multi-process runtime over
// MPI (libpartita-mpi.so) are plugins: shared objects the tools open with
// dlopen the first time a run asks for them, so a run on CPU devices in one
// process loads neither CUDA nor MPI (docs/Runtime.md, "Plugins").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PLUGINS_PLUGIN_H
#define PARTITA_RUNTIME_PLUGINS_PLUGIN_H

#include "partita/Sharding/Status.h"

#include <string>

namespace partita {

/// Opens the plugin `file` once per process and returns what its
/// `symbol` function (taking nothing) returns: from $`environment` when
/// set, else from the lib directory next to the running tool's bin
/// directory, else by name through the dynamic loader's search path. Fails
/// naming the file and the loader's reason; `what` says what needs it
/// ("CUDA devices"). The plugin stays loaded for the life of the process.
/// Its symbols are bound at once, so that a library of another version is
/// an error here rather than a failed lookup in the middle of a run;
/// `lazy` binds them on first use instead (the compiler's commands, whose
/// MLIR and LLVM have far more symbols than a command uses).
Expected<const void *> openPlugin(const char *file, const char *environment,
                                  const char *symbol, const char *what,
                                  bool lazy = false);

/// openPlugin() for a plugin whose symbol returns a table (`Table`, whose
/// first member is its interface number `abi`): refused, naming the file,
/// when another build made it.
template <typename Table>
Expected<const Table *>
openPluginTable(const char *file, const char *environment, const char *symbol,
                const char *what, int abi, bool lazy = false) {
  Expected<const void *> opened =
      openPlugin(file, environment, symbol, what, lazy);
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

} // namespace partita

#endif // PARTITA_RUNTIME_PLUGINS_PLUGIN_H

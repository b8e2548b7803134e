//===- MpiPlugin.h - The multi-process runtime, loaded when a run asks -*- C++
//-*-===//
//
// `run --distributed` (and `train --distributed`) lives in a plugin,
// libpartita-mpi.so (the MPI runtime with libmpi), that the tools open the
// first time a run asks for it (partita/Runtime/Plugins/Plugin.h): a run in one
// process loads no MPI. The tool says how to get the program and what to check;
// the plugin does the rest — MPI's start, the broadcast of the program, the run
// and the report (Mpi.h, docs/Distributed.md).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PLUGINS_MPIPLUGIN_H
#define PARTITA_RUNTIME_PLUGINS_MPIPLUGIN_H

#include "partita/Runtime/Communication/ProcessGroup.h"
#include "partita/Runtime/MPI/Mpi.h"

#include <functional>

namespace partita {

/// One `run --distributed` of a tool.
struct DistributedToolRun {
  /// How to run (the devices: CPU threads by default, or the CUDA plugin's).
  DistributedRunOptions options;
  /// On rank 0 only: the program to broadcast (compiled or read). A failure
  /// whose message is empty has been reported already.
  std::function<Expected<Executable>()> loadOnRoot;
  /// On every rank, after the broadcast: refuses a program this run cannot
  /// run (the device count); may be empty.
  std::function<Status(const Executable &)> accept;
  /// The check of the outputs of `program` (made on every rank, run on
  /// rank 0); may be empty.
  std::function<OutputCheck(const Executable &program)> makeCheck;
};

/// The plugin's entry points.
struct MpiPlugin {
  /// kMpiPluginAbi of the build that made the plugin.
  int abi;
  /// Runs `run` in this process (under mpirun) and returns the exit code
  /// every rank exits with; errors are printed "error: rank R: ...".
  int (*runDistributedTool)(const DistributedToolRun &run);
  /// Starts MPI for `partita-exec train --distributed`: the processes of a
  /// pipelined step (createMpiPipelinePeers()).
  Expected<std::unique_ptr<PipelinePeers>> (*createPipelinePeers)(
      std::chrono::milliseconds timeout);
  /// Starts MPI for a front end that drives its devices itself (`partita
  /// train --distributed`): the job's processes, whose waits fail after
  /// `timeout` without progress. MPI is finalised when it is destroyed.
  Expected<std::unique_ptr<ProcessGroup>> (*createProcessGroup)(
      std::chrono::milliseconds timeout);
};

/// Changes whenever MpiPlugin or a type it passes changes.
inline constexpr int kMpiPluginAbi = 7;
inline constexpr const char *kMpiPluginFile = "libpartita-mpi.so";
inline constexpr const char *kMpiPluginSymbol = "partita_mpi_plugin";

/// Loads the plugin once per process ($PARTITA_MPI_PLUGIN, else beside the
/// tool, else the loader's path); fails naming the file and the reason.
Expected<const MpiPlugin *> loadMpiPlugin();

} // namespace partita

#endif // PARTITA_RUNTIME_PLUGINS_MPIPLUGIN_H

//===- MpiPlugin.cpp - The entry point of libpartita-mpi.so ---------------===//
//
// `run --distributed` for the tools (MpiPlugin.h): MPI's start, the
// program from rank 0 to every rank, the run and its report. Only the
// table is exported.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Plugins/MpiPlugin.h"

#include <cstdio>

using namespace partita;

namespace {

int runDistributedTool(const DistributedToolRun &run) {
  Expected<std::unique_ptr<MpiProcess>> process =
      MpiProcess::initialize(nullptr, nullptr);
  if (!process) {
    std::fprintf(stderr, "error: %s\n", process.status().message().c_str());
    return 1;
  }
  MpiProcess &mpi = **process;
  mpi.setTimeout(run.options.timeout);
  int rank = mpi.rank();
  Expected<Executable> loaded = Status::error("not loaded");
  if (rank == 0)
    loaded = run.loadOnRoot
                 ? run.loadOnRoot()
                 : Expected<Executable>(Status::error("no program to run"));
  std::fflush(stdout);
  std::fflush(stderr);
  Expected<Executable> program =
      broadcastExecutable(mpi, rank == 0 ? &loaded : nullptr);
  Status ready = program ? Status::success() : program.status();
  if (ready && run.accept)
    ready = run.accept(*program);
  if (!ready) {
    // One write per message, so that ranks' lines do not interleave.
    std::string line =
        "error: rank " + std::to_string(rank) + ": " + ready.message() + "\n";
    std::fputs(line.c_str(), stderr);
    return 1;
  }
  // Every rank has the check (whether there is one decides how outputs
  // travel); rank 0 runs it.
  OutputCheck check;
  if (run.makeCheck)
    check = run.makeCheck(*program);
  int code = runDistributedAndReport(mpi, *program, run.options, check);
  process->reset();
  return code;
}

/// The job's processes over MPI, for a front end driving its devices.
class MpiProcessGroup final : public ProcessGroup {
public:
  explicit MpiProcessGroup(std::unique_ptr<MpiProcess> process)
      : mpi(std::move(process)) {}
  int process() const override { return mpi->rank(); }
  int processes() const override { return mpi->size(); }
  Status broadcast(std::vector<uint8_t> &bytes, int root,
                   const std::string &what) override {
    return mpi->broadcast(bytes, root, what);
  }
  Status gather(const std::vector<uint8_t> &mine, int root,
                std::vector<std::vector<uint8_t>> &all,
                const std::string &what) override {
    return mpi->gather(mine, root, all, what);
  }
  Expected<bool> allTrue(bool mine, const std::string &what) override {
    return mpi->allTrue(mine, what);
  }
  Expected<std::unique_ptr<Communicator>>
  communicator(const Mesh &mesh, const ProcessLayout &layout) override {
    return createMpiCommunicator(*mpi, mesh, layout, mpi->timeout());
  }
  Expected<std::unique_ptr<PipelinePeers>> pipelinePeers() override {
    return createMpiPipelinePeersOn(*mpi);
  }
  [[noreturn]] void exitAfterFailure(int code) override {
    mpi->exitAfterFailure(code);
  }

private:
  std::unique_ptr<MpiProcess> mpi;
};

Expected<std::unique_ptr<ProcessGroup>>
createProcessGroup(std::chrono::milliseconds timeout) {
  Expected<std::unique_ptr<MpiProcess>> process = startMpiProcess(timeout);
  if (!process)
    return process.status();
  return std::unique_ptr<ProcessGroup>(
      std::make_unique<MpiProcessGroup>(std::move(*process)));
}

const MpiPlugin plugin = {kMpiPluginAbi, runDistributedTool,
                          createMpiPipelinePeers, createProcessGroup};

} // namespace

extern "C" __attribute__((visibility("default"))) const MpiPlugin *
partita_mpi_plugin() {
  return &plugin;
}

//===- ProcessGroup.h - The processes of one multi-process job --*- C++ -*-===//
//
// What a front end needs of the other processes of a job to drive its share
// of a mesh's devices step after step (`partita train --distributed`,
// docs/Distributed.md "Training across processes"): who it is, small
// messages to agree or gather, and the communicator its device threads
// use. The MPI plugin implements it (Plugins/MpiPlugin.h), so nothing that
// includes this links MPI.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_COMMUNICATION_PROCESSGROUP_H
#define PARTITA_RUNTIME_COMMUNICATION_PROCESSGROUP_H

#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Runtime/Communication/ProcessLayout.h"

#include <memory>
#include <string>
#include <vector>

namespace partita {

class PipelinePeers;

class ProcessGroup {
public:
  virtual ~ProcessGroup();

  /// This process's rank and the number of processes.
  virtual int process() const = 0;
  virtual int processes() const = 0;

  /// Root's `bytes` to every process (resized there); `what` names the
  /// data in errors.
  virtual Status broadcast(std::vector<uint8_t> &bytes, int root,
                           const std::string &what) = 0;
  /// Every process's `mine` to `root`, by rank (`all` filled there only).
  virtual Status gather(const std::vector<uint8_t> &mine, int root,
                        std::vector<std::vector<uint8_t>> &all,
                        const std::string &what) = 0;
  /// True on every process when `mine` is true on every process.
  virtual Expected<bool> allTrue(bool mine, const std::string &what) = 0;

  /// The communicator of this process's devices of `mesh` laid out by
  /// `layout` (collective: every process calls it at the same point).
  virtual Expected<std::unique_ptr<Communicator>>
  communicator(const Mesh &mesh, const ProcessLayout &layout) = 0;

  /// The processes as a pipelined step's peers (PipelinePeers.h), over
  /// the same MPI; must not outlive this group (collective).
  virtual Expected<std::unique_ptr<PipelinePeers>> pipelinePeers() = 0;

  /// Leaves the process with `code` at once, flushing output: after a
  /// failure, requests to a stopped process may never complete.
  [[noreturn]] virtual void exitAfterFailure(int code) = 0;
};

/// The layout of `mesh` over `group`'s processes as seen by this one.
Expected<ProcessLayout> layoutOver(const Mesh &mesh, const ProcessGroup &group);

/// Whether every process succeeded: `mine` is this process's status. On
/// failure every process returns an error, its own message when it failed
/// ("another process failed: `what`" otherwise).
Status agreeAll(ProcessGroup &group, const Status &mine,
                const std::string &what);

} // namespace partita

#endif // PARTITA_RUNTIME_COMMUNICATION_PROCESSGROUP_H

//===- PipelinePeers.h - A pipelined step across processes ------*- C++ -*-===//
//
// Under mpirun, the pipeline ranks of a pipelined step are dealt out to the
// processes in blocks (process p runs ranks [p·R/P, (p+1)·R/P), each on its
// own devices, as threads): a stage per process group, the ranks of a
// group sharing its process. Values that cross processes — activations
// sent forward, gradients sent back — travel as tagged point-to-point
// messages; everything else stays as in one process (docs/Pipeline.md).
// This interface is what the runtime needs of the other processes; the MPI
// plugin implements it (MpiPlugin.h), so the runtime itself has no MPI.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PIPELINE_PIPELINEPEERS_H
#define PARTITA_RUNTIME_PIPELINE_PIPELINEPEERS_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace partita {

class PipelinePeers {
public:
  virtual ~PipelinePeers();

  /// This process and the number of processes.
  virtual int process() const = 0;
  virtual int processes() const = 0;
  /// This process's index among the processes of its host (which GPUs it
  /// drives).
  virtual int localProcess() const = 0;
  /// The largest tag a message may carry.
  virtual int maxTag() const = 0;

  /// Starts sending `bytes` to process `to` under `tag` and returns at
  /// once; the bytes are kept until the message has gone.
  virtual Status send(int to, int tag, std::vector<uint8_t> bytes) = 0;

  /// A message from another process.
  struct Message {
    int from = 0;
    int tag = 0;
    std::vector<uint8_t> bytes;
  };
  /// Waits for the next message from any process, in the order they come.
  /// Fails when nothing comes for the timeout (the message then ends with
  /// `missing()`, what the caller still waits for) or when `stop` returns
  /// true (the run failed elsewhere; the message is then empty).
  virtual Expected<Message>
  receive(const std::function<bool()> &stop,
          const std::function<std::string()> &missing) = 0;

  /// Waits until every message sent has gone.
  virtual Status flush() = 0;

  /// Every process's `mine` on process 0, by process (`all` is filled
  /// there only).
  virtual Status gather(const std::vector<uint8_t> &mine,
                        std::vector<std::vector<uint8_t>> &all,
                        const std::string &what) = 0;
  /// Process `root`'s `bytes` on every process.
  virtual Status broadcast(std::vector<uint8_t> &bytes, int root,
                           const std::string &what) = 0;
  /// True on every process when `mine` is true on every process.
  virtual Expected<bool> allTrue(bool mine, const std::string &what) = 0;

  /// Leaves the process with `code` at once: after a failure, messages to
  /// or from it may never complete, and MPI's finalisation could wait for
  /// them forever.
  [[noreturn]] virtual void exitAfterFailure(int code) = 0;
};

} // namespace partita

#endif // PARTITA_RUNTIME_PIPELINE_PIPELINEPEERS_H

//===- Checkpoint.h - Train state on disk, and back -------------*- C++ -*-===//
//
// A checkpoint of a train step (docs/Training.md, "Checkpoints"): the
// step's state — parameters, gradient buffers and optimizer state — as one
// sharded-array directory per tensor, each written from the devices' own
// blocks, and `checkpoint.json`: the steps done, the run it belongs to (the
// model, the mesh and rules it was saved under, the seed), the losses so
// far, every tensor's key, dtype and shape, and a checksum of every file.
//
// Under a root directory each checkpoint is `step-<N>` (N steps done). It is
// written as `.step-<N>.partial`, every file synced, and renamed into place
// only when complete, so a crash at any moment leaves the newest complete
// checkpoint intact; older ones beyond `keep` are then removed. A tensor is
// keyed by its role and its index among that role's tensors ("param/3",
// "opt_state/12"), never by its layout: a checkpoint loads into a step
// compiled for any mesh and rules, each tensor read whole and laid out
// again by the new program.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_TRAINING_CHECKPOINT_H
#define PARTITA_RUNTIME_TRAINING_CHECKPOINT_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Sharding.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

struct Executable;

/// The version of checkpoint.json this build writes and reads.
inline constexpr int kCheckpointVersion = 1;

/// What a checkpoint says about its run.
struct CheckpointMeta {
  /// Steps done (the next step to run).
  int64_t step = 0;
  /// The model and its training (flags that change the state's meaning:
  /// the model's shape, dtype, optimizer); a checkpoint loads only into
  /// the same.
  std::string model;
  /// The layout it was saved under (for the record; loading relays it out).
  std::string mesh, rules;
  uint64_t seed = 0;
  /// Per step done: the loss and the step's seconds.
  std::vector<double> losses, seconds;
};

/// One tensor of a checkpoint.
struct CheckpointTensor {
  std::string key;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Its sharded-array directory, relative to the checkpoint.
  std::string directory;
};

/// A checkpoint as read back.
struct CheckpointInfo {
  std::string directory;
  CheckpointMeta meta;
  std::vector<CheckpointTensor> tensors;
  /// Bytes of every file.
  int64_t bytes = 0;
};

/// A tensor to save: per-device padded blocks (indexed by device id) laid
/// out by `sharding` on the state's mesh, or, with `whole`, one global
/// array in `blocks[0]`, written in the same layout (a partial-sum
/// sharding's value as one file).
struct CheckpointValue {
  std::string key;
  DType dtype = DType::F32;
  std::vector<int64_t> globalShape;
  Sharding sharding;
  bool whole = false;
  std::vector<HostArray> blocks;
};

/// The state to save.
struct CheckpointState {
  CheckpointMeta meta;
  Mesh mesh;
  std::vector<CheckpointValue> values;
};

class ProcessGroup;

/// The processes writing one checkpoint together, and this one's devices.
struct CheckpointWriters {
  ProcessGroup *group = nullptr;
  std::vector<int64_t> devices;
};

/// The key of each updated input of a train step (role/index within the
/// role), in input order: the first `updated` inputs.
std::vector<std::string> checkpointKeys(const Executable &program,
                                        size_t updated);

/// Writes `state` as `root`/step-<meta.step> (root created if needed) and
/// then removes the oldest complete checkpoints beyond `keep` (0: keep
/// all). Returns the checkpoint's bytes.
/// With `across`, every process of its group calls this with its own
/// devices' blocks: each writes the shard files its devices are the
/// lowest holders of, and rank 0 writes checkpoint.json and renames the
/// directory only once every process has synced its files (docs/Training.md,
/// "Checkpoints across processes"); every process returns rank 0's outcome.
Expected<int64_t> writeCheckpoint(const std::string &root,
                                  const CheckpointState &state, int keep,
                                  const CheckpointWriters *across = nullptr);

/// The newest complete checkpoint under `root`: fails when `root` does not
/// exist or holds none.
Expected<std::string> latestCheckpoint(const std::string &root);

/// Reads `directory`/checkpoint.json; with `verify`, also checks every
/// file's size and checksum (errors name the file).
Expected<CheckpointInfo> readCheckpoint(const std::string &directory,
                                        bool verify);

/// Loads a checkpoint into the first `updated` inputs of `program` (a train
/// step compiled for any layout): every key must be there with the same
/// dtype and shape. Errors name the checkpoint and the tensor.
/// With `onlyRole`, loads that role's tensors only (the checkpoint may
/// hold others): --init-from takes the parameters alone.
Status loadCheckpoint(const CheckpointInfo &checkpoint,
                      const Executable &program, size_t updated,
                      std::vector<HostArray> &inputs,
                      const std::string &onlyRole = "");

/// `partita checkpoint info`: the run, the layout, the tensors.
std::string describeCheckpoint(const CheckpointInfo &checkpoint);

} // namespace partita

#endif // PARTITA_RUNTIME_TRAINING_CHECKPOINT_H

//===- Checkpoint.h - Train state on disk, and back -------------*- C++ -*-===//
//
// A checkpoint of a train step (docs/Training.md, "Checkpoints"): the
// step's state — parameters, gradient buffers and optimizer state — and
// `checkpoint.json`: the steps done, the run it belongs to (the model, the
// mesh and rules it was saved under, the seed), the losses so far, every
// tensor's key, dtype and shape, and where each of its blocks lies.
//
// The data is one file per writing process, `data-<rank>.bin`: the
// distinct blocks of every tensor its devices are the lowest holders of,
// one after another, each a C-order box of the global value with its own
// CRC-32C. Writing a checkpoint is therefore a few large sequential writes
// and one sync per process, and reading any region of a tensor (a device's
// block under another layout) reads only the blocks that overlap it.
//
// Under a root directory each checkpoint is `step-<N>` (N steps done). It is
// written as `.step-<N>.partial`, every file synced, and renamed into place
// only when complete, so a crash at any moment leaves the newest complete
// checkpoint intact; older ones beyond `keep` are then removed. A tensor is
// keyed by its role and its index among that role's tensors ("param/3",
// "opt_state/12"), never by its layout: a checkpoint loads into a step
// compiled for any mesh and rules, the blocks read for the new layout.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_TRAINING_CHECKPOINT_H
#define PARTITA_RUNTIME_TRAINING_CHECKPOINT_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Layout.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Sharding.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

struct Executable;

/// The version of checkpoint.json this build writes and reads.
inline constexpr int kCheckpointVersion = 2;

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
/// One stored block of a tensor: the box [start, start + size) of its
/// global value, C-order, at `offset` of `file`.
struct StoredBlock {
  std::string file;
  int64_t offset = 0;
  std::vector<int64_t> start, size;
  uint32_t crc32c = 0;
};

struct CheckpointTensor {
  std::string key;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Its blocks, which tile the value exactly.
  std::vector<StoredBlock> blocks;
};

/// A checkpoint as read back.
struct CheckpointInfo {
  std::string directory;
  CheckpointMeta meta;
  std::vector<CheckpointTensor> tensors;
  /// The data files and their sizes.
  std::vector<std::pair<std::string, int64_t>> files;
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

/// Writes the region `ranges` of `tensor` (one range per dimension) into
/// `into`, the bytes of a C-order array of `paddedShape` (at least the
/// region's sizes), reading only the blocks that overlap it; fails naming
/// the file when a read comes short, and when a float element is not
/// finite (a diverged run's state).
Status readCheckpointRegion(const CheckpointInfo &checkpoint,
                            const CheckpointTensor &tensor,
                            const std::vector<IndexRange> &ranges,
                            const std::vector<int64_t> &paddedShape,
                            uint8_t *into);

/// `tensor`'s whole value (readCheckpointRegion() of all of it).
Expected<HostArray> readCheckpointTensor(const CheckpointInfo &checkpoint,
                                         const CheckpointTensor &tensor);

/// Whether `key` ("param/3") is of `role` ("param"); every key is of the
/// empty role.
bool checkpointKeyOfRole(const std::string &key, const std::string &role);

/// The tensor `key` of `checkpoint`, which must be a `dtype` array of
/// `shape`; errors name the checkpoint and the key, `whose` naming the
/// expected array ("this train step's", "stage 1's").
Expected<const CheckpointTensor *>
findCheckpointTensor(const CheckpointInfo &checkpoint, const std::string &key,
                     DType dtype, const std::vector<int64_t> &shape,
                     const std::string &whose);

/// The checkpoint tensor of each of the first `updated` inputs of
/// `program` (null for those `onlyRole` leaves out), every one there with
/// the input's dtype and shape; errors as loadCheckpoint()'s.
Expected<std::vector<const CheckpointTensor *>>
matchCheckpoint(const CheckpointInfo &checkpoint, const Executable &program,
                size_t updated, const std::string &onlyRole = "");

/// `partita checkpoint info`: the run, the layout, the tensors.
std::string describeCheckpoint(const CheckpointInfo &checkpoint);

} // namespace partita

#endif // PARTITA_RUNTIME_TRAINING_CHECKPOINT_H

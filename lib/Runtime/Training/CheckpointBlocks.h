//===- CheckpointBlocks.h - A checkpoint's data files -----------*- C++ -*-===//
//
// Inside the runtime: how Checkpoint.cpp writes and reads the blocks of a
// checkpoint's tensors (Checkpoint.h says the format).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_TRAINING_CHECKPOINTBLOCKS_H
#define PARTITA_LIB_RUNTIME_TRAINING_CHECKPOINTBLOCKS_H

#include "partita/Runtime/IO/Json.h"
#include "partita/Runtime/Training/Checkpoint.h"

#include <string>
#include <vector>

namespace partita {
namespace checkpoint_blocks {

/// Writes into `directory`/`file` every distinct block of `state` whose
/// lowest holder is one of `devices` (all when null), and with `writeWhole`
/// the values held whole, each with its CRC-32C, and syncs the file.
/// Returns, per tensor, the JSON entries of the blocks written.
Expected<std::vector<Json>> writeDataFile(const std::string &directory,
                                          const std::string &file,
                                          const CheckpointState &state,
                                          const std::vector<int64_t> *devices,
                                          bool writeWhole);

/// readCheckpointRegion() without the finiteness check.
Status readRegion(const std::string &directory, const CheckpointTensor &tensor,
                  const std::vector<IndexRange> &ranges,
                  const std::vector<int64_t> &paddedShape, uint8_t *into);

/// Fails naming `where`, the tensor and the global element when a float of
/// the region read into `data` (of `paddedShape`) is not finite.
Status checkFinite(const std::string &where, const CheckpointTensor &tensor,
                   const std::vector<IndexRange> &ranges,
                   const std::vector<int64_t> &paddedShape,
                   const uint8_t *data);

/// Reads `block` of `tensor` and checks its CRC-32C.
Status verifyBlock(const std::string &directory, const CheckpointTensor &tensor,
                   const StoredBlock &block);

} // namespace checkpoint_blocks
} // namespace partita

#endif // PARTITA_LIB_RUNTIME_TRAINING_CHECKPOINTBLOCKS_H

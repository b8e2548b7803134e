//===- ShardedArrayDirectory.h - Sharded arrays on disk ---------*- C++ -*-===//
//
// Reading and writing sharded array directories: `index.json` (see
// ShardedArrayIndex.h) plus one unpadded .npy file per distinct shard, which
// numpy can load directly.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_SHARDEDARRAYDIRECTORY_H
#define PARTITA_RUNTIME_SHARDEDARRAYDIRECTORY_H

#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/ShardedArrayIndex.h"

#include <map>
#include <string>
#include <vector>

namespace partita {

/// Writes `global` to `directory` laid out by `sharding` on `mesh`. The
/// directory is created if needed; an existing one must be empty or hold a
/// sharded array, whose files this replaces.
Status writeShardedArray(const std::string &directory, const HostArray &global,
                         const Mesh &mesh, const Sharding &sharding,
                         FileSync sync = FileSync::EachFile);

/// Writes the padded per-device blocks of a `globalShape` array (indexed by
/// device id) to `directory`; replicas must agree (see assembleDeviceBlocks).
Status writeShardedArrayFromBlocks(const std::string &directory,
                                   const Mesh &mesh, const Sharding &sharding,
                                   const std::vector<int64_t> &globalShape,
                                   const std::vector<HostArray> &blocks,
                                   FileSync sync = FileSync::EachFile);

/// Writes the shard files of a `globalShape` array of `dtype` laid out by
/// `sharding` on `mesh` whose lowest-numbered holder is one of `devices`,
/// taking each from that device's padded block in `blocksByDevice` (indexed
/// by device id); with `writeIndex`, also index.json (with the CRC-32C of
/// the files written here). `directory` must exist. Processes that each
/// drive some devices call this on one directory: together they write every
/// file exactly once. `written`, when given, receives each file written and
/// its CRC-32C (for writeShardedArrayIndex()).
Status writeShardFilesOfDevices(
    const std::string &directory, const Mesh &mesh, const Sharding &sharding,
    DType dtype, const std::vector<int64_t> &globalShape,
    const std::vector<HostArray> &blocksByDevice,
    const std::vector<int64_t> &devices, bool writeIndex,
    FileSync sync = FileSync::EachFile,
    std::map<std::string, uint32_t> *written = nullptr);

/// Writes `directory`/index.json of the array writeShardFilesOfDevices()
/// laid out, recording the CRC-32C of every file `crcs` names (the files
/// every process wrote, gathered): a directory written across processes
/// is checked shard by shard like one written by one.
Status writeShardedArrayIndex(const std::string &directory, const Mesh &mesh,
                              const Sharding &sharding, DType dtype,
                              const std::vector<int64_t> &globalShape,
                              const std::map<std::string, uint32_t> &crcs,
                              FileSync sync = FileSync::EachFile);

/// Reads and checks `directory`/index.json.
Expected<ShardedArrayIndex> readShardedArrayIndex(const std::string &directory);

/// Reads the shard files of `directory` as described by `index` into padded
/// per-device blocks, indexed by device id.
Expected<std::vector<HostArray>>
readDeviceBlocks(const std::string &directory, const ShardedArrayIndex &index);

/// readDeviceBlocks() for `devices` only: reads just the shard files those
/// devices hold; the other entries of the result are empty arrays.
Expected<std::vector<HostArray>>
readDeviceBlocksOf(const std::string &directory, const ShardedArrayIndex &index,
                   const std::vector<int64_t> &devices);

/// Reads `directory` back into one global array.
Expected<HostArray> readShardedArray(const std::string &directory);

} // namespace partita

#endif // PARTITA_RUNTIME_SHARDEDARRAYDIRECTORY_H

//===- ShardedArrayIndex.h - The index.json of a sharded array --*- C++ -*-===//
//
// A sharded array on disk (docs/Runtime.md; also the checkpoint format) is a
// directory holding `index.json` and one .npy file per distinct shard:
// devices that hold the same shard share one file. This header is the index:
// which file holds which shard, the global ranges it covers and the devices
// that hold it. docs/Runtime.md ("Sharded array directory") describes the
// format; ShardedArrayDirectory.h reads and writes the files.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_SHARDEDARRAYINDEX_H
#define PARTITA_RUNTIME_SHARDEDARRAYINDEX_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Layout.h"

#include <string>
#include <string_view>
#include <vector>

namespace partita {

/// The name of the index file inside a sharded array directory.
inline constexpr const char *shardedArrayIndexName = "index.json";
/// The `format` member of every index.json.
inline constexpr const char *shardedArrayFormatName = "partita-sharded-array";
/// The version this runtime writes and reads.
inline constexpr int64_t shardedArrayFormatVersion = 1;

/// One .npy file of a sharded array directory.
struct ShardFileEntry {
  /// File name inside the directory (no directory part).
  std::string file;
  /// Per dimension, the shard index of the block the file holds.
  std::vector<int64_t> shardIndices;
  /// Per dimension, the global indices the file holds; the file's shape is
  /// their sizes (unpadded).
  std::vector<IndexRange> globalRanges;
  /// Ids of the devices that hold this block, ascending.
  std::vector<int64_t> devices;
  /// CRC-32C of the file's bytes, or -1 when the writer did not record it
  /// (a file another process wrote). Not part of the layout (==).
  int64_t crc32c = -1;

  bool operator==(const ShardFileEntry &o) const {
    return file == o.file && shardIndices == o.shardIndices &&
           globalRanges == o.globalRanges && devices == o.devices;
  }
};

/// What index.json records.
struct ShardedArrayIndex {
  Mesh mesh;
  /// Closed, non-partial; open dimensions are stored as closed.
  Sharding sharding;
  DType dtype = DType::F32;
  std::vector<int64_t> globalShape;
  /// One entry per distinct shard, ordered by shard indices.
  std::vector<ShardFileEntry> files;
};

/// The index for storing a `globalShape` array of `dtype` laid out by
/// `sharding` on `mesh` (which must pass checkShardedLayout): files named
/// `shard_<i>_<j>....npy` after their shard indices (`shard.npy` for a
/// scalar).
ShardedArrayIndex planShardFiles(const Mesh &mesh, const Sharding &sharding,
                                 DType dtype,
                                 const std::vector<int64_t> &globalShape);

/// The text of index.json for `index`.
std::string printShardedArrayIndex(const ShardedArrayIndex &index);

/// Parses and checks the text of an index.json: every member present and
/// well-typed, the mesh and sharding valid, and the file entries exactly
/// those planShardFiles gives for the layout (under any file names). `name`
/// prefixes failure messages.
Expected<ShardedArrayIndex> parseShardedArrayIndex(std::string_view json,
                                                   std::string_view name);

} // namespace partita

#endif // PARTITA_RUNTIME_SHARDEDARRAYINDEX_H

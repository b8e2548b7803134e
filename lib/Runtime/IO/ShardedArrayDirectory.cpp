//===- ShardedArrayDirectory.cpp - Sharded arrays on disk -----------------===//
//
// Reading and writing the files of a sharded array directory. Writing puts
// the shard files first and replaces index.json last, in one rename, so a
// reader sees either the old array or the new one.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/ShardedArrayDirectory.h"
#include "partita/Runtime/IO/Files.h"

#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/ShardedArray.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;

namespace partita {

namespace {

std::string joinPath(const std::string &directory, const std::string &file) {
  return (fs::path(directory) / file).string();
}

Status writeTextFile(const std::string &path, const std::string &contents,
                     FileSync sync = FileSync::EachFile) {
  return writeFileAtomically(path, contents, sync);
}

/// Writes `block` as the file of `entry` in `directory` and records its
/// checksum in the entry.
Status writeBlockFile(const std::string &directory, ShardFileEntry &entry,
                      const HostArray &block, FileSync sync) {
  uint32_t crc = 0;
  if (Status status =
          writeNpy(joinPath(directory, entry.file), block, sync, &crc);
      !status)
    return status;
  entry.crc32c = crc;
  return Status::success();
}

std::vector<int64_t> rangeSizes(const std::vector<IndexRange> &ranges) {
  std::vector<int64_t> sizes;
  for (const IndexRange &range : ranges)
    sizes.push_back(range.size());
  return sizes;
}

/// Names of the files a previous sharded array left in `directory`, so a
/// rewrite can remove the ones it no longer needs. Fails when the directory
/// holds something else.
Expected<std::vector<std::string>>
previousShardFiles(const std::string &directory) {
  std::error_code ec;
  if (!fs::exists(directory, ec))
    return std::vector<std::string>();
  if (!fs::is_directory(directory, ec))
    return Status::error(directory + ": exists and is not a directory");
  std::string indexPath = joinPath(directory, shardedArrayIndexName);
  if (!fs::exists(indexPath, ec)) {
    if (!fs::is_empty(directory, ec))
      return Status::error(directory + ": exists, is not empty and holds no " +
                           shardedArrayIndexName +
                           "; remove it or write somewhere else");
    return std::vector<std::string>();
  }
  Expected<ShardedArrayIndex> previous = readShardedArrayIndex(directory);
  if (!previous)
    return Status::error(previous.status().message() +
                         " (refusing to overwrite; remove the directory)");
  std::vector<std::string> files;
  for (const ShardFileEntry &entry : previous->files)
    files.push_back(entry.file);
  return files;
}

} // namespace

Expected<ShardedArrayIndex>
readShardedArrayIndex(const std::string &directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    return Status::error(directory + ": " +
                         (fs::exists(directory, ec)
                              ? "is not a directory"
                              : "no such sharded array directory"));
  std::string path = joinPath(directory, shardedArrayIndexName);
  if (!fs::exists(path, ec))
    return Status::error(directory + ": has no " +
                         std::string(shardedArrayIndexName) +
                         ", so it is not a sharded array directory");
  Expected<std::string> text = readWholeFile(path);
  if (!text)
    return text.status();
  return parseShardedArrayIndex(*text, path);
}

Status writeShardedArray(const std::string &directory, const HostArray &global,
                         const Mesh &mesh, const Sharding &sharding,
                         FileSync sync) {
  if (Status layout = checkShardedLayout(mesh, sharding, global.shape); !layout)
    return layout;
  if (Status consistent = global.checkConsistent(); !consistent)
    return consistent;
  Expected<std::vector<std::string>> previous = previousShardFiles(directory);
  if (!previous)
    return previous.status();
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec)
    return Status::error(directory + ": cannot create: " + ec.message());

  ShardedArrayIndex index =
      planShardFiles(mesh, sharding, global.dtype, global.shape);
  std::set<std::string> written;
  for (ShardFileEntry &entry : index.files) {
    HostArray block = extractBlock(global, entry.globalRanges,
                                   rangeSizes(entry.globalRanges));
    if (Status status = writeBlockFile(directory, entry, block, sync); !status)
      return status;
    written.insert(entry.file);
  }
  // The index is replaced in one step, so a reader never sees half of it.
  std::string indexPath = joinPath(directory, shardedArrayIndexName);
  if (Status status =
          writeTextFile(indexPath, printShardedArrayIndex(index), sync);
      !status)
    return status;
  for (const std::string &stale : *previous)
    if (!written.count(stale))
      fs::remove(joinPath(directory, stale), ec);
  return Status::success();
}

Status writeShardedArrayFromBlocks(const std::string &directory,
                                   const Mesh &mesh, const Sharding &sharding,
                                   const std::vector<int64_t> &globalShape,
                                   const std::vector<HostArray> &blocks,
                                   FileSync sync) {
  Expected<HostArray> global =
      assembleDeviceBlocks(mesh, sharding, globalShape, blocks);
  if (!global)
    return global.status();
  return writeShardedArray(directory, *global, mesh, sharding, sync);
}

namespace {

/// Reads one shard file and checks it against its index entry.
Expected<HostArray> readShardFile(const std::string &directory,
                                  const ShardedArrayIndex &index,
                                  const ShardFileEntry &entry) {
  std::string path = joinPath(directory, entry.file);
  uint32_t crc = 0;
  Expected<HostArray> block = readNpy(path, &crc);
  if (!block)
    return block;

  if (block->dtype != index.dtype)
    return Status::error(path + ": holds " + dtypeName(block->dtype) +
                         " but the index says " + dtypeName(index.dtype));
  std::vector<int64_t> expected = rangeSizes(entry.globalRanges);
  if (block->shape != expected)
    return Status::error(path + ": has shape " + formatShape(block->shape) +
                         " but covers " + formatRanges(entry.globalRanges) +
                         ", shape " + formatShape(expected));
  // Another file of the same type and shape (another shard, another
  // array) in its place is caught by the index's checksum of the file.
  if (entry.crc32c >= 0 && static_cast<int64_t>(crc) != entry.crc32c)
    return Status::error(path + ": checksum mismatch: the index records " +
                         "CRC-32C " + std::to_string(entry.crc32c) +
                         ", the file has " + std::to_string(crc) +
                         " (a file of another shard or array?)");
  return block;
}

/// Fails unless every shard file is large enough for its block; checked
/// before allocating the global array so a corrupt index cannot make us
/// allocate more than the directory holds.
Status checkShardFileSizes(const std::string &directory,
                           const ShardedArrayIndex &index) {
  for (const ShardFileEntry &entry : index.files) {
    std::string path = joinPath(directory, entry.file);
    std::error_code ec;
    uintmax_t size = fs::file_size(path, ec);
    if (ec)
      return Status::error(path + ": " + ec.message());
    Expected<int64_t> needed =
        checkedNumBytes(index.dtype, rangeSizes(entry.globalRanges));
    if (!needed || size < static_cast<uintmax_t>(*needed))
      return Status::error(path + ": too short for its block " +
                           formatRanges(entry.globalRanges));
  }
  return Status::success();
}

} // namespace

Expected<std::vector<HostArray>>
readDeviceBlocks(const std::string &directory, const ShardedArrayIndex &index) {
  std::vector<int64_t> all(index.mesh.numDevices());
  for (size_t d = 0; d < all.size(); ++d)
    all[d] = static_cast<int64_t>(d);
  return readDeviceBlocksOf(directory, index, all);
}

Expected<std::vector<HostArray>>
readDeviceBlocksOf(const std::string &directory, const ShardedArrayIndex &index,
                   const std::vector<int64_t> &devices) {
  std::vector<int64_t> local =
      localShape(index.mesh, index.sharding, index.globalShape);
  std::set<int64_t> wanted(devices.begin(), devices.end());
  std::vector<HostArray> blocks(index.mesh.numDevices());
  for (const ShardFileEntry &entry : index.files) {
    bool needed = false;
    for (int64_t device : entry.devices)
      needed |= wanted.count(device) > 0;
    if (!needed)
      continue;
    Expected<HostArray> stored = readShardFile(directory, index, entry);
    if (!stored)
      return stored.status();
    std::vector<IndexRange> whole;
    for (int64_t size : stored->shape)
      whole.push_back({0, size});
    HostArray padded = extractBlock(*stored, whole, local);
    for (int64_t device : entry.devices)
      if (wanted.count(device))
        blocks[device] = padded;
  }
  return blocks;
}

Status writeShardFilesOfDevices(
    const std::string &directory, const Mesh &mesh, const Sharding &sharding,
    DType dtype, const std::vector<int64_t> &globalShape,
    const std::vector<HostArray> &blocksByDevice,
    const std::vector<int64_t> &devices, bool writeIndex, FileSync sync,
    std::map<std::string, uint32_t> *written) {
  if (Status layout = checkShardedLayout(mesh, sharding, globalShape); !layout)
    return layout;
  ShardedArrayIndex index = planShardFiles(mesh, sharding, dtype, globalShape);
  std::set<int64_t> mine(devices.begin(), devices.end());
  for (ShardFileEntry &entry : index.files) {
    int64_t writer = entry.devices.front();
    if (!mine.count(writer))
      continue;
    if (writer >= static_cast<int64_t>(blocksByDevice.size()) ||
        blocksByDevice[writer].dtype != dtype)
      return Status::error("device " + std::to_string(writer) +
                           " has no block of the array to write");
    std::vector<IndexRange> corner;
    for (const IndexRange &range : entry.globalRanges)
      corner.push_back({0, range.size()});
    HostArray block = extractBlock(blocksByDevice[writer], corner,
                                   rangeSizes(entry.globalRanges));
    // The index records the checksums of the files this writer wrote.
    if (Status status = writeBlockFile(directory, entry, block, sync); !status)
      return status;
    if (written)
      (*written)[entry.file] = entry.crc32c;
  }
  if (!writeIndex)
    return Status::success();
  return writeTextFile(joinPath(directory, shardedArrayIndexName),
                       printShardedArrayIndex(index), sync);
}

Status writeShardedArrayIndex(const std::string &directory, const Mesh &mesh,
                              const Sharding &sharding, DType dtype,
                              const std::vector<int64_t> &globalShape,
                              const std::map<std::string, uint32_t> &crcs,
                              FileSync sync) {
  if (Status layout = checkShardedLayout(mesh, sharding, globalShape); !layout)
    return layout;
  ShardedArrayIndex index = planShardFiles(mesh, sharding, dtype, globalShape);
  for (ShardFileEntry &entry : index.files)
    if (auto it = crcs.find(entry.file); it != crcs.end())
      entry.crc32c = it->second;
  return writeTextFile(joinPath(directory, shardedArrayIndexName),
                       printShardedArrayIndex(index), sync);
}

Expected<HostArray> readShardedArray(const std::string &directory) {
  Expected<ShardedArrayIndex> index = readShardedArrayIndex(directory);
  if (!index)
    return index.status();
  if (Status sizes = checkShardFileSizes(directory, *index); !sizes)
    return sizes;
  HostArray global = HostArray::zeros(index->dtype, index->globalShape);
  for (const ShardFileEntry &entry : index->files) {
    Expected<HostArray> stored = readShardFile(directory, *index, entry);
    if (!stored)
      return stored.status();
    placeBlock(global, *stored, entry.globalRanges);
  }
  return global;
}

} // namespace partita

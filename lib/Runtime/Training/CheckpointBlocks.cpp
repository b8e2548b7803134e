//===- CheckpointBlocks.cpp - A checkpoint's data files -------------------===//
//
// The blocks of a checkpoint (Checkpoint.h): written by each process into
// one file, one after another, each with its CRC-32C, and read back a
// region at a time (docs/Training.md, "Checkpoints").
//
//===----------------------------------------------------------------------===//
#include "CheckpointBlocks.h"

#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Runtime/IO/Files.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

namespace partita {
namespace checkpoint_blocks {

namespace {

/// Test hook: PARTITA_DEBUG_KILL_CHECKPOINT=N kills the process (SIGKILL)
/// halfway through writing the checkpoint of step N.
bool killWhileWriting(int64_t step) {
  const char *spec = std::getenv("PARTITA_DEBUG_KILL_CHECKPOINT");
  return spec && std::strtoll(spec, nullptr, 10) == step;
}

/// The bytes checksummed and then written at a time.
constexpr size_t kBatchBytes = size_t(1) << 20;

int64_t volume(const std::vector<int64_t> &size) {
  int64_t count = 1;
  for (int64_t s : size)
    count *= s;
  return count;
}

/// The distinct blocks of tensor `t` (`value`) whose writer is one of
/// `devices` (all devices when null), as (device, box) pairs in device
/// order. A block's writer is one of its holders, taken in turn by tensor
/// and block, so that the replicas of a data-parallel layout share the
/// writing (every process computes the same choice).
std::vector<std::pair<int64_t, std::vector<IndexRange>>>
ownedBlocks(const Mesh &mesh, const CheckpointValue &value,
            const std::vector<int64_t> *devices, size_t t) {
  std::vector<int64_t> order;
  if (devices)
    order = *devices;
  else
    for (int64_t d = 0; d < mesh.numDevices(); ++d)
      order.push_back(d);
  std::sort(order.begin(), order.end());
  std::vector<std::pair<int64_t, std::vector<IndexRange>>> owned;
  for (int64_t d : order) {
    if (!value.whole &&
        (d < 0 || d >= static_cast<int64_t>(value.blocks.size()) ||
         value.blocks[d].bytes.empty()))
      continue;
    std::vector<IndexRange> box =
        deviceBlock(mesh, value.sharding, value.globalShape, d);
    bool empty = false;
    std::vector<int64_t> first;
    for (const IndexRange &range : box) {
      empty = empty || range.size() <= 0;
      first.push_back(range.begin);
    }
    if (empty)
      continue;
    std::vector<int64_t> holders =
        devicesHolding(mesh, value.sharding, value.globalShape, first);
    auto turn = static_cast<size_t>(holders.front()) + t;
    if (holders[turn % holders.size()] != d)
      continue;
    owned.emplace_back(d, std::move(box));
  }
  return owned;
}

} // namespace

Expected<std::vector<Json>> writeDataFile(const std::string &directory,
                                          const std::string &file,
                                          const CheckpointState &state,
                                          const std::vector<int64_t> *devices,
                                          bool writeWhole) {
  // The blocks in file order, then their bytes checksummed and written a
  // megabyte at a time: each slice is still in the cache when the write
  // copies it, and 673 writes of one block each had taken twice the time
  // of one write of the same bytes (bench/checkpoint.py).
  std::vector<Json> entries(state.values.size(), Json::array());
  std::vector<struct iovec> pieces;
  std::vector<Json *> pieceEntries;
  std::deque<std::vector<uint8_t>> staged;
  int64_t offset = 0;
  auto put = [&](size_t t, const uint8_t *data, int64_t bytes,
                 const std::vector<int64_t> &start,
                 const std::vector<int64_t> &size) {
    Json entry = Json::object();
    entry["file"] = file;
    entry["offset"] = offset;
    entry["start"] = start;
    entry["size"] = size;
    entries[t].push_back(std::move(entry));
    pieces.push_back({const_cast<uint8_t *>(data), static_cast<size_t>(bytes)});
    offset += bytes;
  };
  for (size_t t = 0; t < state.values.size(); ++t) {
    const CheckpointValue &value = state.values[t];
    int64_t element = dtypeSize(value.dtype);
    if (value.whole && value.sharding.partialKind != PartialKind::None) {
      // A partial sum's value has no layout: one block.
      if (writeWhole)
        put(t, value.blocks[0].bytes.data(),
            static_cast<int64_t>(value.blocks[0].bytes.size()),
            std::vector<int64_t>(value.globalShape.size(), 0),
            value.globalShape);
      continue;
    }
    if (value.whole && !writeWhole)
      continue;
    // A value held whole is cut as its sharding lays it out, as the
    // devices' blocks would be.
    for (const auto &[device, box] :
         ownedBlocks(state.mesh, value, value.whole ? nullptr : devices, t)) {
      const HostArray &block =
          value.whole ? value.blocks[0] : value.blocks[device];
      std::vector<int64_t> start, size;
      for (const IndexRange &range : box) {
        start.push_back(range.begin);
        size.push_back(range.size());
      }
      const uint8_t *data = block.bytes.data();
      int64_t bytes = volume(size) * element;
      if (size != block.shape) {
        // A box of a whole value, or an uneven trailing block's unpadded
        // corner.
        std::vector<uint8_t> &copy = staged.emplace_back(bytes);
        std::vector<int64_t> zeros(size.size(), 0);
        copyTensorBox(block.bytes.data(), block.shape,
                      value.whole ? start : zeros, copy.data(), size, zeros,
                      size, element);
        data = copy.data();
      }
      put(t, data, bytes, start, size);
    }
  }
  // Every entry is in place now (a vector's growth no longer moves it).
  for (Json &list : entries)
    for (Json &entry : list)
      pieceEntries.push_back(&entry);
  std::string path = directory + "/" + file;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("cannot create '" + path +
                         "': " + std::strerror(errno));
  Status status = Status::success();
  std::vector<struct iovec> batch;
  size_t batchBytes = 0;
  auto flush = [&]() {
    size_t next = 0;
    while (status.ok() && next < batch.size()) {
      int count = static_cast<int>(
          std::min<size_t>(batch.size() - next, static_cast<size_t>(IOV_MAX)));
      ssize_t done = ::writev(fd, &batch[next], count);
      if (done < 0 && errno == EINTR)
        continue;
      if (done <= 0) {
        status = Status::error("cannot write '" + path +
                               "': " + std::strerror(errno));
        break;
      }
      // Past the slices written whole; the rest of one cut short.
      auto left = static_cast<size_t>(done);
      while (next < batch.size() && left >= batch[next].iov_len)
        left -= batch[next++].iov_len;
      if (left > 0) {
        batch[next].iov_base =
            static_cast<uint8_t *>(batch[next].iov_base) + left;
        batch[next].iov_len -= left;
      }
    }
    batch.clear();
    batchBytes = 0;
  };
  bool kill = killWhileWriting(state.meta.step);
  for (size_t k = 0; status.ok() && k < pieces.size(); ++k) {
    // The test hook: killed halfway through the data.
    if (kill && k == pieces.size() / 2) {
      flush();
      std::raise(SIGKILL);
    }
    const auto *data = static_cast<const uint8_t *>(pieces[k].iov_base);
    size_t bytes = pieces[k].iov_len, at = 0;
    uint32_t crc = 0;
    while (at < bytes && status.ok()) {
      size_t slice = std::min(bytes - at, kBatchBytes - batchBytes);
      crc = crc32c(data + at, slice, crc);
      batch.push_back({const_cast<uint8_t *>(data + at), slice});
      batchBytes += slice;
      at += slice;
      if (batchBytes >= kBatchBytes)
        flush();
    }
    (*pieceEntries[k])["crc32c"] = crc;
  }
  flush();
  if (status.ok() && ::fdatasync(fd) != 0)
    status =
        Status::error("cannot sync '" + path + "': " + std::strerror(errno));
  ::close(fd);
  if (!status.ok())
    return status;
  return entries;
}

Status readRegion(const std::string &directory, const CheckpointTensor &tensor,
                  const std::vector<IndexRange> &ranges,
                  const std::vector<int64_t> &paddedShape, uint8_t *into) {
  int64_t element = dtypeSize(tensor.dtype);
  size_t rank = tensor.shape.size();
  std::vector<uint8_t> row;
  for (const StoredBlock &block : tensor.blocks) {
    // The overlap, in global indices.
    std::vector<int64_t> low(rank), high(rank);
    bool overlaps = true;
    for (size_t d = 0; d < rank; ++d) {
      low[d] = std::max(block.start[d], ranges[d].begin);
      high[d] = std::min(block.start[d] + block.size[d], ranges[d].end);
      overlaps = overlaps && low[d] < high[d];
    }
    if (!overlaps)
      continue;
    std::string path = directory + "/" + block.file;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::error("cannot read '" + path +
                           "': " + std::strerror(errno));
    // One contiguous run of the innermost dimension per outer index.
    int64_t run = rank ? high[rank - 1] - low[rank - 1] : 1;
    std::vector<int64_t> at = low;
    Status status = Status::success();
    for (bool more = true; more && status.ok();) {
      int64_t source = 0, target = 0;
      for (size_t d = 0; d < rank; ++d) {
        source = source * block.size[d] + (at[d] - block.start[d]);
        target = target * paddedShape[d] + (at[d] - ranges[d].begin);
      }
      uint8_t *destination = into + target * element;
      int64_t want = run * element, got = 0;
      while (got < want) {
        ssize_t done =
            ::pread(fd, destination + got, static_cast<size_t>(want - got),
                    block.offset + source * element + got);
        if (done < 0 && errno == EINTR)
          continue;
        if (done <= 0) {
          status = Status::error(path + ": " + tensor.key +
                                 ": the file ends inside a block");
          break;
        }
        got += done;
      }
      // The next outer index (the innermost dimension is the run).
      more = false;
      for (size_t d = rank >= 1 ? rank - 1 : 0; d-- > 0;) {
        if (++at[d] < high[d]) {
          more = true;
          break;
        }
        at[d] = low[d];
      }
    }
    ::close(fd);
    if (!status.ok())
      return status;
  }
  return Status::success();
}

Status checkFinite(const std::string &where, const CheckpointTensor &tensor,
                   const std::vector<IndexRange> &ranges,
                   const std::vector<int64_t> &paddedShape,
                   const uint8_t *data) {
  DType dtype = tensor.dtype;
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::BF16 &&
      dtype != DType::F16)
    return Status::success();
  size_t rank = tensor.shape.size();
  std::vector<int64_t> size(rank);
  for (size_t d = 0; d < rank; ++d)
    size[d] = ranges[d].size();
  int64_t count = volume(size);
  auto at = [&](int64_t i) -> double {
    switch (dtype) {
    case DType::F32: {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      return v;
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      return v;
    }
    default: {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      return dtype == DType::BF16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
    }
    }
  };
  for (int64_t i = 0; i < count; ++i) {
    // Element i of the region: its place in the padded array and in the
    // global value.
    int64_t rest = i, local = 0, global = 0, localStride = 1, globalStride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t index = rest % size[d];
      rest /= size[d];
      local += index * localStride;
      global += (ranges[d].begin + index) * globalStride;
      localStride *= paddedShape[d];
      globalStride *= tensor.shape[d];
    }
    double value = at(local);
    if (!std::isfinite(value))
      return Status::error(where + ": " + tensor.key + " holds " +
                           std::to_string(value) + " (element " +
                           std::to_string(global) +
                           "): the run that saved it had diverged");
  }
  return Status::success();
}

Status verifyBlock(const std::string &directory, const CheckpointTensor &tensor,
                   const StoredBlock &block) {
  int64_t bytes = volume(block.size) * dtypeSize(tensor.dtype);
  std::string path = directory + "/" + block.file;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error("cannot read '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  int64_t got = 0;
  while (got < bytes) {
    ssize_t done =
        ::pread(fd, data.data() + got, static_cast<size_t>(bytes - got),
                block.offset + got);
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      break;
    got += done;
  }
  ::close(fd);
  if (got != bytes)
    return Status::error(path + ": " + tensor.key +
                         ": the file ends inside a block");
  if (crc32c(data.data(), data.size()) != block.crc32c)
    return Status::error(path + ": " + tensor.key + " at byte " +
                         std::to_string(block.offset) +
                         ": checksum mismatch (the file is corrupt)");
  return Status::success();
}

} // namespace checkpoint_blocks
} // namespace partita

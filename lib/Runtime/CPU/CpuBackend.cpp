//===- CpuBackend.cpp - The CPU backend -----------------------------------===//

#include "partita/Runtime/Program/Backend.h"
#include "partita/Runtime/CPU/Kernels.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

using namespace partita;

Backend::~Backend() = default;

namespace {

/// Blocks released by CPU backends, kept for the next backend that asks
/// for the same size: a training loop runs a new backend every step, and
/// fresh memory from the system costs a page fault per 4 KiB on first touch
/// (a third of a small GPT's step). A reused block holds what its last
/// user left: every kernel writes its results before anything reads them
/// (a program reruns on one arena with --repeat the same way). At most
/// kCachedBytes are kept; the cache frees them when the process ends.
class BlockCache {
public:
  static BlockCache &get() {
    static BlockCache cache;
    return cache;
  }
  /// A block of exactly `bytes` from the cache, or null.
  void *take(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.find(bytes);
    if (it == blocks.end())
      return nullptr;
    void *block = it->second;
    blocks.erase(it);
    cached -= bytes;
    return block;
  }
  /// Keeps `block` of `bytes`, or frees it when the cache is full.
  void give(void *block, int64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (bytes > 0 && cached + bytes <= kCachedBytes) {
        blocks.emplace(bytes, block);
        cached += bytes;
        return;
      }
    }
    std::free(block);
  }

  /// Frees every kept block.
  void clear() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[bytes, block] : blocks)
      std::free(block);
    blocks.clear();
    cached = 0;
  }

  ~BlockCache() { clear(); }

private:
  static constexpr int64_t kCachedBytes = int64_t(1) << 30;
  std::mutex mutex;
  std::multimap<int64_t, void *> blocks;
  int64_t cached = 0;
};

class CpuBackend final : public Backend {
public:
  /// What the backend still holds goes back with it.
  ~CpuBackend() override {
    for (auto &[block, bytes] : sizes)
      BlockCache::get().give(block, bytes);
  }
  const char *name() const override { return "cpu"; }

  Expected<void *> allocate(int64_t bytes) override {
    if (bytes < 0)
      return Status::error("cpu: cannot allocate a negative size");
    void *memory = bytes > 0 ? BlockCache::get().take(bytes) : nullptr;
    if (!memory)
      memory = std::calloc(static_cast<size_t>(bytes > 0 ? bytes : 1), 1);
    if (!memory)
      return Status::error("cpu: out of memory allocating " +
                           std::to_string(bytes) + " bytes");
    sizes[memory] = bytes;
    held += bytes;
    peak = std::max(peak, held);
    return memory;
  }
  void release(void *device) override {
    auto it = sizes.find(device);
    if (it == sizes.end()) {
      std::free(device);
      return;
    }
    int64_t bytes = it->second;
    held -= bytes;
    sizes.erase(it);
    BlockCache::get().give(device, bytes);
  }
  int64_t peakBytes() const override { return peak; }

  Status copyToDevice(void *device, const void *host, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(device, host, static_cast<size_t>(bytes));
    return Status::success();
  }
  Status copyToHost(void *host, const void *device, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(host, device, static_cast<size_t>(bytes));
    return Status::success();
  }
  Status copyOnDevice(void *to, const void *from, int64_t bytes) override {
    if (bytes > 0 && to != from)
      std::memmove(to, from, static_cast<size_t>(bytes));
    return Status::success();
  }

  Status run(const Instruction &inst,
             const std::vector<TensorType> &operandTypes,
             const std::vector<const void *> &operands,
             const std::vector<TensorType> &resultTypes,
             const std::vector<void *> &results,
             const std::vector<HostArray> &constants) override {
    return cpu::runKernel(inst, operandTypes, operands, resultTypes, results,
                          &constants);
  }

  Status synchronize() override { return Status::success(); }
  bool hostAddressable() const override { return true; }

private:
  std::unordered_map<void *, int64_t> sizes;
  int64_t held = 0, peak = 0;
};

} // namespace

std::unique_ptr<Backend> partita::createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

void partita::releaseCachedCpuBlocks() { BlockCache::get().clear(); }

//===- RankValues.h - Values on a pipeline rank's devices -------*- C++ -*-===//
//
// Inside the pipeline runtime (PipelineRun.cpp): a value a stage program
// reads or writes, held either whole on the host or as the blocks of the
// rank's devices, laid out as the program value that made it. A program
// reading a value laid out as its own input takes the blocks as they are —
// an activation handed from one stage's devices to the next's, a gradient
// sum kept as the devices' addends from micro-batch to micro-batch —
// and only a value in another layout is assembled and cut again
// (docs/Pipeline.md, "Values on the devices"). Also the mailbox that keeps
// the values in flight between a step's programs.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_PIPELINE_RANKVALUES_H
#define PARTITA_LIB_RUNTIME_PIPELINE_RANKVALUES_H

#include "partita/Runtime/Execution/Run.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace partita {
namespace rank_values {

/// A value whole on the host, or as blocks laid out by `layout` (a value
/// of `owner`), indexed by device id of the rank's sub-mesh.
struct RankValue {
  HostArray whole;
  std::vector<HostArray> blocks;
  const Executable *owner = nullptr;
  const ExecutableValue *layout = nullptr;

  bool inBlocks() const { return layout != nullptr; }
  /// Bytes held (every block, or the whole array).
  int64_t bytes() const;
};

/// `array` as a whole value.
RankValue wholeValue(HostArray array);

/// The whole array of `value` (its blocks assembled: replicas checked,
/// partial sums added).
Expected<HostArray> toWhole(const RankValue &value);

/// Whether `value` is in blocks laid out as input `index` of `program`.
bool laidOutAs(const RankValue &value, const Executable &program, size_t index);

/// `value` as blocks laid out as input `index` of `program` (assembled and
/// cut on the host; a partial sum's whole value to its first member).
Expected<RankValue> relayout(const RankValue &value, const Executable &program,
                             size_t index);

/// Runs `program` on its mesh's devices as threads of this process with
/// `inputs` (one per program input): a value in blocks laid out as the
/// input is taken as it is, any other is assembled (if in blocks) and cut
/// for the input (a partial sum's whole value to its group's first
/// member). Returns every output as blocks laid out by the program.
Expected<std::vector<RankValue>>
runOnRank(const Executable &program,
          const std::vector<const RankValue *> &inputs);

/// A program output of one micro-batch: (stage, program, micro-batch,
/// output).
using ValueKey = std::tuple<int32_t, int, int32_t, int32_t>;

/// The values in flight between programs, and the bytes each rank holds.
class Mailbox {
public:
  explicit Mailbox(int ranks) : held(ranks, 0), peak(ranks, 0) {}

  void put(ValueKey key, int readers, int rank, RankValue value) {
    std::lock_guard<std::mutex> lock(mutex);
    int64_t bytes = value.bytes();
    held[rank] += bytes;
    peak[rank] = std::max(peak[rank], held[rank]);
    values[key] = Entry{std::move(value), readers, rank};
    ready.notify_all();
  }

  /// Waits for `key`; null when the run failed meanwhile. The value stays
  /// until its last reader releases it.
  const RankValue *get(ValueKey key) {
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return failed || values.count(key); });
    if (failed)
      return nullptr;
    return &values[key].value;
  }

  /// One reader of `key` is done with it.
  void release(ValueKey key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = values.find(key);
    if (found == values.end() || --found->second.readers > 0)
      return;
    held[found->second.rank] -= found->second.value.bytes();
    values.erase(found);
  }

  void fail() {
    std::lock_guard<std::mutex> lock(mutex);
    failed = true;
    ready.notify_all();
  }

  bool hasFailed() {
    std::lock_guard<std::mutex> lock(mutex);
    return failed;
  }

  std::vector<int64_t> peakBytes() {
    std::lock_guard<std::mutex> lock(mutex);
    return peak;
  }

private:
  struct Entry {
    RankValue value;
    int readers = 0;
    int rank = 0;
  };
  std::mutex mutex;
  std::condition_variable ready;
  std::map<ValueKey, Entry> values;
  std::vector<int64_t> held, peak;
  bool failed = false;
};

} // namespace rank_values
} // namespace partita

#endif // PARTITA_LIB_RUNTIME_PIPELINE_RANKVALUES_H

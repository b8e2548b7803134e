//===- BlockwiseRun.h - A run that never holds a whole array ----*- C++ -*-===//
//
// `partita run` and `partita-exec run` on CPU devices without `--check`:
// each device draws or reads its own input blocks on its thread and lets
// them go once on the device, and the outputs are summarised, written and
// compared one distinct block at a time. No global-shape array is made;
// what the run holds is the devices' buffers and their output blocks
// (docs/Runtime.md, "Runs without whole arrays").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_EXECUTION_BLOCKWISERUN_H
#define PARTITA_RUNTIME_EXECUTION_BLOCKWISERUN_H

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/Program/RunMemory.h"

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace partita {

/// Writes the region `ranges` of program input `index`'s global value into
/// `into`, the zeroed bytes of an array of `paddedShape`.
using InputRegion = std::function<Status(
    size_t index, const std::vector<IndexRange> &ranges,
    const std::vector<int64_t> &paddedShape, uint8_t *into)>;

/// Device `device`'s block of input `index`, equal to what
/// inputBlocksByDevice() cuts from the global value, made from its region
/// alone (a partial sum's leader also draws its group's addends).
Expected<HostArray>
deviceInputBlock(const Executable &program, size_t index, int64_t device,
                 const InputRegion &region,
                 PartialInputs policy = PartialInputs::RandomAddends);
/// deviceInputBlock() written into `into`, the zeroed bytes of the block
/// (the program's local type of the input).
Status
writeDeviceInputBlock(const Executable &program, size_t index, int64_t device,
                      const InputRegion &region, uint8_t *into,
                      PartialInputs policy = PartialInputs::RandomAddends);

/// randomInputs()'s values, a region at a time.
InputRegion randomInputRegions(const Executable &program, uint64_t seed);

/// readInputs()'s values (the same paths and checks), a region at a time:
/// a .npy file's region is read alone; a sharded-array directory is read
/// whole once, when it is first asked for, and kept.
Expected<InputRegion> fileInputRegions(const Executable &program,
                                       const std::string &paths);

/// What a blockwise run of `program` holds (RunKind::Blockwise), with the
/// inputs of `paths` (an `--inputs` list; empty: random inputs) that are
/// sharded-array directories counted whole.
RunMemory blockwiseRunMemory(const Executable &program,
                             const std::string &paths);

/// One distinct block of output `output`: the leading ranges-sized corner
/// of `block` (of the padded local shape) is the global value at `ranges`.
using OutputBlockSink =
    std::function<Status(size_t output, const std::vector<IndexRange> &ranges,
                         const HostArray &block)>;

/// Hands each distinct block of every output to `sink`, as
/// assembleOutputs() would place it: replicas checked to agree bit for bit,
/// a partial sum's addends added in the same order.
Status
forEachOutputBlock(const Executable &program,
                   const std::vector<std::vector<HostArray>> &outputsByDevice,
                   const OutputBlockSink &sink);

/// Runs `program` on every device of its mesh as threads of this process
/// (CPU backends, the in-process communicator), each device writing its
/// input blocks from `region` straight into its buffers on its own thread,
/// then hands the outputs to `sink` block by block.
Status runOnCpuDevicesBlockwise(const Executable &program,
                                const InputRegion &region,
                                const OutputBlockSink &sink,
                                RunStatistics *statistics = nullptr);

/// What a blockwise run does with its outputs: summaryLines() gives
/// summarizeArray()'s line of each; with a directory, writes them as
/// writeOutputs() does; with an expected directory, compares them as
/// expectOutputs() does (its files read a region at a time).
class BlockwiseOutputs {
public:
  static Expected<std::unique_ptr<BlockwiseOutputs>>
  create(const Executable &program, const std::string &outputsDirectory,
         const std::string &expectDirectory);
  ~BlockwiseOutputs();
  OutputBlockSink sink();
  /// After the run: "f32[4x8] sum=… min=… max=…" per output.
  std::vector<std::string> summaryLines() const;
  /// After the run: the written files made durable and in place.
  Status finishWriting();
  /// After the run: expectOutputs()'s report lines and verdict.
  Status finishExpecting(std::string &report) const;

private:
  BlockwiseOutputs() = default;
  Status take(size_t output, const std::vector<IndexRange> &ranges,
              const HostArray &block);
  struct Summary {
    double sum = 0, low = std::numeric_limits<double>::infinity(),
           high = -std::numeric_limits<double>::infinity();
  };
  const Executable *program = nullptr;
  std::vector<Summary> summaries;
  std::vector<std::unique_ptr<NpyRegionWriter>> writers;
  std::string expectDirectory;
  std::vector<NpyLayout> expected;
  std::vector<Comparison> comparisons;
  std::vector<double> slack;
};

} // namespace partita

#endif // PARTITA_RUNTIME_EXECUTION_BLOCKWISERUN_H

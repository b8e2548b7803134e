//===- RankValues.h - Values on a pipeline rank's devices -------*- C++ -*-===//
//
// Inside the pipeline runtime (PipelineRun.cpp): a value a stage program
// reads or writes, held either whole on the host or as the blocks of the
// rank's devices, laid out as the program value that made it. A program
// reading a value laid out as its own input takes the blocks as they are —
// an activation handed from one stage's devices to the next's, a gradient
// sum kept as the devices' addends from micro-batch to micro-batch —
// and only a value in another layout is assembled and cut again
// (docs/Pipeline.md, "Values on the devices").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_PIPELINE_RANKVALUES_H
#define PARTITA_LIB_RUNTIME_PIPELINE_RANKVALUES_H

#include "partita/Runtime/Execution/Run.h"

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

/// Runs `program` on its mesh's devices as threads of this process with
/// `inputs` (one per program input): a value in blocks laid out as the
/// input is taken as it is, any other is assembled (if in blocks) and cut
/// for the input (a partial sum's whole value to its group's first
/// member). Returns every output as blocks laid out by the program.
Expected<std::vector<RankValue>>
runOnRank(const Executable &program,
          const std::vector<const RankValue *> &inputs);

} // namespace rank_values
} // namespace partita

#endif // PARTITA_LIB_RUNTIME_PIPELINE_RANKVALUES_H

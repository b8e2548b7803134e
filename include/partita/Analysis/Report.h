//===- Report.h - What a partitioned program communicates and holds -*- C++ -*-//
//
// The report of docs/Partitioning.md ("The report"): one struct and one JSON
// serializer for the CLI's `--report` and the C++ API: the meshes, every collective (kind, axes,
// shapes, bytes per device by the nccl-tests bus-traffic convention, count
// per step, location, reason), totals with the estimated time, and memory
// per device by role from the liveness analysis.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_ANALYSIS_REPORT_H
#define PARTITA_ANALYSIS_REPORT_H

#include "partita/Sharding/Cost.h"

#include <array>
#include <map>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace partita {

/// One collective of the program.
struct CollectiveRecord {
  std::string kind;
  std::string mesh;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> inShape;
  std::vector<int64_t> outShape;
  std::string dtype;
  /// Bytes each device sends per execution (bus-traffic convention).
  double bytesPerDevice = 0;
  /// Size of the local result buffer.
  int64_t resultBytes = 0;
  /// Executions per call of the function (trip counts of enclosing loops).
  int64_t count = 1;
  std::string loc;
  std::string reason;
  /// Estimated time of one execution, µs.
  double timeUs = 0;
};

/// The report.
struct Report {
  struct MeshInfo {
    std::string name;
    std::vector<MeshAxis> axes;
  };
  std::vector<MeshInfo> meshes;
  std::vector<CollectiveRecord> collectives;
  /// Sum of counts, of bytes_per_device × count, of time × count.
  int64_t totalCollectives = 0;
  double totalBytesPerDevice = 0;
  double estTimeUs = 0;
  /// Peak of the live buffers of one device, and the bytes of each role
  /// (param, grad, opt_state from argument roles; activation: everything
  /// else alive at the peak, inputs included).
  int64_t peakBytesPerDevice = 0;
  std::map<std::string, int64_t> bytesByRole;
  /// The largest buffers alive at the peak, largest first (at most
  /// kPeakValues): what to shard, recompute or shrink to lower it.
  struct PeakValue {
    std::string value, type, role;
    int64_t bytes = 0;
  };
  static constexpr size_t kPeakValues = 10;
  std::vector<PeakValue> peakValues;
  /// Of the same function: the bytes alive at each program point (the
  /// entry, then ops in pre-order) by role: param, grad, opt_state,
  /// activation (not in the JSON; the HTML report draws it). Filled only
  /// when analyzeModule is asked for it.
  std::vector<std::array<int64_t, 4>> liveBytesByRole;
  /// Bytes per device of the public function's arguments by role (param,
  /// grad, opt_state, input): what a training loop holds between steps.
  std::map<std::string, int64_t> persistentBytesByRole;
  /// Uneven dimensions (docs/Partitioning.md): padding bytes per device in
  /// the public functions' arguments and results (averaged over devices),
  /// and the ops the partitioner added for them: pads before a split, cuts
  /// after a gather, masks before a reduction.
  struct Padding {
    int64_t bytesPerDevice = 0;
    int64_t pads = 0, cuts = 0, masks = 0;
  } padding;

  /// The JSON of docs/Partitioning.md, keys in a fixed order (deterministic).
  std::string toJson() const;
};

/// Builds the report of `module` (partitioned or not; all_slice is not a
/// collective and is not listed).
/// With `memoryOverProgram`, also fills liveBytesByRole (the HTML report's
/// chart; left empty otherwise, as every other caller needs only the peak).
Report analyzeModule(mlir::ModuleOp module, const Interconnect &interconnect,
                     bool memoryOverProgram = false);

} // namespace partita

#endif // PARTITA_ANALYSIS_REPORT_H

//===- PlanPipelined.h - What a pipelined layout costs ----------*- C++ -*-===//
//
// partita plan's figures for a layout with pipeline parallelism
// (docs/Planning.md, "Pipeline parallelism").
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_PARTITA_PLANPIPELINED_H
#define PARTITA_TOOLS_PARTITA_PLANPIPELINED_H

#include "StepCost.h"

#include "partita/Models/Models.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/Diagnostics.h"

#include <functional>
#include <map>
#include <string>

namespace partita::cli {

/// While alive, keeps the first error a compile in `context` reports and
/// prints none (plan compiles many layouts; their failures are listed).
class FirstError {
public:
  explicit FirstError(mlir::MLIRContext &context);
  /// The first error's text, or "(no message)".
  std::string message() const;

private:
  std::string first;
  mlir::ScopedDiagnosticHandler handler;
};

/// A pipelined layout: `ranks` pipeline ranks of `rankMesh` each, 1F1B over
/// `microBatches` micro-batches of `microConfig.batch` sequences.
struct PipelinedRequest {
  ModelConfig microConfig;
  Mesh rankMesh;
  int64_t ranks = 2;
  int64_t microBatches = 2;
  Remat remat = Remat::None;
  std::string rules;
  /// The per-axis spec the passes read (the rank's axes).
  std::string interconnectFile;
  /// The link between neighbouring ranks.
  AxisLink pipeLink;
};

struct PipelinedEstimate {
  double memory = 0; // bytes per device, estimated
  double computeSeconds = 0, commSeconds = 0;
  double bubble = 0; // the simulated schedule's idle fraction
  int64_t collectives = 0;
  std::map<std::string, int64_t> byRole;
};

/// Compiles `request` and estimates its step; `seconds` prices one
/// compiled program (compute, communication).
Expected<PipelinedEstimate> estimatePipelined(
    const PipelinedRequest &request,
    const std::function<std::pair<double, double>(const Executable &)>
        &seconds);

} // namespace partita::cli

#endif // PARTITA_TOOLS_PARTITA_PLANPIPELINED_H

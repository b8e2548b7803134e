//===- Check.h - A partitioned program against its reference ----*- C++ -*-===//
//
// The oracle of `partita run --check` (docs/Runtime.md, "Differential
// testing"), for every front end that compiles and runs: the CLI, the C++
// API, a Python package. A program is compiled for N devices and run; its
// reference — the unpartitioned program on one device, or, for programs
// with manual computations, the program replicated around them on the same
// devices — runs on the same inputs; every output is compared within
// per-dtype tolerances.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DRIVER_CHECK_H
#define PARTITA_DRIVER_CHECK_H

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Status.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace partita {

/// What a partitioned program's outputs are compared with.
enum class ReferenceKind {
  /// The unpartitioned program on one device.
  Unpartitioned,
  /// The program replicated around its manual computations (their bodies
  /// are per-device code), partitioned and run on the same devices.
  ReplicatedAroundManual,
};

/// "the unpartitioned program on cpu:1" or "the program replicated around
/// its manual computations".
const char *describeReference(ReferenceKind kind);

/// The reference's outputs and which reference it was.
struct ReferenceOutputs {
  std::vector<HostArray> outputs;
  ReferenceKind kind = ReferenceKind::Unpartitioned;
};

/// Whether `module` is already the per-device program (partita-partition
/// marks it `partita.partitioned`).
bool isPartitioned(mlir::ModuleOp module);

/// The error of --check on an already partitioned module.
extern const char *const kNeedsGlobalProgram;

/// Compiles the module at hand for a run on `deviceCount` devices (an
/// already partitioned module is lowered as it is): the
/// train step first when `options` asks for one (so the reference is the
/// same step; the request is then cleared from `options`), then, for more
/// than one device, the pipeline up to `options.stage`. `reference`
/// receives the module before partitioning. Diagnostics go to the module's
/// context; a failure reported there has an empty message.
Expected<Executable> compileForRun(mlir::ModuleOp module,
                                   PipelineOptions &options,
                                   int64_t deviceCount,
                                   mlir::OwningOpRef<mlir::ModuleOp> &reference,
                                   const LoweringOptions &lowering = {});

/// Runs the reference of `reference` (a module before partitioning, as
/// compileForRun leaves it; changed in place) on `inputs` on CPU devices;
/// fails with kNeedsGlobalProgram for an already partitioned module.
/// A program with manual computations is replicated around them
/// (partita-replicate-around-manual) and compiled with `options`.
Expected<ReferenceOutputs> runReference(mlir::ModuleOp reference,
                                        const PipelineOptions &options,
                                        const std::vector<HostArray> &inputs);

/// Compares every output with the reference's within per-dtype tolerances,
/// appending one "  check NAME: ..." line per output to `report`; true when
/// every output is within. `slack` (one per output, or empty) widens each
/// output's tolerance by that much.
bool compareWithReference(const Executable &program,
                          const std::vector<HostArray> &outputs,
                          const std::vector<HostArray> &expected,
                          std::string &report,
                          const std::vector<double> &slack = {});

} // namespace partita

#endif // PARTITA_DRIVER_CHECK_H

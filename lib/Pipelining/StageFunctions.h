//===- StageFunctions.h - Stages as functions (internal) --------*- C++ -*-===//
//
// Shared between the cut (StageCut.cpp) and the programs built from each
// stage (StagePrograms.cpp); see docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_PIPELINING_STAGEFUNCTIONS_H
#define PARTITA_LIB_PIPELINING_STAGEFUNCTIONS_H

#include "partita/Pipelining/Pipelining.h"

#include <utility>
#include <vector>

namespace partita::pipelining {

/// Ops without operands or regions (constants, iota): every stage (and
/// every program of a stage) that uses one computes its own copy.
bool isCopiedIntoStages(mlir::Operation *op);

/// The values `op` reads: its operands and what its regions capture.
std::vector<mlir::Value> valuesUsedBy(mlir::Operation *op);

/// One stage as a function: arguments are the loss's parameters the stage
/// uses, then its data arguments, then the values it receives from earlier
/// stages; results are the values later stages use (the last stage's: the
/// loss).
struct StageFunction {
  mlir::func::FuncOp function;
  /// The loss's argument numbers of the parameter and data arguments.
  std::vector<unsigned> paramArgs, dataArgs;
  /// Per received argument: the producing stage and its result index.
  std::vector<std::pair<int, int>> received;
};

/// Builds one private function per stage next to `loss`.
Expected<std::vector<StageFunction>>
buildStageFunctions(mlir::func::FuncOp loss,
                    const StageAssignment &assignment);

/// The MLIR functions of one stage and where their inputs come from
/// (StagePrograms.cpp).
struct StageProgramFunctions {
  mlir::func::FuncOp forward, backward, weightGrad, update;
  /// Under clipping: the stage's part of the squared gradient norm.
  mlir::func::FuncOp norm;
  std::vector<StageInput> forwardInputs, backwardInputs, weightGradInputs;
  std::vector<int32_t> backwardAccumulators, weightGradAccumulators;
  bool hasBackward = true;
};

/// Builds stage `s`'s programs. `stages` are all stages' functions (a
/// gradient sent back goes to the stage that produced the value).
Expected<StageProgramFunctions>
buildStagePrograms(mlir::func::FuncOp loss,
                   const std::vector<StageFunction> &stages, int s,
                   bool splitBackward, const TrainStepOptions &optimizer);

} // namespace partita::pipelining

#endif // PARTITA_LIB_PIPELINING_STAGEFUNCTIONS_H

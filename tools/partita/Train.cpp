//===- Train.cpp - partita train ------------------------------------------===//
//
// The flags in (api::trainRequestFromOptions), the run out: training is the
// trainer layer's (partita/Trainer/Trainer.h; docs/Training.md).
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"
#include "partita/API/Requests.h"

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Training/TrainLoop.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <unistd.h>

using namespace partita;
using namespace partita::cli;

namespace {


} // namespace

int partita::cli::trainCommand(const CommandLine &cl) {
  if (cl.input != "-")
    return usageError("unexpected argument '" + cl.input +
                      "'; the model is --model (see 'partita train --help')");
  TrainRequest request;
  if (Status status = api::trainRequestFromOptions(cl, request); !status.ok())
    return usageError(status.message());
  return trainFromRequest(request);
}

int partita::cli::trainFromRequest(TrainRequest &request) {
  // Where the run writes is checked before it compiles and trains: an
  // unwritable --output was reported only after the last step.
  for (const auto &[flag, directory] :
       {std::pair<const char *, std::string>{"--output", request.outputDir},
        {"--checkpoint-dir", request.checkpoints.directory}})
    if (!directory.empty())
      if (Status status = checkWritableDirectory(directory); !status.ok())
        return usageError(std::string(flag) + ": " + status.message());
  bool pipelined =
      request.pipelineRanks > 1 || request.mesh.axisSize("pipe") > 0;
  if (request.distributed) {
    if (Status status = pipelined ? trainPipelinedDistributed(request)
                                  : trainDistributed(request);
        !status.ok()) {
      if (!status.message().empty())
        llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
    return 0;
  }
  if (pipelined) {
    if (Status status = trainPipelined(request); !status.ok()) {
      if (!status.message().empty())
        llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
    return 0;
  }

  if (Status status = trainOnCpu(request); !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

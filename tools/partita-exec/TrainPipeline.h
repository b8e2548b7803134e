//===- TrainPipeline.h - partita-exec train ---------------------*- C++ -*-===//
//
// The `train` subcommand: a pipelined train step from its directory
// (docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_PARTITA_EXEC_TRAINPIPELINE_H
#define PARTITA_TOOLS_PARTITA_EXEC_TRAINPIPELINE_H

#include "../common/CommandLine.h"

namespace partita::tools {

/// Runs `args.positional[0]`, a pipelined step directory.
Status trainPipelineCommand(const Arguments &args);

} // namespace partita::tools

#endif // PARTITA_TOOLS_PARTITA_EXEC_TRAINPIPELINE_H

//===- TrainSupport.h - Shared by the train commands ------------*- C++ -*-===//
//
// `partita train` with and without pipeline parallelism: the parsed
// request, the compiled step, the data, and the progress output
// (docs/Training.md, docs/Pipeline.md).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_PARTITA_TRAINSUPPORT_H
#define PARTITA_TOOLS_PARTITA_TRAINSUPPORT_H

#include "Flags.h"

#include "partita/Planning/PipelineFigures.h"
#include "partita/Trainer/Trainer.h"

#include <optional>

namespace partita::cli {

/// `partita compile --train --pp P`: the pipelined step of `module`'s loss
/// function, its stages and schedule printed (-o), the figures written
/// (--report).
int compilePipelinedCommand(const CommandLine &cl,
                            const PipelineOptions &options, Session &session,
                            mlir::ModuleOp module);

} // namespace partita::cli

#endif // PARTITA_TOOLS_PARTITA_TRAINSUPPORT_H

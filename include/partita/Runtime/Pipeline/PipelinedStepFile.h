//===- PipelinedStepFile.h - A pipelined step on disk ------------*- C++ -*-===//
//
// A pipelined train step as a directory the runtime reads without the
// compiler (docs/Pipeline.md): `step.json` (the schedule, the data inputs,
// each stage's parameters and where every program input comes from) and one
// Executable file per stage program (`stage<S>.<program>.exe`, checked by
// the Executable loader). `partita compile --train --pp -o DIR` writes it;
// `partita-exec train DIR` runs it on CPU or CUDA devices.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PIPELINE_PIPELINEDSTEPFILE_H
#define PARTITA_RUNTIME_PIPELINE_PIPELINEDSTEPFILE_H

#include "partita/Runtime/Pipeline/PipelinedStep.h"

#include <string>

namespace partita {

/// The version of step.json this build writes and reads.
inline constexpr int kPipelinedStepVersion = 1;

/// Writes `step` into `directory` (created if missing; files replaced
/// atomically).
Status writePipelinedStep(const PipelinedStep &step,
                          const std::string &directory);

/// Reads a directory writePipelinedStep wrote. Errors name the file and
/// what is wrong: a missing or malformed step.json, a wrong version, an
/// input source out of range, a program that does not load, a schedule
/// that is not valid.
Expected<PipelinedStep> readPipelinedStep(const std::string &directory);

} // namespace partita

#endif // PARTITA_RUNTIME_PIPELINE_PIPELINEDSTEPFILE_H

//===- Requests.h - A command's options, as its request ---------*- C++ -*-===//
//
// The option values a command was given (partita/API/CommandOptions.h),
// checked and turned into what the layers below take. An error names the
// flag and what it must be.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_API_REQUESTS_H
#define PARTITA_API_REQUESTS_H

#include "partita/API/CommandOptions.h"
#include "partita/Models/Models.h"
#include "partita/Sharding/Status.h"
#include "partita/Trainer/Trainer.h"
#include "partita/Transforms/Pipeline.h"

#include <cstdint>
#include <limits>

namespace partita::api {

/// `flag` as an integer in [min, max] into `value` (`fallback` when not
/// given).
Status integerOption(const OptionValues &values, const char *flag,
                     long long fallback, long long &value, int64_t min = 0,
                     int64_t max = std::numeric_limits<int64_t>::max());

/// `flag` as a number in [min, max] ((min, max] when `minExclusive`) into
/// `value` (unchanged when not given).
Status numberOption(const OptionValues &values, const char *flag, double &value,
                    double min, double max, bool minExclusive = false);

/// A model's configuration from the model flags (all but the model's
/// name; docs/Models.md).
Status modelConfigFromOptions(const OptionValues &values, ModelConfig &config);

/// --optimizer (default adamw), --remat (default none) and --clip-norm.
Status trainChoicesFromOptions(const OptionValues &values,
                               PipelineOptions &options);

/// The pipeline's options from the flags every compiling command takes
/// (--mesh, --rules, --interconnect, --strict, --train and its choices,
/// ...), stopping after `stage`.
Status pipelineOptionsFromOptions(const OptionValues &values, Stage stage,
                                  PipelineOptions &options);

/// A training run from `partita train`'s flags: the model, the devices and
/// mesh, the optimizer and its schedule, pipeline parallelism, the data,
/// checkpoints and evaluation (docs/Training.md).
Status trainRequestFromOptions(const OptionValues &values,
                               TrainRequest &request);

} // namespace partita::api

#endif // PARTITA_API_REQUESTS_H

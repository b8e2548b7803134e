//===- Generate.cpp - partita generate ------------------------------------===//
//
// The flags in, the text out: the model comes from the checkpoint's own
// record (its `partita train` flags), the layout from --devices, --mesh and
// --rules; generation is the trainer layer's (partita/Trainer/Generation.h;
// docs/Training.md, "Generation").
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "Flags.h"
#include "partita/API/CommandOptions.h"
#include "partita/API/Requests.h"

#include "partita/Runtime/Training/Checkpoint.h"
#include "partita/Trainer/Generation.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;
using namespace partita::cli;

namespace {

/// The sampling flags.
Status samplingFromOptions(const CommandLine &cl, SamplingOptions &sampling) {
  Expected<int64_t> tokens = api::parseIntegerFlag(
      "--max-new-tokens", cl.get("--max-new-tokens", "16"), 1, 1 << 24);
  Expected<double> temperature = api::parseNumberFlag(
      "--temperature", cl.get("--temperature", "0"), 0, 1e6);
  Expected<int64_t> topK =
      api::parseIntegerFlag("--top-k", cl.get("--top-k", "0"), 0, 1 << 30);
  Expected<double> topP =
      api::parseNumberFlag("--top-p", cl.get("--top-p", "1"), 0, 1, true);
  Expected<int64_t> seed = api::parseIntegerFlag(
      "--seed", cl.get("--seed", "0"), 0, std::numeric_limits<int64_t>::max());
  Expected<int64_t> eos =
      api::parseIntegerFlag("--eos", cl.get("--eos", "-1"), -1, 1 << 30);
  for (const Status &status :
       {tokens.status(), temperature.status(), topK.status(), topP.status(),
        seed.status(), eos.status()})
    if (!status.ok())
      return status;
  if (*temperature == 0 && (cl.has("--top-k") || cl.has("--top-p")))
    return Status::error("--top-k and --top-p choose among samples: give "
                         "--temperature T > 0 (0 is greedy)");
  sampling.maxNewTokens = *tokens;
  sampling.temperature = *temperature;
  sampling.topK = *topK;
  sampling.topP = *topP;
  sampling.seed = static_cast<uint64_t>(*seed);
  sampling.eos = *eos;
  return Status::success();
}

} // namespace

int partita::cli::generateCommand(const CommandLine &cl) {
  if (cl.input != "-")
    return usageError("unexpected argument '" + cl.input +
                      "'; the model is --checkpoint D (see 'partita generate "
                      "--help')");
  GenerateRequest request;
  request.checkpoint = cl.get("--checkpoint");
  request.prompts = cl.get("--prompts");
  request.output = cl.output;
  request.check = cl.on("--check");
  if (request.checkpoint.empty() || request.prompts.empty())
    return usageError("generate needs --checkpoint D and --prompts FILE");
  if (Status status = samplingFromOptions(cl, request.sampling); !status.ok())
    return usageError(status.message());
  // The model the checkpoint records, in the flags' layout.
  std::string directory = request.checkpoint;
  if (!llvm::sys::fs::exists(directory + "/checkpoint.json")) {
    Expected<std::string> latest = latestCheckpoint(directory);
    if (!latest) {
      llvm::errs() << "error: --checkpoint: " << latest.status().message()
                   << "\n";
      return 1;
    }
    directory = *latest;
  }
  Expected<CheckpointInfo> info = readCheckpoint(directory, false);
  if (!info) {
    llvm::errs() << "error: --checkpoint: " << info.status().message() << "\n";
    return 1;
  }
  std::vector<std::string> flags = modelFlagsOf(info->meta.model);
  if (flags.size() < 2 || flags[1] != "gpt")
    return usageError("generate takes a gpt language model; " + directory +
                      " holds '" + info->meta.model + "'");
  flags.insert(flags.end(), {"--batch", cl.get("--batch", "8")});
  for (const char *flag : {"--devices", "--mesh", "--rules"})
    if (cl.has(flag))
      flags.insert(flags.end(), {flag, cl.get(flag)});
  CommandLine model;
  if (std::optional<int> done = parseCommand(flags, "train", model))
    return *done;
  if (Status status = api::trainRequestFromOptions(model, request.model);
      !status.ok())
    return usageError(status.message());
  if (Status status = generateText(request); !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

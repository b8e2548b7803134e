//===- Checkpoints.cpp - partita checkpoint -------------------------------===//
//
// `partita checkpoint info D` says what a checkpoint holds (every file's
// checksum checked); `partita checkpoint convert D -o OUT` rewrites it in
// another layout through `partita train --resume` (docs/Training.md,
// "Checkpoints"). Writing and reading them is the trainer layer's.
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"

#include "partita/Runtime/Training/Checkpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

using namespace partita;
using namespace partita::cli;

int partita::cli::checkpointCommand(const std::vector<std::string> &args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    llvm::outs() << api::helpPage("checkpoint");
    return 0;
  }
  if (args.size() >= 2 && args[0] == "convert") {
    std::string source = args[1], output;
    std::vector<std::string> train;
    for (size_t i = 2; i < args.size(); ++i) {
      if (args[i] == "-o" && i + 1 < args.size())
        output = args[++i];
      else
        train.push_back(args[i]);
    }
    if (output.empty())
      return usageError("checkpoint convert needs -o OUT");
    // Converting into the source would resume from it and save nothing new
    // (it exited 0 having converted nothing).
    bool same = false;
    if (llvm::sys::fs::exists(output) &&
        !llvm::sys::fs::equivalent(source, output, same) && same)
      return usageError("checkpoint convert writes a new directory: -o " +
                        output + " is " + source + " itself");
    Expected<std::string> latest = latestCheckpoint(source);
    if (!latest) {
      llvm::errs() << "error: " << latest.status().message() << "\n";
      return 1;
    }
    Expected<CheckpointInfo> info = readCheckpoint(*latest, false);
    if (!info) {
      llvm::errs() << "error: " << info.status().message() << "\n";
      return 1;
    }
    for (const std::string &flag :
         {std::string("--resume"), std::string("--checkpoint-dir"),
          std::string("--steps")})
      if (std::find(train.begin(), train.end(), flag) != train.end())
        return usageError("checkpoint convert sets " + flag + " itself");
    // The model and its flags are the checkpoint's own unless given.
    if (std::find(train.begin(), train.end(), "--model") == train.end()) {
      std::vector<std::string> model = modelFlagsOf(info->meta.model);
      train.insert(train.end(), model.begin(), model.end());
    }
    train.insert(train.end(),
                 {"--resume", source, "--checkpoint-dir", output, "--steps",
                  std::to_string(info->meta.step), "--keep", "0", "--output",
                  output + "/.train"});
    CommandLine cl;
    if (std::optional<int> done = parseCommand(train, "train", cl))
      return *done;
    return trainCommand(cl);
  }
  if (args.size() != 2 || args[0] != "info")
    return usageError(
        "expected 'partita checkpoint info DIR' or 'partita checkpoint "
        "convert DIR -o OUT ...'");
  std::string directory = args[1];
  // A checkpoint, or a --checkpoint-dir (its newest checkpoint).
  if (!llvm::sys::fs::exists(directory + "/checkpoint.json")) {
    Expected<std::string> latest = latestCheckpoint(directory);
    if (!latest) {
      llvm::errs() << "error: " << latest.status().message() << "\n";
      return 1;
    }
    directory = *latest;
  }
  Expected<CheckpointInfo> info = readCheckpoint(directory, true);
  if (!info) {
    llvm::errs() << "error: " << info.status().message() << "\n";
    return 1;
  }
  llvm::outs() << describeCheckpoint(*info) << "  every file's checksum "
               << "matches\n";
  return 0;
}

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
#include "partita/API/Requests.h"

#include "partita/Runtime/Training/Checkpoint.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

using namespace partita;
using namespace partita::cli;

namespace {

/// The real path of `path`, or of its nearest existing ancestor followed by
/// the rest (the output of convert need not exist yet).
std::string resolvedPath(const std::string &path) {
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  std::string rest;
  llvm::SmallString<256> head = absolute;
  while (!head.empty() && !llvm::sys::fs::exists(head)) {
    rest = "/" + llvm::sys::path::filename(head).str() + rest;
    llvm::sys::path::remove_filename(head);
  }
  llvm::SmallString<256> real;
  if (head.empty() || llvm::sys::fs::real_path(head, real))
    return std::string(absolute);
  return std::string(real) + rest;
}

/// `partita checkpoint convert SOURCE -o OUT [train flags]`: `partita train
/// --resume SOURCE` in OUT's layout for SOURCE's steps, saving once.
int convertCheckpoint(const std::vector<std::string> &args) {
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
  // OUT is a new directory beside SOURCE: into SOURCE itself it resumed and
  // saved nothing new (exit 0), into a folder inside it it wrote a step
  // SOURCE's index does not list.
  std::string from = resolvedPath(source), to = resolvedPath(output);
  if (to == from || llvm::StringRef(to).starts_with(from + "/"))
    return usageError("checkpoint convert writes a new directory outside " +
                      source + ": -o " + output + " is " +
                      (to == from ? "it" : "inside it"));
  if (llvm::StringRef(from).starts_with(to + "/"))
    return usageError("checkpoint convert writes a new directory: -o " +
                      output + " holds " + source);
  bool existed = llvm::sys::fs::exists(output);
  if (existed) {
    std::error_code error;
    llvm::sys::fs::directory_iterator entry(output, error);
    if (!error && entry != llvm::sys::fs::directory_iterator())
      return usageError("checkpoint convert writes a new directory: -o " +
                        output + " exists and is not empty");
  }
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
  train.insert(train.end(), {"--resume", source, "--checkpoint-dir", output,
                             "--steps", std::to_string(info->meta.step),
                             "--keep", "0", "--output", output + "/.train"});
  CommandLine cl;
  if (std::optional<int> done = parseCommand(train, "train", cl))
    return *done;
  TrainRequest request;
  if (Status status = api::trainRequestFromOptions(cl, request); !status.ok())
    return usageError(status.message());
  request.checkpoints.resumeFlag = "checkpoint convert " + source;
  int result = trainFromRequest(request);
  // A failed conversion leaves no half-written directory behind.
  if (result != 0 && !existed)
    llvm::sys::fs::remove_directories(output, /*IgnoreErrors=*/true);
  return result;
}

} // namespace

int partita::cli::checkpointCommand(const std::vector<std::string> &args) {
  for (const std::string &arg : args)
    if (arg == "-h" || arg == "--help") {
      llvm::outs() << api::helpPage("checkpoint");
      return 0;
    }
  if (args.size() >= 2 && args[0] == "convert")
    return convertCheckpoint(args);
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

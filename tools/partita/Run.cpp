//===- Run.cpp - partita run ----------------------------------------------===//
//
// The flags in; compiling, running and checking are the driver layer's
// (partita/Driver/Run.h).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Flags.h"
#include "partita/API/CommandOptions.h"

#include "partita/Driver/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/Npy.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace partita;
using namespace partita::cli;

namespace {

namespace {

/// The inputs a caller in this process handed over in memory (the Python
/// package's Module.run), checked as --inputs files are and named
/// inputs[i]; their bytes are moved, not copied.
Expected<std::vector<HostArray>> inputsInMemory(const Executable &program,
                                                ToolArrays &arrays) {
  if (arrays.inputs.size() != program.inputs.size())
    return Status::error("run() was given " +
                         std::to_string(arrays.inputs.size()) +
                         " inputs but the program takes " +
                         std::to_string(program.inputs.size()));
  std::vector<HostArray> inputs;
  for (size_t i = 0; i < arrays.inputs.size(); ++i) {
    ToolArray &given = arrays.inputs[i];
    std::string what = "inputs[" + std::to_string(i) + "]";
    Expected<DType> dtype = dtypeFromDescr(given.descr);
    if (!dtype)
      return Status::error(what + ": " + dtype.status().message());
    for (int64_t extent : given.shape)
      if (extent < 0)
        return Status::error(what + ": a negative dimension");
    HostArray array;
    array.dtype = *dtype;
    array.shape = given.shape;
    if (Status status = checkInput(program, i, array, what); !status.ok())
      return status;
    array.bytes = std::move(given.bytes);
    if (Status status = array.checkConsistent(); !status.ok())
      return Status::error(what + ": " + status.message());
    inputs.push_back(std::move(array));
  }
  return inputs;
}

} // namespace

} // namespace

int partita::cli::runCommand(const CommandLine &cl, PipelineOptions &options) {
  Expected<DeviceSpec> devices = parseDeviceSpec(cl.get("--devices"));
  if (!devices)
    return usageError(devices.status().message());
  Expected<uint64_t> seed = parseSeed(cl.get("--seed", "0"));
  if (!seed)
    return usageError(seed.status().message());
  if (cl.on("--distributed") && cl.has("--trace"))
    return usageError("--trace records the devices of one process; it does "
                      "not apply to --distributed runs");
  RunRequest request;
  request.input = cl.input;
  request.options = options;
  request.devices = *devices;
  request.seed = *seed;
  request.check = cl.on("--check");
  request.fusion = !cl.on("--no-fusion");
  // (An empty value was refused by the parser.)
  for (auto [flag, into] :
       {std::pair<const char *, std::string *>{"--inputs", &request.inputsPath},
        {"--outputs", &request.outputsPath},
        {"--expect", &request.expectDirectory},
        {"--trace", &request.tracePath}})
    *into = cl.get(flag);
  if (cl.on("--distributed")) {
    if (cl.has("--timeout")) {
      Expected<int64_t> timeout = parseTimeoutMilliseconds(cl.get("--timeout"));
      if (!timeout)
        return usageError(timeout.status().message());
      request.timeoutMilliseconds = *timeout;
    }
    Expected<int> code = runAcrossProcesses(request);
    return code ? *code : usageError(code.status().message());
  }
  if (cl.has("--timeout"))
    return usageError("--timeout applies to --distributed runs");
  // Python's Module.run: the arrays in memory, not files.
  ToolArrays *arrays = currentToolArrays();
  std::vector<HostArray> outputs;
  if (arrays) {
    if (arrays->hasInputs)
      request.inputsInMemory = [arrays](const Executable &program) {
        return inputsInMemory(program, *arrays);
      };
    request.outputsInMemory = &outputs;
  }
  if (Status status = runInProcess(request); !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  if (arrays)
    for (HostArray &output : outputs)
      arrays->outputs.push_back(
          {npyDescr(output.dtype), output.shape, std::move(output.bytes)});
  return 0;
}

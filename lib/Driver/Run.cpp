//===- Run.cpp - A program run, checked against its reference -------------===//
//
// `partita run` once its flags are parsed: a module compiled (in memory) to
// the per-device program, or an Executable read, run on N emulated CPU
// devices (or GPUs) with deterministic random inputs, and with a check
// also the unpartitioned program on one device, every output compared
// within per-dtype tolerances (docs/Runtime.md). Across processes, through
// the MPI plugin.
//
//===----------------------------------------------------------------------===//

#include "partita/Driver/Run.h"
#include "partita/Runtime/Program/RunMemory.h"

#include "partita/Analysis/Report.h"
#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Driver/Check.h"
#include "partita/Driver/Session.h"
#include "partita/Runtime/Execution/BlockwiseRun.h"
#include "partita/Runtime/Plugins/CudaPlugin.h"
#include "partita/Runtime/Plugins/MpiPlugin.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Transforms/Interconnect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <fstream>
#include <optional>

using namespace mlir;
using namespace partita;

namespace {

/// Loads the module at `input` and compiles it for `partita run`
/// (compileForRun, Check.h). A failure whose diagnostics are printed has an
/// empty message.
Expected<Executable> loadAndCompile(Session &session, RunRequest &request,
                                    long count, OwningOpRef<ModuleOp> &module,
                                    OwningOpRef<ModuleOp> &reference) {
  module = loadModule(session, request.input);
  if (!module)
    return Status::error("");
  LoweringOptions lowering;
  lowering.fuse = request.fusion;
  return compileForRun(*module, request.options, count, reference, lowering);
}

} // namespace

bool partita::isExecutableFile(const std::string &path) {
  // Only a regular file can be one: reading a FIFO here would consume (or
  // wait for) what the program reader needs.
  if (!llvm::sys::fs::is_regular_file(path))
    return false;
  std::ifstream file(path, std::ios::binary);
  char magic[8] = {};
  return file && file.read(magic, 8) &&
         looksLikeExecutable(std::vector<uint8_t>(magic, magic + 8));
}

/// `partita run --distributed`: rank 0 compiles (or reads the Executable)
/// and broadcasts the program; every rank runs its devices; rank 0 checks.
/// All of it through the MPI plugin (MpiPlugin.h).
Expected<int> partita::runAcrossProcesses(RunRequest &request) {
  long count = request.devices.count;
  uint64_t seed = request.seed;
  bool check = request.check;
  Expected<const MpiPlugin *> mpi = loadMpiPlugin();
  if (!mpi)
    return mpi.status();
  DistributedToolRun run;
  DistributedRunOptions &runOptions = run.options;
  if (request.devices.isCuda()) {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin)
      return plugin.status();
    if (!(*plugin)->distributedDevices)
      return Status::error("--distributed --devices cuda:N needs MPI and NCCL "
                           "in the CUDA plugin, which was built without them");
    (*plugin)->distributedDevices(CudaBackendOptions(), runOptions.devices);
  }
  runOptions.seed = seed;
  runOptions.inputs = request.inputsPath;
  runOptions.outputs = request.outputsPath;
  if (request.timeoutMilliseconds)
    runOptions.timeout =
        std::chrono::milliseconds(*request.timeoutMilliseconds);
  Session session;
  OwningOpRef<ModuleOp> module, reference;
  run.loadOnRoot = [&]() -> Expected<Executable> {
    Expected<Executable> compiled = Status::error("not compiled");
    bool executable = isExecutableFile(request.input);
    if (executable && check)
      compiled = Status::error("--check needs the .mlir (it compiles both "
                               "programs); give an Executable --expect");
    else if (executable)
      compiled = readExecutableFile(request.input);
    else
      compiled = loadAndCompile(session, request, count, module, reference);
    if (!compiled && compiled.status().message().empty())
      compiled = Status::error("the module does not compile (see above)");
    llvm::outs().flush();
    llvm::errs().flush();
    return compiled;
  };
  run.accept = [count](const Executable &program) {
    return checkDeviceCount("the program's mesh", program.mesh.numDevices(),
                            count);
  };
  std::string expectDirectory = request.expectDirectory;
  if (check || !expectDirectory.empty())
    run.makeCheck = [&](const Executable &program) -> OutputCheck {
      return [&, expectDirectory](const std::vector<HostArray> &outputs,
                                  std::string &report) -> Status {
        if (!expectDirectory.empty())
          if (Status status =
                  expectOutputs(expectDirectory, program, outputs, report);
              !status)
            return status;
        if (!check)
          return Status::success();
        Expected<std::vector<HostArray>> inputs =
            runOptions.inputs.empty() ? randomInputs(program, seed)
                                      : readInputs(program, runOptions.inputs);
        if (!inputs)
          return inputs.status();
        Expected<ReferenceOutputs> expected =
            runReference(*reference, request.options, *inputs);
        if (!expected)
          return expected.status();
        // The expected results' own sensitivity to summation order
        // (tolerance.json) holds for the reference run too.
        std::vector<double> slack;
        if (!expectDirectory.empty()) {
          Expected<std::vector<double>> read =
              readToleranceSlack(expectDirectory, outputs.size());
          if (!read)
            return read.status();
          slack = std::move(*read);
        }
        if (!compareWithReference(program, outputs, expected->outputs, report,
                                  slack))
          return Status::error(
              "the partitioned program does not match the unpartitioned one");
        report += std::string("  (reference: ") +
                  describeReference(expected->kind) + ")\n";
        return Status::success();
      };
    };
  llvm::outs().flush();
  return (*mpi)->runDistributedTool(run);
}

namespace {

/// What a run made: whole inputs and outputs, or (blockwise) the outputs'
/// summaries, files and comparisons taken block by block.
struct RunResult {
  std::vector<HostArray> inputs, outputs;
  std::unique_ptr<BlockwiseOutputs> blocks;
  /// CPU devices: the process's predicted peak resident memory.
  std::optional<RunMemory> memory;
};

/// `partita run` in this process: the devices as threads or over the GPUs.
class LocalRun {
public:
  explicit LocalRun(RunRequest &request)
      : request(request), devices(request.devices), seed(request.seed) {}

  /// Runs a compiled Executable as it is (no --check: that needs the
  /// module).
  Status runExecutableFile();
  /// Compiles the module, runs it, reports time and memory, and with
  /// --check compares it with its reference.
  Status runModule();

private:
  /// Whether the run makes no whole array: CPU devices, no --check (its
  /// reference needs the whole inputs) and no caller taking arrays in
  /// memory (BlockwiseRun.h).
  bool blockwise() const {
    return !devices.isCuda() && !request.check && !request.inputsInMemory &&
           !request.outputsInMemory;
  }
  /// Checks the program's device count and memory, and runs it: blockwise,
  /// or on whole inputs (the user's, --inputs, or deterministic random
  /// ones) into whole outputs.
  Status execute(const Executable &program, RunStatistics &statistics,
                 RunResult &result) const;
  Status executeBlockwise(const Executable &program, RunStatistics &statistics,
                          RunResult &result) const;
  /// The outputs' lines, --trace, --outputs and --expect, after a run.
  Status finish(const Executable &program, const RunStatistics &statistics,
                RunResult &result) const;
  /// The check against the reference.
  Status check(ModuleOp reference, const Executable &program,
               const std::vector<HostArray> &inputs,
               const std::vector<HostArray> &outputs) const;

  RunRequest &request;
  DeviceSpec devices;
  uint64_t seed;
};

Status LocalRun::execute(const Executable &program, RunStatistics &statistics,
                         RunResult &result) const {
  if (Status status = checkDeviceCount(
          "the program's mesh", program.mesh.numDevices(), devices.count);
      !status)
    return status;
  statistics.recordTimelines = !request.tracePath.empty();
  if (blockwise())
    return executeBlockwise(program, statistics, result);
  // CPU devices live in this process: a run that cannot fit is refused
  // before its inputs are made.
  if (!devices.isCuda()) {
    result.memory = runMemory(program, RunKind::Run);
    if (Status status = checkRunMemory(*result.memory, "the run"); !status)
      return status;
  }
  Expected<std::vector<HostArray>> given =
      request.inputsInMemory        ? request.inputsInMemory(program)
      : !request.inputsPath.empty() ? readInputs(program, request.inputsPath)
                                    : randomInputs(program, seed);
  if (!given)
    return given.status();
  result.inputs = std::move(*given);
  Expected<std::vector<HostArray>> outputs = Status::error("not run");
  if (!devices.isCuda()) {
    outputs = runOnCpuDevices(program, result.inputs, &statistics);
  } else {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin)
      return plugin.status();
    outputs = (*plugin)->runOnDevices(program, result.inputs,
                                      CudaBackendOptions(), &statistics);
  }
  if (!outputs)
    return outputs.status();
  result.outputs = std::move(*outputs);
  return Status::success();
}

Status LocalRun::executeBlockwise(const Executable &program,
                                  RunStatistics &statistics,
                                  RunResult &result) const {
  result.memory = blockwiseRunMemory(program, request.inputsPath);
  if (Status status = checkRunMemory(*result.memory, "the run"); !status)
    return status;
  Expected<InputRegion> region =
      request.inputsPath.empty()
          ? randomInputRegions(program, seed)
          : fileInputRegions(program, request.inputsPath);
  if (!region)
    return region.status();
  Expected<std::unique_ptr<BlockwiseOutputs>> blocks = BlockwiseOutputs::create(
      program, request.outputsPath, request.expectDirectory);
  if (!blocks)
    return blocks.status();
  result.blocks = std::move(*blocks);
  return runOnCpuDevicesBlockwise(program, *region, result.blocks->sink(),
                                  &statistics);
}

Status LocalRun::finish(const Executable &program,
                        const RunStatistics &statistics,
                        RunResult &result) const {
  std::vector<std::string> lines;
  if (result.blocks)
    lines = result.blocks->summaryLines();
  else
    for (const HostArray &output : result.outputs)
      lines.push_back(summarizeArray(output));
  for (size_t o = 0; o < lines.size(); ++o)
    llvm::outs() << "  " << program.outputs[o].name << ": " << lines[o] << "\n";
  if (result.memory)
    llvm::outs() << "peak resident memory " << formatGiB(peakResidentBytes())
                 << " (predicted " << formatGiB(result.memory->peak()) << ")\n";
  if (!request.tracePath.empty()) {
    TraceOptions trace;
    trace.title = "partita run " + devices.toString();
    trace.asynchronousKernels = devices.isCuda();
    if (Status status = writeDeviceTrace(request.tracePath, program,
                                         statistics.timelines, trace);
        !status.ok())
      return status;
  }
  if (result.blocks) {
    if (Status status = result.blocks->finishWriting(); !status.ok())
      return status;
    if (request.expectDirectory.empty())
      return Status::success();
    std::string report;
    Status status = result.blocks->finishExpecting(report);
    llvm::outs() << report;
    return status;
  }
  if (!request.outputsPath.empty())
    if (Status status = writeOutputs(request.outputsPath, result.outputs);
        !status.ok())
      return status;
  if (request.outputsInMemory)
    *request.outputsInMemory = result.outputs;
  if (!request.expectDirectory.empty()) {
    std::string report;
    Status status =
        expectOutputs(request.expectDirectory, program, result.outputs, report);
    llvm::outs() << report;
    if (!status.ok())
      return status;
  }
  return Status::success();
}

Status LocalRun::runExecutableFile() {
  if (request.check)
    return Status::error("--check needs the .mlir (it compiles both programs)");
  Expected<Executable> program = readExecutableFile(request.input);
  if (!program)
    return program.status();
  RunStatistics statistics;
  RunResult result;
  if (Status status = execute(*program, statistics, result); !status.ok())
    return status;
  return finish(*program, statistics, result);
}

Status LocalRun::runModule() {
  Session session;
  OwningOpRef<ModuleOp> module, reference;
  Expected<Executable> program =
      loadAndCompile(session, request, devices.count, module, reference);
  if (!program)
    return program.status();
  if (request.check && isPartitioned(*reference))
    return Status::error(kNeedsGlobalProgram);
  auto start = std::chrono::steady_clock::now();
  RunStatistics statistics;
  RunResult result;
  if (Status status = execute(*program, statistics, result); !status.ok())
    return status;
  // The program's run on device 0 (inputs made on the device threads are
  // not part of it), else the whole call.
  double seconds = statistics.stepSeconds.empty()
                       ? std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count()
                       : statistics.stepSeconds.back();
  CommunicationSummary communication = summarizeCommunication(*program);
  int64_t measured = statistics.peakBytesPerDevice;
  Report report = analyzeModule(*module, Interconnect());
  llvm::outs() << "ran on " << devices.toString() << " in "
               << llvm::format("%.3f", seconds * 1e3) << " ms ("
               << program->instructions.size() << " instructions; "
               << communication.collectives << " collectives per step, "
               << llvm::format("%.0f", communication.bytesPerDevice)
               << " bytes per device)\n";
  llvm::outs() << "memory: peak " << measured
               << " bytes per device measured (buffer plan arena "
               << program->allocatedBytes()
               << "); the report's liveness peak is "
               << report.peakBytesPerDevice << " ("
               << llvm::format("%.2f", report.peakBytesPerDevice
                                           ? double(measured) /
                                                 report.peakBytesPerDevice
                                           : 1.0)
               << "x)\n";
  if (Status status = finish(*program, statistics, result);
      !status.ok() || !request.check)
    return status;
  return check(*reference, *program, result.inputs, result.outputs);
}

Status LocalRun::check(ModuleOp reference, const Executable &program,
                       const std::vector<HostArray> &inputs,
                       const std::vector<HostArray> &outputs) const {
  Expected<ReferenceOutputs> expected =
      runReference(reference, request.options, inputs);
  if (!expected)
    return expected.status();
  // The expected results' own sensitivity to summation order
  // (tolerance.json beside them) holds for the reference run too.
  std::vector<double> slack;
  if (!request.expectDirectory.empty()) {
    Expected<std::vector<double>> read =
        readToleranceSlack(request.expectDirectory, outputs.size());
    if (!read)
      return read.status();
    slack = std::move(*read);
  }
  std::string comparisonReport;
  bool ok = compareWithReference(program, outputs, expected->outputs,
                                 comparisonReport, slack);
  llvm::outs() << comparisonReport;
  if (!ok)
    return Status::error("the partitioned program does not match the "
                         "unpartitioned one");
  llvm::outs() << "check passed: " << devices.toString() << " matches "
               << (expected->kind == ReferenceKind::ReplicatedAroundManual
                       ? "the program replicated around its manual "
                         "computations"
                       : "cpu:1")
               << "\n";
  return Status::success();
}

} // namespace

Status partita::runInProcess(RunRequest &request) {
  LocalRun local(request);
  return isExecutableFile(request.input) ? local.runExecutableFile()
                                         : local.runModule();
}

//===- Run.cpp - partita run ----------------------------------------------===//
//
// Compiles a module (in memory) to the per-device program, runs it on N
// emulated CPU devices with deterministic random inputs, and with --check
// also runs the unpartitioned program on one device and compares every
// output within per-dtype tolerances.
//
//===----------------------------------------------------------------------===//

#include "../common/RuntimeBackends.h"
#include "Commands.h"
#include "Flags.h"
#include "partita/API/CommandOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "partita/Analysis/Report.h"
#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Driver/Check.h"
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/RunSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

using namespace mlir;
using namespace partita;
using namespace partita::cli;

namespace {

/// The --help page: the options from CommandOptions.def.
std::string runUsage() {
  return std::string(R"(Usage: partita run in.mlir --devices cpu:N [options]

Compiles the module to the per-device program (in memory) and runs it on N
emulated CPU devices (threads) with deterministic random inputs (f32/bf16
uniform in [-1, 1], integers in [0, 4), booleans at random).

Options:
)") + api::renderOptions("run") +
         R"(
Examples:
  partita run docs/examples/transformer-layer.mlir --devices cpu:8 --check
  partita gen gpt --rules fsdp | partita run - --train --devices cpu:8 --check
)";
}

/// Loads the module at `input` and compiles it for `partita run`
/// (compileForRun, Check.h). A failure whose diagnostics are printed has an
/// empty message.
Expected<Executable> loadAndCompile(Session &session, const CommandLine &cl,
                                    PipelineOptions &options, long count,
                                    OwningOpRef<ModuleOp> &module,
                                    OwningOpRef<ModuleOp> &reference) {
  module = loadModule(session, cl.input);
  if (!module)
    return Status::error("");
  LoweringOptions lowering;
  lowering.fuse = !cl.on("--no-fusion");
  return compileForRun(*module, options, count, reference, lowering);
}

/// Whether `path` holds an Executable file (its magic), not a module.
bool isExecutableFile(const std::string &path) {
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
int runAcrossProcesses(const CommandLine &cl, PipelineOptions &options,
                       long count, uint64_t seed, bool check, bool cuda) {
  Expected<const MpiPlugin *> mpi = loadMpiPlugin();
  if (!mpi)
    return usageError(mpi.status().message());
  DistributedToolRun run;
  DistributedRunOptions &runOptions = run.options;
  if (cuda) {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin)
      return usageError(plugin.status().message());
    if (!(*plugin)->distributedDevices)
      return usageError("--distributed --devices cuda:N needs MPI and NCCL "
                        "in the CUDA plugin, which was built without them");
    (*plugin)->distributedDevices(CudaBackendOptions(), runOptions.devices);
  }
  runOptions.seed = seed;
  runOptions.inputs = cl.get("--inputs", "");
  runOptions.outputs = cl.get("--outputs", "");
  if (cl.has("--timeout")) {
    Expected<int64_t> timeout = parseTimeoutMilliseconds(cl.get("--timeout"));
    if (!timeout)
      return usageError(timeout.status().message());
    runOptions.timeout = std::chrono::milliseconds(*timeout);
  }
  Session session;
  OwningOpRef<ModuleOp> module, reference;
  run.loadOnRoot = [&]() -> Expected<Executable> {
    Expected<Executable> compiled = Status::error("not compiled");
    bool executable = isExecutableFile(cl.input);
    if (executable && check)
      compiled = Status::error("--check needs the .mlir (it compiles both "
                               "programs); give an Executable --expect");
    else if (executable)
      compiled = readExecutableFile(cl.input);
    else
      compiled =
          loadAndCompile(session, cl, options, count, module, reference);
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
  std::string expectDirectory = cl.get("--expect", "");
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
            runOptions.inputs.empty()
                ? randomInputs(program, seed)
                : readInputs(program, runOptions.inputs);
        if (!inputs)
          return inputs.status();
        Expected<ReferenceOutputs> expected =
            runReference(*reference, options, *inputs);
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

/// `partita run` in this process: the devices as threads or over the GPUs.
class LocalRun {
public:
  LocalRun(const CommandLine &cl, PipelineOptions &options, DeviceSpec devices,
           uint64_t seed)
      : cl(cl), options(options), devices(devices), seed(seed) {}

  /// Runs a compiled Executable as it is (no --check: that needs the
  /// module).
  int runExecutableFile();
  /// Compiles the module, runs it, reports time and memory, and with
  /// --check compares it with its reference.
  int runModule();

private:
  /// Checks the program's device count and reads its inputs: the user's
  /// (--inputs) or deterministic random ones; the exit code after a failure.
  std::optional<int> prepare(const Executable &program,
                             std::vector<HostArray> &inputs) const;
  /// Runs `program` on the devices asked for.
  Expected<std::vector<HostArray>> run(const Executable &program,
                                       const std::vector<HostArray> &inputs,
                                       RunStatistics *statistics) const;
  /// --trace, --outputs and --expect, after a run.
  int finish(const Executable &program, const RunStatistics &statistics,
             const std::vector<HostArray> &outputs) const;
  /// The check against the reference; the exit code.
  int check(ModuleOp reference, const Executable &program,
            const std::vector<HostArray> &inputs,
            const std::vector<HostArray> &outputs) const;

  const CommandLine &cl;
  PipelineOptions &options;
  DeviceSpec devices;
  uint64_t seed;
};

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

std::optional<int> LocalRun::prepare(const Executable &program,
                                     std::vector<HostArray> &inputs) const {
  if (Status status = checkDeviceCount(
          "the program's mesh", program.mesh.numDevices(), devices.count);
      !status)
    return usageError(status.message());
  ToolArrays *arrays = currentToolArrays();
  Expected<std::vector<HostArray>> given =
      arrays && arrays->hasInputs ? inputsInMemory(program, *arrays)
      : cl.has("--inputs")        ? readInputs(program, cl.get("--inputs"))
                                  : randomInputs(program, seed);
  if (!given)
    return usageError(given.status().message());
  inputs = std::move(*given);
  return std::nullopt;
}

Expected<std::vector<HostArray>>
LocalRun::run(const Executable &program, const std::vector<HostArray> &inputs,
              RunStatistics *statistics) const {
  statistics->recordTimelines = cl.has("--trace");
  if (!devices.isCuda())
    return runOnCpuDevices(program, inputs, statistics);
  Expected<const CudaPlugin *> plugin = loadCudaPlugin();
  if (!plugin)
    return plugin.status();
  return (*plugin)->runOnDevices(program, inputs, CudaBackendOptions(),
                                 statistics);
}

int LocalRun::finish(const Executable &program,
                     const RunStatistics &statistics,
                     const std::vector<HostArray> &outputs) const {
  for (size_t o = 0; o < outputs.size(); ++o)
    llvm::outs() << "  " << program.outputs[o].name << ": "
                 << summarizeArray(outputs[o]) << "\n";
  if (cl.has("--trace")) {
    TraceOptions trace;
    trace.title = "partita run " + devices.toString();
    trace.asynchronousKernels = devices.isCuda();
    if (Status status = writeDeviceTrace(cl.get("--trace"), program,
                                         statistics.timelines, trace);
        !status.ok()) {
      llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
  }
  if (cl.has("--outputs"))
    if (Status status = writeOutputs(cl.get("--outputs"), outputs);
        !status.ok())
      return usageError(status.message());
  if (ToolArrays *arrays = currentToolArrays())
    for (const HostArray &output : outputs)
      arrays->outputs.push_back(
          {npyDescr(output.dtype), output.shape, output.bytes});
  if (cl.has("--expect")) {
    std::string report;
    Status status = expectOutputs(cl.get("--expect"), program, outputs, report);
    llvm::outs() << report;
    if (!status.ok()) {
      llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
  }
  return 0;
}

int LocalRun::runExecutableFile() {
  if (cl.on("--check"))
    return usageError("--check needs the .mlir (it compiles both programs)");
  Expected<Executable> program = readExecutableFile(cl.input);
  if (!program) {
    llvm::errs() << "error: " << program.status().message() << "\n";
    return 1;
  }
  std::vector<HostArray> inputs;
  if (std::optional<int> code = prepare(*program, inputs))
    return *code;
  RunStatistics statistics;
  Expected<std::vector<HostArray>> outputs = run(*program, inputs, &statistics);
  if (!outputs) {
    llvm::errs() << "error: " << outputs.status().message() << "\n";
    return 1;
  }
  return finish(*program, statistics, *outputs);
}

int LocalRun::runModule() {
  Session session;
  OwningOpRef<ModuleOp> module, reference;
  Expected<Executable> program =
      loadAndCompile(session, cl, options, devices.count, module, reference);
  if (!program) {
    if (!program.status().message().empty())
      llvm::errs() << "error: " << program.status().message() << "\n";
    return 1;
  }
  if (cl.on("--check") && isPartitioned(*reference))
    return usageError(kNeedsGlobalProgram);
  std::vector<HostArray> inputs;
  if (std::optional<int> code = prepare(*program, inputs))
    return *code;
  auto start = std::chrono::steady_clock::now();
  RunStatistics statistics;
  Expected<std::vector<HostArray>> outputs =
      run(*program, inputs, &statistics);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!outputs) {
    llvm::errs() << "error: " << outputs.status().message() << "\n";
    return 1;
  }
  CommunicationSummary communication = summarizeCommunication(*program);
  int64_t measured = statistics.peakBytesPerDevice;
  Report report = analyzeModule(*module, Interconnect());
  llvm::outs() << "ran on " << devices.toString() << " in "
               << llvm::format("%.3f", seconds * 1e3) << " ms ("
               << program->instructions.size() << " instructions; "
               << communication.collectives << " collectives per step, "
               << llvm::format("%.0f", communication.bytesPerDevice)
               << " bytes per device)\n";
  llvm::outs()
      << "memory: peak " << measured
      << " bytes per device measured (buffer plan arena "
      << program->allocatedBytes() << "); the report's liveness peak is "
      << report.peakBytesPerDevice << " ("
      << llvm::format("%.2f",
                      report.peakBytesPerDevice
                          ? double(measured) / report.peakBytesPerDevice
                          : 1.0)
      << "x)\n";
  if (int code = finish(*program, statistics, *outputs);
      code != 0 || !cl.on("--check"))
    return code;
  return check(*reference, *program, inputs, *outputs);
}

int LocalRun::check(ModuleOp reference, const Executable &program,
                    const std::vector<HostArray> &inputs,
                    const std::vector<HostArray> &outputs) const {
  Expected<ReferenceOutputs> expected =
      runReference(reference, options, inputs);
  if (!expected) {
    llvm::errs() << "error: " << expected.status().message() << "\n";
    return 1;
  }
  // The expected results' own sensitivity to summation order
  // (tolerance.json beside them) holds for the reference run too.
  std::vector<double> slack;
  if (cl.has("--expect")) {
    Expected<std::vector<double>> read =
        readToleranceSlack(cl.get("--expect"), outputs.size());
    if (!read) {
      llvm::errs() << "error: " << read.status().message() << "\n";
      return 1;
    }
    slack = std::move(*read);
  }
  std::string comparisonReport;
  bool ok = compareWithReference(program, outputs, expected->outputs,
                                 comparisonReport, slack);
  llvm::outs() << comparisonReport;
  if (!ok) {
    llvm::errs() << "error: the partitioned program does not match the "
                    "unpartitioned one\n";
    return 1;
  }
  llvm::outs() << "check passed: " << devices.toString() << " matches "
               << (expected->kind == ReferenceKind::ReplicatedAroundManual
                       ? "the program replicated around its manual "
                         "computations"
                       : "cpu:1")
               << "\n";
  return 0;
}

} // namespace

int partita::cli::runCommand(const std::vector<std::string> &args) {
  CommandLine cl;
  PipelineOptions options;
  if (std::optional<int> done = startCommand(args, "run", runUsage(),
                                             Stage::Partitioned, cl, options))
    return *done;
  Expected<DeviceSpec> devices = parseDeviceSpec(cl.get("--devices"));
  if (!devices)
    return usageError(devices.status().message());
  Expected<uint64_t> seed = parseSeed(cl.get("--seed", "0"));
  if (!seed)
    return usageError(seed.status().message());
  if (cl.on("--distributed") && cl.has("--trace"))
    return usageError("--trace records the devices of one process; it does "
                      "not apply to --distributed runs");
  if (cl.on("--distributed"))
    return runAcrossProcesses(cl, options, devices->count, *seed,
                              cl.on("--check"), devices->isCuda());
  if (cl.has("--timeout"))
    return usageError("--timeout applies to --distributed runs");
  LocalRun local(cl, options, *devices, *seed);
  return isExecutableFile(cl.input) ? local.runExecutableFile()
                                    : local.runModule();
}

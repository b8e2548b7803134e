//===- Run.cpp - partita run ----------------------------------------------===//
//
// Compiles a module (in memory) to the per-device program, runs it on N
// emulated CPU devices with deterministic random inputs, and with --check
// also runs the unpartitioned program on one device and compares every
// output within per-dtype tolerances.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "partita/Analysis/Report.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#ifdef PARTITA_HAVE_MPI
#include "partita/Runtime/MPI/Mpi.h"
#endif
#ifdef PARTITA_HAVE_CUDA
#include "partita/Runtime/CUDA/CudaBackend.h"
#endif
#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
#include "partita/Runtime/CUDA/CudaDistributed.h"
#endif
#include "partita/Runtime/IO/RunSupport.h"

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

constexpr const char *kRunUsage =
    R"(Usage: partita run in.mlir --devices cpu:N [options]

Compiles the module to the per-device program (in memory) and runs it on N
emulated CPU devices (threads) with deterministic random inputs (f32/bf16
uniform in [-1, 1], integers in [0, 4), booleans at random).

Options:
  --devices cpu:N        the devices; N must equal the mesh's device count
                         (cpu:1 runs the unpartitioned program); cuda:N runs
                         N logical devices over the visible GPUs
                         (docs/GPU.md), --check still against cpu:1
  --check                also run the unpartitioned program on one device (a
                         program with manual computations: the program with
                         every annotation outside them replaced by
                         replication, on the same devices) and compare
                         every output: |got - want| <= rel * |want| +
                         abs * max(1, largest |want| of the output), with
                         f32 rel 1e-4 abs 1e-5, bf16/f16 2e-2 and 1e-2, f64
                         1e-10 and 1e-12; integers and booleans exact; exit 1
                         on a mismatch
  --seed <S>             seed of the random inputs (default 0)
  --inputs <paths>       global inputs instead: comma-separated .npy files
                         or sharded-array directories
  --outputs <dir>        write the outputs (dir/result_<i>.npy; with
                         --distributed one sharded-array directory per
                         output, dir/result_<i>/, written shard by shard)
  --expect <dir>         compare the outputs with dir/result_<i>.npy
  --distributed          run as one of the P processes `mpirun -np P`
                         started: each drives N/P devices (mesh order);
                         rank 0 compiles and broadcasts the program and
                         does --check (docs/Distributed.md)
  --timeout <seconds>    with --distributed: fail a collective that makes
                         no progress for this long (default 60)
  --mesh <spec>          replace the module's mesh first
  --rules <preset|file>  map logical axis names (partita gen's models) to
                         mesh axes: dp, zero1, zero2, fsdp, tp, dp+tp,
                         fsdp+tp, tp+sp, ep, or a JSON rules file
  --interconnect <file>  link figures for the cost model (JSON)
  -h, --help             show this help
)";

/// The reference of a program with manual computations (shard_map): their
/// bodies are per-device code, so it cannot run unpartitioned. Instead every
/// annotation outside them is replaced by replication (arguments and
/// results replicated, op shardings and constraints dropped), and the
/// compiler partitions that; only the manual regions stay per-device.
/// Returns false when the module has no manual computation.
bool replicateAroundManualComputations(ModuleOp module) {
  FlatSymbolRefAttr mesh;
  module.walk([&](ManualComputationOp manual) {
    if (!mesh && !manual.getInShardings().empty())
      mesh = cast<ShardingAttr>(manual.getInShardings()[0]).getMesh();
    if (!mesh && !manual.getOutShardings().empty())
      mesh = cast<ShardingAttr>(manual.getOutShardings()[0]).getMesh();
  });
  if (!mesh)
    return false;
  MLIRContext *context = module.getContext();
  auto replicated = [&](Type type) -> Attribute {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return nullptr;
    return ShardingAttr::fromSharding(
        context, mesh,
        Sharding::replicated(static_cast<int>(tensor.getRank())));
  };
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      if (Attribute attr = replicated(function.getArgument(i).getType()))
        function.setArgAttr(i, PartitaDialect::kShardingAttrName, attr);
    for (unsigned i = 0; i < function.getNumResults(); ++i)
      if (Attribute attr = replicated(function.getResultTypes()[i]))
        function.setResultAttr(i, PartitaDialect::kShardingAttrName, attr);
    SmallVector<ShardingConstraintOp> constraints;
    function.walk([&](Operation *op) {
      if (op->getParentOfType<ManualComputationOp>())
        return;
      op->removeAttr(PartitaDialect::kShardingAttrName);
      if (auto constraint = dyn_cast<ShardingConstraintOp>(op))
        constraints.push_back(constraint);
    });
    for (ShardingConstraintOp constraint : constraints) {
      constraint.getResult().replaceAllUsesWith(constraint.getInput());
      constraint.erase();
    }
  }
  return true;
}

/// The outputs the partitioned program must reproduce: the unpartitioned
/// program on one device, or, when manual computations need their devices,
/// the program replicated around them (`manual` says which).
Expected<std::vector<HostArray>>
referenceOutputs(Session &session, ModuleOp reference,
                 const PipelineOptions &options,
                 const std::vector<HostArray> &inputs, bool &manual) {
  manual = replicateAroundManualComputations(reference);
  if (manual && !runPipeline(session, reference, options))
    return Status::error("the reference program does not compile");
  Expected<Executable> single = lowerToExecutable(reference);
  if (!single)
    return Status::error("reference program: " + single.status().message());
  if (!manual)
    single->mesh = Mesh();
  Expected<std::vector<HostArray>> expected = runOnCpuDevices(*single, inputs);
  if (!expected)
    return Status::error("reference run: " + expected.status().message());
  return expected;
}

/// One line per output, and whether all are within tolerance.
bool compareWithReference(const Executable &program,
                          const std::vector<HostArray> &outputs,
                          const std::vector<HostArray> &expected,
                          std::string &report) {
  bool ok = true;
  for (size_t o = 0; o < outputs.size(); ++o) {
    Comparison comparison = compareArrays(outputs[o], expected[o]);
    report += "  check " +
              describeComparison(program.outputs[o].name, comparison) + "\n";
    ok &= comparison.within;
  }
  return ok;
}

/// Compiles the module at `input` for `partita run`: the train step first
/// when asked (so that the reference is the same step), then, for more
/// than one device, the pipeline. `reference` keeps the module before
/// partitioning. A failure whose diagnostics are printed has an empty
/// message.
Expected<Executable> compileForRun(Session &session, const std::string &input,
                                   PipelineOptions &options, long count,
                                   OwningOpRef<ModuleOp> &module,
                                   OwningOpRef<ModuleOp> &reference) {
  module = loadModule(session, input);
  if (!module)
    return Status::error("");
  if (!options.trainOptimizer.empty()) {
    PipelineOptions train;
    train.stage = Stage::Verified;
    train.trainOptimizer = options.trainOptimizer;
    train.trainLearningRate = options.trainLearningRate;
    train.trainMixedPrecision = options.trainMixedPrecision;
    train.trainMicroBatches = options.trainMicroBatches;
    train.trainRemat = options.trainRemat;
    if (!runPipeline(session, *module, train))
      return Status::error("");
    options.trainOptimizer.clear();
  }
  reference = module->clone();
  if (count > 1 && !runPipeline(session, *module, options))
    return Status::error("");
  return lowerToExecutable(*module);
}

/// `partita run --distributed`: rank 0 compiles (or reads the Executable)
/// and broadcasts the program; every rank runs its devices; rank 0 checks.
int runDistributedRun(const CommandLine &cl, PipelineOptions &options,
                      long count, uint64_t seed, bool check, bool cuda) {
#ifdef PARTITA_HAVE_MPI
  DistributedRunOptions runOptions;
  if (cuda) {
#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
    runOptions.devices = cudaDistributedDevices(CudaBackendOptions());
#else
    return usageError("--distributed --devices cuda:N needs CUDA and NCCL, "
                      "and this partita was built without them");
#endif
  }
  runOptions.seed = seed;
  runOptions.inputs = cl.get("--inputs", "");
  runOptions.outputs = cl.get("--outputs", "");
  if (cl.has("--timeout")) {
    std::string text = cl.get("--timeout");
    char *end = nullptr;
    double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || !end || *end || !(seconds > 0))
      return usageError("--timeout must be a positive number of seconds, "
                        "got '" + text + "'");
    runOptions.timeout = std::chrono::milliseconds(
        static_cast<int64_t>(seconds * 1000 + 0.5));
  }
  Expected<std::unique_ptr<MpiProcess>> process =
      MpiProcess::initialize(nullptr, nullptr);
  if (!process) {
    llvm::errs() << "error: " << process.status().message() << "\n";
    return 1;
  }
  MpiProcess &mpi = **process;
  mpi.setTimeout(runOptions.timeout);
  int rank = mpi.rank();

  Session session;
  OwningOpRef<ModuleOp> module, reference;
  Expected<Executable> compiled = Status::error("not compiled");
  if (rank == 0) {
    std::ifstream file(cl.input, std::ios::binary);
    char magic[8] = {};
    bool executable = file && file.read(magic, 8) &&
                      looksLikeExecutable(
                          std::vector<uint8_t>(magic, magic + 8));
    if (executable && check)
      compiled = Status::error("--check needs the .mlir (it compiles both "
                               "programs); give an Executable --expect");
    else if (executable)
      compiled = readExecutableFile(cl.input);
    else
      compiled = compileForRun(session, cl.input, options, count, module,
                               reference);
    if (!compiled && compiled.status().message().empty())
      compiled = Status::error("the module does not compile (see above)");
  }
  llvm::outs().flush();
  llvm::errs().flush();
  Expected<Executable> program =
      broadcastExecutable(mpi, rank == 0 ? &compiled : nullptr);
  // One write per message, so that ranks' lines do not interleave.
  auto rankError = [&](const std::string &message) {
    llvm::errs() << ("error: rank " + std::to_string(rank) + ": " + message +
                     "\n");
    return 1;
  };
  if (!program)
    return rankError(program.status().message());
  if (program->mesh.numDevices() != count)
    return rankError("the program's mesh has " +
                     std::to_string(program->mesh.numDevices()) +
                     " devices but --devices asks for " +
                     std::to_string(count));
  OutputCheck checker;
  std::string expectDirectory = cl.get("--expect", "");
  if (check || !expectDirectory.empty())
    checker = [&](const std::vector<HostArray> &outputs,
                  std::string &report) -> Status {
      if (!expectDirectory.empty())
        if (Status status =
                expectOutputs(expectDirectory, *program, outputs, report);
            !status)
          return status;
      if (!check)
        return Status::success();
      Expected<std::vector<HostArray>> inputs =
          runOptions.inputs.empty()
              ? Expected<std::vector<HostArray>>(randomInputs(*program, seed))
              : readInputs(*program, runOptions.inputs);
      if (!inputs)
        return inputs.status();
      bool manual = false;
      Expected<std::vector<HostArray>> expected =
          referenceOutputs(session, *reference, options, *inputs, manual);
      if (!expected)
        return expected.status();
      if (!compareWithReference(*program, outputs, *expected, report))
        return Status::error(
            "the partitioned program does not match the unpartitioned one");
      report += manual ? "  (reference: the program replicated around its "
                         "manual computations)\n"
                       : "  (reference: the unpartitioned program on cpu:1)\n";
      return Status::success();
    };
  return runDistributedAndReport(mpi, *program, runOptions, checker);
#else
  (void)cl;
  (void)options;
  (void)count;
  (void)cuda;
  (void)seed;
  (void)check;
  return usageError("--distributed needs MPI, and this partita was built "
                    "without it (install libopenmpi-dev and rebuild)");
#endif
}

} // namespace

int partita::cli::runRun(const std::vector<std::string> &args) {
  CommandLine cl;
  PipelineOptions options;
  std::vector<std::string> extra = {"--devices", "--seed",   "--inputs",
                                    "--outputs", "--expect", "--timeout"};
  if (std::optional<int> done =
          startCommand(args, extra, kRunUsage, Stage::Partitioned, cl, options,
                       {"--distributed"}))
    return *done;
  std::string devices = cl.get("--devices");
  bool cuda = devices.rfind("cuda:", 0) == 0;
  if (devices.rfind("cpu:", 0) != 0 && !cuda)
    return usageError("--devices must be cpu:N or cuda:N (e.g. cpu:8), got '" +
                      devices + "'");
  char *end = nullptr;
  long count = std::strtol(devices.c_str() + (cuda ? 5 : 4), &end, 10);
  if (!end || *end || count < 1)
    return usageError("--devices must be cpu:N or cuda:N with N >= 1, got '" +
                      devices + "'");
  // The partitioned program runs on the devices asked for; the reference of
  // --check always on one CPU device.
  auto runProgram = [&](const Executable &program,
                        const std::vector<HostArray> &inputs,
                        RunStatistics *statistics)
      -> Expected<std::vector<HostArray>> {
    if (!cuda)
      return runOnCpuDevices(program, inputs, statistics);
#ifdef PARTITA_HAVE_CUDA
    return runOnCudaDevices(program, inputs, CudaBackendOptions(), statistics);
#else
    return Status::error("--devices cuda:N needs the CUDA backend, and this "
                         "partita was built without CUDA");
#endif
  };
  char *seedEnd = nullptr;
  std::string seedText = cl.get("--seed", "0");
  unsigned long long seed = std::strtoull(seedText.c_str(), &seedEnd, 10);
  if (!seedEnd || *seedEnd)
    return usageError("--seed must be a non-negative integer, got '" +
                      seedText + "'");
  bool check = cl.on("--check");
  if (cl.on("--distributed"))
    return runDistributedRun(cl, options, count, seed, check, cuda);
  if (cl.has("--timeout"))
    return usageError("--timeout applies to --distributed runs");
  // Inputs: the user's (--inputs) or deterministic random ones.
  auto inputsFor =
      [&](const Executable &program) -> Expected<std::vector<HostArray>> {
    if (cl.has("--inputs"))
      return readInputs(program, cl.get("--inputs"));
    return randomInputs(program, seed);
  };
  // --outputs and --expect, after a run.
  auto finish = [&](const Executable &program,
                    const std::vector<HostArray> &outputs) -> int {
    if (cl.has("--outputs"))
      if (Status status = writeOutputs(cl.get("--outputs"), outputs);
          !status.ok())
        return usageError(status.message());
    if (cl.has("--expect")) {
      std::string report;
      Status status =
          expectOutputs(cl.get("--expect"), program, outputs, report);
      llvm::outs() << report;
      if (!status.ok()) {
        llvm::errs() << "error: " << status.message() << "\n";
        return 1;
      }
    }
    return 0;
  };

  // A compiled Executable runs as is (no --check: that needs the module).
  {
    std::ifstream file(cl.input, std::ios::binary);
    char magic[8] = {};
    if (file && file.read(magic, 8) &&
        looksLikeExecutable(std::vector<uint8_t>(magic, magic + 8))) {
      if (check)
        return usageError(
            "--check needs the .mlir (it compiles both programs)");
      Expected<Executable> program = readExecutableFile(cl.input);
      if (!program) {
        llvm::errs() << "error: " << program.status().message() << "\n";
        return 1;
      }
      if (program->mesh.numDevices() != count)
        return usageError("the program's mesh has " +
                          std::to_string(program->mesh.numDevices()) +
                          " devices but --devices asks for " +
                          std::to_string(count));
      Expected<std::vector<HostArray>> given = inputsFor(*program);
      if (!given)
        return usageError(given.status().message());
      Expected<std::vector<HostArray>> outputs =
          runProgram(*program, *given, nullptr);
      if (!outputs) {
        llvm::errs() << "error: " << outputs.status().message() << "\n";
        return 1;
      }
      for (size_t o = 0; o < outputs->size(); ++o)
        llvm::outs() << "  " << program->outputs[o].name << ": "
                     << summarizeArray((*outputs)[o]) << "\n";
      return finish(*program, *outputs);
    }
  }

  Session session;
  OwningOpRef<ModuleOp> module, reference;
  Expected<Executable> program =
      compileForRun(session, cl.input, options, count, module, reference);
  if (!program) {
    if (!program.status().message().empty())
      llvm::errs() << "error: " << program.status().message() << "\n";
    return 1;
  }
  if (program->mesh.numDevices() != count)
    return usageError(
        "the program's mesh has " + std::to_string(program->mesh.numDevices()) +
        " devices but --devices asks for " + std::to_string(count));

  Expected<std::vector<HostArray>> given = inputsFor(*program);
  if (!given)
    return usageError(given.status().message());
  std::vector<HostArray> inputs = *given;
  auto start = std::chrono::steady_clock::now();
  RunStatistics statistics;
  Expected<std::vector<HostArray>> outputs =
      runProgram(*program, inputs, &statistics);
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
  llvm::outs() << "ran on " << (cuda ? "cuda:" : "cpu:") << count << " in "
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
  for (size_t o = 0; o < outputs->size(); ++o)
    llvm::outs() << "  " << program->outputs[o].name << ": "
                 << summarizeArray((*outputs)[o]) << "\n";
  if (int code = finish(*program, *outputs); code != 0 || !check)
    return code;
  bool manual = false;

  Expected<std::vector<HostArray>> expected =
      referenceOutputs(session, *reference, options, inputs, manual);
  if (!expected) {
    llvm::errs() << "error: " << expected.status().message() << "\n";
    return 1;
  }
  std::string comparisonReport;
  bool ok = compareWithReference(*program, *outputs, *expected,
                                 comparisonReport);
  llvm::outs() << comparisonReport;
  if (!ok) {
    llvm::errs() << "error: the partitioned program does not match the "
                    "unpartitioned one\n";
    return 1;
  }
  if (manual)
    llvm::outs() << "check passed: " << (cuda ? "cuda:" : "cpu:") << count
                 << " matches the program replicated around its manual "
                    "computations\n";
  else
    llvm::outs() << "check passed: " << (cuda ? "cuda:" : "cpu:") << count
                 << " matches cpu:1\n";
  return 0;
}

//===- partita-exec.cpp - The runtime's command-line tool -----------------===//
//
// partita-exec is built from the runtime alone (no MLIR, no LLVM), so it runs
// on any machine that can compile plain C++: the GPU machine, a deployed
// job's hosts. It moves data between whole .npy arrays and sharded array
// directories, shows where the blocks of a sharding live, and runs compiled
// Executables on CPU devices, GPUs or many processes.
//
// Each subcommand is a row of `subcommands`: its name, usage, options and a
// function that returns a Status. main() only parses the command line,
// dispatches, and turns a failed Status into "error: ..." and exit code 1.
//
//===----------------------------------------------------------------------===//
#include "../common/CommandLine.h"
#include "../common/RuntimeBackends.h"
#include "TrainPipeline.h"

#include "partita/Runtime/Execution/BlockwiseRun.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"
#include "partita/Runtime/Program/RunMemory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#ifndef PARTITA_VERSION
#define PARTITA_VERSION "unknown"
#endif

using namespace partita;
using namespace partita::tools;

namespace {

/// A subcommand: what it is called, how to use it, what it does.
struct Subcommand {
  const char *name;
  const char *positionalUsage;
  const char *summary;
  size_t minPositional;
  size_t maxPositional;
  std::vector<OptionSpec> options;
  Status (*run)(const Arguments &);
};

const OptionSpec meshOption = {
    "--mesh", "AXES", "mesh axes, major to minor: data=2,model=4", true};
const OptionSpec specOption = {"--spec", "SPEC",
                               "JAX PartitionSpec: 'P(\"data\", None)'", true};
const OptionSpec deviceIdsOption = {
    "--device-ids", "IDS",
    "device id at each mesh position, row-major: 7,6,5,4,3,2,1,0", false};

Status layoutCommand(const Arguments &args);
Status shardCommand(const Arguments &args);
Status assembleCommand(const Arguments &args);
Status infoCommand(const Arguments &args);
Status describeCommand(const Arguments &args);
Status runCommand(const Arguments &args);

const std::vector<Subcommand> &subcommands() {
  static const std::vector<Subcommand> table = {
      {"layout",
       "",
       "print which block of a sharded array each device holds",
       0,
       0,
       {meshOption,
        specOption,
        {"--shape", "DIMS", "global shape: 8,6 ('' for a scalar)", true},
        deviceIdsOption},
       layoutCommand},
      {"shard",
       "IN.npy",
       "split an array into a sharded array directory (one .npy per shard)",
       1,
       1,
       {meshOption,
        specOption,
        deviceIdsOption,
        {"-o", "DIR", "the directory to write", true}},
       shardCommand},
      {"assemble",
       "DIR",
       "rebuild one array from a sharded array directory",
       1,
       1,
       {{"-o", "OUT.npy", "the file to write ('-' for standard output)", true}},
       assembleCommand},
      {"info",
       "FILE.npy|DIR",
       "print the dtype and shape of an array (and the shards of a directory)",
       1,
       1,
       {},
       infoCommand},
      {"describe",
       "PROGRAM.exe",
       "print a compiled Executable's mesh, inputs and outputs (donated, "
       "updated in place), instruction counts and buffer plan",
       1,
       1,
       {},
       describeCommand},
      {"train",
       "DIR",
       "run a pipelined train step (partita compile --train --pp -o DIR) "
       "for some steps on deterministic data, each pipeline rank on its own "
       "devices, and print the losses and the measured timeline",
       1,
       1,
       {{"--devices", "KIND:N",
         "cpu:N (default: threads) or cuda:N; N is ranks x devices per rank",
         false},
        {"--steps", "K", "train steps (default 3)", false},
        {"--seed", "S", "seed of the parameters and data (default 0)", false},
        {"--losses", "FILE", "write the losses as CSV", false},
        {"--expect", "FILE",
         "compare the losses with a CSV --losses wrote (exit 1 on a "
         "mismatch)",
         false},
        {"--tolerance", "X", "relative tolerance of --expect (default 1e-4)",
         false},
        {"--trace", "FILE",
         "write the last step's timeline in the Chrome/Perfetto trace event "
         "format (one track per pipeline rank)",
         false},
        {"--tf32", nullptr, "with cuda: f32 einsums may use TF32", false},
        {"--distributed", nullptr,
         "run as one of the processes mpirun started: the pipeline ranks "
         "are dealt out to the processes in blocks, and values crossing "
         "processes go as MPI messages (docs/Pipeline.md)",
         false},
        {"--timeout", "SECONDS",
         "with --distributed: fail a wait that makes no progress for this "
         "long (default 60)",
         false}},
       trainPipelineCommand},
      {"run",
       "PROGRAM.exe",
       "run a compiled Executable on the CPU devices of its mesh (threads), "
       "with deterministic random inputs, and print each output's fingerprint",
       1,
       1,
       {{"--seed", "S", "seed of the random inputs (default 0)", false},
        {"--inputs", "FILES",
         "global inputs, comma-separated .npy files or "
         "sharded-array directories (default: random)",
         false},
        {"--outputs", "DIR", "write the outputs as DIR/result_<i>.npy", false},
        {"--expect", "DIR",
         "compare the outputs with DIR/result_<i>.npy "
         "(exit 1 on a mismatch)",
         false},
        {"--devices", "KIND:N",
         "cpu:N (default: threads) or cuda:N (N logical devices over the "
         "visible GPUs); N is the mesh's device count",
         false},
        {"--tf32", nullptr, "with cuda: f32 einsums may use TF32", false},
        {"--staging", nullptr,
         "with cuda: collectives through host memory instead of NCCL or "
         "device memory (a baseline to compare)",
         false},
        {"--repeat", "K",
         "run the program K times on inputs uploaded once and print the "
         "median time per run (outputs: the last run's) [1]",
         false},
        {"--trace", "FILE",
         "write the (last) run's timeline in the Chrome/Perfetto trace "
         "event format: a track per device, a span per instruction, "
         "collective waits marked",
         false},
        {"--distributed", nullptr,
         "run as one of the processes mpirun started: each drives N/P of "
         "the devices; --outputs are then sharded-array directories written "
         "shard by shard (docs/Distributed.md)",
         false},
        {"--timeout", "SECONDS",
         "with --distributed: fail a collective that makes no progress for "
         "this long (default 60)",
         false}},
       runCommand},
  };
  return table;
}

const Subcommand *findSubcommand(const std::string &name) {
  for (const Subcommand &command : subcommands())
    if (name == command.name)
      return &command;
  return nullptr;
}

std::string subcommandNames() {
  std::string names;
  for (const Subcommand &command : subcommands())
    names += std::string(names.empty() ? "" : ", ") + command.name;
  return names;
}

/// The syntax of `command` for the shared parser (CommandLine.h).
CommandSyntax syntaxOf(const Subcommand &command) {
  CommandSyntax syntax;
  syntax.options = command.options;
  syntax.minPositional = command.minPositional;
  syntax.maxPositional = command.maxPositional;
  syntax.positionalUsage = command.positionalUsage;
  syntax.command = command.name;
  syntax.helpHint = std::string("partita-exec ") + command.name + " --help";
  return syntax;
}

/// The examples at the end of each page; each runs as written, in order, in
/// a directory that sees the repository's docs/ and test/
/// (test/CLI/Inputs/run-help-examples.py runs them).
std::string examplesOf(const std::string &command) {
  const char *compile = "  partita compile docs/examples/mlp.mlir --stage "
                        "executable -o mlp.exe\n";
  const char *npy = "test/unit/golden/npy/i32_2x2x2.npy";
  if (command.empty() || command == "run")
    return std::string(compile) +
           "  partita-exec run mlp.exe --devices cpu:8 --repeat 3\n"
           "  partita-exec run mlp.exe --outputs out && partita-exec info "
           "out/result_0.npy\n";
  if (command == "describe")
    return std::string(compile) + "  partita-exec describe mlp.exe\n";
  if (command == "layout")
    return "  partita-exec layout --shape 8,6 --mesh data=2,model=4 --spec "
           "'P(\"data\", \"model\")'\n";
  if (command == "shard" || command == "assemble" || command == "info")
    return std::string("  partita-exec shard ") + npy +
           " --mesh data=2 --spec 'P(\"data\")' -o xs\n"
           "  partita-exec info xs\n"
           "  partita-exec assemble xs -o x.npy\n";
  if (command == "train")
    return "  partita gen gpt --layers 4 | partita compile --train --pp 2 "
           "--mesh pipe=2,data=4 --rules dp -o step\n"
           "  partita-exec train step --steps 2\n";
  return "";
}

void printSubcommandHelp(const Subcommand &command) {
  std::printf(
      "%s\nExamples:\n%s",
      describeOptions("partita-exec", syntaxOf(command), command.summary)
          .c_str(),
      examplesOf(command.name).c_str());
}

void printHelp() {
  std::printf("partita-exec - Partita's runtime: runs compiled Executables, "
              "reads and writes\nsharded arrays and .npy files (built "
              "without MLIR)\n\n"
              "Usage: partita-exec <command> [options]\n"
              "       partita-exec <command> --help\n"
              "       partita-exec --version\n\nCommands:\n");
  for (const Subcommand &command : subcommands())
    std::printf("  %-10s %s\n", command.name,
                wrapText(command.summary, 13, 79, 13).c_str());
  std::printf("\nExamples:\n%s", examplesOf("").c_str());
}


/// Parses "8,6" (whitespace allowed; "" is the empty list).
Expected<std::vector<int64_t>> parseIntegerList(const std::string &text,
                                                const char *option) {
  std::vector<int64_t> values;
  size_t pos = 0;
  if (text.find_first_not_of(" \t") == std::string::npos)
    return values;
  while (pos <= text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string token = text.substr(pos, comma - pos);
    size_t begin = token.find_first_not_of(" \t");
    size_t end = token.find_last_not_of(" \t");
    token =
        begin == std::string::npos ? "" : token.substr(begin, end - begin + 1);
    bool digits = !token.empty() && token.size() <= 18 &&
                  token.find_first_not_of("0123456789") == std::string::npos;
    // 18 digits at most: a larger value is out of range, not malformed.
    if (!digits)
      return Status::error(
          std::string("bad ") + option + " '" + text + "': '" + token + "' " +
          (token.size() > 18 &&
                   token.find_first_not_of("0123456789") == std::string::npos
               ? "is too large (at most 18 digits)"
               : "is not a non-negative integer") +
          " (expected a comma-separated list such as 8,6)");
    values.push_back(std::stoll(token));
    pos = comma + 1;
  }
  return values;
}

/// The mesh and sharding named by --mesh, --device-ids and --spec for an
/// array of `shape`.
struct LayoutOptions {
  Mesh mesh;
  Sharding sharding;
};

Expected<LayoutOptions> parseLayoutOptions(const Arguments &args,
                                           const std::vector<int64_t> &shape) {
  Expected<Mesh> mesh = parseMeshSpec(args.get("--mesh"));
  if (!mesh)
    return Status::error("bad --mesh '" + args.get("--mesh") +
                         "': " + mesh.status().message());
  if (args.has("--device-ids")) {
    Expected<std::vector<int64_t>> ids =
        parseIntegerList(args.get("--device-ids"), "--device-ids");
    if (!ids)
      return ids.status();
    // An empty list is not "row-major": it is a value left out.
    if (ids->empty())
      return Status::error("bad --device-ids '': give one id per device of "
                           "the mesh, or leave the flag out for row-major "
                           "order");
    mesh = Mesh::create(mesh->axes(), *ids);
    if (!mesh)
      return Status::error("bad --device-ids '" + args.get("--device-ids") +
                           "': " + mesh.status().message());
  }
  Expected<Sharding> sharding =
      parsePartitionSpec(args.get("--spec"), static_cast<int>(shape.size()));
  if (!sharding)
    return Status::error("bad --spec '" + args.get("--spec") + "' for shape " +
                         formatShape(shape) + ": " +
                         sharding.status().message());
  if (Status layout = checkShardedLayout(*mesh, *sharding, shape); !layout)
    return Status::error("--spec '" + args.get("--spec") + "' on mesh " +
                         mesh->toString() + ": " + layout.message());
  return LayoutOptions{*mesh, *sharding};
}

std::string describeSharding(const Sharding &sharding) {
  std::string text = sharding.toString();
  if (Expected<std::string> spec = toPartitionSpec(sharding))
    text += "  = " + *spec;
  return text;
}

std::string describeCoordinates(const Mesh &mesh, int64_t device) {
  std::vector<int64_t> coords = mesh.coordinates(device);
  std::string text;
  for (int axis = 0; axis < mesh.rank(); ++axis)
    text += (axis ? " " : "") + mesh.axes()[axis].name + "=" +
            std::to_string(coords[axis]);
  return text.empty() ? "-" : text;
}

std::string padRight(std::string text, size_t width) {
  if (text.size() < width)
    text.append(width - text.size(), ' ');
  return text;
}

Status layoutCommand(const Arguments &args) {
  Expected<std::vector<int64_t>> shape =
      parseIntegerList(args.get("--shape"), "--shape");
  if (!shape)
    return shape.status();
  Expected<LayoutOptions> layout = parseLayoutOptions(args, *shape);
  if (!layout)
    return layout.status();
  const Mesh &mesh = layout->mesh;
  const Sharding &sharding = layout->sharding;
  std::vector<int64_t> local = localShape(mesh, sharding, *shape);
  std::printf("mesh:         %s (%lld devices)\n", mesh.toString().c_str(),
              static_cast<long long>(mesh.numDevices()));
  if (!mesh.deviceIds().empty())
    std::printf("device ids:   %s\n", formatShape(mesh.deviceIds()).c_str());
  std::printf("sharding:     %s\n", describeSharding(sharding).c_str());
  std::printf("global shape: %s\n", formatShape(*shape).c_str());
  std::printf("local shape:  %s%s\n", formatShape(local).c_str(),
              isEvenlySharded(mesh, sharding, *shape)
                  ? ""
                  : " (uneven: short blocks are padded to it)");

  std::vector<std::vector<std::string>> rows = {
      {"device", "coordinates", "shard", "global block", ""}};
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    std::vector<IndexRange> block = deviceBlock(mesh, sharding, *shape, device);
    bool padded = false;
    for (size_t dim = 0; dim < block.size(); ++dim)
      padded = padded || block[dim].size() < local[dim];
    rows.push_back({std::to_string(device), describeCoordinates(mesh, device),
                    formatShape(shardIndices(mesh, sharding, device)),
                    formatRanges(block), padded ? "padded" : ""});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto &row : rows)
    for (size_t column = 0; column < row.size(); ++column)
      widths[column] = std::max(widths[column], row[column].size());
  for (const auto &row : rows) {
    std::string line;
    for (size_t column = 0; column < row.size(); ++column)
      line += padRight(row[column], widths[column] + 2);
    line.erase(line.find_last_not_of(' ') + 1);
    std::printf("%s\n", line.c_str());
  }
  return Status::success();
}

Status shardCommand(const Arguments &args) {
  Expected<HostArray> input = readNpy(args.positional[0]);
  if (!input)
    return input.status();
  Expected<LayoutOptions> layout = parseLayoutOptions(args, input->shape);
  if (!layout)
    return layout.status();
  const std::string &directory = args.get("-o");
  if (Status written =
          writeShardedArray(directory, *input, layout->mesh, layout->sharding);
      !written)
    return written;
  ShardedArrayIndex index = planShardFiles(layout->mesh, layout->sharding,
                                           input->dtype, input->shape);
  std::printf("wrote %s: %zu shard file(s) for %lld devices\n",
              directory.c_str(), index.files.size(),
              static_cast<long long>(layout->mesh.numDevices()));
  return Status::success();
}

Status assembleCommand(const Arguments &args) {
  Expected<HostArray> global = readShardedArray(args.positional[0]);
  if (!global)
    return global.status();
  const std::string &output = args.get("-o");
  if (output != "-")
    return writeNpy(output, *global);
  Expected<std::string> contents = serializeNpy(*global);
  if (!contents)
    return contents.status();
  if (std::fwrite(contents->data(), 1, contents->size(), stdout) !=
      contents->size())
    return Status::error("cannot write to standard output");
  return Status::success();
}

Status infoCommand(const Arguments &args) {
  const std::string &path = args.positional[0];
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    Expected<HostArray> array = readNpy(path);
    if (!array)
      return array.status();
    std::printf("%s: %s %s (%lld elements, %lld bytes)\n", path.c_str(),
                dtypeName(array->dtype), formatShape(array->shape).c_str(),
                static_cast<long long>(array->numElements()),
                static_cast<long long>(array->numBytes()));
    return Status::success();
  }
  Expected<ShardedArrayIndex> index = readShardedArrayIndex(path);
  if (!index)
    return index.status();
  std::printf("%s: sharded array, %s %s\n", path.c_str(),
              dtypeName(index->dtype), formatShape(index->globalShape).c_str());
  std::printf("mesh:        %s (%lld devices)\n",
              index->mesh.toString().c_str(),
              static_cast<long long>(index->mesh.numDevices()));
  if (!index->mesh.deviceIds().empty())
    std::printf("device ids:  %s\n",
                formatShape(index->mesh.deviceIds()).c_str());
  std::printf("sharding:    %s\n", describeSharding(index->sharding).c_str());
  std::printf(
      "local shape: %s\n",
      formatShape(localShape(index->mesh, index->sharding, index->globalShape))
          .c_str());
  std::vector<std::string> missing;
  for (const ShardFileEntry &file : index->files) {
    std::printf("  %s  shard %s  block %s  devices %s\n", file.file.c_str(),
                formatShape(file.shardIndices).c_str(),
                formatRanges(file.globalRanges).c_str(),
                formatShape(file.devices).c_str());
    std::filesystem::path shard = std::filesystem::path(path) / file.file;
    if (!std::filesystem::is_regular_file(shard, ec))
      missing.push_back(file.file);
  }
  // The index alone does not make an array: every shard it names must be
  // there, and hold its block.
  if (!missing.empty()) {
    std::string list;
    for (const std::string &file : missing)
      list += (list.empty() ? "" : ", ") + file;
    return Status::error(path + ": " + std::to_string(missing.size()) +
                         " of " + std::to_string(index->files.size()) +
                         " shard files are missing: " + list);
  }
  // The shards are read as assemble reads them, as info does a .npy file:
  // a truncated or replaced shard is an error here too.
  if (Expected<HostArray> whole = readShardedArray(path); !whole)
    return whole.status();
  return Status::success();
}

int reportError(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

int runTool(int argc, char **argv);

} // namespace

int main(int argc, char **argv) {
  partita::exitWhenOutOfMemory();
  int exitCode = runTool(argc, argv);
  // A full disk or a closed pipe on stdout is an error, said once.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "error: cannot write to standard output: the disk "
                         "is full or the reader has gone\n");
    return 1;
  }
  return exitCode;
}

namespace {

int runTool(int argc, char **argv) {
  if (argc < 2)
    return reportError("no command given; expected one of " +
                       subcommandNames() + " (see 'partita-exec --help')");
  std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    if (first == "help" && argc > 2) {
      const Subcommand *command = findSubcommand(argv[2]);
      if (!command)
        return reportError("unknown command '" + std::string(argv[2]) +
                           "'; expected one of " + subcommandNames());
      printSubcommandHelp(*command);
      return 0;
    }
    printHelp();
    return 0;
  }
  if (first == "--version") {
    std::printf("partita-exec %s\n", PARTITA_VERSION);
    return 0;
  }
  const Subcommand *command = findSubcommand(first);
  if (!command)
    return reportError(
        (first[0] == '-' ? "unknown option '" : "unknown command '") + first +
        "'; expected one of " + subcommandNames() +
        " (see 'partita-exec --help')");
  Expected<Arguments> args = parseArguments(
      std::vector<std::string>(argv + 2, argv + argc), syntaxOf(*command));
  if (!args)
    return reportError(args.status().message());
  if (args->help) {
    printSubcommandHelp(*command);
    return 0;
  }
  if (Status status = command->run(*args); !status)
    // An empty message: the command has reported its failure itself.
    return status.message().empty() ? 1 : reportError(status.message());
  return 0;
}

Status describeCommand(const Arguments &args) {
  Expected<Executable> program = readExecutableFile(args.positional[0]);
  if (!program)
    return program.status();
  std::printf("%s", describeExecutable(*program).c_str());
  return Status::success();
}

/// What `run` was asked for, parsed once for both of its paths.
struct RunRequest {
  uint64_t seed = 0;
  /// Absent: the program's own mesh size on CPU threads.
  std::optional<DeviceSpec> devices;
  int64_t timeoutMilliseconds = 0;
  int repeats = 1;
};

Expected<RunRequest> parseRunRequest(const Arguments &args) {
  RunRequest request;
  if (args.has("--seed")) {
    Expected<uint64_t> seed = parseSeed(args.get("--seed"));
    if (!seed)
      return seed.status();
    request.seed = *seed;
  }
  if (args.has("--devices")) {
    Expected<DeviceSpec> devices = parseDeviceSpec(args.get("--devices"));
    if (!devices)
      return devices.status();
    request.devices = *devices;
  }
  if (args.has("--timeout")) {
    if (!args.has("--distributed"))
      return Status::error("--timeout applies to --distributed runs");
    Expected<int64_t> timeout = parseTimeoutMilliseconds(args.get("--timeout"));
    if (!timeout)
      return timeout.status();
    request.timeoutMilliseconds = *timeout;
  }
  if (args.has("--repeat")) {
    const std::string &text = args.get("--repeat");
    char *end = nullptr;
    long repeats = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || !end || *end || repeats < 1 || repeats > 100000)
      return Status::error("--repeat must be an integer in [1, 100000], got '" +
                           text + "'");
    request.repeats = static_cast<int>(repeats);
  }
  return request;
}

CudaBackendOptions cudaOptions(const Arguments &args) {
  CudaBackendOptions options;
  options.allowTF32 = args.has("--tf32");
  options.forceStaging = args.has("--staging");
  return options;
}

/// `run --distributed`: rank 0 reads the program and broadcasts it; all of
/// it through the MPI plugin (MpiPlugin.h).
Status runAcrossProcesses(const Arguments &args,
                             const RunRequest &request) {
  Expected<const MpiPlugin *> mpi = loadMpiPlugin();
  if (!mpi)
    return mpi.status();
  DistributedToolRun run;
  DistributedRunOptions &options = run.options;
  options.seed = request.seed;
  options.repeats = request.repeats;
  if (request.devices && request.devices->isCuda()) {
    Expected<const CudaPlugin *> plugin = loadCudaPlugin();
    if (!plugin)
      return plugin.status();
    if (!(*plugin)->distributedDevices)
      return Status::error("--distributed --devices cuda:N needs MPI and "
                           "NCCL in the CUDA plugin, which was built "
                           "without them");
    (*plugin)->distributedDevices(cudaOptions(args), options.devices);
  }
  if (args.has("--inputs"))
    options.inputs = args.get("--inputs");
  if (args.has("--outputs"))
    options.outputs = args.get("--outputs");
  if (request.timeoutMilliseconds > 0)
    options.timeout = std::chrono::milliseconds(request.timeoutMilliseconds);
  std::string path = args.positional[0];
  run.loadOnRoot = [path] { return readExecutableFile(path); };
  if (request.devices) {
    int64_t count = request.devices->count;
    run.accept = [count](const Executable &program) {
      return checkDeviceCount("the program's mesh", program.mesh.numDevices(),
                              count);
    };
  }
  if (args.has("--expect")) {
    std::string directory = args.get("--expect");
    run.makeCheck = [directory](const Executable &program) -> OutputCheck {
      return [directory, &program](const std::vector<HostArray> &outputs,
                                   std::string &report) {
        return expectOutputs(directory, program, outputs, report);
      };
    };
  }
  int code = (*mpi)->runDistributedTool(run);
  return code == 0 ? Status::success() : Status::error("");
}

/// Runs `program` on the GPUs with whole inputs and outputs; the outputs'
/// lines, files and comparison once it ran.
Status runOnGpus(const Arguments &args, const RunRequest &request,
                 const Executable &program, RunStatistics &statistics,
                 std::vector<HostArray> &outputs) {
  Expected<std::vector<HostArray>> inputs =
      args.has("--inputs") ? readInputs(program, args.get("--inputs"))
                           : randomInputs(program, request.seed);
  if (!inputs)
    return inputs.status();
  Expected<const CudaPlugin *> plugin = loadCudaPlugin();
  if (!plugin)
    return plugin.status();
  Expected<std::vector<HostArray>> ran =
      (*plugin)->runOnDevices(program, *inputs, cudaOptions(args), &statistics);
  if (!ran)
    return ran.status();
  outputs = std::move(*ran);
  return Status::success();
}

/// Runs `program` on CPU device threads without whole arrays
/// (BlockwiseRun.h): each device makes its input blocks, the outputs are
/// summarised, written and compared block by block.
Expected<std::unique_ptr<BlockwiseOutputs>>
runOnCpuThreads(const Arguments &args, const RunRequest &request,
                const Executable &program, RunStatistics &statistics,
                RunMemory &memory) {
  memory = blockwiseRunMemory(program, args.get("--inputs"));
  if (Status status = checkRunMemory(memory, "the run"); !status)
    return status;
  Expected<InputRegion> region =
      args.has("--inputs") ? fileInputRegions(program, args.get("--inputs"))
                           : randomInputRegions(program, request.seed);
  if (!region)
    return region.status();
  Expected<std::unique_ptr<BlockwiseOutputs>> blocks = BlockwiseOutputs::create(
      program, args.get("--outputs"), args.get("--expect"));
  if (!blocks)
    return blocks.status();
  if (Status status = runOnCpuDevicesBlockwise(program, *region,
                                               (*blocks)->sink(), &statistics);
      !status)
    return status;
  return std::move(*blocks);
}

/// `run` in this process: the devices as threads (cpu) or over the GPUs.
Status runHere(const Arguments &args, const RunRequest &request) {
  Expected<Executable> program = readExecutableFile(args.positional[0]);
  if (!program)
    return program.status();
  DeviceSpec devices;
  devices.count = program->mesh.numDevices();
  if (request.devices) {
    devices = *request.devices;
    if (Status status = checkDeviceCount(
            "the program's mesh", program->mesh.numDevices(), devices.count);
        !status)
      return status;
  }
  auto start = std::chrono::steady_clock::now();
  RunStatistics statistics;
  statistics.repeats = request.repeats;
  statistics.recordTimelines = args.has("--trace");
  std::vector<HostArray> outputs;
  std::unique_ptr<BlockwiseOutputs> blocks;
  RunMemory memory;
  if (devices.isCuda()) {
    if (Status status = runOnGpus(args, request, *program, statistics, outputs);
        !status)
      return status;
  } else {
    Expected<std::unique_ptr<BlockwiseOutputs>> ran =
        runOnCpuThreads(args, request, *program, statistics, memory);
    if (!ran)
      return ran.status();
    blocks = std::move(*ran);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  CommunicationSummary communication = summarizeCommunication(*program);
  std::printf(
      "ran on %s in %.3f ms (%zu instructions; %lld collectives per "
      "step, %.0f bytes per device)\n",
      devices.toString().c_str(), seconds * 1e3,
      program->instructions.size(),
      static_cast<long long>(communication.collectives),
      communication.bytesPerDevice);
  if (statistics.repeats > 1 && !statistics.stepSeconds.empty()) {
    std::vector<double> steps = statistics.stepSeconds;
    std::sort(steps.begin(), steps.end());
    std::printf("step: median %.3f ms over %d runs (min %.3f, max %.3f)\n",
                steps[steps.size() / 2] * 1e3, statistics.repeats,
                steps.front() * 1e3, steps.back() * 1e3);
  }
  std::printf("%s", describeStepTimes(statistics.stepTimes).c_str());
  std::printf("memory: peak %lld bytes per device measured (buffer plan "
              "arena %lld)\n",
              static_cast<long long>(statistics.peakBytesPerDevice),
              static_cast<long long>(program->allocatedBytes()));
  std::vector<std::string> lines;
  if (blocks)
    lines = blocks->summaryLines();
  for (const HostArray &output : outputs)
    lines.push_back(summarizeArray(output));
  for (size_t o = 0; o < lines.size(); ++o)
    std::printf("  %s: %s\n", program->outputs[o].name.c_str(),
                lines[o].c_str());
  if (blocks)
    std::printf("peak resident memory %s (predicted %s)\n",
                formatGiB(static_cast<double>(peakResidentBytes())).c_str(),
                formatGiB(memory.peak()).c_str());
  if (args.has("--trace")) {
    TraceOptions trace;
    trace.title = "partita-exec run " + devices.toString();
    trace.asynchronousKernels = devices.isCuda();
    if (Status status = writeDeviceTrace(args.get("--trace"), *program,
                                         statistics.timelines, trace);
        !status.ok())
      return status;
  }
  if (blocks) {
    if (Status status = blocks->finishWriting(); !status.ok())
      return status;
  } else if (args.has("--outputs")) {
    if (Status status = writeOutputs(args.get("--outputs"), outputs);
        !status.ok())
      return status;
  }
  if (!args.has("--expect"))
    return Status::success();
  std::string report;
  Status status =
      blocks ? blocks->finishExpecting(report)
             : expectOutputs(args.get("--expect"), *program, outputs, report);
  std::printf("%s", report.c_str());
  return status;
}

Status runCommand(const Arguments &args) {
  Expected<RunRequest> request = parseRunRequest(args);
  if (!request)
    return request.status();
  if (args.has("--distributed")) {
    if (args.has("--trace"))
      return Status::error("--trace records the devices of one process; it "
                           "does not apply to --distributed runs");
    return runAcrossProcesses(args, *request);
  }
  return runHere(args, *request);
}
} // namespace

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
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/RunSupport.h"
#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#ifndef PARTITA_VERSION
#define PARTITA_VERSION "unknown"
#endif

using namespace partita;

namespace {

/// One option a subcommand accepts; it takes a value unless `valueName` is
/// null (a flag).
struct OptionSpec {
  const char *name;
  const char *valueName;
  const char *help;
  bool required;
};

/// The command line of one subcommand after parsing.
struct Arguments {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;

  bool has(const std::string &name) const { return options.count(name); }
  const std::string &get(const std::string &name) const {
    return options.at(name);
  }
};

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

Status runLayout(const Arguments &args);
Status runShard(const Arguments &args);
Status runAssemble(const Arguments &args);
Status runInfo(const Arguments &args);
Status runDescribe(const Arguments &args);
Status runProgram(const Arguments &args);

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
       runLayout},
      {"shard",
       "IN.npy",
       "split an array into a sharded array directory (one .npy per shard)",
       1,
       1,
       {meshOption,
        specOption,
        deviceIdsOption,
        {"-o", "DIR", "the directory to write", true}},
       runShard},
      {"assemble",
       "DIR",
       "rebuild one array from a sharded array directory",
       1,
       1,
       {{"-o", "OUT.npy", "the file to write ('-' for standard output)", true}},
       runAssemble},
      {"info",
       "FILE.npy|DIR",
       "print the dtype and shape of an array (and the shards of a directory)",
       1,
       1,
       {},
       runInfo},
      {"describe",
       "PROGRAM.exe",
       "print a compiled Executable's mesh, inputs and outputs (donated, "
       "updated in place), instruction counts and buffer plan",
       1,
       1,
       {},
       runDescribe},
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
         "median time per run (outputs: the last run's)",
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
       runProgram},
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

void printSubcommandHelp(const Subcommand &command) {
  std::printf("usage: partita-exec %s", command.name);
  if (*command.positionalUsage)
    std::printf(" %s", command.positionalUsage);
  for (const OptionSpec &option : command.options)
    if (!option.valueName)
      std::printf(" [%s]", option.name);
    else
      std::printf(option.required ? " %s %s" : " [%s %s]", option.name,
                  option.valueName);
  std::printf("\n\n%s\n", command.summary);
  if (!command.options.empty())
    std::printf("\noptions:\n");
  for (const OptionSpec &option : command.options)
    std::printf("  %-14s %-8s %s\n", option.name,
                option.valueName ? option.valueName : "",
                option.help);
}

void printHelp() {
  std::printf("usage: partita-exec <command> [options]\n"
              "       partita-exec <command> --help\n"
              "       partita-exec --version\n\n"
              "Partita's runtime tool: sharded arrays and .npy files "
              "(built without MLIR).\n\ncommands:\n");
  for (const Subcommand &command : subcommands())
    std::printf("  %-10s %s\n", command.name, command.summary);
}

/// Parses `argv[first..]` for `command`; help is set when --help/-h appears.
Expected<Arguments> parseArguments(const Subcommand &command, int argc,
                                   char **argv, int first, bool &help) {
  Arguments args;
  std::string usageHint =
      std::string("; see 'partita-exec ") + command.name + " --help'";
  bool optionsEnded = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (optionsEnded || arg.empty() || arg[0] != '-' || arg == "-") {
      args.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      help = true;
      return args;
    }
    std::string name = arg, value;
    bool inlineValue = false;
    if (size_t equals = arg.find('='); equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      inlineValue = true;
    }
    auto known = std::find_if(
        command.options.begin(), command.options.end(),
        [&](const OptionSpec &option) { return name == option.name; });
    if (known == command.options.end())
      return Status::error("unknown option '" + name + "' for '" +
                           command.name + "'" + usageHint);
    if (!known->valueName) {
      if (inlineValue)
        return Status::error("option '" + name + "' takes no value" +
                             usageHint);
      value = "1";
    } else if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::error("option '" + name + "' needs a value (" +
                             known->valueName + ")" + usageHint);
      value = argv[++i];
    }
    if (args.has(name))
      return Status::error("option '" + name + "' given twice");
    args.options[name] = value;
  }
  for (const OptionSpec &option : command.options)
    if (option.required && !args.has(option.name))
      return Status::error(std::string("'") + command.name + "' needs " +
                           option.name + " " + option.valueName + " (" +
                           option.help + ")");
  if (args.positional.size() < command.minPositional)
    return Status::error(std::string("'") + command.name + "' needs " +
                         command.positionalUsage + usageHint);
  if (args.positional.size() > command.maxPositional)
    return Status::error("unexpected argument '" +
                         args.positional[command.maxPositional] + "'" +
                         usageHint);
  return args;
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
    if (!digits)
      return Status::error(std::string("bad ") + option + " '" + text + "': '" +
                           token +
                           "' is not a non-negative integer (expected a "
                           "comma-separated list such as 8,6)");
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

Status runLayout(const Arguments &args) {
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

Status runShard(const Arguments &args) {
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

Status runAssemble(const Arguments &args) {
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

Status runInfo(const Arguments &args) {
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
  for (const ShardFileEntry &file : index->files)
    std::printf("  %s  shard %s  block %s  devices %s\n", file.file.c_str(),
                formatShape(file.shardIndices).c_str(),
                formatRanges(file.globalRanges).c_str(),
                formatShape(file.devices).c_str());
  return Status::success();
}

int reportError(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
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
  bool help = false;
  Expected<Arguments> args = parseArguments(*command, argc, argv, 2, help);
  if (help) {
    printSubcommandHelp(*command);
    return 0;
  }
  if (!args)
    return reportError(args.status().message());
  if (Status status = command->run(*args); !status)
    // An empty message: the command has reported its failure itself.
    return status.message().empty() ? 1 : reportError(status.message());
  return 0;
}

namespace {
Status runDescribe(const Arguments &args) {
  Expected<Executable> program = readExecutableFile(args.positional[0]);
  if (!program)
    return program.status();
  std::printf("%s", describeExecutable(*program).c_str());
  return Status::success();
}

/// `run --distributed`: rank 0 reads the program and broadcasts it.
Status runProgramDistributed(const Arguments &args, uint64_t seed) {
#ifdef PARTITA_HAVE_MPI
  DistributedRunOptions options;
  options.seed = seed;
  if (args.has("--devices") && args.get("--devices").rfind("cuda:", 0) == 0) {
#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
    CudaBackendOptions cuda;
    cuda.allowTF32 = args.has("--tf32");
    options.devices = cudaDistributedDevices(cuda);
#else
    return Status::error("--distributed --devices cuda:N needs CUDA and "
                         "NCCL, and this partita-exec was built without "
                         "them");
#endif
  } else if (args.has("--devices") &&
             args.get("--devices").rfind("cpu:", 0) != 0) {
    return Status::error("--devices must be cpu:N or cuda:N, got '" +
                         args.get("--devices") + "'");
  }
  if (args.has("--inputs"))
    options.inputs = args.get("--inputs");
  if (args.has("--outputs"))
    options.outputs = args.get("--outputs");
  if (args.has("--timeout")) {
    const std::string &text = args.get("--timeout");
    char *end = nullptr;
    double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || !end || *end || !(seconds > 0))
      return Status::error("--timeout must be a positive number of seconds, "
                           "got '" + text + "'");
    options.timeout = std::chrono::milliseconds(
        static_cast<int64_t>(seconds * 1000 + 0.5));
  }
  Expected<std::unique_ptr<MpiProcess>> process =
      MpiProcess::initialize(nullptr, nullptr);
  if (!process)
    return process.status();
  (*process)->setTimeout(options.timeout);
  Expected<Executable> loaded = Status::error("not loaded");
  if ((*process)->rank() == 0)
    loaded = readExecutableFile(args.positional[0]);
  Expected<Executable> program =
      broadcastExecutable(**process, (*process)->rank() == 0 ? &loaded
                                                             : nullptr);
  if (!program) {
    std::fprintf(stderr, "error: rank %d: %s\n", (*process)->rank(),
                 program.status().message().c_str());
    return Status::error("");
  }
  if (args.has("--devices")) {
    const std::string &text = args.get("--devices");
    long long count = std::strtoll(text.c_str() + text.find(':') + 1,
                                   nullptr, 10);
    if (count != program->mesh.numDevices()) {
      std::fprintf(stderr,
                   "error: rank %d: the program's mesh has %lld devices but "
                   "--devices asks for %lld\n",
                   (*process)->rank(),
                   static_cast<long long>(program->mesh.numDevices()), count);
      return Status::error("");
    }
  }
  OutputCheck check;
  if (args.has("--expect")) {
    std::string directory = args.get("--expect");
    const Executable &compiled = *program;
    check = [directory, &compiled](const std::vector<HostArray> &outputs,
                                   std::string &report) {
      return expectOutputs(directory, compiled, outputs, report);
    };
  }
  int code = runDistributedAndReport(**process, *program, options, check);
  process->reset();
  return code == 0 ? Status::success() : Status::error("");
#else
  (void)args;
  (void)seed;
  return Status::error("--distributed needs MPI, and this partita-exec was "
                       "built without it (install libopenmpi-dev and "
                       "rebuild)");
#endif
}

Status runProgram(const Arguments &args) {
  uint64_t seed = 0;
  if (args.has("--seed")) {
    const std::string &text = args.get("--seed");
    char *end = nullptr;
    seed = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || !end || *end)
      return Status::error("--seed must be a non-negative integer, got '" +
                           text + "'");
  }
  if (args.has("--distributed"))
    return runProgramDistributed(args, seed);
  if (args.has("--timeout"))
    return Status::error("--timeout applies to --distributed runs");
  Expected<Executable> program = readExecutableFile(args.positional[0]);
  if (!program)
    return program.status();
  Expected<std::vector<HostArray>> inputs =
      args.has("--inputs")
          ? readInputs(*program, args.get("--inputs"))
          : Expected<std::vector<HostArray>>(randomInputs(*program, seed));
  if (!inputs)
    return inputs.status();
  // --devices cpu:N (default) or cuda:N; N must be the mesh's size.
  std::string kind = "cpu";
  if (args.has("--devices")) {
    const std::string &text = args.get("--devices");
    size_t colon = text.find(':');
    kind = text.substr(0, colon);
    char *end = nullptr;
    long long count = colon == std::string::npos
                          ? -1
                          : std::strtoll(text.c_str() + colon + 1, &end, 10);
    if ((kind != "cpu" && kind != "cuda") || count < 1 || !end || *end)
      return Status::error("--devices must be cpu:N or cuda:N, got '" + text +
                           "'");
    if (count != program->mesh.numDevices())
      return Status::error(
          "the program's mesh has " +
          std::to_string(program->mesh.numDevices()) +
          " devices but --devices asks for " + std::to_string(count));
  }
  auto start = std::chrono::steady_clock::now();
  RunStatistics statistics;
  if (args.has("--repeat")) {
    const std::string &text = args.get("--repeat");
    char *end = nullptr;
    long repeats = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || !end || *end || repeats < 1 || repeats > 100000)
      return Status::error("--repeat must be a positive integer, got '" +
                           text + "'");
    statistics.repeats = static_cast<int>(repeats);
  }
  Expected<std::vector<HostArray>> outputs = Status::error("not run");
  if (kind == "cpu") {
    outputs = runOnCpuDevices(*program, *inputs, &statistics);
  } else {
#ifdef PARTITA_HAVE_CUDA
    CudaBackendOptions options;
    options.allowTF32 = args.has("--tf32");
    options.forceStaging = args.has("--staging");
    outputs = runOnCudaDevices(*program, *inputs, options, &statistics);
#else
    return Status::error("--devices cuda:N needs the CUDA backend, and this "
                         "partita-exec was built without CUDA");
#endif
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!outputs)
    return outputs.status();
  CommunicationSummary communication = summarizeCommunication(*program);
  std::printf(
      "ran on %s:%lld in %.3f ms (%zu instructions; %lld collectives per "
      "step, %.0f bytes per device)\n",
      kind.c_str(), static_cast<long long>(program->mesh.numDevices()),
      seconds * 1e3,
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
  std::printf("memory: peak %lld bytes per device measured (buffer plan "
              "arena %lld)\n",
              static_cast<long long>(statistics.peakBytesPerDevice),
              static_cast<long long>(program->allocatedBytes()));
  for (size_t o = 0; o < outputs->size(); ++o)
    std::printf("  %s: %s\n", program->outputs[o].name.c_str(),
                summarizeArray((*outputs)[o]).c_str());
  if (args.has("--outputs"))
    if (Status status = writeOutputs(args.get("--outputs"), *outputs);
        !status.ok())
      return status;
  if (args.has("--expect")) {
    std::string report;
    Status status =
        expectOutputs(args.get("--expect"), *program, *outputs, report);
    std::printf("%s", report.c_str());
    return status;
  }
  return Status::success();
}
} // namespace

//===- Train.cpp - partita train ------------------------------------------===//
//
// Trains one of the builders' models: the train step (forward, backward,
// optimizer) is compiled for the mesh and rules, then run step after step
// on N emulated CPU devices with the new parameters and optimizer state fed
// back; data are synthetic and deterministic, or windows of a token file.
// Prints progress, writes the losses as CSV and an SVG plot.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Program/Executable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

using namespace partita;
using namespace partita::cli;

namespace {

constexpr const char *kTrainUsage =
    R"(Usage: partita train --model mlp|gpt|moe [model flags] [options]

Builds the model's train step, compiles it for the mesh and rules, and runs
it for --steps steps on N emulated CPU devices, feeding the new parameters
and optimizer state back each step.

Options (defaults in brackets):
  --model M               mlp, gpt or moe (ffn has no loss)
  --devices cpu:N         the devices [cpu:8]; cpu:1 trains unpartitioned
  --mesh SPEC             the mesh [data=N]
  --rules PRESET|FILE     dp, zero1, zero2, fsdp, tp, dp+tp, fsdp+tp, tp+sp,
                          ep, or a JSON rules file [dp]
  --steps N               train steps [10]
  --optimizer adamw|sgd   [adamw]
  --lr X                  learning rate [1e-3 for adamw, 0.05 for sgd]
  --seed S                initialization and synthetic data [0]
  --data FILE             int32 little-endian tokens (gpt, moe): each step
                          reads batch windows of seq + 1 tokens, in an order
                          shuffled by the seed, none twice in an epoch; each
                          data-parallel rank reads only its rows
  --data-trace FILE       record every window read (step, epoch, rank, row,
                          window) as CSV
  --micro-batches M       gradient accumulation: M forward/backward passes
                          on slices of the batch, one update [1]
  --remat P               activation checkpointing: none, per-layer (each
                          layer recomputed in the backward), full [none]
  --mixed-precision       bf16 parameters and gradients, f32 master weights
                          and moments (needs --dtype bf16)
  --output DIR            where loss.csv and loss.svg go [partita-train]
  model flags             as for 'partita gen' (--layers, --d-model, ...)
  -h, --help              show this help

Synthetic data: gpt and moe see sequences that follow a fixed rule (each
token is 3 times the previous one plus 1, modulo the vocabulary) and learn
to predict the next token; mlp regresses sin(3x).
)";

struct TrainData {
  virtual ~TrainData() = default;
  /// Fills the data inputs of step `step` (the model's non-parameter
  /// inputs, in order).
  virtual Status fill(int64_t step, std::vector<HostArray *> inputs) = 0;
};

/// Deterministic synthetic data.
struct SyntheticData : TrainData {
  std::string model;
  int64_t vocab;
  uint64_t seed;
  Status fill(int64_t step, std::vector<HostArray *> inputs) override {
    std::mt19937_64 random(seed * 7919 + static_cast<uint64_t>(step));
    if (model == "mlp") {
      HostArray &x = *inputs[0], &target = *inputs[1];
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      for (int64_t i = 0; i < x.numElements(); ++i) {
        float value = uniform(random), goal = std::sin(3.0f * value);
        std::memcpy(x.bytes.data() + 4 * i, &value, 4);
        std::memcpy(target.bytes.data() + 4 * i, &goal, 4);
      }
      return Status::success();
    }
    // Token sequences t[k+1] = (3 t[k] + 1) mod V; targets are the next ones.
    HostArray &tokens = *inputs[0], &targets = *inputs[1];
    int64_t batch = tokens.shape[0], seq = tokens.shape[1];
    for (int64_t b = 0; b < batch; ++b) {
      int32_t token = static_cast<int32_t>(random() % vocab);
      for (int64_t s = 0; s < seq; ++s) {
        int32_t next = static_cast<int32_t>((3 * token + 1) % vocab);
        std::memcpy(tokens.bytes.data() + 4 * (b * seq + s), &token, 4);
        std::memcpy(targets.bytes.data() + 4 * (b * seq + s), &next, 4);
        token = next;
      }
    }
    return Status::success();
  }
};

/// Windows of a token file: `seq + 1` tokens each, visited in an order
/// shuffled per epoch, each window once per epoch. Data-parallel rank r
/// reads only its rows of each global batch (the rows its devices hold,
/// a contiguous block of batch / ranks).
struct TokenFileData : TrainData {
  std::vector<int32_t> tokens;
  std::vector<int64_t> order;
  int64_t vocab = 0, seq = 0, windows = 0, ranks = 1;
  uint64_t seed = 0;
  int64_t epochOf = -1;
  /// When set, one line per window read: step, epoch, rank, row, window.
  std::unique_ptr<std::ofstream> trace;

  Status load(const std::string &path, int64_t sequence, int64_t vocabulary) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
      return Status::error("cannot read token file '" + path + "'");
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), {});
    if (bytes.size() % 4 != 0)
      return Status::error("token file '" + path + "' holds " +
                           std::to_string(bytes.size()) +
                           " bytes, not a whole number of int32 tokens");
    tokens.resize(bytes.size() / 4);
    std::memcpy(tokens.data(), bytes.data(), bytes.size());
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= vocabulary)
        return Status::error("token file '" + path + "': token " +
                             std::to_string(i) + " is " +
                             std::to_string(tokens[i]) +
                             ", outside the vocabulary [0, " +
                             std::to_string(vocabulary) + ")");
    seq = sequence;
    vocab = vocabulary;
    windows = static_cast<int64_t>(tokens.size()) / (seq + 1);
    return Status::success();
  }

  Status fill(int64_t step, std::vector<HostArray *> inputs) override {
    HostArray &in = *inputs[0], &out = *inputs[1];
    int64_t batch = in.shape[0];
    if (windows < batch)
      return Status::error("the token file holds " + std::to_string(windows) +
                           " windows of " + std::to_string(seq + 1) +
                           " tokens, fewer than one batch of " +
                           std::to_string(batch));
    int64_t perEpoch = windows / batch;
    int64_t epoch = step / perEpoch, within = step % perEpoch;
    if (epoch != epochOf) {
      order.resize(windows);
      for (int64_t w = 0; w < windows; ++w)
        order[w] = w;
      std::mt19937_64 random(seed * 104729 + static_cast<uint64_t>(epoch));
      std::shuffle(order.begin(), order.end(), random);
      epochOf = epoch;
    }
    for (int64_t rank = 0; rank < ranks; ++rank)
      readRank(step, epoch, within, rank, batch, in, out);
    return Status::success();
  }

  /// Rank `rank`'s rows of the batch of `step`.
  void readRank(int64_t step, int64_t epoch, int64_t within, int64_t rank,
                int64_t batch, HostArray &in, HostArray &out) {
    int64_t rows = batch / ranks;
    for (int64_t b = rank * rows; b < (rank + 1) * rows; ++b) {
      int64_t window = order[within * batch + b];
      const int32_t *start = tokens.data() + window * (seq + 1);
      std::memcpy(in.bytes.data() + 4 * b * seq, start, 4 * seq);
      std::memcpy(out.bytes.data() + 4 * b * seq, start + 1, 4 * seq);
      if (trace)
        *trace << step << "," << epoch << "," << rank << "," << b << ","
               << window << "\n";
    }
  }
};

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fs", seconds);
  return text;
}

/// The losses as an SVG line plot.
std::string lossPlot(const std::vector<double> &losses, const std::string &title) {
  double low = *std::min_element(losses.begin(), losses.end());
  double high = *std::max_element(losses.begin(), losses.end());
  if (high - low < 1e-12)
    high = low + 1;
  const double width = 640, height = 360, left = 60, right = 20, top = 30,
               bottom = 40;
  auto x = [&](size_t i) {
    return left + (losses.size() > 1 ? i * (width - left - right) /
                                           (losses.size() - 1)
                                     : 0.0);
  };
  auto y = [&](double value) {
    return top + (high - value) * (height - top - bottom) / (high - low);
  };
  std::string svg;
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer),
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                width, height);
  svg += buffer;
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::snprintf(buffer, sizeof(buffer),
                "<text x=\"%.0f\" y=\"18\">%s</text>\n", left, title.c_str());
  svg += buffer;
  std::snprintf(buffer, sizeof(buffer),
                "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
                "stroke=\"black\"/>\n<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
                "y2=\"%.0f\" stroke=\"black\"/>\n",
                left, top, left, height - bottom, left, height - bottom,
                width - right, height - bottom);
  svg += buffer;
  for (double value : {low, high}) {
    std::snprintf(buffer, sizeof(buffer),
                  "<text x=\"4\" y=\"%.1f\">%.4g</text>\n", y(value) + 4, value);
    svg += buffer;
  }
  std::snprintf(buffer, sizeof(buffer),
                "<text x=\"%.0f\" y=\"%.0f\">step</text>\n",
                width / 2, height - 10);
  svg += buffer;
  svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
  for (size_t i = 0; i < losses.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%s%.1f,%.1f", i ? " " : "", x(i),
                  y(losses[i]));
    svg += buffer;
  }
  svg += "\"/>\n</svg>\n";
  return svg;
}

} // namespace

int partita::cli::runTrain(const std::vector<std::string> &args) {
  std::vector<std::string> valueFlags = modelValueFlags();
  for (const char *flag : {"--model", "--devices", "--mesh", "--rules",
                           "--steps", "--optimizer", "--lr", "--seed", "--data",
                           "--output", "--interconnect", "--micro-batches",
                           "--remat", "--data-trace"})
    valueFlags.push_back(flag);
  CommandLine cl;
  int exitCode = 0;
  std::vector<std::string> switches = modelSwitchFlags();
  switches.push_back("--mixed-precision");
  if (!parseCommandLine(args, valueFlags, switches, cl, exitCode))
    return exitCode;
  if (cl.help) {
    llvm::outs() << kTrainUsage;
    return 0;
  }
  if (cl.input != "-")
    return usageError("unexpected argument '" + cl.input +
                      "'; the model is --model (see 'partita train --help')");
  ModelConfig config;
  config.model = cl.get("--model", "");
  if (config.model != "mlp" && config.model != "gpt" && config.model != "moe")
    return usageError("--model must be mlp, gpt or moe (got '" + config.model +
                      "')");
  if (!parseModelConfig(cl, config, exitCode))
    return exitCode;
  if (config.noLoss)
    return usageError("--no-loss leaves nothing to train");

  std::string devices = cl.get("--devices", "cpu:8");
  char *end = nullptr;
  long count = devices.rfind("cpu:", 0) == 0
                   ? std::strtol(devices.c_str() + 4, &end, 10)
                   : 0;
  if (count < 1 || !end || *end)
    return usageError("--devices must be cpu:N with N >= 1, got '" + devices +
                      "'");
  auto integer = [&](const char *flag, long long fallback,
                     long long &value) -> bool {
    std::string text = cl.get(flag, std::to_string(fallback));
    char *stop = nullptr;
    value = std::strtoll(text.c_str(), &stop, 10);
    if (text.empty() || !stop || *stop || value < 0) {
      exitCode = usageError(std::string(flag) +
                            " must be a non-negative integer, got '" + text +
                            "'");
      return false;
    }
    return true;
  };
  long long steps = 0, seed = 0, micro = 1;
  if (!integer("--steps", 10, steps) || !integer("--seed", 0, seed) ||
      !integer("--micro-batches", 1, micro))
    return exitCode;
  if (micro < 1 || config.batch % micro != 0)
    return usageError("--micro-batches (" + std::to_string(micro) +
                      ") must divide --batch (" +
                      std::to_string(config.batch) + ")");
  // The model sees one micro-batch; the step takes the whole batch.
  int64_t globalBatch = config.batch;
  config.batch /= micro;
  std::string optimizer = cl.get("--optimizer", "adamw");
  if (optimizer != "adamw" && optimizer != "sgd")
    return usageError("--optimizer must be adamw or sgd, got '" + optimizer +
                      "'");
  double lr = optimizer == "adamw" ? 1e-3 : 0.05;
  if (cl.has("--lr")) {
    std::string text = cl.get("--lr");
    char *stop = nullptr;
    lr = std::strtod(text.c_str(), &stop);
    if (text.empty() || !stop || *stop || lr <= 0)
      return usageError("--lr must be a positive number, got '" + text + "'");
  }
  std::string meshText = cl.get("--mesh", "data=" + std::to_string(count));
  Expected<Mesh> mesh = parseMeshSpec(meshText);
  if (!mesh)
    return usageError("invalid --mesh '" + meshText +
                      "': " + mesh.status().message());
  if (count > 1 && mesh->numDevices() != count)
    return usageError("the mesh " + meshText + " has " +
                      std::to_string(mesh->numDevices()) +
                      " devices but --devices asks for " +
                      std::to_string(count));

  // The train step, compiled.
  Session session;
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> built =
      buildModel(&session.context, config, *mesh);
  if (!built)
    return usageError(built.status().message());
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*built);
  PipelineOptions options;
  options.stage = count > 1 ? Stage::Partitioned : Stage::Verified;
  options.rules = cl.get("--rules", "dp");
  options.interconnectFile = cl.get("--interconnect");
  options.trainOptimizer = optimizer;
  options.trainLearningRate = lr;
  options.trainMicroBatches = micro;
  options.trainMixedPrecision = cl.on("--mixed-precision");
  if (options.trainMixedPrecision && config.dtype != "bf16")
    return usageError("--mixed-precision trains a bf16 model: add --dtype bf16");
  options.trainRemat = cl.get("--remat", "none");
  if (options.trainRemat != "none" && options.trainRemat != "per-layer" &&
      options.trainRemat != "full")
    return usageError("--remat must be none, per-layer or full, got '" +
                      options.trainRemat + "'");
  if (!runPipeline(session, *module, options))
    return 1;
  mlir::func::FuncOp step;
  for (auto function : module->getOps<mlir::func::FuncOp>())
    if (function.isPublic())
      step = function;
  Expected<Executable> program = lowerToExecutable(*module);
  if (!program) {
    llvm::errs() << "error: " << program.status().message() << "\n";
    return 1;
  }
  if (count == 1)
    program->mesh = Mesh();

  // Inputs: parameters initialised, state zero, data per step.
  std::vector<HostArray> inputs =
      randomInputs(*program, static_cast<uint64_t>(seed));
  size_t updated = step.getNumResults() - 1;
  std::vector<HostArray *> data;
  int stepInput = -1;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto role = step.getArgAttrOfType<RoleAttr>(i, PartitaDialect::kRoleAttrName);
    if (role && role.getValue() == Role::OptState)
      std::fill(inputs[i].bytes.begin(), inputs[i].bytes.end(), 0);
    else if (role && role.getValue() == Role::Input && i >= updated) {
      if (inputs[i].shape.empty())
        stepInput = static_cast<int>(i);
      else
        data.push_back(&inputs[i]);
    }
  }
  std::unique_ptr<TrainData> source;
  if (cl.has("--data")) {
    if (config.model == "mlp")
      return usageError("--data holds tokens: it needs --model gpt or moe");
    auto file = std::make_unique<TokenFileData>();
    file->seed = static_cast<uint64_t>(seed);
    if (mesh->axisIndex("data") >= 0 && count > 1 &&
        config.batch * micro % mesh->axisSize("data") == 0)
      file->ranks = mesh->axisSize("data");
    if (cl.has("--data-trace")) {
      file->trace = std::make_unique<std::ofstream>(cl.get("--data-trace"));
      if (!*file->trace)
        return usageError("cannot write '" + cl.get("--data-trace") + "'");
      *file->trace << "step,epoch,rank,row,window\n";
    }
    if (Status status = file->load(cl.get("--data"), config.seq, config.vocab);
        !status.ok())
      return usageError(status.message());
    source = std::move(file);
  } else {
    auto synthetic = std::make_unique<SyntheticData>();
    synthetic->model = config.model;
    synthetic->vocab = config.vocab;
    synthetic->seed = static_cast<uint64_t>(seed);
    source = std::move(synthetic);
  }

  std::string outputDir = cl.get("--output", "partita-train");
  if (std::error_code error = llvm::sys::fs::create_directories(outputDir))
    return usageError("cannot create '" + outputDir + "': " + error.message());
  bool tty = isatty(STDOUT_FILENO);
  int64_t tokensPerStep =
      config.model == "mlp" ? globalBatch : globalBatch * config.seq;
  llvm::outs() << "training " << config.model << " on " << devices << " (mesh "
               << mesh->toString() << ", rules " << options.rules << ", "
               << optimizer << " lr " << llvm::format("%g", lr)
               << (micro > 1 ? ", " + std::to_string(micro) + " micro-batches"
                             : std::string())
               << "): "
               << summarizeCommunication(*program).collectives
               << " collectives per step, "
               << program->allocatedBytes() << " bytes per device planned\n";
  // What each device holds between steps: its blocks of the arguments.
  std::map<std::string, int64_t> held;
  for (const ExecutableValue &input : program->inputs)
    held[input.role.empty() ? "other" : input.role] +=
        program->slots[input.slot].bytes();
  llvm::outs() << "held per device between steps: param " << held["param"]
               << ", grad " << held["grad"] << ", opt_state "
               << held["opt_state"] << " bytes\n";
  std::vector<double> losses, seconds;
  auto started = std::chrono::steady_clock::now();
  for (long long s = 0; s < steps; ++s) {
    if (Status status = source->fill(s, data); !status.ok())
      return usageError(status.message());
    if (stepInput >= 0) {
      int32_t number = static_cast<int32_t>(s);
      std::memcpy(inputs[stepInput].bytes.data(), &number, 4);
    }
    auto begin = std::chrono::steady_clock::now();
    Expected<std::vector<HostArray>> outputs =
        runOnCpuDevices(*program, inputs);
    if (!outputs) {
      llvm::errs() << "\nerror: step " << s << ": "
                   << outputs.status().message() << "\n";
      return 1;
    }
    double took = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - begin)
                      .count();
    for (size_t k = 0; k < updated; ++k)
      inputs[k] = std::move((*outputs)[1 + k]);
    double loss = elementAsDouble((*outputs)[0], 0);
    losses.push_back(loss);
    seconds.push_back(took);
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    double eta = elapsed / (s + 1) * (steps - s - 1);
    std::string line =
        "step " + std::to_string(s + 1) + "/" + std::to_string(steps) +
        "  loss " + std::to_string(loss) + "  " +
        std::to_string(static_cast<long long>(tokensPerStep / took)) +
        (config.model == "mlp" ? " examples/s" : " tokens/s") + "  eta " +
        formatSeconds(eta);
    if (tty) {
      int filled = static_cast<int>(20.0 * (s + 1) / steps);
      llvm::outs() << "\r[" << std::string(filled, '#')
                   << std::string(20 - filled, ' ') << "] " << line;
      if (s + 1 == steps)
        llvm::outs() << "\n";
      llvm::outs().flush();
    } else {
      llvm::outs() << line << "\n";
    }
    if (!std::isfinite(loss)) {
      llvm::errs() << "error: the loss is " << loss << " at step " << s + 1
                   << "; try a smaller --lr\n";
      return 1;
    }
  }

  std::string csvPath = outputDir + "/loss.csv", svgPath = outputDir + "/loss.svg";
  bool written = writeOutputFile(csvPath, [&](llvm::raw_ostream &os) {
    os << "step,loss,seconds\n";
    for (size_t i = 0; i < losses.size(); ++i)
      os << i + 1 << "," << llvm::format("%.9g", losses[i]) << ","
         << llvm::format("%.6f", seconds[i]) << "\n";
  });
  if (!losses.empty())
    written = written && writeOutputFile(svgPath, [&](llvm::raw_ostream &os) {
                os << lossPlot(losses, config.model + " " + options.rules +
                                           " on " + devices);
              });
  if (!written)
    return 1;
  if (!losses.empty())
    llvm::outs() << "loss " << llvm::format("%.6g", losses.front()) << " -> "
                 << llvm::format("%.6g", losses.back())
                 << " in " << steps << " steps; wrote " << csvPath << " and "
                 << svgPath << "\n";
  return 0;
}

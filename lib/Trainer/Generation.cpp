//===- Generation.cpp - Text from a trained model, with a KV cache --------===//
//
// The prefill program runs every prompt, padded to the sequence, once; the
// decode program then runs once per new token for every row together. The
// caches never leave the devices: a program's cache blocks go to the next
// program as they are whenever the two lay them out alike (the builder pins
// both to the same logical axes), and through the host only otherwise
// (docs/Training.md, "Generation").
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Generation.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Runtime/Training/Checkpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

using namespace partita;

namespace {

using Blocks = std::vector<std::vector<HostArray>>;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Output `o` of `program` as a global array, from every device's blocks.
Expected<HostArray> assembleOutput(const Executable &program, size_t o,
                                   const Blocks &outputs) {
  Executable view;
  view.mesh = program.mesh;
  view.outputs = {program.outputs[o]};
  Blocks blocks(outputs.size());
  for (size_t d = 0; d < outputs.size(); ++d)
    if (o < outputs[d].size())
      blocks[d].push_back(outputs[d][o]);
  Expected<std::vector<HostArray>> whole = assembleOutputs(view, blocks);
  if (!whole)
    return whole.status();
  return std::move((*whole)[0]);
}

/// Splits `global` (program input `i`) into every device's slot `slot`.
Status spread(const Executable &program, size_t i, const HostArray &global,
              Blocks &inputs, size_t slot) {
  Expected<std::vector<HostArray>> blocks =
      inputBlocksByDevice(program, i, global, PartialInputs::FirstMember);
  if (!blocks)
    return blocks.status();
  for (size_t d = 0; d < inputs.size(); ++d)
    inputs[d][slot] = std::move((*blocks)[d]);
  return Status::success();
}

/// Every device's block of input `i` of `to` from output `o` of `from`:
/// the blocks themselves (moved) when both lay the value out alike, else
/// assembled and sliced again.
Status handOver(const Executable &from, size_t o, Blocks &outputs,
                const Executable &to, size_t i, Blocks &inputs, size_t slot) {
  int64_t devices = to.mesh.numDevices();
  if (from.outputs[o].sharding == to.inputs[i].sharding &&
      from.mesh.toString() == to.mesh.toString()) {
    for (int64_t d = 0; d < devices; ++d)
      inputs[d][slot] = std::move(outputs[d][o]);
    return Status::success();
  }
  Expected<HostArray> whole = assembleOutput(from, o, outputs);
  if (!whole)
    return whole.status();
  return spread(to, i, *whole, inputs, slot);
}

std::vector<size_t> parameterInputs(const Executable &program) {
  std::vector<size_t> index;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (program.inputs[i].role == "param")
      index.push_back(i);
  return index;
}

/// The logits of row `r` of `logits` [B, V] as floats.
std::vector<float> rowOf(const HostArray &logits, int64_t r) {
  int64_t V = logits.shape[1];
  std::vector<float> row(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v)
    row[static_cast<size_t>(v)] =
        static_cast<float>(logits.elementAsDouble(r * V + v));
  return row;
}

std::string formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit ? "%.1f %s" : "%.0f %s", bytes,
                units[unit]);
  return text;
}

/// A decode step's small inputs, each device's blocks: each row's token
/// [B, 1] and position [B], and the slot every row writes.
Status
decodeStepInputs(const Executable &dec, const std::vector<int32_t> &tokens,
                 const std::vector<int32_t> &positions, int32_t slot,
                 std::vector<std::vector<std::pair<size_t, HostArray>>> &up) {
  auto B = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> slots = {slot};
  for (auto [index, value] :
       {std::pair<size_t, HostArray>{
            0, HostArray::fromValues(DType::I32, {B, 1}, tokens)},
        {1, HostArray::fromValues(DType::I32, {B}, positions)},
        {2, HostArray::fromValues(DType::I32, {}, slots)}}) {
    Expected<std::vector<HostArray>> blocks =
        inputBlocksByDevice(dec, index, value, PartialInputs::FirstMember);
    if (!blocks)
      return blocks.status();
    for (size_t d = 0; d < up.size(); ++d)
      up[d].emplace_back(index, std::move((*blocks)[d]));
  }
  return Status::success();
}

} // namespace

Expected<std::unique_ptr<Generator>>
Generator::create(Session &session, const TrainRequest &model) {
  std::unique_ptr<Generator> generator(new Generator());
  TrainRequest request = model;
  request.options.trainOptimizer = TrainOptimizer::None;
  request.options.trainMicroBatches = 1;
  request.config.lossMask = false;
  request.config.noLoss = false;
  generator->config = request.config;
  for (const char *program : {"prefill", "decode"}) {
    request.config.objective = program;
    Expected<Executable> compiled = compileTrainStep(session, request);
    if (!compiled)
      return compiled.status();
    (std::string(program) == "prefill" ? generator->prefillProgram
                                       : generator->decodeProgram) =
        std::move(*compiled);
  }
  generator->prefillParamIndex = parameterInputs(generator->prefillProgram);
  generator->decodeParamIndex = parameterInputs(generator->decodeProgram);
  return generator;
}

Status Generator::setParameters(const std::vector<HostArray> &params) {
  for (auto [program, index, blocks] :
       {std::tuple<const Executable *, std::vector<size_t> *, Blocks *>{
            &prefillProgram, &prefillParamIndex, &prefillParams},
        {&decodeProgram, &decodeParamIndex, &decodeParams}}) {
    if (params.size() != index->size())
      return Status::error("generation takes " + std::to_string(index->size()) +
                           " parameters, got " + std::to_string(params.size()));
    blocks->assign(static_cast<size_t>(program->mesh.numDevices()),
                   std::vector<HostArray>(params.size()));
    for (size_t k = 0; k < params.size(); ++k)
      // A decode parameter laid out as the prefill's takes its blocks from
      // there (one copy on the host, not two).
      if (blocks == &decodeParams &&
          decodeProgram.inputs[decodeParamIndex[k]].sharding ==
              prefillProgram.inputs[prefillParamIndex[k]].sharding)
        continue;
      else if (Status status =
                   spread(*program, (*index)[k], params[k], *blocks, k);
               !status.ok())
        return Status::error("parameter " + program->inputs[(*index)[k]].name +
                             ": " + status.message());
  }
  return Status::success();
}

Status Generator::run(const Executable &program, const Blocks &params,
                      Blocks &dataBlocks, Blocks &outputs) {
  // Input i is parameter slot[i] or data slot[i].
  std::vector<std::pair<bool, size_t>> slot;
  size_t param = 0, data = 0;
  for (const ExecutableValue &input : program.inputs)
    slot.emplace_back(input.role == "param",
                      input.role == "param" ? param++ : data++);
  int64_t count = program.mesh.numDevices();
  std::vector<int64_t> devices(static_cast<size_t>(count));
  std::iota(devices.begin(), devices.end(), 0);
  InProcessCommunicator communicator(program.mesh);
  outputs.clear();
  return runDevicesAsThreads(
      program, devices, &communicator,
      [&](size_t index, int64_t device, HostArray &,
          void *) -> Expected<const HostArray *> {
        auto [isParam, at] = slot[index];
        return isParam ? &params[device][at] : &dataBlocks[device][at];
      },
      outputs);
}

Expected<GeneratedRows>
Generator::generate(const std::vector<std::vector<int32_t>> &prompts,
                    const SamplingOptions &sampling, int64_t firstIndex,
                    bool keepLogits) {
  int64_t B = config.batch, S = config.seq,
          n = static_cast<int64_t>(prompts.size());
  if (n < 1 || n > B)
    return Status::error("generation runs 1 to " + std::to_string(B) +
                         " prompts at a time, got " + std::to_string(n));
  if (prefillParams.empty())
    return Status::error("generation: no parameters given");
  // Rows past the prompts repeat the first (their tokens are dropped).
  // Left-padded: every prompt ends at slot P - 1, P the longest's length,
  // so each decode step writes one slot of every row (docs/Models.md,
  // "Generation's programs").
  int64_t P = 0;
  for (const std::vector<int32_t> &prompt : prompts)
    P = std::max(P, static_cast<int64_t>(prompt.size()));
  std::vector<int32_t> tokens(static_cast<size_t>(B * S), 0), last(B, P - 1),
      offsets(B);
  std::vector<int64_t> length(B);
  for (int64_t r = 0; r < B; ++r) {
    const std::vector<int32_t> &prompt = prompts[r < n ? r : 0];
    length[r] = static_cast<int64_t>(prompt.size());
    offsets[r] = static_cast<int32_t>(P - length[r]);
    std::copy(prompt.begin(), prompt.end(),
              tokens.begin() + r * S + offsets[r]);
  }
  // New tokens a row can take: the last is never fed back.
  int64_t room = std::min(sampling.maxNewTokens, S - P);
  int64_t devices = prefillProgram.mesh.numDevices();
  GeneratedRows result;
  result.tokens.resize(n);
  result.logits.resize(keepLogits ? n : 0);
  std::vector<bool> active(B, true);
  std::vector<int32_t> next(B, 0);
  // Chooses each active row's next token from `logits` [B, V].
  auto choose = [&](const HostArray &logits, int64_t step) {
    bool any = false;
    for (int64_t r = 0; r < B; ++r) {
      if (!active[r])
        continue;
      std::vector<float> row = rowOf(logits, r);
      next[r] =
          chooseToken(row.data(), static_cast<int64_t>(row.size()), sampling,
                      samplingUniform(sampling.seed, firstIndex + r, step));
      if (r < n) {
        result.tokens[r].push_back(next[r]);
        if (keepLogits)
          result.logits[r].push_back(std::move(row));
      }
      active[r] = step + 1 < room && next[r] != sampling.eos;
      any = any || (active[r] && r < n);
    }
    return any;
  };

  auto started = std::chrono::steady_clock::now();
  // The prefill's data: tokens, last slots, padding per row.
  Blocks data(devices, std::vector<HostArray>(3)), outputs;
  const Executable &pre = prefillProgram, &dec = decodeProgram;
  for (auto [index, value] :
       {std::pair<size_t, HostArray>{
            0, HostArray::fromValues(DType::I32, {B, S}, tokens)},
        {1, HostArray::fromValues(DType::I32, {B}, last)},
        {2, HostArray::fromValues(DType::I32, {B}, offsets)}})
    if (Status status = spread(pre, index, value, data, index); !status.ok())
      return status;
  if (Status status = run(pre, prefillParams, data, outputs); !status.ok())
    return Status::error("prefill: " + status.message());
  Expected<HostArray> logits = assembleOutput(pre, 0, outputs);
  if (!logits)
    return logits.status();
  bool going = room > 0 && choose(*logits, 0);
  result.prefillSeconds = secondsSince(started);

  if (!going)
    return result;

  // The decode steps run on device threads that stay up: the caches and
  // parameters are uploaded once and stay in device memory, each step's
  // new caches becoming the next step's inputs there (carried); per step
  // only the tokens and positions go up and the logits come down.
  // The decode program's data: tokens, positions, the slot, the caches.
  size_t caches = dec.inputs.size() - 3 - decodeParamIndex.size();
  Blocks inputs(devices, std::vector<HostArray>(dec.inputs.size()));
  for (int64_t d = 0; d < devices; ++d)
    for (size_t k = 0; k < decodeParamIndex.size(); ++k)
      inputs[d][decodeParamIndex[k]] = decodeParams[d][k].bytes.empty()
                                           ? prefillParams[d][k]
                                           : decodeParams[d][k];
  for (size_t c = 0; c < caches; ++c)
    if (Status status =
            handOver(pre, 1 + c, outputs, dec, 3 + c, inputs, 3 + c);
        !status.ok())
      return Status::error("the key/value cache: " + status.message());
  StepwiseRun stepwise;
  for (size_t c = 0; c < caches; ++c) {
    // The builder marks each new cache as its input's new value
    // (partita.aliases): laid out alike, it can stay where it is.
    if (!(dec.outputs[1 + c].sharding == dec.inputs[3 + c].sharding))
      return Status::error("decode: cache " + dec.inputs[3 + c].name +
                           " comes back laid out as " +
                           dec.outputs[1 + c].sharding.toString() +
                           ", not as it went in (" +
                           dec.inputs[3 + c].sharding.toString() + ")");
    stepwise.carried.emplace_back(1 + c, 3 + c);
  }
  stepwise.readEachStep = {0};
  // The last new token is never fed back.
  stepwise.steps = room - 1;
  stepwise.before =
      [&](int64_t step,
          std::vector<std::vector<std::pair<size_t, HostArray>>> &up) {
        std::vector<int32_t> positions(B);
        for (int64_t r = 0; r < B; ++r)
          positions[r] = static_cast<int32_t>(length[r] + step);
        return decodeStepInputs(dec, next, positions,
                                static_cast<int32_t>(P + step), up);
      };
  stepwise.after = [&](int64_t step, Blocks &stepOutputs) {
    Expected<HostArray> stepLogits = assembleOutput(dec, 0, stepOutputs);
    if (!stepLogits)
      return stepLogits.status();
    ++result.decodeSteps;
    stepwise.stopped = !choose(*stepLogits, step + 1);
    return Status::success();
  };
  // Fed from the first step's `before`: every input block has its shape.
  for (int64_t d = 0; d < devices; ++d)
    for (size_t i : {size_t(0), size_t(1), size_t(2)}) {
      const TensorType &local = dec.slots[dec.inputs[i].slot];
      inputs[d][i] = HostArray::zeros(local.dtype, local.shape);
    }
  started = std::chrono::steady_clock::now();
  if (Status status = runDevicesStepwise(dec, std::move(inputs), stepwise);
      !status.ok())
    return Status::error("decode: " + status.message());
  result.decodeSeconds = secondsSince(started);
  return result;
}

std::string Generator::describeCache() const {
  // The decode program's cache inputs: after the tokens, positions, slot.
  const Executable &program = decodeProgram;
  const ExecutableValue &first = program.inputs[3];
  const TensorType &local = program.slots[first.slot];
  int64_t layers = config.layers, global = 1;
  for (int64_t size : first.globalShape)
    global *= size;
  int64_t element = local.bytes() / std::max<int64_t>(1, local.numElements());
  std::string shape;
  for (int64_t size : first.globalShape)
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  std::string layout = first.sharding.toString();
  return "KV cache: " + std::to_string(layers) + " layers x keys and values [" +
         shape + "] " + dtypeName(local.dtype) + ", " +
         formatBytes(2.0 * layers * global * element) + " in all, " +
         formatBytes(2.0 * layers * local.bytes()) + " per device (" + layout +
         ")";
}

namespace {

/// The whole-sequence forward pass on one device, for --check: the logits
/// at every position of each row's prompt and new tokens.
class UncachedReference {
public:
  static Expected<UncachedReference> create(const TrainRequest &model,
                                            int64_t rows) {
    Expected<TrainRequest> made = oneDeviceRequest(model, model.mesh);
    if (!made)
      return made.status();
    TrainRequest &single = *made;
    single.options.trainOptimizer = TrainOptimizer::None;
    single.config.objective = "mean";
    single.config.lossMask = false;
    single.config.noLoss = true;
    single.config.batch = rows;
    Session session;
    Expected<Executable> program = compileTrainStep(session, single);
    if (!program)
      return program.status();
    UncachedReference reference;
    reference.program = std::move(*program);
    return reference;
  }

  /// The largest difference between a cached logit and the forward pass's
  /// (and the largest logit's magnitude) over `generated`.
  Status compare(const std::vector<HostArray> &params,
                 const std::vector<std::vector<int32_t>> &prompts,
                 const GeneratedRows &generated, int64_t seq) {
    int64_t B = program.inputs[0].globalShape[0];
    std::vector<int32_t> tokens(static_cast<size_t>(B * seq), 0);
    for (size_t r = 0; r < prompts.size(); ++r) {
      std::vector<int32_t> row = prompts[r];
      row.insert(row.end(), generated.tokens[r].begin(),
                 generated.tokens[r].end());
      std::copy(row.begin(), row.begin() + std::min<int64_t>(seq, row.size()),
                tokens.begin() + r * seq);
    }
    std::vector<HostArray> inputs;
    size_t param = 0;
    for (const ExecutableValue &input : program.inputs)
      inputs.push_back(
          input.role == "param"
              ? params[param++]
              : HostArray::fromValues(DType::I32, {B, seq}, tokens));
    Expected<std::vector<HostArray>> outputs = runOnCpuDevices(program, inputs);
    if (!outputs)
      return Status::error("the uncached forward pass: " +
                           outputs.status().message());
    const HostArray &full = (*outputs)[0];
    int64_t V = full.shape[2];
    for (size_t r = 0; r < prompts.size(); ++r)
      for (size_t t = 0; t < generated.logits[r].size(); ++t) {
        int64_t position = static_cast<int64_t>(prompts[r].size() + t) - 1;
        const std::vector<float> &cached = generated.logits[r][t];
        for (int64_t v = 0; v < V; ++v) {
          double expected = full.elementAsDouble((r * seq + position) * V + v);
          largest = std::max(largest, std::fabs(expected));
          worst = std::max(worst, std::fabs(cached[v] - expected));
        }
        ++positions;
      }
    return Status::success();
  }

  double worst = 0, largest = 0;
  int64_t positions = 0;

private:
  Executable program;
};

} // namespace

Status partita::generateText(const GenerateRequest &request) {
  const TrainRequest &model = request.model;
  Expected<CheckpointInfo> info =
      openCheckpoint(request.checkpoint, "--checkpoint");
  if (!info)
    return info.status();
  Expected<std::vector<std::vector<int32_t>>> prompts =
      readPrompts(request.prompts, model.config.vocab, model.config.seq);
  if (!prompts)
    return prompts.status();
  // Generated text on stdout unless -o names a file (opened before the
  // work starts); what was done goes to the other stream.
  bool toFile = !request.output.empty() && request.output != "-";
  std::unique_ptr<llvm::raw_fd_ostream> file;
  if (toFile) {
    std::error_code error;
    file = std::make_unique<llvm::raw_fd_ostream>(request.output, error);
    if (error)
      return Status::error("-o: cannot write '" + request.output +
                           "': " + error.message());
  }
  Session session;
  Expected<std::unique_ptr<Generator>> generator =
      Generator::create(session, model);
  if (!generator)
    return generator.status();
  Generator &gen = **generator;
  Expected<std::vector<HostArray>> params =
      checkpointParameters(*info, gen.prefill());
  if (!params)
    return Status::error("--checkpoint: " + params.status().message());
  if (Status status = gen.setParameters(*params); !status.ok())
    return status;
  std::optional<UncachedReference> reference;
  if (request.check) {
    Expected<UncachedReference> made =
        UncachedReference::create(model, gen.rows());
    if (!made)
      return made.status();
    reference = std::move(*made);
  }
  llvm::raw_ostream &said = toFile ? llvm::outs() : llvm::errs();
  const SamplingOptions &s = request.sampling;
  said << "generate: " << info->directory << " (" << info->meta.model << ") on "
       << model.devices << ", mesh " << model.mesh.toString() << ", rules "
       << model.options.rules << "\n  "
       << (s.temperature > 0
               ? "sampling at temperature " + formatRate(s.temperature) +
                     (s.topK > 0 ? ", top-k " + std::to_string(s.topK) : "") +
                     (s.topP < 1 ? ", top-p " + formatRate(s.topP) : "") +
                     ", seed " + std::to_string(s.seed)
               : std::string("greedy"))
       << ", up to " << s.maxNewTokens << " new tokens, " << gen.rows()
       << " rows per batch\n  " << gen.describeCache() << "\n";

  std::string text;
  double prefill = 0, decode = 0;
  int64_t produced = 0, steps = 0,
          count = static_cast<int64_t>(prompts->size());
  for (int64_t first = 0; first < count; first += gen.rows()) {
    std::vector<std::vector<int32_t>> batch(
        prompts->begin() + first,
        prompts->begin() + std::min(count, first + gen.rows()));
    Expected<GeneratedRows> rows =
        gen.generate(batch, s, first, /*keepLogits=*/request.check);
    if (!rows)
      return rows.status();
    prefill += rows->prefillSeconds;
    decode += rows->decodeSeconds;
    steps += rows->decodeSteps;
    for (size_t r = 0; r < batch.size(); ++r) {
      for (int32_t token : batch[r])
        text += std::to_string(token) + " ";
      text += "|";
      for (int32_t token : rows->tokens[r])
        text += " " + std::to_string(token);
      text += "\n";
      produced += static_cast<int64_t>(rows->tokens[r].size());
    }
    if (reference)
      if (Status status =
              reference->compare(*params, batch, *rows, gen.sequence());
          !status.ok())
        return status;
  }
  if (file) {
    *file << text;
    file->close();
    if (file->has_error()) {
      file->clear_error();
      return Status::error("-o: cannot write '" + request.output + "'");
    }
  } else {
    llvm::outs() << text;
    llvm::outs().flush();
  }
  said << "generated " << produced << " tokens after " << count
       << " prompts: prefill " << llvm::format("%.1f", prefill * 1e3) << " ms, "
       << steps << " decode steps in " << llvm::format("%.1f", decode * 1e3)
       << " ms ("
       << llvm::format("%.0f",
                       decode > 0
                           ? (produced - std::min(produced, count)) / decode
                           : 0.0)
       << " tokens/s)" << (toFile ? "; wrote " + request.output : "") << "\n";
  if (!reference)
    return Status::success();
  double tolerance = model.config.dtype == "bf16" ? 3e-2 : 1e-4;
  double relative = reference->worst / std::max(1.0, reference->largest);
  said << "check: the cached decode's logits against the whole-sequence "
          "forward pass on one device at "
       << reference->positions << " positions: largest difference "
       << llvm::format("%.3g", reference->worst) << " (largest logit "
       << llvm::format("%.3g", reference->largest) << "; "
       << llvm::format("%.3g", relative) << " of it, tolerance "
       << llvm::format("%.0e", tolerance)
       << "): " << (relative <= tolerance ? "ok" : "FAILED") << "\n";
  if (relative > tolerance)
    return Status::error("the cached logits differ from the uncached "
                         "forward pass's");
  return Status::success();
}

int64_t Generator::heldBytes() const {
  // Every device's block of each prefill parameter, and of each decode
  // parameter laid out otherwise (setParameters() keeps one copy of the
  // others).
  int64_t bytes = 0, devices = prefillProgram.mesh.numDevices();
  for (size_t k = 0; k < prefillParamIndex.size(); ++k) {
    const ExecutableValue &pre = prefillProgram.inputs[prefillParamIndex[k]];
    bytes += devices * prefillProgram.slots[pre.slot].bytes();
    const ExecutableValue &dec = decodeProgram.inputs[decodeParamIndex[k]];
    if (!(dec.sharding == pre.sharding))
      bytes += devices * decodeProgram.slots[dec.slot].bytes();
  }
  return bytes;
}

//===- Evaluation.cpp - Held-out loss during training ---------------------===//
//
// `--eval-every K` evaluates the model every K steps and after the last:
// the model's loss function compiled for the same mesh and rules (no
// backward pass, no optimizer), run on the parameters as the devices hold
// them after that step, over --eval-batches batches of held-out data (a
// token file, --eval-data, or synthetic sequences from another seed). The
// mean loss and its perplexity are printed, written to eval.csv and drawn
// in loss.svg (docs/Training.md, "Evaluation").
//
//===----------------------------------------------------------------------===//

#include "partita/Trainer/Trainer.h"

#include "partita/Runtime/IO/ShardedArray.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace partita;

Expected<std::unique_ptr<Evaluator>>
Evaluator::create(Session &session, const TrainRequest &request,
                  bool compileLoss) {
  std::unique_ptr<Evaluator> evaluator(new Evaluator());
  if (compileLoss) {
    TrainRequest forward = request;
    forward.options.trainOptimizer = TrainOptimizer::None;
    Expected<Executable> program = compileTrainStep(session, forward);
    if (!program)
      return program.status();
    evaluator->program = std::move(*program);
  }
  const ModelConfig &config = request.config;
  uint64_t seed = static_cast<uint64_t>(request.seed);
  if (config.lossMask) {
    // Fine-tuning: held-out prompt | response pairs.
    if (request.eval.data.empty())
      return Status::error("--objective sft evaluates on --eval-data FILE "
                           "(lines of 'prompt | response' token ids)");
    auto examples = std::make_unique<SftData>();
    examples->setSeed(seed);
    if (Status status =
            examples->load(request.eval.data, config.seq, config.vocab);
        !status.ok())
      return status;
    evaluator->data = std::move(examples);
  } else if (request.eval.data.empty()) {
    // Held out: the same kind of data from another seed.
    evaluator->data = std::make_unique<SyntheticData>(
        config.model, config.vocab, seed * 1000003ULL + 0x5eed);
  } else {
    if (config.model == "mlp")
      return Status::error("--eval-data holds tokens: it needs --model gpt "
                           "or moe");
    auto file = std::make_unique<TokenFileData>();
    file->setSeed(seed);
    if (Status status = file->load(request.eval.data, config.seq, config.vocab);
        !status.ok())
      return status;
    evaluator->data = std::move(file);
  }
  evaluator->batches = request.eval.batches;
  return evaluator;
}

Expected<std::vector<HostArray>>
partita::snapshotParameters(const Executable &step,
                            const TrainSnapshot &snapshot) {
  std::vector<HostArray> params;
  for (size_t k = 0;
       k < snapshot.blocks.size() && step.inputs[k].role == "param"; ++k) {
    const ExecutableValue &trained = step.inputs[k];
    Expected<HostArray> value =
        snapshot.whole[k]
            ? Expected<HostArray>(snapshot.blocks[k][0])
            : assembleDeviceBlocks(step.mesh, trained.sharding,
                                   trained.globalShape, snapshot.blocks[k]);
    if (!value)
      return Status::error("parameter " + std::to_string(k) + ": " +
                           value.status().message());
    params.push_back(std::move(*value));
  }
  return params;
}

void Evaluator::runAcross(const LocalDevices &devices, bool silent) {
  local = devices;
  quiet = silent;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (program.inputs[i].role != "param" &&
        !program.inputs[i].globalShape.empty()) {
      auto [first, end] = rowsHeldBy(program, i, local.devices);
      data->setRows(first, end);
      break;
    }
}

Expected<double> Evaluator::evaluateLocally(const Executable &step,
                                            const TrainSnapshot &snapshot) {
  // Each local device's blocks: its parameter blocks as the step holds
  // them (the loss function lays parameters out as the step does), and
  // its blocks of each held-out batch.
  int64_t devices = program.mesh.numDevices();
  std::vector<std::vector<HostArray>> blocks(devices);
  std::vector<HostArray> batch;
  std::vector<size_t> dataIndex;
  size_t param = 0;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const ExecutableValue &input = program.inputs[i];
    if (input.role != "param") {
      dataIndex.push_back(i);
      batch.push_back(
          HostArray::zeros(program.slots[input.slot].dtype, input.globalShape));
      for (int64_t d : local.devices)
        blocks[d].emplace_back();
      continue;
    }
    if (param >= snapshot.blocks.size() || snapshot.whole[param] ||
        !(step.inputs[param].sharding == input.sharding) ||
        step.inputs[param].globalShape != input.globalShape)
      return Status::error("evaluation across processes: parameter " +
                           std::to_string(param) +
                           " is not laid out as the train step holds it");
    for (int64_t d : local.devices)
      blocks[d].push_back(snapshot.blocks[param][d]);
    ++param;
  }
  std::vector<HostArray *> dataInputs;
  for (HostArray &array : batch)
    dataInputs.push_back(&array);
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (Status status = data->fill(b, dataInputs); !status.ok())
      return Status::error("evaluation: " + status.message());
    for (size_t j = 0; j < dataIndex.size(); ++j) {
      Expected<std::vector<HostArray>> split =
          inputBlocksByDevice(program, dataIndex[j], batch[j]);
      if (!split)
        return Status::error("evaluation: " + split.status().message());
      for (int64_t d : local.devices)
        blocks[d][dataIndex[j]] = std::move((*split)[d]);
    }
    std::vector<std::vector<HostArray>> outputs;
    if (Status status = runDevicesAsThreads(
            program, local.devices, local.communicator, blocks, outputs);
        !status.ok())
      return Status::error("evaluation: " + status.message());
    sum += elementAsDouble(outputs[local.devices.front()][0], 0);
  }
  return sum / static_cast<double>(batches);
}

Expected<double> Evaluator::evaluate(const Executable &step,
                                     const TrainSnapshot &snapshot) {
  if (local.communicator) {
    Expected<double> loss = evaluateLocally(step, snapshot);
    if (loss)
      report(snapshot.steps, *loss);
    return loss;
  }
  Expected<std::vector<HostArray>> params = snapshotParameters(step, snapshot);
  if (!params)
    return Status::error("evaluation: " + params.status().message());
  std::vector<HostArray> inputs;
  std::vector<HostArray *> dataInputs;
  size_t param = 0;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const ExecutableValue &input = program.inputs[i];
    const TensorType &slot = program.slots[input.slot];
    if (input.role != "param") {
      inputs.push_back(HostArray::zeros(slot.dtype, input.globalShape));
      continue;
    }
    // The train step's parameters come first, in the same order.
    if (param >= params->size())
      return Status::error("evaluation: the train step has fewer parameters "
                           "than the loss function");
    inputs.push_back((*params)[param++]);
  }
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (program.inputs[i].role != "param")
      dataInputs.push_back(&inputs[i]);
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (Status status = data->fill(b, dataInputs); !status.ok())
      return Status::error("evaluation: " + status.message());
    Expected<std::vector<HostArray>> outputs = runOnCpuDevices(program, inputs);
    if (!outputs)
      return Status::error("evaluation: " + outputs.status().message());
    sum += elementAsDouble((*outputs)[0], 0);
  }
  double loss = sum / static_cast<double>(batches);
  report(snapshot.steps, loss);
  return loss;
}

Expected<double>
Evaluator::evaluateWith(int64_t steps, const std::vector<HostArray *> &inputs,
                        const std::function<Expected<double>()> &run) {
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (Status status = data->fill(b, inputs); !status.ok())
      return Status::error("evaluation: " + status.message());
    Expected<double> loss = run();
    if (!loss)
      return Status::error("evaluation: " + loss.status().message());
    sum += *loss;
  }
  double loss = sum / static_cast<double>(batches);
  report(steps, loss);
  return loss;
}

void Evaluator::report(int64_t steps, double loss) {
  points.emplace_back(steps, loss);
  if (quiet)
    return;
  llvm::outs() << "eval after step " << steps << ": loss "
               << llvm::format("%.6f", loss) << ", perplexity "
               << llvm::format("%.4g", std::exp(loss)) << " (" << batches
               << " held-out batches)\n";
  llvm::outs().flush();
}

std::string Evaluator::csv() const {
  std::string text = "step,eval_loss,perplexity\n";
  char line[96];
  for (const auto &[step, loss] : points) {
    std::snprintf(line, sizeof(line), "%lld,%.9g,%.9g\n",
                  static_cast<long long>(step), loss, std::exp(loss));
    text += line;
  }
  return text;
}

//===- PipelinedStepFile.cpp - A pipelined step on disk -------------------===//
//
// step.json holds what is not in the Executables: the schedule (rebuilt
// from its kind and sizes, then checked), the data inputs, and per stage
// its parameters and the source of every program input. Everything read is
// checked before use: a source must name a stage, program and output that
// exist. See docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Pipeline/PipelinedStepFile.h"

#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/Json.h"
#include "partita/Runtime/Program/ExecutableFile.h"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace partita;

const char *partita::stageProgramName(StageProgramKind kind) {
  switch (kind) {
  case StageProgramKind::Forward:
    return "forward";
  case StageProgramKind::Backward:
    return "backward";
  case StageProgramKind::WeightGrad:
    return "weight_grad";
  }
  return "forward";
}

namespace {

const char *inputKindName(StageInput::Kind kind) {
  switch (kind) {
  case StageInput::Kind::Param:
    return "param";
  case StageInput::Kind::Data:
    return "data";
  case StageInput::Kind::Output:
    return "output";
  case StageInput::Kind::Seed:
    return "seed";
  case StageInput::Kind::Accumulator:
    return "accumulator";
  }
  return "param";
}

std::string fileOf(size_t stage, const char *program) {
  return "stage" + std::to_string(stage) + "." + program + ".exe";
}

const StageProgram &programOf(const PipelineStage &stage,
                              StageProgramKind kind) {
  return kind == StageProgramKind::Forward    ? stage.forward
         : kind == StageProgramKind::Backward ? stage.backward
                                              : stage.weightGrad;
}

StageProgram &programOf(PipelineStage &stage, StageProgramKind kind) {
  return kind == StageProgramKind::Forward    ? stage.forward
         : kind == StageProgramKind::Backward ? stage.backward
                                              : stage.weightGrad;
}

constexpr StageProgramKind kPrograms[] = {StageProgramKind::Forward,
                                          StageProgramKind::Backward,
                                          StageProgramKind::WeightGrad};

/// Reads member `name` of `object` as an integer in [low, high].
Expected<int64_t> integerMember(const Json &object, const char *name,
                                int64_t low, int64_t high,
                                const std::string &where) {
  auto found = object.find(name);
  if (found == object.end() || jsonKind(*found) != JsonKind::Integer)
    return Status::error(where + ": \"" + name + "\" must be an integer");
  int64_t value = found->get<int64_t>();
  if (value < low || value > high)
    return Status::error(where + ": \"" + name + "\" is " +
                         std::to_string(value) + ", outside [" +
                         std::to_string(low) + ", " + std::to_string(high) +
                         "]");
  return value;
}

Expected<std::vector<int64_t>> integerArray(const Json &object,
                                            const char *name,
                                            const std::string &where) {
  auto found = object.find(name);
  if (found == object.end() || jsonKind(*found) != JsonKind::Array)
    return Status::error(where + ": \"" + name + "\" must be an array");
  std::vector<int64_t> values;
  for (const Json &item : *found) {
    if (jsonKind(item) != JsonKind::Integer)
      return Status::error(where + ": \"" + name +
                           "\" must hold integers");
    values.push_back(item.get<int64_t>());
  }
  return values;
}

} // namespace

Status partita::writePipelinedStep(const PipelinedStep &step,
                                   const std::string &directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    return Status::error("cannot create '" + directory +
                         "': " + error.message());
  const PipelineSchedule &schedule = step.schedule;
  Json root = Json::object();
  root["version"] = kPipelinedStepVersion;
  root["schedule"] = scheduleKindName(schedule.kind);
  root["ranks"] = schedule.ranks;
  root["micro_batches"] = schedule.microBatches;
  root["virtual_stages"] = schedule.virtualStages;
  root["devices_per_rank"] = step.devicesPerRank;
  root["loss_output"] = step.lossOutput;
  Json data = Json::array();
  for (size_t k = 0; k < step.dataShapes.size(); ++k) {
    Json entry = Json::object();
    entry["dtype"] = dtypeName(step.dataTypes[k]);
    entry["shape"] = step.dataShapes[k];
    data.push_back(entry);
  }
  root["data"] = data;
  Json stages = Json::array();
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const PipelineStage &stage = step.stages[s];
    Json entry = Json::object();
    entry["holds"] = stage.summary;
    entry["forward_flops"] = stage.forwardFlops;
    entry["params"] = stage.paramIndex;
    for (StageProgramKind kind : kPrograms) {
      const StageProgram &program = programOf(stage, kind);
      Json described = Json::object();
      described["present"] = program.present;
      if (program.present) {
        std::string file = fileOf(s, stageProgramName(kind));
        described["file"] = file;
        if (Status status = writeExecutableFile(program.executable,
                                                directory + "/" + file);
            !status.ok())
          return status;
        Json inputs = Json::array();
        for (const StageInput &input : program.inputs) {
          Json source = Json::object();
          source["kind"] = inputKindName(input.kind);
          if (input.kind == StageInput::Kind::Output) {
            source["stage"] = input.stage;
            source["program"] = stageProgramName(input.program);
          }
          source["index"] = input.index;
          inputs.push_back(source);
        }
        described["inputs"] = inputs;
        described["accumulator_of"] = program.accumulatorOf;
      }
      entry[stageProgramName(kind)] = described;
    }
    std::string update = fileOf(s, "update");
    entry["update"] = update;
    if (Status status =
            writeExecutableFile(stage.update, directory + "/" + update);
        !status.ok())
      return status;
    if (stage.normInput >= 0) {
      std::string norm = fileOf(s, "norm");
      entry["norm"] = norm;
      entry["norm_input"] = stage.normInput;
      if (Status status =
              writeExecutableFile(stage.norm, directory + "/" + norm);
          !status.ok())
        return status;
    }
    stages.push_back(entry);
  }
  root["stages"] = stages;
  return writeFileAtomically(directory + "/step.json", printJson(root) + "\n");
}

namespace {

/// Reads and parses `path`, the step.json of `directory`, checking that it
/// is a JSON object.
Expected<Json> readStepJson(const std::string &directory,
                            const std::string &path) {
  if (!std::filesystem::exists(directory))
    return Status::error(directory + ": no such directory");
  if (!std::filesystem::exists(path))
    return Status::error(path + ": no such file (is " + directory +
                         " a pipelined step from partita compile --pp -o?)");
  if (Status status = requireRegularFile(path); !status.ok())
    return Status::error(path + ": " + status.message());
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  Expected<Json> parsed = parseJson(text.str());
  if (!parsed)
    return Status::error(path + ": " + parsed.status().message());
  if (jsonKind(*parsed) != JsonKind::Object)
    return Status::error(path + ": expected an object");
  return parsed;
}

/// Reads the header of step.json (version, schedule and sizes) into a step
/// with its schedule rebuilt and checked, and no data inputs or stages yet.
Expected<PipelinedStep> readStepHeader(const Json &root,
                                       const std::string &path) {
  Expected<int64_t> version =
      integerMember(root, "version", 0, 1 << 30, path);
  if (!version)
    return version.status();
  if (*version != kPipelinedStepVersion)
    return Status::error(path + ": version " + std::to_string(*version) +
                         "; this build reads version " +
                         std::to_string(kPipelinedStepVersion));
  auto kindText = root.find("schedule");
  if (kindText == root.end() || jsonKind(*kindText) != JsonKind::String)
    return Status::error(path + ": \"schedule\" must be a string");
  std::optional<ScheduleKind> kind =
      parseScheduleKind(kindText->get<std::string>());
  if (!kind)
    return Status::error(path + ": unknown schedule '" +
                         kindText->get<std::string>() + "'");
  Expected<int64_t> ranks = integerMember(root, "ranks", 1, 4096, path);
  Expected<int64_t> micro =
      integerMember(root, "micro_batches", 1, 1 << 20, path);
  Expected<int64_t> virtualStages =
      integerMember(root, "virtual_stages", 1, 4096, path);
  Expected<int64_t> perRank =
      integerMember(root, "devices_per_rank", 1, 1 << 20, path);
  Expected<int64_t> lossOutput =
      integerMember(root, "loss_output", 0, 1 << 20, path);
  for (const Status *status : {&ranks.status(), &micro.status(),
                               &virtualStages.status(), &perRank.status(),
                               &lossOutput.status()})
    if (!status->ok())
      return *status;
  Expected<PipelineSchedule> schedule =
      buildSchedule(*kind, static_cast<int>(*ranks), static_cast<int>(*micro),
                    static_cast<int>(*virtualStages));
  if (!schedule)
    return Status::error(path + ": " + schedule.status().message());
  PipelinedStep step;
  step.schedule = *schedule;
  step.devicesPerRank = *perRank;
  step.lossOutput = static_cast<int32_t>(*lossOutput);
  return step;
}

/// Reads the "data" array of step.json, each entry's dtype and shape, into
/// `step`'s data inputs.
Status readDataInputs(const Json &root, const std::string &path,
                      PipelinedStep &step) {
  auto data = root.find("data");
  if (data == root.end() || jsonKind(*data) != JsonKind::Array)
    return Status::error(path + ": \"data\" must be an array");
  for (const Json &entry : *data) {
    auto dtype = entry.find("dtype");
    if (jsonKind(entry) != JsonKind::Object || dtype == entry.end() ||
        jsonKind(*dtype) != JsonKind::String)
      return Status::error(path + ": a data input needs a \"dtype\"");
    Expected<DType> parsedType = parseDType(dtype->get<std::string>());
    Expected<std::vector<int64_t>> shape = integerArray(entry, "shape", path);
    if (!parsedType || !shape)
      return Status::error(
          path + ": " +
          (parsedType ? shape.status() : parsedType.status()).message());
    for (int64_t size : *shape)
      if (size < 0)
        return Status::error(path + ": a data input's shape " +
                             formatShape(*shape) +
                             " has a negative dimension");
    if (Expected<int64_t> bytes = checkedNumBytes(*parsedType, *shape);
        !bytes)
      return Status::error(path + ": a data input's shape: " +
                           bytes.status().message());
    step.dataTypes.push_back(*parsedType);
    step.dataShapes.push_back(*shape);
  }
  return Status::success();
}

/// Reads one source of a program input: its kind, index and, for an output
/// of another program, the stage (in [0, numStages)) and program it is from.
Expected<StageInput> readStageInput(const Json &source, const std::string &at,
                                    int numStages) {
  auto kindName = source.find("kind");
  if (jsonKind(source) != JsonKind::Object || kindName == source.end() ||
      jsonKind(*kindName) != JsonKind::String)
    return Status::error(at + ": an input needs a \"kind\"");
  StageInput input;
  std::string name = kindName->get<std::string>();
  bool known = false;
  for (StageInput::Kind k : {StageInput::Kind::Param, StageInput::Kind::Data,
                             StageInput::Kind::Output, StageInput::Kind::Seed,
                             StageInput::Kind::Accumulator})
    if (name == inputKindName(k)) {
      input.kind = k;
      known = true;
    }
  if (!known)
    return Status::error(at + ": unknown input kind '" + name + "'");
  Expected<int64_t> index = integerMember(source, "index", 0, 1 << 20, at);
  if (!index)
    return index.status();
  input.index = static_cast<int32_t>(*index);
  if (input.kind != StageInput::Kind::Output)
    return input;
  Expected<int64_t> from = integerMember(source, "stage", 0, numStages - 1, at);
  auto programText = source.find("program");
  if (!from)
    return from.status();
  if (programText == source.end() || jsonKind(*programText) != JsonKind::String)
    return Status::error(at + ": an output input needs \"program\"");
  bool found = false;
  for (StageProgramKind k : kPrograms)
    if (programText->get<std::string>() == stageProgramName(k)) {
      input.program = k;
      found = true;
    }
  if (!found)
    return Status::error(at + ": unknown program '" +
                         programText->get<std::string>() + "'");
  input.stage = static_cast<int32_t>(*from);
  return input;
}

/// Reads the program `programKind` of a stage from the stage's entry: whether
/// it is present and, if so, its Executable (from `directory`), the sources
/// of its inputs and its accumulators, checked against the Executable.
Status readStageProgram(const Json &entry, StageProgramKind programKind,
                        const std::string &where, const std::string &directory,
                        int numStages, StageProgram &program) {
  std::string at = where + " " + stageProgramName(programKind);
  auto described = entry.find(stageProgramName(programKind));
  if (described == entry.end() || jsonKind(*described) != JsonKind::Object)
    return Status::error(at + " must be an object");
  auto present = described->find("present");
  program.present = present != described->end() &&
                    jsonKind(*present) == JsonKind::Bool &&
                    present->get<bool>();
  if (!program.present)
    return Status::success();
  auto fileName = described->find("file");
  auto inputs = described->find("inputs");
  if (fileName == described->end() || jsonKind(*fileName) != JsonKind::String ||
      inputs == described->end() || jsonKind(*inputs) != JsonKind::Array)
    return Status::error(at + " needs \"file\" and \"inputs\"");
  Expected<Executable> executable =
      readExecutableFile(directory + "/" + fileName->get<std::string>());
  if (!executable)
    return executable.status();
  program.executable = std::move(*executable);
  for (const Json &source : *inputs) {
    Expected<StageInput> input = readStageInput(source, at, numStages);
    if (!input)
      return input.status();
    program.inputs.push_back(*input);
  }
  Expected<std::vector<int64_t>> accumulators =
      integerArray(*described, "accumulator_of", at);
  if (!accumulators)
    return accumulators.status();
  for (int64_t a : *accumulators)
    program.accumulatorOf.push_back(static_cast<int32_t>(a));
  if (program.inputs.size() != program.executable.inputs.size() ||
      program.accumulatorOf.size() > program.executable.outputs.size())
    return Status::error(at + ": its inputs or outputs do not match its "
                              "Executable's");
  return Status::success();
}

/// A stage's norm program and the update input it feeds (clipping), when
/// step.json names one: the input must be an f32 scalar of the update.
Status readStageNorm(const Json &entry, const std::string &where,
                     const std::string &directory, PipelineStage &stage) {
  auto norm = entry.find("norm");
  if (norm == entry.end())
    return Status::success();
  auto input = entry.find("norm_input");
  if (jsonKind(*norm) != JsonKind::String || input == entry.end() ||
      jsonKind(*input) != JsonKind::Integer)
    return Status::error(where + ": \"norm\" must name a file and "
                                 "\"norm_input\" an input of the update");
  int64_t index = input->get<int64_t>();
  const std::vector<ExecutableValue> &inputs = stage.update.inputs;
  if (index < 0 || index >= static_cast<int64_t>(inputs.size()) ||
      !inputs[index].globalShape.empty() ||
      stage.update.slots[inputs[index].slot].dtype != DType::F32)
    return Status::error(where + ": \"norm_input\" " + std::to_string(index) +
                         " is not an f32 scalar input of the update");
  Expected<Executable> executable =
      readExecutableFile(directory + "/" + norm->get<std::string>());
  if (!executable)
    return executable.status();
  if (executable->outputs.size() != 1 ||
      !executable->outputs[0].globalShape.empty())
    return Status::error(where + ": the norm program must return one scalar");
  stage.norm = std::move(*executable);
  stage.normInput = static_cast<int32_t>(index);
  return Status::success();
}

/// Reads stage `s` of step.json: its parameters, summary, programs and
/// update Executable (the Executables from `directory`).
Expected<PipelineStage> readStage(const Json &entry, size_t s,
                                  const std::string &path,
                                  const std::string &directory, int numStages) {
  std::string where = path + ": stage " + std::to_string(s);
  if (jsonKind(entry) != JsonKind::Object)
    return Status::error(where + " must be an object");
  PipelineStage stage;
  Expected<std::vector<int64_t>> params = integerArray(entry, "params", where);
  if (!params)
    return params.status();
  stage.paramIndex = *params;
  if (auto holds = entry.find("holds");
      holds != entry.end() && jsonKind(*holds) == JsonKind::String)
    stage.summary = holds->get<std::string>();
  if (auto flops = entry.find("forward_flops");
      flops != entry.end() && jsonKind(*flops) == JsonKind::Integer)
    stage.forwardFlops = flops->get<int64_t>();
  for (StageProgramKind programKind : kPrograms)
    if (Status status =
            readStageProgram(entry, programKind, where, directory, numStages,
                             programOf(stage, programKind));
        !status.ok())
      return status;
  auto update = entry.find("update");
  if (update == entry.end() || jsonKind(*update) != JsonKind::String)
    return Status::error(where + ": \"update\" must name a file");
  Expected<Executable> executable =
      readExecutableFile(directory + "/" + update->get<std::string>());
  if (!executable)
    return executable.status();
  stage.update = std::move(*executable);
  if (Status status = readStageNorm(entry, where, directory, stage);
      !status.ok())
    return status;
  return stage;
}

/// Checks that the parameters' indices number them all, each once: the
/// runner writes parameter paramIndex[j] of the whole model.
Status checkParameterIndices(const PipelinedStep &step,
                             const std::string &path) {
  size_t parameterCount = 0;
  for (const PipelineStage &stage : step.stages)
    parameterCount += stage.paramIndex.size();
  std::vector<bool> seen(parameterCount, false);
  for (size_t s = 0; s < step.stages.size(); ++s)
    for (int64_t index : step.stages[s].paramIndex) {
      if (index < 0 || static_cast<size_t>(index) >= parameterCount ||
          seen[static_cast<size_t>(index)])
        return Status::error(path + ": stage " + std::to_string(s) +
                             ": parameter index " + std::to_string(index) +
                             " is not one of 0.." +
                             std::to_string(parameterCount - 1) +
                             " named once");
      seen[static_cast<size_t>(index)] = true;
    }
  return Status::success();
}

/// Checks that the loss is an output of the last stage's forward program.
Status checkLossOutput(const PipelinedStep &step, const std::string &path) {
  if (step.stages.empty())
    return Status::success();
  const StageProgram &last =
      programOf(step.stages.back(), StageProgramKind::Forward);
  if (!last.present ||
      step.lossOutput >= static_cast<int32_t>(last.executable.outputs.size()))
    return Status::error(path + ": loss_output " +
                         std::to_string(step.lossOutput) +
                         " is not an output of the last stage's forward "
                         "program");
  return Status::success();
}

/// True when the source `input` of a program of stage `s` names something
/// that exists.
bool inputSourceExists(const PipelinedStep &step, size_t s,
                       const StageInput &input) {
  switch (input.kind) {
  case StageInput::Kind::Param:
  case StageInput::Kind::Accumulator:
    return input.index < static_cast<int32_t>(step.stages[s].paramIndex.size());
  case StageInput::Kind::Data:
    return input.index < static_cast<int32_t>(step.dataShapes.size());
  case StageInput::Kind::Output: {
    const StageProgram &from =
        programOf(step.stages[input.stage], input.program);
    return from.present &&
           input.index < static_cast<int32_t>(from.executable.outputs.size());
  }
  case StageInput::Kind::Seed:
    break;
  }
  return true;
}

/// Checks that every source of every program input names something that
/// exists.
Status checkInputSources(const PipelinedStep &step, const std::string &path) {
  for (size_t s = 0; s < step.stages.size(); ++s)
    for (StageProgramKind kind : kPrograms) {
      const StageProgram &program = programOf(step.stages[s], kind);
      for (const StageInput &input : program.inputs) {
        std::string at = path + ": stage " + std::to_string(s) + " " +
                         stageProgramName(kind) + ": ";
        if (!inputSourceExists(step, s, input))
          return Status::error(at + "an input's source (" +
                               inputKindName(input.kind) + " " +
                               std::to_string(input.index) +
                               ") does not exist");
      }
    }
  return Status::success();
}

} // namespace

Expected<PipelinedStep>
partita::readPipelinedStep(const std::string &directory) {
  std::string path = directory + "/step.json";
  Expected<Json> parsed = readStepJson(directory, path);
  if (!parsed)
    return parsed.status();
  const Json &root = *parsed;
  Expected<PipelinedStep> step = readStepHeader(root, path);
  if (!step)
    return step.status();
  if (Status status = readDataInputs(root, path, *step); !status.ok())
    return status;

  int numStages = step->schedule.stages();
  auto stages = root.find("stages");
  if (stages == root.end() || jsonKind(*stages) != JsonKind::Array ||
      static_cast<int>(stages->size()) != numStages)
    return Status::error(path + ": \"stages\" must list the schedule's " +
                         std::to_string(numStages) + " stages");
  for (size_t s = 0; s < stages->size(); ++s) {
    Expected<PipelineStage> stage =
        readStage((*stages)[s], s, path, directory, numStages);
    if (!stage)
      return stage.status();
    step->stages.push_back(std::move(*stage));
  }
  if (Status status = checkParameterIndices(*step, path); !status.ok())
    return status;
  if (Status status = checkLossOutput(*step, path); !status.ok())
    return status;
  if (Status status = checkInputSources(*step, path); !status.ok())
    return status;
  return step;
}

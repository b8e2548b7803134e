//===- CompilePipelined.cpp - A loss function to a pipelined step ---------===//
//
// Cuts the loss into stages, builds each stage's programs, and compiles
// every program on its own, for one pipeline rank's sub-mesh, through the
// same passes as any program (rules, propagation, partitioning, lowering).
// See docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//

#include "StageFunctions.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Transforms/LogicalRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <optional>

using namespace mlir;
using namespace partita;
using namespace partita::pipelining;

namespace {

/// `function` alone in a module with `source`'s meshes, through the passes
/// and lowered.
Expected<Executable> compileFunction(func::FuncOp function, ModuleOp source,
                                     const PipelineCompileOptions &options,
                                     int64_t devicesPerRank) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(function.getLoc());
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  for (MeshOp mesh : source.getOps<MeshOp>())
    builder.clone(*mesh.getOperation());
  auto copy = cast<func::FuncOp>(builder.clone(*function.getOperation()));
  copy.setPublic();
  if (!options.programsDirectory.empty()) {
    std::string path = options.programsDirectory + "/" +
                       copy.getSymName().str() + ".mlir";
    std::error_code error;
    llvm::raw_fd_ostream file(path, error);
    if (error)
      return Status::error("cannot write '" + path + "': " + error.message());
    module->print(file, OpPrintingFlags().enableDebugInfo());
    file << "\n";
  }
  PipelineOptions passes = options.passes;
  passes.trainOptimizer = TrainOptimizer::None;
  PassManager manager(function.getContext());
  buildPipeline(manager, passes);
  manager.enableVerifier(false);
  if (failed(manager.run(*module)) || failed(verify(*module)))
    return Status::error("");
  Expected<Executable> program = lowerToExecutable(*module, options.lowering);
  if (program && devicesPerRank == 1)
    program->mesh = Mesh();
  return program;
}

Status compileProgram(func::FuncOp function, ModuleOp source,
                      const PipelineCompileOptions &options,
                      int64_t devicesPerRank, std::vector<StageInput> inputs,
                      std::vector<int32_t> accumulators,
                      StageProgram &program) {
  if (!function) {
    program.present = false;
    return Status::success();
  }
  program.present = function.getNumResults() > 0;
  Expected<Executable> compiled =
      compileFunction(function, source, options, devicesPerRank);
  if (!compiled)
    return compiled.status();
  program.executable = std::move(*compiled);
  program.inputs = std::move(inputs);
  program.accumulatorOf = std::move(accumulators);
  if (program.executable.inputs.size() != program.inputs.size())
    return Status::error("internal error: @" + function.getSymName().str() +
                         " has " +
                         std::to_string(program.executable.inputs.size()) +
                         " inputs, its wiring " +
                         std::to_string(program.inputs.size()));
  return Status::success();
}

/// Gives each argument of `function` that a program compiled before it
/// produces (`inputs` says which) the sharding that program's output has,
/// unless the argument has one: the value then passes between the programs
/// as it is. Without it a saved activation arrives with no sharding, and
/// the backward pass could take it whole on every device of the data axis
/// and compute every data shard's gradients on each (docs/Pipeline.md).
/// `produced` finds the output, or nullptr when it is not compiled yet.
void pinProducedInputs(
    func::FuncOp function, ModuleOp source,
    const std::vector<StageInput> &inputs,
    const std::function<const ExecutableValue *(const StageInput &)>
        &produced) {
  if (!function)
    return;
  auto meshes = source.getOps<MeshOp>();
  if (meshes.empty())
    return;
  MLIRContext *context = function.getContext();
  auto mesh = FlatSymbolRefAttr::get(context, (*meshes.begin()).getSymName());
  for (size_t i = 0; i < inputs.size() && i < function.getNumArguments();
       ++i) {
    if (inputs[i].kind != StageInput::Kind::Output ||
        function.getArgAttr(i, PartitaDialect::kShardingAttrName))
      continue;
    const ExecutableValue *output = produced(inputs[i]);
    if (!output ||
        output->sharding.rank() !=
            cast<RankedTensorType>(function.getArgument(i).getType())
                .getRank())
      continue;
    function.setArgAttr(i, PartitaDialect::kShardingAttrName,
                        ShardingAttr::fromSharding(context, mesh,
                                                   output->sharding));
  }
}

/// The rank's rules and the mesh axes its rules split the batch over (of
/// size > 1): what the pins below are made of.
struct BatchAxesRules {
  Mesh mesh;
  LogicalRules rules;
  std::vector<std::string> batchAxes;
  FlatSymbolRefAttr meshRef;

  /// The rules' layout of argument `i` of `function` for `role`, and the
  /// same with the batch axes taken out of its dimensions (`stripped`).
  Sharding layout(func::FuncOp function, unsigned i, const char *role,
                  double maxPadding, Sharding &stripped) const {
    auto axes = function.getArgAttrOfType<ArrayAttr>(
        i, PartitaDialect::kLogicalAxesAttrName);
    auto type = cast<RankedTensorType>(function.getArgument(i).getType());
    std::vector<std::string> names;
    for (Attribute name : axes ? axes.getValue() : ArrayRef<Attribute>())
      names.push_back(cast<StringAttr>(name).str());
    names.resize(static_cast<size_t>(type.getRank()));
    std::vector<std::string> warnings;
    Sharding sharding = applyLogicalRules(
        rules, mesh, names, {type.getShape().begin(), type.getShape().end()},
        role, maxPadding, warnings);
    stripped = sharding;
    for (DimSharding &dim : stripped.dims)
      llvm::erase_if(dim.axes, [&](const std::string &axis) {
        return llvm::is_contained(batchAxes, axis);
      });
    return sharding;
  }
};

std::optional<BatchAxesRules> batchAxesRules(ModuleOp source,
                                             const PipelineOptions &passes) {
  auto meshes = source.getOps<MeshOp>();
  if (meshes.empty() || passes.rules.empty())
    return std::nullopt;
  MeshOp meshOp = *meshes.begin();
  BatchAxesRules found;
  found.mesh = meshOp.getMesh().toMesh();
  Expected<LogicalRules> rules = loadLogicalRules(passes.rules, found.mesh);
  if (!rules)
    return std::nullopt;
  found.rules = std::move(*rules);
  for (const LogicalRule &rule : found.rules.rules)
    if (rule.logical == "batch" && (rule.role.empty() || rule.role == "input"))
      for (const std::string &axis : rule.meshAxes)
        if (found.mesh.axisSize(axis) > 1 &&
            !llvm::is_contained(found.batchAxes, axis))
          found.batchAxes.push_back(axis);
  if (found.batchAxes.empty())
    return std::nullopt;
  found.meshRef =
      FlatSymbolRefAttr::get(source.getContext(), meshOp.getSymName());
  return found;
}

/// The gradient sums of a stage kept unreduced from micro-batch to
/// micro-batch: the accumulators of `function` (arguments and results,
/// `accumulatorOf`) are pinned to the rules' layout with the rank's batch
/// axes taken out of their dimensions, as a partial sum over those axes,
/// so that no program reduces them but the update, once per step
/// (docs/Pipeline.md, "Values on the devices"). Under dp that is the rules'
/// layout itself; under ZeRO-2 and FSDP, whose gradient buffers the rules
/// split over the batch axes, the sums are kept whole per device through
/// the step and the update reduce-scatters them once (as Megatron's
/// distributed optimizer and torchtitan's pipelined FSDP do), instead of a
/// reduce-scatter per micro-batch. Beside tensor parallelism a gradient is
/// also partial over the model axis inside the backward program (a norm's
/// scale, the embedding); propagation joins it to the pinned sum by an
/// all-reduce over the model axis alone (docs/Propagation.md, "Partial
/// values"). Returns the pinned layout per accumulator.
std::vector<std::optional<Sharding>>
pinPartialAccumulators(func::FuncOp function, ModuleOp source,
                       const std::vector<StageInput> &inputs,
                       const std::vector<int32_t> &accumulatorOf,
                       const PipelineOptions &passes) {
  std::vector<std::optional<Sharding>> pinned;
  std::optional<BatchAxesRules> found =
      function ? batchAxesRules(source, passes) : std::nullopt;
  if (!found)
    return pinned;
  MLIRContext *context = function.getContext();
  for (size_t i = 0; i < inputs.size() && i < function.getNumArguments(); ++i) {
    if (inputs[i].kind != StageInput::Kind::Accumulator)
      continue;
    size_t index = static_cast<size_t>(inputs[i].index);
    if (pinned.size() <= index)
      pinned.resize(index + 1);
    Sharding sharding;
    Sharding rules = found->layout(function, static_cast<unsigned>(i), "grad",
                                   passes.maxPadding, sharding);
    if (rules.partialKind != PartialKind::None)
      continue;
    sharding.partialKind = PartialKind::Sum;
    sharding.partialAxes = found->batchAxes;
    auto attr = ShardingAttr::fromSharding(context, found->meshRef, sharding);
    function.setArgAttr(i, PartitaDialect::kShardingAttrName, attr);
    for (size_t r = 0; r < accumulatorOf.size(); ++r)
      if (accumulatorOf[r] == static_cast<int32_t>(index))
        function.setResultAttr(r, PartitaDialect::kShardingAttrName, attr);
    pinned[index] = sharding;
  }
  return pinned;
}

/// The parameters a stage program reads, where the rules split them over
/// the rank's batch axes (FSDP): pinned to the rules' layout without those
/// axes, so the program takes them gathered. The runtime gathers each once
/// per step and hands the same blocks to every micro-batch's programs
/// (docs/Pipeline.md, "Values on the devices"); the update keeps them split.
void pinGatheredParameters(func::FuncOp function, ModuleOp source,
                           const std::vector<StageInput> &inputs,
                           const PipelineOptions &passes) {
  std::optional<BatchAxesRules> found =
      function ? batchAxesRules(source, passes) : std::nullopt;
  if (!found)
    return;
  for (size_t i = 0; i < inputs.size() && i < function.getNumArguments(); ++i) {
    if (inputs[i].kind != StageInput::Kind::Param ||
        function.getArgAttr(i, PartitaDialect::kShardingAttrName))
      continue;
    Sharding gathered;
    Sharding rules = found->layout(function, static_cast<unsigned>(i), "param",
                                   passes.maxPadding, gathered);
    if (rules == gathered)
      continue;
    function.setArgAttr(i, PartitaDialect::kShardingAttrName,
                        ShardingAttr::fromSharding(function.getContext(),
                                                   found->meshRef, gathered));
  }
}

/// The update's gradient sums (its non-scalar `input` arguments, one per
/// parameter in order) laid out as the accumulators were pinned.
void pinUpdateGradients(func::FuncOp update, ModuleOp source,
                        const std::vector<std::optional<Sharding>> &pinned) {
  auto meshes = source.getOps<MeshOp>();
  if (!update || meshes.empty())
    return;
  MLIRContext *context = update.getContext();
  auto meshRef =
      FlatSymbolRefAttr::get(context, (*meshes.begin()).getSymName());
  size_t j = 0;
  for (unsigned a = 0; a < update.getNumArguments(); ++a) {
    auto role =
        update.getArgAttrOfType<RoleAttr>(a, PartitaDialect::kRoleAttrName);
    auto type = cast<RankedTensorType>(update.getArgument(a).getType());
    if (!role || role.getValue() != Role::Input || type.getRank() == 0)
      continue;
    if (j < pinned.size() && pinned[j] && pinned[j]->rank() == type.getRank())
      update.setArgAttr(
          a, PartitaDialect::kShardingAttrName,
          ShardingAttr::fromSharding(context, meshRef, *pinned[j]));
    ++j;
  }
}

/// pinGatheredParameters for each of a stage's per-micro-batch programs.
void pinGatheredParameters(StageProgramFunctions &programs, ModuleOp source,
                           const PipelineOptions &passes) {
  pinGatheredParameters(programs.forward, source, programs.forwardInputs,
                        passes);
  pinGatheredParameters(programs.backward, source, programs.backwardInputs,
                        passes);
  pinGatheredParameters(programs.weightGrad, source, programs.weightGradInputs,
                        passes);
}

std::string describeStage(const StageAssignment &assignment, int s) {
  std::string first, last;
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    if (assignment.stageOf[k] != s ||
        isCopiedIntoStages(assignment.ops[k]))
      continue;
    std::string name = "?";
    if (auto named = dyn_cast<NameLoc>(assignment.ops[k]->getLoc()))
      name = named.getName().getValue().str();
    name = name.substr(0, name.find('.'));
    if (first.empty())
      first = name;
    last = name;
  }
  return first == last ? first : first + " .. " + last;
}

} // namespace

Expected<PipelinedStep>
partita::compilePipelined(func::FuncOp loss,
                          const PipelineCompileOptions &options) {
  Expected<PipelineSchedule> schedule = buildSchedule(
      options.schedule, options.ranks, static_cast<int>(options.microBatches),
      options.virtualStages);
  if (!schedule)
    return schedule.status();
  int stages = schedule->stages();
  Expected<StageAssignment> assignment = assignStages(loss, stages);
  if (!assignment)
    return assignment.status();
  Expected<std::vector<StageFunction>> functions =
      buildStageFunctions(loss, *assignment);
  if (!functions)
    return functions.status();
  auto module = loss->getParentOfType<ModuleOp>();
  int64_t devicesPerRank = options.devicesPerRank;

  PipelinedStep step;
  step.schedule = *schedule;
  step.devicesPerRank = devicesPerRank;
  std::vector<int64_t> paramIndexOf(loss.getNumArguments(), -1);
  int64_t params = 0;
  for (unsigned a = 0; a < loss.getNumArguments(); ++a) {
    auto role =
        loss.getArgAttrOfType<RoleAttr>(a, PartitaDialect::kRoleAttrName);
    if (role && role.getValue() == Role::Param) {
      paramIndexOf[a] = params++;
      continue;
    }
    auto type = cast<RankedTensorType>(loss.getArgument(a).getType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    if (!shape.empty())
      shape[0] *= options.microBatches;
    step.dataShapes.push_back(shape);
    Expected<DType> dtype = tensorDType(type);
    if (!dtype)
      return dtype.status();
    step.dataTypes.push_back(*dtype);
  }

  bool split = schedule->splitBackward;
  Status status = Status::success();
  for (int s = 0; s < stages && status.ok(); ++s) {
    Expected<StageProgramFunctions> programs = buildStagePrograms(
        loss, *functions, s, split, options.optimizer);
    if (!programs) {
      status = programs.status();
      break;
    }
    PipelineStage stage;
    stage.forwardFlops = assignment->flops[s];
    stage.summary = describeStage(*assignment, s);
    for (unsigned a : (*functions)[s].paramArgs)
      stage.paramIndex.push_back(paramIndexOf[a]);
    // An output of this stage's programs compiled so far, or of an earlier
    // stage's.
    auto produced = [&](const StageInput &input) -> const ExecutableValue * {
      const PipelineStage *from =
          input.stage == s ? &stage
          : input.stage >= 0 && input.stage < s
              ? &step.stages[static_cast<size_t>(input.stage)]
              : nullptr;
      if (!from)
        return nullptr;
      const StageProgram &program =
          input.program == StageProgramKind::Forward    ? from->forward
          : input.program == StageProgramKind::Backward ? from->backward
                                                        : from->weightGrad;
      const std::vector<ExecutableValue> &outputs = program.executable.outputs;
      return program.present && input.index >= 0 &&
                     static_cast<size_t>(input.index) < outputs.size()
                 ? &outputs[static_cast<size_t>(input.index)]
                 : nullptr;
    };
    bool pin = devicesPerRank > 1;
    if (pin) {
      pinGatheredParameters(*programs, module, options.passes);
      pinProducedInputs(programs->forward, module, programs->forwardInputs,
                        produced);
    }
    status = compileProgram(programs->forward, module, options, devicesPerRank,
                            programs->forwardInputs, {}, stage.forward);
    if (pin)
      pinProducedInputs(programs->backward, module, programs->backwardInputs,
                        produced);
    std::vector<std::optional<Sharding>> partialSums =
        pin ? pinPartialAccumulators(
                  programs->backward, module, programs->backwardInputs,
                  programs->backwardAccumulators, options.passes)
            : std::vector<std::optional<Sharding>>();
    if (status.ok())
      status = compileProgram(programs->backward, module, options,
                              devicesPerRank, programs->backwardInputs,
                              programs->backwardAccumulators, stage.backward);
    if (pin)
      pinProducedInputs(programs->weightGrad, module,
                        programs->weightGradInputs, produced);
    if (pin && programs->weightGrad) {
      std::vector<std::optional<Sharding>> fromWeightGrad =
          pinPartialAccumulators(
              programs->weightGrad, module, programs->weightGradInputs,
              programs->weightGradAccumulators, options.passes);
      if (!fromWeightGrad.empty())
        partialSums = std::move(fromWeightGrad);
    }
    if (pin) {
      pinUpdateGradients(programs->update, module, partialSums);
      pinUpdateGradients(programs->norm, module, partialSums);
    }
    if (status.ok())
      status = compileProgram(programs->weightGrad, module, options,
                              devicesPerRank, programs->weightGradInputs,
                              programs->weightGradAccumulators,
                              stage.weightGrad);
    if (status.ok() && programs->update) {
      Expected<Executable> update =
          compileFunction(programs->update, module, options, devicesPerRank);
      if (update)
        stage.update = std::move(*update);
      else
        status = update.status();
    }
    if (status.ok() && programs->norm) {
      // The update's last input is the squared norm over every stage.
      Expected<Executable> norm =
          compileFunction(programs->norm, module, options, devicesPerRank);
      if (norm) {
        stage.norm = std::move(*norm);
        stage.normInput = static_cast<int32_t>(stage.update.inputs.size()) - 1;
      } else {
        status = norm.status();
      }
    }
    for (func::FuncOp function :
         {programs->forward, programs->backward, programs->weightGrad,
          programs->update, programs->norm})
      if (function)
        function.erase();
    step.stages.push_back(std::move(stage));
  }
  for (StageFunction &function : *functions)
    function.function.erase();
  if (!status.ok())
    return status;
  return step;
}

//===- TrainStepTest.cpp - Train steps learn ------------------------------===//
//
// Train steps built from the builders' models lower the loss over 20 steps
// on one CPU device, and one AdamW step matches the update computed by hand.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/ModelBuilder.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Training/TrainLoop.h"
#include "partita/Transforms/Autodiff.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/IR/Verifier.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace partita;

namespace {

/// Data that stay as randomInputs made them.
class FixedData : public TrainData {
public:
  Status fill(int64_t, const std::vector<HostArray *> &) override {
    return Status::success();
  }
};

/// Runs `steps` train steps of `module`'s step function on one device
/// through the runtime's train loop, feeding the new parameters and state
/// back; returns the losses.
std::vector<float> train(mlir::ModuleOp module, mlir::func::FuncOp step,
                         int steps) {
  Expected<Executable> program = lowerToExecutable(module);
  REQUIRE(program.ok());
  program->mesh = Mesh();
  Expected<TrainStepLayout> layout = trainStepLayout(*program);
  REQUIRE(layout.ok());
  // The layout read from the Executable is the step function's.
  REQUIRE(layout->updated == step.getNumResults() - 1);
  std::vector<HostArray> inputs = *initialTrainInputs(*program, 3);
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto role =
        step.getArgAttrOfType<RoleAttr>(i, PartitaDialect::kRoleAttrName);
    if (role && role.getValue() == Role::OptState)
      CHECK(std::all_of(inputs[i].bytes.begin(), inputs[i].bytes.end(),
                        [](uint8_t byte) { return byte == 0; }));
  }
  FixedData data;
  std::vector<float> losses;
  Status status = trainOnCpuDevices(
      *program, *layout, inputs, data, steps,
      [&](const TrainStepResult &result) {
        CHECK(result.step == static_cast<int64_t>(losses.size()));
        losses.push_back(static_cast<float>(result.loss));
        return Status::success();
      });
  INFO(status.message());
  REQUIRE(status.ok());
  return losses;
}

mlir::func::FuncOp stepOf(mlir::ModuleOp module, const ModelConfig &config,
                          const TrainStepOptions &options) {
  auto loss = *module.getOps<mlir::func::FuncOp>().begin();
  Expected<mlir::func::FuncOp> step =
      buildTrainStep(loss, options, config.model + "_train_step");
  INFO((step.ok() ? "" : step.status().message()));
  REQUIRE(step.ok());
  loss.erase();
  REQUIRE(mlir::succeeded(mlir::verify(module)));
  return *step;
}

} // namespace

TEST_CASE("train steps lower the loss over 20 steps", "[train]") {
  mlir::MLIRContext context;
  context.getOrLoadDialect<PartitaDialect>();
  Mesh mesh = *parseMeshSpec("data=2,model=4");
  SECTION("the residual MLP with SGD and momentum") {
    ModelConfig config;
    config.model = "mlp";
    config.layers = 2;
    auto module = std::move(*buildModel(&context, config, mesh));
    TrainStepOptions options;
    options.optimizer = TrainOptimizer::SGD;
    options.learningRate = 0.05;
    std::vector<float> losses = train(*module, stepOf(*module, config, options), 20);
    INFO("first loss " << losses.front() << ", last " << losses.back());
    CHECK(losses.back() < 0.5f * losses.front());
  }
  SECTION("a 2-layer GPT with AdamW") {
    ModelConfig config;
    config.model = "gpt";
    config.layers = 2;
    config.dModel = 32;
    config.heads = 2;
    config.vocab = 16;
    config.seq = 8;
    config.batch = 4;
    auto module = std::move(*buildModel(&context, config, mesh));
    TrainStepOptions options;
    options.learningRate = 0.01;
    std::vector<float> losses = train(*module, stepOf(*module, config, options), 20);
    INFO("first loss " << losses.front() << ", last " << losses.back());
    CHECK(losses.back() < 0.7f * losses.front());
    for (size_t s = 1; s < losses.size(); ++s)
      CHECK(std::isfinite(losses[s]));
  }
}

TEST_CASE("mixed precision trains a bf16 model from f32 master weights",
          "[train]") {
  mlir::MLIRContext context;
  context.getOrLoadDialect<PartitaDialect>();
  ModelConfig config;
  config.model = "mlp";
  config.dtype = "bf16";
  auto module = std::move(*buildModel(&context, config,
                                      *parseMeshSpec("data=2,model=4")));
  TrainStepOptions options;
  options.learningRate = 0.01;
  options.mixedPrecision = true;
  mlir::func::FuncOp step = stepOf(*module, config, options);
  // Parameters and gradients are bf16; the master weights (the first
  // optimizer state) and the moments f32; the loss is computed in bf16.
  size_t params = (step.getNumResults() - 1) / 5; // param, grad, master, m, v
  CHECK(mlir::cast<mlir::RankedTensorType>(step.getArgument(0).getType())
            .getElementType()
            .isBF16());
  CHECK(mlir::cast<mlir::RankedTensorType>(
            step.getArgument(2 * params).getType())
            .getElementType()
            .isF32());
  CHECK(step.getArgAttrOfType<RoleAttr>(2 * params,
                                        PartitaDialect::kRoleAttrName)
            .getValue() == Role::OptState);
  CHECK(mlir::cast<mlir::RankedTensorType>(step.getResultTypes()[0])
            .getElementType()
            .isBF16());
  Expected<Executable> program = lowerToExecutable(*module);
  REQUIRE(program.ok());
  program->mesh = Mesh();
  std::vector<HostArray> inputs = *randomInputs(*program, 3);
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto role = step.getArgAttrOfType<RoleAttr>(i, PartitaDialect::kRoleAttrName);
    if (role && role.getValue() == Role::OptState)
      std::fill(inputs[i].bytes.begin(), inputs[i].bytes.end(), 0);
  }
  size_t updated = step.getNumResults() - 1;
  double first = 0, last = 0;
  for (int s = 0; s < 20; ++s) {
    int32_t number = s;
    std::memcpy(inputs[step.getNumArguments() - 1].bytes.data(), &number, 4);
    Expected<std::vector<HostArray>> outputs = runOnCpuDevices(*program, inputs);
    REQUIRE(outputs.ok());
    double loss = elementAsDouble((*outputs)[0], 0);
    (s == 0 ? first : last) = loss;
    for (size_t k = 0; k < updated; ++k)
      inputs[k] = (*outputs)[1 + k];
  }
  INFO("first loss " << first << ", last " << last);
  CHECK(last < 0.5 * first);
}

TEST_CASE("one AdamW step matches the update by hand", "[train]") {
  mlir::MLIRContext context;
  context.getOrLoadDialect<PartitaDialect>();
  ModelBuilder b(&context, "adamw", mlir::Float32Type::get(&context));
  b.beginFunction("loss");
  mlir::Value w = b.param("w", {3}, {""});
  mlir::Value x = b.input("x", {3}, {""}, b.element());
  mlir::Value loss = b.reduce(ReductionKind::Sum, b.mul(w, x, "wx"), {0}, "loss");
  auto module = b.finish({loss});
  auto lossFn = *module->getOps<mlir::func::FuncOp>().begin();
  TrainStepOptions options; // AdamW, lr as an input
  Expected<mlir::func::FuncOp> step = buildTrainStep(lossFn, options, "step");
  REQUIRE(step.ok());
  lossFn.erase();
  // (w, g, m, v, x, step, lr) -> (loss, w', g, m', v')
  REQUIRE(step->getNumArguments() == 7);
  Expected<Executable> program = lowerToExecutable(*module);
  REQUIRE(program.ok());
  program->mesh = Mesh();
  std::vector<float> w0 = {0.5f, -1.0f, 2.0f}, m0 = {0.1f, 0.2f, -0.3f},
                     v0 = {0.01f, 0.02f, 0.03f}, x0 = {1.5f, -0.5f, 0.25f};
  int32_t stepNumber = 4;
  float lr = 0.1f;
  std::vector<HostArray> inputs = {
      HostArray::fromValues(DType::F32, {3}, w0),
      HostArray::zeros(DType::F32, {3}),
      HostArray::fromValues(DType::F32, {3}, m0),
      HostArray::fromValues(DType::F32, {3}, v0), HostArray::fromValues(DType::F32, {3}, x0),
      HostArray::fromValues(DType::I32, {}, std::vector<int32_t>{stepNumber}),
      HostArray::fromValues(DType::F32, {}, std::vector<float>{lr})};
  Expected<std::vector<HostArray>> outputs = runOnCpuDevices(*program, inputs);
  REQUIRE(outputs.ok());
  double t = stepNumber + 1;
  for (int i = 0; i < 3; ++i) {
    double g = x0[i]; // d(sum w x)/dw
    double m = 0.9 * m0[i] + 0.1 * g;
    double v = 0.999 * v0[i] + 0.001 * g * g;
    double mHat = m / (1 - std::pow(0.9, t));
    double vHat = v / (1 - std::pow(0.999, t));
    double w = w0[i] - lr * (mHat / (std::sqrt(vHat) + 1e-8) + 0.01 * w0[i]);
    auto at = [&](int output) {
      float value;
      std::memcpy(&value, (*outputs)[output].bytes.data() + 4 * i, 4);
      return value;
    };
    CHECK(at(1) == Approx(w).epsilon(1e-5));
    CHECK(at(2) == Approx(g).epsilon(1e-6)); // the gradient buffer
    CHECK(at(3) == Approx(m).epsilon(1e-5));
    CHECK(at(4) == Approx(v).epsilon(1e-5));
  }
  // Parameters and state are donated and updated in place.
  CHECK(program->inputs[0].donated);
  CHECK(program->inputs[1].role == "grad");
  CHECK(program->inputs[2].role == "opt_state");
  CHECK(program->outputs[1].aliasedInput == 0);
}

namespace {

/// The computation of the public function of `module`: every op but
/// sharding constraints and reshards, with its operand and result types and its
/// attributes other than shardings and names.
std::vector<std::string> computationOf(mlir::ModuleOp module) {
  std::vector<std::string> ops;
  mlir::func::FuncOp entry;
  for (auto function : module.getOps<mlir::func::FuncOp>())
    if (function.isPublic())
      entry = function;
  REQUIRE(entry);
  llvm::DenseMap<mlir::Value, unsigned> numbers;
  unsigned next = 0;
  for (mlir::BlockArgument arg : entry.getArguments())
    numbers[arg] = next++;
  entry.walk([&](mlir::Operation *op) {
    if (op == entry.getOperation())
      return; // its argument and result attributes hold the shardings
    // Layout annotations: constraints, and the reshards that move a
    // gradient into its buffer's layout.
    if (mlir::isa<ShardingConstraintOp, ReshardOp>(op)) {
      numbers[op->getResult(0)] = numbers.lookup(op->getOperand(0));
      return;
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getName().getStringRef() << "(";
    for (mlir::Value operand : op->getOperands())
      os << numbers.lookup(operand) << ":" << operand.getType() << " ";
    os << ")";
    for (mlir::NamedAttribute attr : op->getAttrs())
      if (attr.getName() != PartitaDialect::kShardingAttrName)
        os << " " << attr.getName().getValue() << "=" << attr.getValue();
    for (mlir::Value result : op->getResults()) {
      numbers[result] = next++;
      os << " -> " << result.getType();
    }
    ops.push_back(os.str());
  });
  return ops;
}

} // namespace

TEST_CASE("strategies differ only in sharding annotations", "[train]") {
  // The same GPT train step under every preset: after the rules, only
  // shardings and sharding constraints may differ.
  std::vector<std::string> reference;
  for (const char *rules : {"dp", "zero1", "zero2", "fsdp", "tp", "dp+tp",
                            "fsdp+tp", "tp+sp", "ep"}) {
    INFO("rules " << rules);
    mlir::MLIRContext context;
    context.getOrLoadDialect<PartitaDialect>();
    ModelConfig config;
    auto module = std::move(*buildModel(&context, config,
                                        *parseMeshSpec("data=2,model=4")));
    PipelineOptions options;
    options.stage = Stage::Verified;
    options.rules = rules;
    options.trainOptimizer = TrainOptimizer::AdamW;
    mlir::PassManager passes(&context);
    buildPipeline(passes, options);
    REQUIRE(mlir::succeeded(passes.run(*module)));
    std::vector<std::string> ops = computationOf(*module);
    if (reference.empty()) {
      reference = ops;
      continue;
    }
    REQUIRE(ops.size() == reference.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      INFO("op " << i);
      CHECK(ops[i] == reference[i]);
    }
  }
}

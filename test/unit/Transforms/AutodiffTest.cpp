//===- AutodiffTest.cpp - Gradients against finite differences ------------===//
//
// Every gradient rule, checked in f64 against central finite differences:
// each case builds loss = sum(op(inputs) * weights) for fixed random
// weights, differentiates it with buildGradient, runs both programs on the
// CPU runtime, and compares the gradient of every parameter element with
// (L(x + h) - L(x - h)) / 2h.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/ModelBuilder.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Transforms/Autodiff.h"

#include "mlir/IR/Verifier.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace partita;
using mlir::Value;

namespace {

using Body = std::function<Value(ModelBuilder &, std::vector<Value> &)>;

struct Case {
  std::string name;
  std::vector<std::vector<int64_t>> params;
  Body body;
  /// Inputs are made positive (for log, sqrt, pow, ...).
  bool positive = false;
};

double get(const HostArray &array, int64_t i) {
  double value;
  std::memcpy(&value, array.bytes.data() + i * 8, 8);
  return value;
}
void set(HostArray &array, int64_t i, double value) {
  std::memcpy(array.bytes.data() + i * 8, &value, 8);
}

Executable lower(mlir::func::FuncOp function) {
  // Lower a module holding only this function.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(function.getLoc());
  module->push_back(function->clone());
  Expected<Executable> program = lowerToExecutable(*module);
  REQUIRE(program.ok());
  program->mesh = Mesh();
  return std::move(*program);
}

std::vector<HostArray> run(const Executable &program,
                           const std::vector<HostArray> &inputs) {
  Expected<std::vector<HostArray>> outputs = runOnCpuDevices(program, inputs);
  REQUIRE(outputs.ok());
  return *outputs;
}

void checkCase(const Case &c) {
  INFO("case " << c.name);
  mlir::MLIRContext context;
  context.getOrLoadDialect<PartitaDialect>();
  mlir::Type f64 = mlir::Float64Type::get(&context);
  ModelBuilder b(&context, "fd", f64);
  b.beginFunction("loss");
  std::vector<Value> params;
  for (size_t i = 0; i < c.params.size(); ++i)
    params.push_back(b.param("p" + std::to_string(i), c.params[i],
                             std::vector<std::string>(c.params[i].size(), "")));
  Value out = c.body(b, params);
  // loss = sum(out * w) with fixed weights in [0.5, 1.5).
  std::vector<int64_t> shape = ModelBuilder::shapeOf(out);
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> weight(0.5f, 1.5f);
  std::vector<float> weights;
  for (int64_t i = 0; i < count; ++i)
    weights.push_back(weight(random));
  Value w = b.constantData(weights, shape, "w");
  std::vector<int64_t> all;
  for (size_t d = 0; d < shape.size(); ++d)
    all.push_back(static_cast<int64_t>(d));
  Value loss = b.mul(out, w, "weighted");
  if (!all.empty())
    loss = b.reduce(ReductionKind::Sum, loss, all, "loss");
  mlir::OwningOpRef<mlir::ModuleOp> module = b.finish({loss});
  REQUIRE(mlir::succeeded(mlir::verify(*module)));
  auto function = *module->getOps<mlir::func::FuncOp>().begin();
  std::vector<unsigned> wrt;
  for (unsigned i = 0; i < params.size(); ++i)
    wrt.push_back(i);
  Expected<mlir::func::FuncOp> gradient =
      buildGradient(function, wrt, "loss_grad");
  INFO((gradient.ok() ? std::string() : gradient.status().message()));
  REQUIRE(gradient.ok());
  REQUIRE(mlir::succeeded(mlir::verify(*module)));
  Executable forward = lower(function);
  Executable backward = lower(*gradient);

  std::mt19937_64 values(11);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<HostArray> inputs;
  for (const std::vector<int64_t> &s : c.params) {
    HostArray array = HostArray::zeros(DType::F64, s);
    for (int64_t i = 0; i < array.numElements(); ++i) {
      double value = uniform(values);
      set(array, i, c.positive ? 0.5 + std::fabs(value) : value);
    }
    inputs.push_back(array);
  }
  std::vector<HostArray> grads = run(backward, inputs);
  REQUIRE(grads.size() == params.size() + 1);
  CHECK(get(grads[0], 0) == Approx(get(run(forward, inputs)[0], 0)));
  const double h = 1e-6;
  for (size_t p = 0; p < params.size(); ++p)
    for (int64_t i = 0; i < inputs[p].numElements(); ++i) {
      std::vector<HostArray> plus = inputs, minus = inputs;
      set(plus[p], i, get(inputs[p], i) + h);
      set(minus[p], i, get(inputs[p], i) - h);
      double numeric =
          (get(run(forward, plus)[0], 0) - get(run(forward, minus)[0], 0)) /
          (2 * h);
      double analytic = get(grads[1 + p], i);
      INFO("parameter " << p << " element " << i);
      CHECK(analytic == Approx(numeric).epsilon(1e-5).margin(1e-6));
    }
}

} // namespace

TEST_CASE("every gradient rule matches finite differences", "[autodiff]") {
  using B = ModelBuilder;
  using V = std::vector<Value>;
  std::vector<Case> cases = {
      {"add", {{2, 3}, {2, 3}}, [](B &b, V &p) { return b.add(p[0], p[1], "y"); }},
      {"sub", {{2, 3}, {2, 3}}, [](B &b, V &p) { return b.sub(p[0], p[1], "y"); }},
      {"mul", {{2, 3}, {2, 3}}, [](B &b, V &p) { return b.mul(p[0], p[1], "y"); }},
      {"div", {{2, 3}, {2, 3}}, [](B &b, V &p) { return b.div(p[0], p[1], "y"); }, true},
      {"max", {{2, 3}, {2, 3}}, [](B &b, V &p) { return b.max(p[0], p[1], "y"); }},
      {"exp", {{5}}, [](B &b, V &p) { return b.exp(p[0], "y"); }},
      {"log", {{5}}, [](B &b, V &p) { return b.log(p[0], "y"); }, true},
      {"tanh", {{5}}, [](B &b, V &p) { return b.tanh(p[0], "y"); }},
      {"logistic", {{5}}, [](B &b, V &p) { return b.logistic(p[0], "y"); }},
      {"rsqrt", {{5}}, [](B &b, V &p) { return b.rsqrt(p[0], "y"); }, true},
      {"neg", {{5}}, [](B &b, V &p) { return b.neg(p[0], "y"); }},
      {"unary ops", {{6}},
       [](B &b, V &p) {
         mlir::OpBuilder &o = b.ops();
         mlir::Type t = p[0].getType();
         Value x = p[0];
         Value s = o.create<SqrtOp>(b.loc("sqrt"), t, x);
         Value l = o.create<Log1pOp>(b.loc("log1p"), t, s);
         Value e = o.create<ErfOp>(b.loc("erf"), t, l);
         Value si = o.create<SinOp>(b.loc("sin"), t, e);
         Value c = o.create<CosOp>(b.loc("cos"), t, si);
         Value a = o.create<AbsOp>(b.loc("abs"), t, o.create<SubOp>(b.loc("d"), t, c, x));
         Value m = o.create<MinOp>(b.loc("min"), t, a, x);
         return Value(o.create<PowOp>(b.loc("pow"), t, x, m));
       },
       true},
      {"select", {{4}, {4}},
       [](B &b, V &p) {
         Value lt = b.compare(CompareDirection::LT, p[0], p[1], "lt");
         return b.select(lt, b.mul(p[0], p[0], "sq"), b.exp(p[1], "e"), "y");
       }},
      {"einsum matmul", {{2, 3}, {3, 4}},
       [](B &b, V &p) { return b.einsum("ij,jk->ik", {p[0], p[1]}, {2, 4}, "y"); }},
      {"einsum batched with a summed-only index", {{2, 3, 4}, {2, 4}},
       [](B &b, V &p) { return b.einsum("bij,bj->b", {p[0], p[1]}, {2}, "y"); }},
      {"einsum one operand", {{2, 3}},
       [](B &b, V &p) { return b.einsum("ij->ji", {p[0]}, {3, 2}, "y"); }},
      {"reduce sum, max, min", {{3, 4}},
       [](B &b, V &p) {
         Value s = b.reduce(ReductionKind::Sum, p[0], {1}, "s");
         Value m = b.reduce(ReductionKind::Max, p[0], {1}, "m");
         Value n = b.reduce(ReductionKind::Min, p[0], {0}, "n");
         Value total = b.reduce(ReductionKind::Sum, n, {0}, "nn");
         return b.add(b.mul(s, m, "sm"), b.broadcast(total, {3}, {}, "nb"),
                      "y");
       }},
      {"cumsum both ways", {{2, 4}},
       [](B &b, V &p) {
         Value c = b.cumsum(p[0], 1, "c");
         Value r = b.ops().create<CumsumOp>(b.loc("r"), p[0].getType(), p[0],
                                            uint64_t(1), true);
         return b.mul(c, r, "y");
       }},
      {"broadcast, including a size-1 dimension", {{3}, {1, 2}},
       [](B &b, V &p) {
         Value x = b.broadcast(p[0], {3, 2}, {0}, "x");
         Value y = b.broadcast(p[1], {3, 2}, {0, 1}, "yb");
         return b.mul(x, y, "y");
       }},
      {"reshape and transpose", {{2, 6}},
       [](B &b, V &p) {
         Value r = b.reshape(p[0], {3, 4}, "r");
         Value t = b.ops().create<TransposeOp>(
             b.loc("t"), b.tensorType({4, 3}), r,
             llvm::ArrayRef<int64_t>{1, 0});
         return b.mul(t, t, "y");
       }},
      {"slice, concatenate and pad", {{4, 5}},
       [](B &b, V &p) {
         Value s = b.slice(p[0], {1, 0}, {3, 4}, "s");
         Value c = b.concatenate({s, b.exp(s, "e")}, 0, "c");
         Value zero = b.constant(0.25, {}, "zero");
         Value padded = b.ops().create<PadOp>(
             b.loc("pad"), b.tensorType({5, 6}), c, zero,
             llvm::ArrayRef<int64_t>{1, 1}, llvm::ArrayRef<int64_t>{0, 1});
         return b.mul(padded, padded, "y");
       }},
      {"dynamic slices", {{4, 3}, {2, 3}},
       [](B &b, V &p) {
         mlir::Type i32 = b.ops().getI32Type();
         Value one = b.constant(1, {}, "one", i32);
         Value zero = b.constant(0, {}, "zero", i32);
         Value s = b.dynamicSlice(p[0], {one, zero}, {2, 3}, "s");
         Value u = b.ops().create<DynamicUpdateSliceOp>(
             b.loc("u"), p[0].getType(), p[0], b.mul(p[1], s, "m"),
             mlir::ValueRange{zero, zero});
         return b.exp(u, "y");
       }},
      {"gather and scatter_add", {{5, 2}, {3, 2}},
       [](B &b, V &p) {
         Value indices = b.constantData({0, 3, 3}, {3}, "i");
         Value index = b.convert(indices, b.ops().getI32Type(), "ii");
         Value g = b.ops().create<GatherOp>(b.loc("g"), b.tensorType({3, 2}),
                                            p[0], index);
         Value s = b.ops().create<ScatterAddOp>(
             b.loc("s"), p[0].getType(), p[0], index, b.mul(g, p[1], "m"));
         return b.mul(s, s, "y");
       }},
      {"top_k values, argmax", {{2, 5}},
       [](B &b, V &p) {
         auto topk = b.ops().create<TopKOp>(
             b.loc("top"), b.tensorType({2, 2}),
             b.tensorType({2, 2}, b.ops().getI32Type()), p[0], uint64_t(1),
             uint64_t(2));
         Value picked = b.argmax(p[0], 1, "argmax");
         Value scale = b.broadcast(b.convert(picked, b.element(), "f"), {2, 2},
                                   {0}, "fb");
         return b.mul(topk.getValues(), scale, "y");
       }},
      {"constraints and barriers pass gradients through", {{2, 4}},
       [](B &b, V &p) {
         Value c = b.logicalConstraint(p[0], {"batch", "embed"}, "c");
         auto barrier = b.ops().create<OptimizationBarrierOp>(
             b.loc("barrier"), mlir::TypeRange{c.getType()}, mlir::ValueRange{c});
         return b.tanh(barrier.getResult(0), "y");
       }},
  };
  for (const Case &c : cases)
    checkCase(c);
}

TEST_CASE("gradients through loops match finite differences", "[autodiff]") {
  // h_{t+1} = tanh(h_t * w + b) for 3 steps, then h * h: the carry, and the
  // weights the body reads from outside.
  Case loop{"loop", {{2, 3}, {2, 3}, {3}}, [](ModelBuilder &b,
                                              std::vector<Value> &p) {
              mlir::OpBuilder &o = b.ops();
              auto op = o.create<LoopOp>(b.loc("loop"),
                                         mlir::TypeRange{p[0].getType()},
                                         mlir::ValueRange{p[0]}, uint64_t(3));
              auto *body = new mlir::Block();
              op.getBody().push_back(body);
              Value index = body->addArgument(
                  b.tensorType({}, o.getI32Type()), b.loc("i"));
              Value h = body->addArgument(p[0].getType(), b.loc("h"));
              mlir::OpBuilder::InsertionGuard guard(o);
              o.setInsertionPointToStart(body);
              Value step = b.convert(index, b.element(), "step");
              Value bias = b.mul(b.broadcast(p[2], {2, 3}, {1}, "bb"),
                                 b.broadcast(step, {2, 3}, {}, "sb"), "bias");
              Value next = b.tanh(b.add(b.mul(h, p[1], "hw"), bias, "pre"), "t");
              o.create<YieldOp>(b.loc("yield"), mlir::ValueRange{next});
              o.setInsertionPointAfter(op);
              Value out = op.getResult(0);
              return b.mul(out, out, "y");
            }};
  checkCase(loop);
}

TEST_CASE("ops without a gradient rule are clear errors", "[autodiff]") {
  mlir::MLIRContext context;
  context.getOrLoadDialect<PartitaDialect>();
  ModelBuilder b(&context, "fd", mlir::Float32Type::get(&context));
  b.beginFunction("loss");
  Value x = b.param("x", {4}, {""});
  Value s = b.ops().create<SliceOp>(b.loc("strided"), b.tensorType({2}), x,
                                    llvm::ArrayRef<int64_t>{0},
                                    llvm::ArrayRef<int64_t>{4},
                                    llvm::ArrayRef<int64_t>{2});
  Value loss = b.reduce(ReductionKind::Sum, s, {0}, "loss");
  mlir::OwningOpRef<mlir::ModuleOp> module = b.finish({loss});
  auto function = *module->getOps<mlir::func::FuncOp>().begin();
  Expected<mlir::func::FuncOp> gradient = buildGradient(function, {0}, "g");
  REQUIRE_FALSE(gradient.ok());
  CHECK(gradient.status().message() ==
        "partita.slice at strided (fd:3:1): no gradient rule for a strided "
        "slice");
  Expected<mlir::func::FuncOp> notFloat = buildGradient(function, {3}, "g");
  REQUIRE_FALSE(notFloat.ok());
  CHECK(notFloat.status().message() ==
        "cannot differentiate @loss with respect to argument 3: not a float "
        "tensor argument");
}

TEST_CASE("gpt and moe loss gradients match finite differences",
          "[autodiff]") {
  // f32 models, so a looser tolerance: sampled elements of every
  // parameter, step 1e-2 on the f32 loss.
  for (const char *model : {"gpt", "moe"}) {
    INFO("model " << model);
    mlir::MLIRContext context;
    context.getOrLoadDialect<PartitaDialect>();
    ModelConfig config;
    config.model = model;
    config.layers = 1;
    config.dModel = 16;
    config.heads = 2;
    config.vocab = 8;
    config.seq = 4;
    config.batch = 2;
    config.experts = 2;
    config.groups = 1;
    config.capacityFactor = 4; // nothing dropped: the loss is smooth
    auto module = std::move(*buildModel(&context, config,
                                        *parseMeshSpec("data=2,model=4")));
    auto loss = *module->getOps<mlir::func::FuncOp>().begin();
    std::vector<unsigned> params;
    for (unsigned i = 0; i < loss.getNumArguments(); ++i)
      if (auto role = loss.getArgAttrOfType<RoleAttr>(i, PartitaDialect::kRoleAttrName);
          role && role.getValue() == Role::Param)
        params.push_back(i);
    Expected<mlir::func::FuncOp> gradient = buildGradient(loss, params, "g");
    REQUIRE(gradient.ok());
    Executable forward = lower(loss);
    Executable backward = lower(*gradient);
    std::vector<HostArray> inputs = *randomInputs(forward, 5);
    std::vector<HostArray> grads = run(backward, inputs);
    auto lossAt = [&](const std::vector<HostArray> &x) {
      return elementAsDouble(run(forward, x)[0], 0);
    };
    auto setF32 = [](HostArray &array, int64_t i, float value) {
      std::memcpy(array.bytes.data() + 4 * i, &value, 4);
    };
    const float h = 1e-2f;
    int checked = 0;
    for (size_t p = 0; p < params.size(); ++p) {
      HostArray &arg = inputs[params[p]];
      for (int64_t i = 0; i < arg.numElements(); i += 7) {
        float original = static_cast<float>(elementAsDouble(arg, i));
        std::vector<HostArray> plus = inputs, minus = inputs;
        setF32(plus[params[p]], i, original + h);
        setF32(minus[params[p]], i, original - h);
        double numeric = (lossAt(plus) - lossAt(minus)) / (2 * h);
        double analytic = elementAsDouble(grads[1 + p], i);
        INFO("parameter " << p << " element " << i);
        CHECK(analytic == Approx(numeric).epsilon(3e-2).margin(2e-4));
        ++checked;
      }
    }
    CHECK(checked > 50);
  }
}

//===- ModelsTest.cpp - Model builders end to end -------------------------===//
//
// The builders' parameter and FLOP counts against closed forms; scanned and
// unrolled GPT giving the same numbers when partitioned on cpu:8; MoE
// dispatch respecting capacity and queue order.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Transforms/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>

using namespace partita;

namespace {

struct Fixture {
  mlir::MLIRContext context;
  Fixture() {
    context.getOrLoadDialect<PartitaDialect>();
    context.getOrLoadDialect<mlir::func::FuncDialect>();
  }
  mlir::OwningOpRef<mlir::ModuleOp> build(const ModelConfig &config,
                                          const std::string &mesh =
                                              "data=2,model=4") {
    Expected<Mesh> parsed = parseMeshSpec(mesh);
    REQUIRE(parsed.ok());
    Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
        buildModel(&context, config, *parsed);
    REQUIRE(module.ok());
    REQUIRE(mlir::succeeded(mlir::verify(**module)));
    return std::move(*module);
  }
};

/// Parameters and einsum FLOPs of a GPT (or MoE) forward pass, in closed
/// form: per layer 2·B·S·D·(H + 2N)·K for q, k, v; 2·2·B·H·S²·K for scores
/// and context; 2·B·S·H·K·D for the output projection; 2·2·B·S·D·F (GELU)
/// or 3·2·B·S·D·F (SwiGLU) for the MLP — with MHA, K = D/H and F = 4D this
/// is Narayanan et al.'s 24·B·S·D² + 4·B·S²·D — plus 2·B·S·V·D for the
/// one-hot embedding and 2·B·S·D·V for the LM head.
struct Expected2 {
  int64_t parameters, matmulFlops;
};

Expected2 gptFormula(const ModelConfig &c, int64_t groups) {
  int64_t B = c.batch, S = c.seq, D = c.dModel, H = c.heads,
          N = c.kvHeads ? c.kvHeads : c.heads, K = D / H, F = c.mlpRatio * D,
          V = c.vocab, L = c.layers, E = c.experts;
  int64_t norm = c.rmsNorm ? D : 2 * D;
  bool moe = c.model == "moe";
  int64_t perLayer = 2 * norm + D * H * K + 2 * D * N * K + H * K * D;
  int64_t flopsPerLayer = 2 * B * S * D * (H + 2 * N) * K +
                          2 * 2 * B * H * S * S * K + 2 * B * S * H * K * D;
  if (moe) {
    int64_t T = B * S / groups;
    int64_t C = static_cast<int64_t>(
        std::ceil(c.capacityFactor * c.topK * T / static_cast<double>(E)));
    C = std::max<int64_t>(1, std::min(C, T));
    perLayer += D * E + 2 * E * D * F;
    flopsPerLayer += 2 * B * S * D * E          // router
                     + 2 * groups * T * E * C * D // dispatch
                     + 2 * 2 * E * groups * C * D * F // experts
                     + 2 * groups * T * E * C * D;    // combine
  } else {
    int64_t matrices = c.swiglu ? 3 : 2;
    perLayer += matrices * D * F;
    flopsPerLayer += matrices * 2 * B * S * D * F;
  }
  int64_t parameters = V * D + (c.rotary ? 0 : S * D) + L * perLayer + norm +
                       D * V;
  int64_t flops = 2 * B * S * V * D + L * flopsPerLayer + 2 * B * S * D * V;
  return {parameters, flops};
}

} // namespace

TEST_CASE("parameter and FLOP counts match closed forms", "[frontend]") {
  Fixture f;
  SECTION("gpt, multi-head, learned positions, LayerNorm, GELU") {
    ModelConfig c;
    c.layers = 3;
    c.dModel = 96;
    c.heads = 6;
    c.seq = 32;
    mlir::OwningOpRef<mlir::ModuleOp> module = f.build(c);
    ModelSummary summary = summarizeModel(*module);
    Expected2 want = gptFormula(c, 1);
    CHECK(summary.parameters == want.parameters);
    CHECK(summary.matmulFlops == want.matmulFlops);
    CHECK(summary.vectorFlops > 0);
    // Narayanan et al. (2021): 24·B·S·D²·(1 + S/(6D)) per layer with MHA
    // and F = 4D.
    int64_t B = c.batch, S = c.seq, D = c.dModel, V = c.vocab;
    int64_t narayanan = c.layers * (24 * B * S * D * D + 4 * B * S * S * D);
    CHECK(summary.matmulFlops == narayanan + 4 * B * S * V * D);
  }
  SECTION("gpt, grouped-query, rotary, RMSNorm, SwiGLU, scanned") {
    ModelConfig c;
    c.layers = 2;
    c.heads = 8;
    c.kvHeads = 2;
    c.rotary = true;
    c.rmsNorm = true;
    c.swiglu = true;
    c.scan = true;
    mlir::OwningOpRef<mlir::ModuleOp> module = f.build(c);
    ModelSummary summary = summarizeModel(*module);
    Expected2 want = gptFormula(c, 1);
    CHECK(summary.parameters == want.parameters);
    CHECK(summary.matmulFlops == want.matmulFlops);
  }
  SECTION("moe, top-2, two groups") {
    ModelConfig c;
    c.model = "moe";
    c.experts = 8;
    mlir::OwningOpRef<mlir::ModuleOp> module = f.build(c);
    ModelSummary summary = summarizeModel(*module);
    Expected2 want = gptFormula(c, 2);
    CHECK(summary.parameters == want.parameters);
    CHECK(summary.matmulFlops == want.matmulFlops);
  }
  SECTION("mlp and ffn") {
    ModelConfig c;
    c.model = "mlp";
    c.layers = 3;
    int64_t B = c.batch, D = c.dModel, F = c.mlpRatio * D;
    ModelSummary mlp = summarizeModel(*f.build(c));
    CHECK(mlp.parameters == c.layers * (D * F + F + F * D + D));
    CHECK(mlp.matmulFlops == c.layers * 2 * 2 * B * D * F);
    c.model = "ffn";
    ModelSummary ffn = summarizeModel(*f.build(c));
    CHECK(ffn.parameters == 2 * D * F);
    CHECK(ffn.matmulFlops == 2 * 2 * B * c.seq * D * F);
  }
}

TEST_CASE("bad model configurations are errors naming the flag",
          "[frontend]") {
  Fixture f;
  Mesh mesh = *parseMeshSpec("data=2,model=4");
  ModelConfig c;
  c.heads = 5;
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> built =
      buildModel(&f.context, c, mesh);
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().message() ==
        "--d-model (64) must be a multiple of --heads (5)");
  c = ModelConfig();
  c.model = "resnet";
  built = buildModel(&f.context, c, mesh);
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().message() ==
        "unknown model 'resnet' (models: mlp, ffn, gpt, moe)");
  c = ModelConfig();
  c.model = "moe";
  c.topK = 9;
  built = buildModel(&f.context, c, mesh);
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().message() == "--top-k must be between 1 and --experts");
}

namespace {

/// The name inside "argument 3 (layer0.mlp.w1) of @gpt".
std::string argumentName(const std::string &described) {
  size_t open = described.find('('), close = described.find(')');
  return described.substr(open + 1, close - open - 1);
}

Executable compileFor(Fixture &f, mlir::ModuleOp module,
                      const std::string &rules) {
  PipelineOptions options;
  options.rules = rules;
  options.stage = Stage::Partitioned;
  mlir::PassManager passes(&f.context);
  buildPipeline(passes, options);
  REQUIRE(mlir::succeeded(passes.run(module)));
  Expected<Executable> program = lowerToExecutable(module);
  REQUIRE(program.ok());
  return std::move(*program);
}

} // namespace

TEST_CASE("scanned and unrolled gpt compute the same logits on cpu:8",
          "[frontend]") {
  Fixture f;
  for (const char *rules : {"dp+tp", "fsdp", "tp+sp"}) {
    INFO("rules " << rules);
    ModelConfig c;
    c.noLoss = true;
    c.layers = 3;
    mlir::OwningOpRef<mlir::ModuleOp> unrolledModule = f.build(c);
    c.scan = true;
    mlir::OwningOpRef<mlir::ModuleOp> scanModule = f.build(c);
    Executable unrolled = compileFor(f, *unrolledModule, rules);
    Executable scan = compileFor(f, *scanModule, rules);

    std::vector<HostArray> unrolledInputs = *randomInputs(unrolled, 5);
    std::map<std::string, const HostArray *> byName;
    for (size_t i = 0; i < unrolled.inputs.size(); ++i)
      byName[argumentName(unrolled.inputs[i].name)] = &unrolledInputs[i];
    // The scanned program's stacked weights: the layers' weights in order.
    std::vector<HostArray> scanInputs;
    for (const ExecutableValue &input : scan.inputs) {
      std::string name = argumentName(input.name);
      if (name.rfind("layers.", 0) != 0) {
        REQUIRE(byName.count(name));
        scanInputs.push_back(*byName[name]);
        continue;
      }
      HostArray stacked;
      for (int64_t layer = 0; layer < c.layers; ++layer) {
        std::string part = "layer" + std::to_string(layer) +
                           name.substr(std::string("layers").size());
        REQUIRE(byName.count(part));
        const HostArray &one = *byName[part];
        if (layer == 0) {
          stacked.dtype = one.dtype;
          stacked.shape = one.shape;
          stacked.shape.insert(stacked.shape.begin(), c.layers);
        }
        stacked.bytes.insert(stacked.bytes.end(), one.bytes.begin(),
                             one.bytes.end());
      }
      REQUIRE(stacked.shape == input.globalShape);
      scanInputs.push_back(std::move(stacked));
    }
    Expected<std::vector<HostArray>> want =
        runOnCpuDevices(unrolled, unrolledInputs);
    Expected<std::vector<HostArray>> got = runOnCpuDevices(scan, scanInputs);
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    Comparison comparison = compareArrays((*got)[0], (*want)[0]);
    INFO(describeComparison("logits", comparison));
    CHECK(comparison.within);
    CHECK(summarizeCommunication(scan).collectives ==
          summarizeCommunication(unrolled).collectives);
  }
}

namespace {

/// The dispatch tensor [G, T, E, C] of the first MoE layer, run
/// unpartitioned on one device.
HostArray moeDispatch(Fixture &f, ModelConfig c) {
  c.model = "moe";
  c.exposeDispatch = true;
  mlir::OwningOpRef<mlir::ModuleOp> module = f.build(c);
  Expected<Executable> program = lowerToExecutable(*module);
  REQUIRE(program.ok());
  program->mesh = Mesh();
  Expected<std::vector<HostArray>> outputs =
      runOnCpuDevices(*program, *randomInputs(*program, 11));
  REQUIRE(outputs.ok());
  REQUIRE(outputs->size() == 2);
  return (*outputs)[1];
}

} // namespace

TEST_CASE("MoE routing respects capacity and queue order", "[frontend]") {
  Fixture f;
  for (double factor : {0.5, 1.0, 8.0}) {
    for (int64_t k : {1, 2}) {
      INFO("capacity factor " << factor << ", top-" << k);
      ModelConfig c;
      c.capacityFactor = factor;
      c.topK = k;
      c.experts = 4;
      HostArray dispatch = moeDispatch(f, c);
      REQUIRE(dispatch.shape.size() == 4);
      int64_t G = dispatch.shape[0], T = dispatch.shape[1],
              E = dispatch.shape[2], C = dispatch.shape[3];
      CHECK(G == 2); // one group per data shard
      auto at = [&](int64_t g, int64_t t, int64_t e, int64_t s) {
        return elementAsDouble(dispatch, ((g * T + t) * E + e) * C + s);
      };
      int64_t dropped = 0;
      for (int64_t g = 0; g < G; ++g) {
        for (int64_t e = 0; e < E; ++e)
          for (int64_t s = 0; s < C; ++s) {
            double holders = 0;
            for (int64_t t = 0; t < T; ++t) {
              double value = at(g, t, e, s);
              REQUIRE((value == 0.0 || value == 1.0));
              holders += value;
            }
            // A slot holds at most one token, and slots fill in order.
            CHECK(holders <= 1.0);
            if (s > 0 && holders > 0) {
              double previous = 0;
              for (int64_t t = 0; t < T; ++t)
                previous += at(g, t, e, s - 1);
              CHECK(previous == 1.0);
            }
          }
        for (int64_t t = 0; t < T; ++t) {
          double slots = 0;
          for (int64_t e = 0; e < E; ++e) {
            double inExpert = 0;
            for (int64_t s = 0; s < C; ++s)
              inExpert += at(g, t, e, s);
            CHECK(inExpert <= 1.0); // k distinct experts
            slots += inExpert;
          }
          CHECK(slots <= k);
          dropped += k - static_cast<int64_t>(slots);
        }
      }
      // Enough capacity drops nothing; a tight one must drop some.
      if (factor >= 8.0)
        CHECK(dropped == 0);
      if (factor <= 0.5)
        CHECK(dropped > 0);
    }
  }
}

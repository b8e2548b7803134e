//===- CompileApiTest.cpp - partita::compile ------------------------------===//
//
// The one-call API returns the report, or an error carrying located
// diagnostics — never an abort — on the bad inputs the CLI rejects.
//
//===----------------------------------------------------------------------===//

#include "partita/Partita.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {

struct Api {
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> context;
  Api() {
    registerAllDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
  }
  Expected<Report> compileText(const std::string &text,
                               const CompileOptions &options) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(text, context.get(), "in.mlir");
    REQUIRE(module);
    return compile(*module, options);
  }
};

const char *kMegatron = R"(
partita.mesh @mesh = <["data"=2, "model"=4]>
func.func @mlp(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
               %a: tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
               %b: tensor<64x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> tensor<8x16xf32> {
  %h = partita.einsum "bd,df->bf" %x, %a : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %g = partita.tanh %h : tensor<8x64xf32>
  %y = partita.einsum "bf,fd->bd" %g, %b : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
)";

} // namespace

TEST_CASE("compile returns the report", "[api]") {
  Api api;
  Expected<Report> report = api.compileText(kMegatron, CompileOptions());
  REQUIRE(report.ok());
  CHECK(report->totalCollectives == 1);
  REQUIRE(report->collectives.size() == 1);
  CHECK(report->collectives[0].meshAxes == std::vector<std::string>{"model"});
  // The same JSON as partita compile --report.
  CHECK(report->toJson().find("\"collectives\": 1,") != std::string::npos);

  CompileOptions propagated;
  propagated.stage = Stage::Propagated;
  Expected<Report> noCollectives = api.compileText(kMegatron, propagated);
  REQUIRE(noCollectives.ok());
  CHECK(noCollectives->totalCollectives == 0);
}

TEST_CASE("compile takes the interconnect as a value", "[api]") {
  Api api;
  CompileOptions options;
  auto slow = std::make_shared<Interconnect>();
  slow->axes["model"] = AxisLink{1.0, 250.0};
  options.interconnect = slow;
  // The value is what the passes and the report use: the path beside it
  // is not read (it does not exist).
  options.interconnectFile = "/nonexistent/links.json";
  Expected<Report> report = api.compileText(kMegatron, options);
  REQUIRE(report.ok());
  REQUIRE(report->collectives.size() == 1);
  // One all_reduce over "model": at least the link's 250 us latency.
  CHECK(report->estTimeUs >= 250.0);
  CHECK(report->estTimeUs < 300.0);

  Expected<Report> defaults = api.compileText(kMegatron, CompileOptions());
  REQUIRE(defaults.ok());
  CHECK(defaults->estTimeUs < 10.0);
}

TEST_CASE("compile returns errors on bad input", "[api]") {
  Api api;
  SECTION("padding above --max-padding under --strict") {
    // 5 elements over 4 devices: padded to 8, 37.5% padding.
    CompileOptions strict;
    strict.strict = true;
    Expected<Report> report = api.compileText(R"(
partita.mesh @mesh = <["data"=4]>
func.func @f(%x: tensor<5xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}) -> tensor<5xf32> {
  %y = partita.exp %x : tensor<5xf32>
  return %y : tensor<5xf32>
}
)",
                                              strict);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find(
              "in.mlir:4:8: error: dimension 0 of size 5 of") == 0);
    CHECK(report.status().message().find("37.5% padding") !=
          std::string::npos);
    CHECK(report.status().message().find("see current operation") ==
          std::string::npos);
    // Without --strict the same program compiles (padded).
    CHECK(api.compileText(R"(
partita.mesh @mesh = <["data"=4]>
func.func @f(%x: tensor<5xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}) -> tensor<5xf32> {
  %y = partita.exp %x : tensor<5xf32>
  return %y : tensor<5xf32>
}
)",
                          CompileOptions())
              .ok());
  }
  SECTION("a mesh override naming a size of zero") {
    CompileOptions options;
    options.mesh = "data=0";
    Expected<Report> report = api.compileText(kMegatron, options);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find("error: invalid mesh 'data=0'") !=
          std::string::npos);
  }
  SECTION("a mesh override without an axis the shardings use") {
    CompileOptions options;
    options.mesh = "data=8";
    Expected<Report> report = api.compileText(kMegatron, options);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find("model") != std::string::npos);
  }
  SECTION("an unreadable rules file") {
    CompileOptions options;
    options.rules = "/nonexistent/rules.json";
    Expected<Report> report = api.compileText(kMegatron, options);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find(
              "'/nonexistent/rules.json' is neither a rules preset") !=
          std::string::npos);
  }
  SECTION("an unreadable interconnect file") {
    CompileOptions options;
    options.interconnectFile = "/nonexistent/links.json";
    Expected<Report> report = api.compileText(kMegatron, options);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find("/nonexistent/links.json") !=
          std::string::npos);
  }
  SECTION("a null module") {
    Expected<Report> report = compile(mlir::ModuleOp(), CompileOptions());
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message() == "partita::compile: null module");
  }
}

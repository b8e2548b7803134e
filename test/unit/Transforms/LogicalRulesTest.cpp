//===- LogicalRulesTest.cpp - Logical axis rules --------------------------===//

#include "partita/Transforms/LogicalRules.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {
Mesh meshOf(const char *spec) { return *parseMeshSpec(spec); }

std::string apply(const LogicalRules &rules, const Mesh &mesh,
                  std::vector<std::string> axes, std::vector<int64_t> shape,
                  const char *role) {
  std::vector<std::string> warnings;
  return applyLogicalRules(rules, mesh, axes, shape, role, 0.25, warnings)
      .toString();
}
} // namespace

TEST_CASE("presets map logical axes per role", "[rules]") {
  Mesh mesh = meshOf("data=2,model=4");
  LogicalRules dpTp = *presetLogicalRules("dp+tp", mesh);
  CHECK(apply(dpTp, mesh, {"batch", "seq"}, {8, 16}, "input") ==
        R"([{"data"}, {}])");
  CHECK(apply(dpTp, mesh, {"embed", "heads", "head_dim"}, {64, 4, 16},
              "param") == R"([{}, {"model"}, {}])");
  // Activations only take activation rules: dp+tp has none.
  CHECK(apply(dpTp, mesh, {"batch", "seq", "embed"}, {8, 16, 64},
              "activation") == "[{}, {}, {}]");
  LogicalRules sp = *presetLogicalRules("tp+sp", mesh);
  CHECK(apply(sp, mesh, {"batch", "seq", "embed"}, {8, 16, 64},
              "activation") == R"([{"data"}, {"model"}, {}])");
  // ZeRO: optimizer state, then gradients, then parameters over data.
  LogicalRules zero1 = *presetLogicalRules("zero1", mesh);
  CHECK(apply(zero1, mesh, {"embed", "mlp"}, {64, 256}, "opt_state") ==
        R"([{"data"}, {}])");
  // ZeRO-1's gradient buffer: full size, unreduced over data.
  CHECK(apply(zero1, mesh, {"embed", "mlp"}, {64, 256}, "grad") ==
        R"([{}, {}], partial = sum{"data"})");
  LogicalRules zero2 = *presetLogicalRules("zero2", mesh);
  CHECK(apply(zero2, mesh, {"embed", "mlp"}, {64, 256}, "grad") ==
        R"([{"data"}, {}])");
  CHECK(apply(zero2, mesh, {"embed", "mlp"}, {64, 256}, "param") ==
        "[{}, {}]");
  LogicalRules fsdpTp = *presetLogicalRules("fsdp+tp", mesh);
  CHECK(apply(fsdpTp, mesh, {"embed", "mlp"}, {64, 256}, "param") ==
        R"([{"data"}, {"model"}])");
}

TEST_CASE("the first usable rule wins", "[rules]") {
  Mesh mesh = meshOf("data=2,model=4");
  LogicalRules rules = *parseLogicalRules(
      R"([{"logical": "embed", "mesh": "model"},
          {"logical": "mlp", "mesh": "model"},
          {"logical": "mlp", "mesh": "data"},
          {"logical": "heads", "mesh": ["data", "model"]},
          {"logical": "vocab", "mesh": null}])",
      "rules.json", mesh);
  // embed took model, so mlp falls through to data.
  CHECK(apply(rules, mesh, {"embed", "mlp"}, {64, 256}, "param") ==
        R"([{"model"}, {"data"}])");
  CHECK(apply(rules, mesh, {"heads"}, {8}, "param") ==
        R"([{"data", "model"}])");
  CHECK(apply(rules, mesh, {"vocab", ""}, {128, 64}, "param") == "[{}, {}]");
  // A rule that does not divide applies where the padding is at most
  // maxPadding of the padded dimension (6 over 4: 8, 25%)...
  std::vector<std::string> warnings;
  CHECK(applyLogicalRules(rules, mesh, {"mlp"}, {6}, "param", 0.25, warnings)
            .toString() == R"([{"model"}])");
  CHECK(warnings.empty());
  // ... and is skipped with a warning where it is more (5 over 4: 37.5%);
  // the next rule (data, 5 over 2: 6, 17%) applies.
  Sharding sharding =
      applyLogicalRules(rules, mesh, {"mlp"}, {5}, "param", 0.25, warnings);
  CHECK(sharding.toString() == R"([{"data"}])");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "logical axis 'mlp' (size 5) over mesh axes model (4 "
                       "devices) would be padded to 8, 38% padding, more than "
                       "--max-padding allows: that rule is skipped");
  // The catch-all rule takes only dimensions that divide.
  LogicalRules fsdp = *presetLogicalRules("fsdp", mesh);
  CHECK(apply(fsdp, mesh, {"", ""}, {7, 8}, "param") == R"([{}, {"data"}])");
}

TEST_CASE("presets adapt to the mesh, and fail when nothing applies",
          "[rules]") {
  // tp works on model=4 alone; dp+tp drops its data rule there.
  Mesh model = meshOf("model=4");
  CHECK(presetLogicalRules("tp", model).ok());
  CHECK(presetLogicalRules("dp+tp", model)->rules.size() == 4);
  Expected<LogicalRules> dp = presetLogicalRules("dp", model);
  REQUIRE_FALSE(dp.ok());
  CHECK(dp.status().message() ==
        "rules preset 'dp' uses mesh axes the mesh (model) does not have "
        "(data, model): it would replicate everything");
  // ep uses the expert axis when there is one, else data.
  Mesh withExperts = meshOf("data=2,expert=4");
  LogicalRules ep = *presetLogicalRules("ep", withExperts);
  CHECK(apply(ep, withExperts, {"expert", "embed", "mlp"}, {8, 64, 256},
              "param") == R"([{"expert"}, {}, {}])");
  Mesh data = meshOf("data=8");
  LogicalRules epData = *presetLogicalRules("ep", data);
  CHECK(apply(epData, data, {"expert", "embed", "mlp"}, {8, 64, 256},
              "param") == R"([{"data"}, {}, {}])");
  Expected<LogicalRules> unknown = presetLogicalRules("zero4", data);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message() ==
        "unknown rules preset 'zero4' (presets: dp, zero1, zero2, fsdp, tp, "
        "dp+tp, fsdp+tp, tp+sp, cp, dp+cp, fsdp+cp, cp+tp, fsdp+cp+tp, ep; or "
        "give a JSON rules file)");
}

TEST_CASE("the cp presets split the sequence over the context axis",
          "[rules]") {
  // Inputs and activations along the sequence over context; the batch over
  // data; weights as their other half says (fsdp+cp splits them over
  // data, cp+tp over model).
  Mesh mesh = meshOf("data=2,context=2,model=2");
  LogicalRules cp = *presetLogicalRules("dp+cp", mesh);
  CHECK(apply(cp, mesh, {"batch", "seq"}, {8, 64}, "input") ==
        R"([{"data"}, {"context"}])");
  CHECK(apply(cp, mesh, {"batch", "seq", "embed"}, {8, 64, 32}, "activation") ==
        R"([{"data"}, {"context"}, {}])");
  CHECK(apply(cp, mesh, {"embed", "mlp"}, {32, 128}, "param") == R"([{}, {}])");
  LogicalRules fsdp = *presetLogicalRules("fsdp+cp", mesh);
  CHECK(apply(fsdp, mesh, {"embed", "mlp"}, {32, 128}, "param") ==
        R"([{"data"}, {}])");
  LogicalRules tp = *presetLogicalRules("cp+tp", mesh);
  CHECK(apply(tp, mesh, {"embed", "mlp"}, {32, 128}, "param") ==
        R"([{}, {"model"}])");
  CHECK(apply(tp, mesh, {"batch", "seq", "embed"}, {8, 64, 32}, "activation") ==
        R"([{"data"}, {"context"}, {}])");
  // Without a context axis a cp preset would silently be data parallel.
  Expected<LogicalRules> none = presetLogicalRules("cp", meshOf("data=8"));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() ==
        "rules preset 'cp' splits the sequence over the mesh's context axis; "
        "the mesh (data) has none (e.g. --mesh data=2,context=4)");
}

TEST_CASE("bad rules files get errors naming the rule", "[rules]") {
  Mesh mesh = meshOf("data=2,model=4");
  auto error = [&](const char *json) {
    Expected<LogicalRules> rules = parseLogicalRules(json, "r.json", mesh);
    REQUIRE_FALSE(rules.ok());
    return rules.status().message();
  };
  CHECK(error(R"([{"logical": "embed", "mesh": "modle"}])") ==
        "r.json: rule 0 (embed): the mesh has no axis 'modle' (axes: data, "
        "model)");
  CHECK(error(R"({"rules": [{"logical": "batch", "mesh": "data"},
                             {"logical": "mlp", "mesh": ["model", "dta"]}]})") ==
        "r.json: rule 1 (mlp): the mesh has no axis 'dta' (axes: data, "
        "model)");
  CHECK(error(R"([{"mesh": "data"}])") ==
        "r.json: rule 0 has no \"logical\" axis name");
  CHECK(error(R"([{"logical": "embed"}])") ==
        "r.json: rule 0 (embed) has no \"mesh\" (an axis, a list of axes, or "
        "null)");
  CHECK(error(R"([{"logical": "embed", "mesh": "data", "role": "weights"}])") ==
        "r.json: rule 0 (embed): \"role\" must be one of param, opt_state, "
        "grad, input, activation");
  CHECK(error("[{").rfind("r.json: invalid JSON: ", 0) == 0);
  CHECK(error(R"({"axes": []})") ==
        "r.json: expected an array of rules (or an object with one under "
        "\"rules\")");
}

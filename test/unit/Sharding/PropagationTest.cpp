//===- PropagationTest.cpp - The propagation engine -----------------------===//
//
// Propagation on small IR-free graphs: the cost example of the propagation
// issue (both winners), partial results, closed dimensions, priorities, and
// independence from op order.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Einsum.h"
#include "partita/Sharding/Propagation.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <random>

using namespace partita;

namespace {

Mesh mesh(const char *spec) { return *parseMeshSpec(spec); }

PropagationTensor tensor(std::vector<int64_t> shape, const char *name,
                         const char *spec = nullptr) {
  PropagationTensor t;
  t.shape = std::move(shape);
  t.name = name;
  int rank = static_cast<int>(t.shape.size());
  if (spec) {
    t.sharding = *parsePartitionSpec(spec, rank);
    t.annotated = true;
  } else {
    t.sharding = Sharding::open(rank);
  }
  return t;
}

PropagationOp einsum(const char *text, std::vector<int> operands, int result,
                     const PropagationProblem &problem) {
  EinsumSpec spec = *parseEinsumSpec(text);
  std::vector<std::vector<int64_t>> shapes;
  for (int t : operands)
    shapes.push_back(problem.tensors[t].shape);
  return {einsumRule(spec, shapes),
          operands,
          {result},
          std::string("einsum ") + text};
}

PropagationOp identity(int from, int to, const PropagationProblem &problem,
                       const char *name) {
  return {identityRule({problem.tensors[from].shape}), {from}, {to}, name};
}

/// The example: x [B, 1024] and W [1024, 4096] both P("data", None)
/// on data=8; y = x @ W returned unannotated.
PropagationProblem costExample(int64_t batch) {
  PropagationProblem problem;
  problem.mesh = mesh("data=8");
  problem.tensors.push_back(tensor({batch, 1024}, "x", "P(\"data\", None)"));
  problem.tensors.push_back(tensor({1024, 4096}, "W", "P(\"data\", None)"));
  problem.tensors.push_back(tensor({batch, 4096}, "y"));
  PropagationTensor result = tensor({batch, 4096}, "result 0");
  result.mustBeWhole = true;
  problem.tensors.push_back(result);
  problem.ops.push_back(einsum("bd,df->bf", {0, 1}, 2, problem));
  problem.ops.push_back(identity(2, 3, problem, "return"));
  return problem;
}

/// JAX spelling of `sharding` with every dimension closed.
std::string closedSpec(Sharding sharding) {
  for (DimSharding &dim : sharding.dims)
    dim.open = false;
  Expected<std::string> spec = toPartitionSpec(sharding);
  return spec ? *spec : spec.status().message();
}

} // namespace

TEST_CASE("cost decides which operand is resharded", "[propagation]") {
  for (int64_t batch : {int64_t(8), int64_t(4096)}) {
    PropagationProblem problem = costExample(batch);
    Expected<PropagationResult> result = propagateShardings(problem);
    REQUIRE(result.ok());
    const OpDecision &decision = result->decisions[0];
    REQUIRE(decision.options.size() >= 2);
    std::cout << "B = " << batch << ": ";
    for (auto &[text, cost] : decision.options)
      std::cout << text << " " << cost << " us; ";
    std::cout << "\n";
    // Factors: i = b, j = d (reduction), k = f.
    std::string winner = factorAssignmentToString(decision.factorAxes);
    if (batch == 8) {
      // Option B: contract over the sharded d; x all_to_all, y
      // reduce-scattered.
      CHECK(winner == "{j: \"data\"}");
      // 7/8 of 4 KiB + 7/8 of 128 KiB at 450 GB/s, plus 2 x 5 us latency.
      CHECK(decision.costUs == Approx((3584.0 + 114688.0) / 450e3 + 10.0));
      CHECK(result->shardings[1].dims[0].axes ==
            std::vector<std::string>{"data"});
      CHECK(result->shardings[2].partialKind == PartialKind::Sum);
    } else {
      // Option A: keep x, gather W (7 x 2 MiB).
      CHECK(winner == "{i: \"data\"}");
      CHECK(decision.costUs == Approx(7.0 * 2097152 / 450e3 + 5.0));
      CHECK(result->shardings[2].partialKind == PartialKind::None);
    }
    // Either way the function result is whole and split over data on rows.
    CHECK(closedSpec(result->shardings[3]) == "P(\"data\", None)");
    CHECK(result->shardings[3].partialKind == PartialKind::None);
  }
}

TEST_CASE("FSDP: the batch split reaches a matmul before the weight's "
          "contracted split does", "[propagation]") {
  // x (batch over data) goes through three elementwise ops into a matmul
  // whose weight is split along the contracted dimension (FSDP). The
  // weight is one op from the matmul's input, x three: without the phase
  // of ops without reduction factors, the weight's split would claim the
  // input's feature dimension first and every later op would compute
  // partial sums. With it, the input is split by batch and the matmul
  // gathers the weight (ZeRO-3).
  PropagationProblem problem;
  problem.mesh = mesh("data=8");
  problem.tensors.push_back(tensor({64, 32}, "x", "P(\"data\", None)"));
  for (const char *name : {"h1", "h2", "h3"})
    problem.tensors.push_back(tensor({64, 32}, name));
  problem.tensors.push_back(tensor({32, 64}, "W", "P(\"data\", None)"));
  PropagationTensor y = tensor({64, 64}, "y");
  y.mustBeWhole = true; // a function result
  problem.tensors.push_back(y);
  for (int t = 0; t < 3; ++t)
    problem.ops.push_back({elementwiseRule({64, 32}, 1), {t}, {t + 1},
                           "elementwise " + std::to_string(t)});
  problem.ops.push_back(einsum("bd,df->bf", {3, 4}, 5, problem));
  Expected<PropagationResult> result = propagateShardings(problem);
  REQUIRE(result.ok());
  CHECK(result->shardings[3].toString() == "[{\"data\", ?}, {?}]");
  CHECK(result->shardings[5].partialKind == PartialKind::None);
  CHECK(result->shardings[5].dims[0].axes == std::vector<std::string>{"data"});
  CHECK(factorAssignmentToString(result->decisions[3].factorAxes) ==
        "{i: \"data\"}");
}

TEST_CASE("Megatron MLP: column- then row-parallel", "[propagation]") {
  PropagationProblem problem;
  problem.mesh = mesh("model=4");
  problem.tensors.push_back(tensor({16, 64}, "x"));
  problem.tensors.push_back(tensor({64, 256}, "w1", "P(None, \"model\")"));
  problem.tensors.push_back(tensor({16, 256}, "h"));
  problem.tensors.push_back(tensor({256, 64}, "w2", "P(\"model\", None)"));
  problem.tensors.push_back(tensor({16, 64}, "y"));
  problem.ops.push_back(einsum("bd,dh->bh", {0, 1}, 2, problem));
  problem.ops.push_back(einsum("bh,hd->bd", {2, 3}, 4, problem));
  Expected<PropagationResult> result = propagateShardings(problem);
  REQUIRE(result.ok());
  CHECK(result->shardings[2].toString() == "[{?}, {\"model\", ?}]");
  CHECK(result->shardings[4].partialKind == PartialKind::Sum);
  CHECK(result->shardings[4].partialAxes == std::vector<std::string>{"model"});
  CHECK(result->shardings[0].isReplicated());
  // h got "model" from w1 through the first einsum.
  CHECK(result->origins[2][1].source == 1);
  CHECK(result->origins[2][1].viaOp == 0);
}

TEST_CASE("closed dimensions are never changed", "[propagation]") {
  PropagationProblem problem;
  problem.mesh = mesh("data=2,model=2");
  problem.tensors.push_back(tensor({8, 8}, "a", "P(\"data\", None)"));
  problem.tensors.push_back(tensor({8, 8}, "b", "P(None, \"model\")"));
  problem.ops.push_back({elementwiseRule({8, 8}, 1, 1), {0}, {1}, "exp"});
  Expected<PropagationResult> result = propagateShardings(problem);
  REQUIRE(result.ok());
  CHECK(result->shardings[0].toString() == "[{\"data\"}, {}]");
  CHECK(result->shardings[1].toString() == "[{}, {\"model\"}]");
}

TEST_CASE("lower priority numbers propagate first", "[propagation]") {
  // a (priority 1) wants rows on data; c (priority 0) wants columns on data;
  // b sits between them and takes the priority-0 sharding.
  PropagationProblem problem;
  problem.mesh = mesh("data=2");
  PropagationTensor a = tensor({8, 8}, "a", "P(\"data\", None)");
  a.priority = 1;
  a.sharding.priority = 1;
  problem.tensors.push_back(a);
  problem.tensors.push_back(tensor({8, 8}, "b"));
  problem.tensors.push_back(tensor({8, 8}, "c", "P(None, \"data\")"));
  problem.ops.push_back({elementwiseRule({8, 8}, 1, 1), {0}, {1}, "exp"});
  problem.ops.push_back({elementwiseRule({8, 8}, 1, 1), {1}, {2}, "neg"});
  Expected<PropagationResult> result = propagateShardings(problem);
  REQUIRE(result.ok());
  CHECK(result->shardings[1].toString() == "[{?}, {\"data\", ?}]");
}

TEST_CASE("the result does not depend on op order", "[propagation]") {
  // A diamond with conflicting suggestions, shuffled many times.
  PropagationProblem base;
  base.mesh = mesh("data=2,model=2");
  base.tensors.push_back(tensor({8, 16}, "x", "P(\"data\", None)"));
  base.tensors.push_back(tensor({16, 32}, "w", "P(None, \"model\")"));
  base.tensors.push_back(tensor({8, 32}, "h"));
  base.tensors.push_back(tensor({8, 32}, "g"));
  base.tensors.push_back(tensor({8, 32}, "z", "P(\"model\", None)"));
  base.tensors.push_back(tensor({8, 32}, "s"));
  base.ops.push_back(einsum("bd,dh->bh", {0, 1}, 2, base));
  base.ops.push_back({elementwiseRule({8, 32}, 1, 1), {2}, {3}, "exp"});
  base.ops.push_back({elementwiseRule({8, 32}, 2, 1), {3, 4}, {5}, "add"});
  Expected<PropagationResult> reference = propagateShardings(base);
  REQUIRE(reference.ok());
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    PropagationProblem shuffled = base;
    std::shuffle(shuffled.ops.begin(), shuffled.ops.end(), random);
    Expected<PropagationResult> result = propagateShardings(shuffled);
    REQUIRE(result.ok());
    for (size_t t = 0; t < base.tensors.size(); ++t)
      CHECK(result->shardings[t] == reference->shardings[t]);
  }
}

TEST_CASE("reshape factors", "[rules]") {
  CHECK(reshapeRule({4, 8}, {32}).toString() ==
        "([i, j]) -> ([i*j]) {i=4, j=8} partial=single(0) sum,max,min");
  CHECK(reshapeRule({2, 3}, {3, 2}).toString() ==
        "([i, k]) -> ([j, l]) {i=2 need-replication, j=3 need-replication, "
        "k=3 need-replication, l=2 need-replication} partial=single(0) "
        "sum,max,min");
  CHECK(reshapeRule({6, 4}, {4, 6}).toString() ==
        "([i*j, m]) -> ([i*k, l]) {i=2, j=3 need-replication, k=2 "
        "need-replication, "
        "l=6 need-replication, m=4 need-replication} partial=single(0) "
        "sum,max,min");
  CHECK(reshapeRule({1, 8, 1}, {8}).toString() ==
        "([1, i, 1]) -> ([i]) {i=8} partial=single(0) sum,max,min");
  CHECK(reshapeRule({}, {1, 1}).toString() ==
        "([]) -> ([1, 1]) {} partial=single(0) sum,max,min");
  CHECK(reshapeRule({6, 4}, {4, 6}).validate({{6, 4}}, {{4, 6}}).ok());
}

namespace {

/// broadcast [D] -> [B, D] (the operand's only dimension is the result's
/// last).
PropagationOp broadcastRow(int from, int to,
                           const PropagationProblem &problem) {
  const std::vector<int64_t> &shape = problem.tensors[to].shape;
  OpShardingRule rule;
  int b = rule.addFactor(shape[0]);
  int d = rule.addFactor(shape[1]);
  rule.operands.push_back({{d}});
  rule.results.push_back({{b}, {d}});
  return {rule, {from}, {to}, "broadcast"};
}

} // namespace

TEST_CASE("a conflicting split keeps its major axes", "[propagation]") {
  // x's rows are split over ("data", "fsdp"); w splits the contracted
  // dimension over "fsdp". The einsum can keep "data" on the rows and use
  // "fsdp" for the contraction: only the part of the split that conflicts
  // moves.
  PropagationProblem problem;
  problem.mesh = mesh("data=2,fsdp=2");
  problem.tensors.push_back(
      tensor({8, 16}, "x", "P((\"data\", \"fsdp\"), None)"));
  problem.tensors.push_back(tensor({16, 64}, "w", "P(\"fsdp\", None)"));
  problem.tensors.push_back(tensor({8, 64}, "y", "P(\"data\", None)"));
  problem.ops.push_back(einsum("bd,df->bf", {0, 1}, 2, problem));
  Expected<PropagationResult> result = propagateShardings(problem);
  REQUIRE(result.ok());
  const OpDecision &decision = result->decisions[0];
  CHECK(factorAssignmentToString(decision.factorAxes) ==
        "{i: \"data\"; j: \"fsdp\"}");
  bool priced = false;
  for (const auto &[text, cost] : decision.options)
    priced |= text == "{i: \"data\"; j: \"fsdp\"}";
  CHECK(priced);
}

TEST_CASE("of two propagation orders the plan that moves less is kept",
          "[propagation]") {
  // h = onehot @ E comes out split by rows ("data"); a bias split over
  // "data" is broadcast and added to it. Spreading the bias's split first
  // (the first order) puts "data" on h's columns before the rows arrive, so
  // the activations move; holding the broadcast back lets the rows win and
  // only the bias moves.
  PropagationProblem problem;
  problem.mesh = mesh("data=4");
  problem.tensors.push_back(tensor({64, 32}, "onehot", "P(\"data\", None)"));
  problem.tensors.push_back(tensor({32, 256}, "E", "P(None, None)"));
  problem.tensors.push_back(tensor({64, 256}, "h"));
  problem.tensors.push_back(tensor({256}, "bias", "P(\"data\")"));
  problem.tensors.push_back(tensor({64, 256}, "bb"));
  problem.tensors.push_back(tensor({64, 256}, "y"));
  problem.tensors.push_back(tensor({256, 128}, "W", "P(None, None)"));
  problem.tensors.push_back(tensor({64, 128}, "z", "P(\"data\", None)"));
  problem.ops.push_back(einsum("bv,vd->bd", {0, 1}, 2, problem));
  problem.ops.push_back(broadcastRow(3, 4, problem));
  problem.ops.push_back({elementwiseRule({64, 256}, 2, 1), {2, 4}, {5}, "add"});
  problem.ops.push_back(einsum("bd,df->bf", {5, 6}, 7, problem));
  Expected<PropagationResult> result = propagateShardings(problem);
  REQUIRE(result.ok());
  // The bias is a parameter: holding its broadcast back is the second
  // order; the third would hold back the same op and is not run.
  REQUIRE(result->alternatives.size() == 1);
  CHECK(result->alternatives[0].first == PropagationOrder::PassThroughFirst);
  CHECK(result->order == PropagationOrder::ParametersLate);
  CHECK(closedSpec(result->shardings[5]) == "P(\"data\", None)");
  CHECK(closedSpec(result->shardings[2]) == "P(\"data\", None)");
  // The estimate counts what the plan moves: the bias's broadcast reshaped
  // to the rows' split, nothing else.
  CHECK(result->estimate.collectives >= 1);
  CHECK(result->estimate.bytesPerDevice <
        result->alternatives[0].second.bytesPerDevice);
}

//===- Propagation.h - Sharding propagation over an op graph ----*- C++ -*-===//
//
// The propagation algorithm on an IR-free graph: tensors (shape, element
// size, annotation) and ops (a sharding rule over tensor ids). The MLIR pass
// builds the graph from a module and writes the result back; the partitioner
// reuses decideOp() so that both agree on what each op runs.
//
// Semantics (docs/Propagation.md):
//  * a tensor's closed dimensions, and the axes a user wrote, never change;
//    open dimensions may gain axes after the ones they have;
//  * annotations take effect level by level, lowest priority number first
//    (no priority = level 0); within a level the graph is iterated to a
//    fixed point;
//  * at each op the shardings of its tensors are projected onto the op's
//    factors; when they conflict, every consistent assignment of axes to
//    factors is costed (estimated time of all reshards it implies at the op,
//    including making a partial result whole where the program needs it
//    whole) and the cheapest wins;
//  * ties break on a key that never depends on op or use order: more
//    sharded axes first, then the lexicographic order of the assignment's
//    text.
// Each round computes every op's proposals from the state at the start of
// the round and merges them per tensor, so the result does not depend on the
// order of ops in the graph.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_PROPAGATION_H
#define PARTITA_SHARDING_PROPAGATION_H

#include "partita/Sharding/Cost.h"
#include "partita/Sharding/ShardingRule.h"

#include <string>
#include <utility>
#include <vector>

namespace partita {

/// One tensor of the graph.
struct PropagationTensor {
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  /// Initial sharding: the annotation, or fully open.
  Sharding sharding;
  /// True when a user wrote `sharding` (its axes are never removed and its
  /// closed dimensions never change).
  bool annotated = false;
  /// Level of the annotation (0 when none was given).
  int64_t priority = 0;
  /// True when the program needs the value whole (a function result without
  /// a partial annotation).
  bool mustBeWhole = false;
  /// True for a loop-carried value: when it meets partial values in an op
  /// that adds them (joint partial flow) it may become partial itself, so
  /// that an accumulation is reduced once after the loop, not per iteration.
  bool accumulator = false;
  /// The share of the tensor's bytes a reshard of it moves: below 1 for a
  /// broadcast of a smaller value, which the partitioner reshards at its
  /// source (a bias spread over the activations it is added to is cheap to
  /// move; the activations are not).
  double reshardScale = 1.0;
  /// For messages and origins ("argument 0 (x) of @f").
  std::string name;
};

/// One op of the graph.
struct PropagationOp {
  OpShardingRule rule;
  std::vector<int> operands;
  std::vector<int> results;
  /// For messages and origins ("partita.einsum at f.mlir:3:5").
  std::string name;
};

/// Where the axes of one tensor dimension came from.
struct DimOrigin {
  /// The annotated tensor whose annotation the axes come from; -1 when the
  /// dimension got no axes by propagation.
  int source = -1;
  /// The op that moved them into this tensor.
  int viaOp = -1;
  /// The tensor of that op they came from.
  int fromTensor = -1;
};

/// What an op runs: axes per factor, and what that costs.
struct OpDecision {
  std::vector<std::vector<std::string>> factorAxes;
  /// Estimated time of the reshards the decision implies, in µs.
  double costUs = 0;
  /// When the op's tensors disagreed: every option considered, as
  /// (readable assignment, cost in µs), cheapest first.
  std::vector<std::pair<std::string, double>> options;
};

/// The graph and its setting.
struct PropagationProblem {
  Mesh mesh;
  Interconnect interconnect;
  std::vector<PropagationTensor> tensors;
  std::vector<PropagationOp> ops;
};

/// The order in which splits spread (docs/Propagation.md, "Phases").
enum class PropagationOrder {
  /// Ops without reduction factors first, in both directions.
  PassThroughFirst,
  /// As PassThroughFirst, but an op that expands a parameter at least
  /// twofold (a bias or a norm's scale broadcast over activations: its
  /// operand an annotated value, or one converted, reshaped or transposed
  /// from it) passes splits forward only after the first phase.
  ParametersLate,
  /// As ParametersLate, for every op that expands its operand at least
  /// twofold (a norm's statistics broadcast back, too).
  ExpansionsLate,
};

/// What the partitioned program would move, counted from the shardings and
/// the ops' decisions (before collectives are combined).
struct PlanEstimate {
  int64_t collectives = 0;
  double bytesPerDevice = 0;
  double timeUs = 0;
};

/// The outcome.
struct PropagationResult {
  std::vector<Sharding> shardings;
  std::vector<std::vector<DimOrigin>> origins;
  std::vector<OpDecision> decisions;
  /// Rounds run, over all levels (and both orders when two were tried).
  int rounds = 0;
  /// The order that produced these shardings, and their plan's estimate.
  PropagationOrder order = PropagationOrder::PassThroughFirst;
  PlanEstimate estimate;
  /// The other orders tried, and their plans' estimates.
  std::vector<std::pair<PropagationOrder, PlanEstimate>> alternatives;
};

/// The collectives, bytes and time the plan of `result` implies.
PlanEstimate estimatePlan(const PropagationProblem &problem,
                          const PropagationResult &result);

/// Runs propagation. Fails only on a malformed problem (a rule that does not
/// fit its tensors); conflicts are settled by cost, never reported as errors.
Expected<PropagationResult>
propagateShardings(const PropagationProblem &problem);

/// The decision for op `opIndex` given the current shardings of all tensors
/// (the partitioner calls this with the propagated shardings).
OpDecision decideOp(const PropagationProblem &problem, int opIndex,
                    const std::vector<Sharding> &shardings);

/// What an op reads and writes under a decision.
struct OpLayout {
  /// The sharding each operand must have (partial where the op keeps a
  /// partial operand partial).
  std::vector<Sharding> operands;
  /// The sharding each result comes out with (partial over the axes of
  /// sharded reduction factors, or passed through).
  std::vector<Sharding> results;
};

/// The layout of op `opIndex` under `decision`, given the current shardings.
OpLayout layoutUnderDecision(const PropagationProblem &problem, int opIndex,
                             const std::vector<Sharding> &shardings,
                             const OpDecision &decision);

/// The sharding (closed, not partial) that a tensor mapped by `mapping` has
/// when the op's factors are split as `factorAxes` says.
Sharding shardingUnderAssignment(
    const TensorFactors &mapping,
    const std::vector<std::vector<std::string>> &factorAxes);

/// Text of an assignment of axes to factors: `{i: "data"; k: "model"}`
/// with factors named as in OpShardingRule::toString.
std::string
factorAssignmentToString(const std::vector<std::vector<std::string>> &axes);

} // namespace partita

#endif // PARTITA_SHARDING_PROPAGATION_H

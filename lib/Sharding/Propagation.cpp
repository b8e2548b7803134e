//===- Propagation.cpp - Sharding propagation over an op graph ------------===//
//
// See Propagation.h for the semantics. The code is organised as:
//   * projection of tensor shardings onto an op's factors and back;
//   * decideOp: candidates per factor, conflicts, costed options;
//   * the round loop: proposals per op, deterministic merge per tensor
//     (propagateInOrder), and the estimate of a plan (estimatePlan).
// Which orders run, and which plan is kept: PropagationOrders.cpp; an
// assignment of axes to factors written and applied: FactorAssignment.cpp.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Propagation.h"
#include "partita/Sharding/Layout.h"

#include "PropagationOrders.h"

#include <algorithm>
#include <map>
#include <set>

using namespace partita;

namespace {

using AxisList = std::vector<std::string>;
using Assignment = std::vector<AxisList>;

bool isPrefix(const AxisList &prefix, const AxisList &list) {
  return prefix.size() <= list.size() &&
         std::equal(prefix.begin(), prefix.end(), list.begin());
}

int64_t axisProduct(const Mesh &mesh, const AxisList &axes) {
  int64_t product = 1;
  for (const std::string &axis : axes)
    product *= mesh.axisSize(axis);
  return product;
}

/// Splits the axes of one dimension over its factors, major to minor: each
/// factor takes axes while their product divides its size, and the next
/// factor starts once it is full. A dimension with a single factor takes all
/// its axes even when they do not divide it (the partitioner pads).
std::vector<AxisList> projectDim(const Mesh &mesh, const AxisList &axes,
                                 const std::vector<int> &factorIds,
                                 const OpShardingRule &rule) {
  std::vector<AxisList> result(factorIds.size());
  if (factorIds.size() == 1) {
    result[0] = axes;
    return result;
  }
  size_t k = 0;
  int64_t product = 1;
  const std::string *previous = nullptr;
  for (const std::string &axis : axes) {
    int64_t size = mesh.axisSize(axis);
    size_t before = k;
    while (k < factorIds.size() && product == rule.factors[factorIds[k]].size &&
           product > 1) {
      ++k;
      product = 1;
    }
    // A sub-axis exists so that a factor smaller than its axis (two KV
    // heads over four devices) can take the axis's major part. The rest of
    // the axis may go on to the next factor only when it fills it (the two
    // query heads of each KV head); left over inside a larger factor (half
    // a head's dimensions per device) it is gathered instead.
    if (k != before && previous && parentAxis(*previous) != *previous &&
        parentAxis(*previous) == parentAxis(axis) && k < factorIds.size() &&
        rule.factors[factorIds[k]].size != size)
      break;
    previous = &axis;
    if (k >= factorIds.size() ||
        rule.factors[factorIds[k]].size % (product * size))
      break;
    result[k].push_back(axis);
    product *= size;
  }
  return result;
}

} // namespace

namespace {

Sharding shardingFor(const TensorFactors &mapping,
                     const Assignment &assignment) {
  return shardingUnderAssignment(mapping, assignment);
}

/// `current` with every open dimension whose axes are a prefix of the
/// `wanted` dimension's extended to it, provided no axis is used twice.
Sharding extendOpenDims(const Sharding &current, const Sharding &wanted) {
  Sharding result = current;
  std::set<std::string> used;
  for (const DimSharding &dim : current.dims)
    used.insert(dim.axes.begin(), dim.axes.end());
  used.insert(current.partialAxes.begin(), current.partialAxes.end());
  for (int d = 0; d < result.rank() && d < wanted.rank(); ++d) {
    DimSharding &dim = result.dims[d];
    const AxisList &target = wanted.dims[d].axes;
    if (!dim.open || !isPrefix(dim.axes, target) ||
        dim.axes.size() == target.size())
      continue;
    bool free = true;
    for (size_t k = dim.axes.size(); k < target.size(); ++k)
      free &= !used.count(target[k]);
    if (!free)
      continue;
    for (size_t k = dim.axes.size(); k < target.size(); ++k) {
      dim.axes.push_back(target[k]);
      used.insert(target[k]);
    }
  }
  return result;
}

size_t countAxes(const Assignment &assignment) {
  size_t count = 0;
  for (const AxisList &axes : assignment)
    count += axes.size();
  return count;
}

/// True when every compound dimension of the op is split major factor
/// first: a factor may take axes only when every factor before it in the
/// dimension is split completely (otherwise the local blocks would not be
/// contiguous in the dimension). A factor of a compound dimension is split
/// only where it divides: padding one factor would not pad the dimension
/// the way its own padded layout does.
bool respectsCompoundOrder(const Mesh &mesh, const OpShardingRule &rule,
                           const Assignment &assignment) {
  auto check = [&](const std::vector<TensorFactors> &tensors) {
    for (const TensorFactors &tensor : tensors)
      for (const std::vector<int> &dim : tensor)
        for (size_t k = 0; k < dim.size(); ++k) {
          if (assignment[dim[k]].empty() || dim.size() < 2)
            continue;
          if (rule.factors[dim[k]].size % axisProduct(mesh, assignment[dim[k]]))
            return false;
          for (size_t j = 0; j < k; ++j)
            if (axisProduct(mesh, assignment[dim[j]]) !=
                rule.factors[dim[j]].size)
              return false;
        }
    return true;
  };
  return check(rule.operands) && check(rule.results);
}

/// Shared state of one propagation run (or of one decideOp call).
struct Context {
  const PropagationProblem &problem;
  const std::vector<Sharding> &shardings;
  /// Tensors whose sharding counts as known (inactive annotations do not).
  const std::vector<bool> &active;
  /// For each tensor, (op, operand index) pairs that read it.
  const std::vector<std::vector<std::pair<int, int>>> &consumers;
  /// In the last phase of a level only: tensors that must be whole take the
  /// dimensions of the cheapest way to make a partial value whole (a
  /// reduce_scatter). Earlier, they only take the producer's dimensions, so
  /// the choice is made once every dimension is known.
  bool finalize = true;
  /// In the first phase of a level only ops without reduction factors
  /// (elementwise, broadcast, transpose, reshape, ...) run, so splits reach
  /// activations through the ops that pass them along before a weight's
  /// split of a contracted dimension can claim them (docs/Propagation.md,
  /// "Phases").
  bool passThroughOnly = false;

  double reshardUs(int tensor, const Sharding &from, const Sharding &to) const {
    const PropagationTensor &t = problem.tensors[tensor];
    return t.reshardScale * reshardTimeUs(problem.mesh, from, to, t.shape,
                                          t.elementBytes,
                                          problem.interconnect);
  }

  /// True when a partial value in `tensor` must be made whole somewhere
  /// downstream: follows the ops that pass partial values along (a
  /// breadth-first walk over at most kNeedsWholeBudget tensors). A walk
  /// that runs out of budget answers yes: a partial value that is never
  /// made whole is the exception (a function result annotated partial), and
  /// assuming it stays partial for free would hide the reduction it costs.
  bool needsWhole(int tensor, PartialKind kind) const {
    std::vector<int> frontier{tensor};
    std::set<int> seen{tensor};
    while (!frontier.empty()) {
      int current = frontier.back();
      frontier.pop_back();
      const PropagationTensor &t = problem.tensors[current];
      if (t.mustBeWhole)
        return true;
      if (t.annotated && t.sharding.partialKind == PartialKind::None &&
          active[current])
        return true;
      for (auto [op, operand] : consumers[current]) {
        const PropagationOp &consumer = problem.ops[op];
        if (!consumer.rule.allowsPartial(operand, kind))
          return true;
        for (int result : consumer.results) {
          if (!seen.insert(result).second)
            continue;
          if (seen.size() > kNeedsWholeBudget)
            return true;
          frontier.push_back(result);
        }
      }
    }
    return false;
  }
  static constexpr size_t kNeedsWholeBudget = 64;

  /// Cheapest way to make `produced` whole: all_reduce, or reduce_scatter
  /// onto a dimension that can take the partial axes.
  std::pair<Sharding, double> cheapestWhole(int tensor,
                                            const Sharding &produced) const {
    Sharding whole = produced;
    whole.partialAxes.clear();
    whole.partialKind = PartialKind::None;
    Sharding best = whole;
    double bestCost = reshardUs(tensor, produced, whole);
    const PropagationTensor &t = problem.tensors[tensor];
    for (int d = 0; d < whole.rank(); ++d) {
      Sharding scattered = whole;
      AxisList &axes = scattered.dims[d].axes;
      axes.insert(axes.end(), produced.partialAxes.begin(),
                  produced.partialAxes.end());
      if (t.shape[d] % axisProduct(problem.mesh, axes) != 0)
        continue;
      double cost = reshardUs(tensor, produced, scattered);
      if (cost < bestCost) {
        best = scattered;
        bestCost = cost;
      }
    }
    return {best, bestCost};
  }
};

/// What one option of an op implies for each of its tensors.
struct OptionEffect {
  double costUs = 0;
  std::vector<Sharding> operandShardings; // proposals for operands
  std::vector<Sharding> resultShardings;  // proposals for results
  std::vector<Sharding> requiredOperands; // what the op reads
  std::vector<Sharding> producedResults;  // what the op writes
};

/// The operands an op keeps partial (instead of reducing them first), and
/// the partial state they pass on to its results.
struct PassedPartial {
  PartialKind kind = PartialKind::None;
  AxisList axes;
  std::vector<bool> keep;
};

/// A single-flow op keeps its first active partial operand it allows.
void keepSinglePartial(const Context &context, const PropagationOp &op,
                       PassedPartial &passed) {
  const OpShardingRule &rule = op.rule;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Sharding &cur = context.shardings[op.operands[i]];
    if (cur.partialKind != PartialKind::None &&
        context.active[op.operands[i]] &&
        rule.allowsPartial(static_cast<int>(i), cur.partialKind) &&
        passed.kind == PartialKind::None) {
      passed.keep[i] = true;
      passed.kind = cur.partialKind;
      passed.axes = cur.partialAxes;
    }
  }
}

/// A joint-flow op keeps its listed operands partial when all of them are
/// partial the same way; a whole loop accumulator among them may become
/// partial too (it starts from a value that is made partial for free, and
/// the sum is taken once after the loop). Sums over different axes join
/// over the axes all of them share: an operand partial over more axes is
/// reduced over the others first (a gradient partial over data and model
/// added to a sum partial over data: an all-reduce over model, the sum
/// stays partial over data; docs/Propagation.md, "Partial values").
void keepJointPartials(const Context &context, const PropagationOp &op,
                       PassedPartial &passed) {
  const OpShardingRule &rule = op.rule;
  const Sharding *partial = nullptr;
  for (int i : rule.partialOperands) {
    const Sharding &cur = context.shardings[op.operands[i]];
    if (cur.partialKind != PartialKind::None && !partial &&
        rule.allowsPartial(i, cur.partialKind))
      partial = &cur;
  }
  if (!partial)
    return;
  // The axes every partial operand is partial over, in the first's order.
  AxisList shared = partial->partialAxes;
  bool joinable = true;
  for (int i : rule.partialOperands) {
    const Sharding &cur = context.shardings[op.operands[i]];
    bool accumulator = cur.partialKind == PartialKind::None &&
                       context.problem.tensors[op.operands[i]].accumulator;
    if (accumulator)
      continue;
    if (cur.partialKind != partial->partialKind ||
        (cur.partialAxes != partial->partialAxes &&
         partial->partialKind != PartialKind::Sum)) {
      joinable = false;
      break;
    }
    AxisList kept;
    for (const std::string &axis : shared)
      if (std::find(cur.partialAxes.begin(), cur.partialAxes.end(), axis) !=
          cur.partialAxes.end())
        kept.push_back(axis);
    shared = std::move(kept);
  }
  if (!joinable || shared.empty())
    return;
  for (int i : rule.partialOperands)
    passed.keep[i] = true;
  passed.kind = partial->partialKind;
  passed.axes = shared;
}

/// The operands `op` keeps partial under `assignment`, by its rule's
/// partial flow, and the partial state they pass on.
PassedPartial passedPartial(const Context &context, const PropagationOp &op,
                            const Assignment &assignment) {
  const OpShardingRule &rule = op.rule;
  PassedPartial passed;
  passed.keep.assign(op.operands.size(), false);
  if (rule.partialFlow == PartialFlow::Single)
    keepSinglePartial(context, op, passed);
  else if (rule.partialFlow == PartialFlow::Joint &&
           !rule.partialOperands.empty())
    keepJointPartials(context, op, passed);

  // A partial operand can stay partial only if the op does not split a
  // dimension over one of its partial axes; otherwise it is reduced first.
  if (passed.kind != PartialKind::None) {
    bool clash = false;
    for (const AxisList &axes : assignment)
      for (const std::string &axis : axes)
        clash |= std::find(passed.axes.begin(), passed.axes.end(), axis) !=
                 passed.axes.end();
    if (clash) {
      std::fill(passed.keep.begin(), passed.keep.end(), false);
      passed.kind = PartialKind::None;
      passed.axes.clear();
    }
  }
  return passed;
}

/// Adds to `effect` what `op` reads from each operand under `assignment`,
/// the proposal for it and the cost of resharding it.
void addOperandEffects(const Context &context, const PropagationOp &op,
                       const Assignment &assignment,
                       const PassedPartial &passed, OptionEffect &effect) {
  const OpShardingRule &rule = op.rule;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    int tensor = op.operands[i];
    const Sharding &cur = context.shardings[tensor];
    Sharding required = shardingFor(rule.operands[i], assignment);
    bool perValuePartial =
        rule.partialFlow == PartialFlow::PerValue &&
        cur.partialKind != PartialKind::None &&
        rule.allowsPartial(static_cast<int>(i), cur.partialKind);
    if (perValuePartial) {
      required.partialKind = cur.partialKind;
      required.partialAxes = cur.partialAxes;
    } else if (passed.keep[i]) {
      // Partial as the op keeps it: a whole accumulator joining partial
      // values is made partial (free), one partial over more axes than
      // the others reduced over the rest.
      required.partialKind = passed.kind;
      required.partialAxes = passed.axes;
    }
    if (context.active[tensor])
      effect.costUs += context.reshardUs(tensor, cur, required);
    effect.operandShardings.push_back(extendOpenDims(cur, required));
    effect.requiredOperands.push_back(std::move(required));
  }
}

/// What `op` writes into result `r` under `assignment`: partial as its
/// operand r (per-value flows), over the reduction axes (and the passed
/// ones), or as the operands it keeps partial.
Sharding producedSharding(const Context &context, const PropagationOp &op,
                          const Assignment &assignment, size_t r,
                          const AxisList &reductionAxes,
                          const PassedPartial &passed) {
  const OpShardingRule &rule = op.rule;
  Sharding produced = shardingFor(rule.results[r], assignment);
  if (rule.partialFlow == PartialFlow::PerValue && r < op.operands.size()) {
    const Sharding &source = context.shardings[op.operands[r]];
    if (rule.allowsPartial(static_cast<int>(r), source.partialKind)) {
      produced.partialKind = source.partialKind;
      produced.partialAxes = source.partialAxes;
    }
  } else if (!reductionAxes.empty()) {
    produced.partialKind = rule.reductionKind;
    produced.partialAxes = reductionAxes;
    produced.partialAxes.insert(produced.partialAxes.end(), passed.axes.begin(),
                                passed.axes.end());
  } else if (passed.kind != PartialKind::None) {
    produced.partialKind = passed.kind;
    produced.partialAxes = passed.axes;
  }
  return produced;
}

/// Whether the partial value in `tensor` (not annotated) fans out: several
/// ops read it, so it would reach each reader partial, and each reader's
/// result would need its own reduction downstream; reduced where it is
/// produced, it is reduced once (Megatron's backward all-reduce in front of
/// a norm's gradient). Edges that only carry the value on (loop carries,
/// call and return edges, barriers: per-value flows) are not readers. A
/// value summed into a loop accumulator stays partial: the accumulator is
/// reduced once after the loop, not every iteration.
bool fansOut(const Context &context, int tensor,
             const PropagationTensor &node) {
  size_t readers = 0;
  bool accumulated = false;
  for (auto [op, operand] : context.consumers[tensor]) {
    const PropagationOp &reader = context.problem.ops[op];
    if (reader.rule.partialFlow != PartialFlow::PerValue)
      ++readers;
    for (int other : reader.operands)
      accumulated |= context.problem.tensors[other].accumulator;
  }
  return !node.annotated && readers > 1 && !accumulated;
}

/// Adds to `effect` the proposal for result `tensor`, which the op writes
/// as `produced`, and the cost of delivering it (making it whole where it
/// must be).
void addResultEffect(const Context &context, int tensor, Sharding produced,
                     OptionEffect &effect) {
  const Sharding &cur = context.shardings[tensor];
  const PropagationTensor &node = context.problem.tensors[tensor];
  bool known =
      context.active[tensor] && (node.annotated || !cur.isReplicated());
  // A result's partial state is this op's to decide unless a user wrote it.
  Sharding base = cur;
  if (!node.annotated) {
    base.partialKind = PartialKind::None;
    base.partialAxes.clear();
  }
  Sharding target = extendOpenDims(base, produced);
  if (node.annotated && context.active[tensor]) {
    target.partialKind = cur.partialKind;
    target.partialAxes = cur.partialAxes;
  } else {
    target.partialKind = produced.partialKind;
    target.partialAxes = produced.partialAxes;
  }
  if (produced.partialKind != PartialKind::None &&
      target.partialKind != PartialKind::None &&
      context.needsWhole(tensor, produced.partialKind)) {
    auto [whole, cost] = context.cheapestWhole(tensor, produced);
    effect.costUs += cost;
    // Reduced where it is produced, a value keeps its dimensions (an
    // all_reduce: its readers want it whole, not split).
    if (node.mustBeWhole || fansOut(context, tensor, node)) {
      Sharding dims = produced;
      dims.partialKind = PartialKind::None;
      dims.partialAxes.clear();
      target = extendOpenDims(
          base, context.finalize && node.mustBeWhole ? whole : dims);
      target.partialKind = PartialKind::None;
      target.partialAxes.clear();
    }
  } else if (known) {
    effect.costUs += context.reshardUs(tensor, produced, target);
  }
  effect.resultShardings.push_back(std::move(target));
  effect.producedResults.push_back(std::move(produced));
}

/// What choosing `assignment` for op `opIndex` implies for its operands
/// and results, and what it costs.
OptionEffect evaluateOption(const Context &context, int opIndex,
                            const Assignment &assignment) {
  const PropagationOp &op = context.problem.ops[opIndex];
  const OpShardingRule &rule = op.rule;
  OptionEffect effect;
  effect.operandShardings.reserve(op.operands.size());
  effect.requiredOperands.reserve(op.operands.size());
  effect.resultShardings.reserve(op.results.size());
  effect.producedResults.reserve(op.results.size());

  // Operands: what the op needs, and which partial operand it keeps.
  PassedPartial passed = passedPartial(context, op, assignment);
  addOperandEffects(context, op, assignment, passed, effect);

  // Results: what the op produces, and what it costs to deliver.
  AxisList reductionAxes;
  for (size_t f = 0; f < rule.factors.size(); ++f)
    if (rule.factors[f].type == FactorType::Reduction)
      reductionAxes.insert(reductionAxes.end(), assignment[f].begin(),
                           assignment[f].end());
  for (size_t r = 0; r < op.results.size(); ++r)
    addResultEffect(
        context, op.results[r],
        producedSharding(context, op, assignment, r, reductionAxes, passed),
        effect);
  return effect;
}

/// Whether `assignment` uses every mesh axis at most once within each tensor
/// of the op (a reduction factor's axes count in every result, which they
/// make partial). Separate tensors of one op — the carries of a loop, the
/// operands of a barrier — may each use the same axis.
bool axesUniquePerTensor(const OpShardingRule &rule,
                         const Assignment &assignment) {
  auto check = [&](const TensorFactors &mapping, bool result) {
    std::set<std::string> used;
    for (const std::vector<int> &factors : mapping)
      for (int f : factors)
        for (const std::string &axis : assignment[f])
          if (!used.insert(axis).second)
            return false;
    if (result)
      for (size_t f = 0; f < rule.factors.size(); ++f)
        if (rule.factors[f].type == FactorType::Reduction)
          for (const std::string &axis : assignment[f])
            if (!used.insert(axis).second)
              return false;
    return true;
  };
  for (const TensorFactors &mapping : rule.operands)
    if (!check(mapping, false))
      return false;
  for (const TensorFactors &mapping : rule.results)
    if (!check(mapping, true))
      return false;
  return true;
}

/// decideOp with the option effects kept for propagation.
std::pair<OpDecision, OptionEffect> decide(const Context &context,
                                           int opIndex) {
  const PropagationOp &op = context.problem.ops[opIndex];
  const OpShardingRule &rule = op.rule;
  const Mesh &mesh = context.problem.mesh;
  size_t numFactors = rule.factors.size();

  // Candidates per factor from every known tensor.
  std::vector<std::vector<AxisList>> candidates(numFactors);
  auto collect = [&](int tensor, const TensorFactors &mapping) {
    if (!context.active[tensor])
      return;
    const Sharding &sharding = context.shardings[tensor];
    for (size_t d = 0; d < mapping.size() && d < sharding.dims.size(); ++d) {
      if (mapping[d].empty() || sharding.dims[d].axes.empty())
        continue;
      std::vector<AxisList> projected =
          projectDim(mesh, sharding.dims[d].axes, mapping[d], rule);
      for (size_t k = 0; k < mapping[d].size(); ++k) {
        int factor = mapping[d][k];
        if (projected[k].empty() ||
            rule.factors[factor].type == FactorType::NeedReplication)
          continue;
        if (std::find(candidates[factor].begin(), candidates[factor].end(),
                      projected[k]) == candidates[factor].end())
          candidates[factor].push_back(projected[k]);
      }
    }
  };
  for (size_t i = 0; i < op.operands.size(); ++i)
    collect(op.operands[i], rule.operands[i]);
  for (size_t r = 0; r < op.results.size(); ++r)
    collect(op.results[r], rule.results[r]);

  // Without conflicts the longest candidate of each factor wins.
  Assignment merged(numFactors);
  bool conflict = false;
  for (size_t f = 0; f < numFactors; ++f) {
    std::sort(candidates[f].begin(), candidates[f].end());
    for (const AxisList &candidate : candidates[f]) {
      if (isPrefix(merged[f], candidate))
        merged[f] = candidate;
      else if (!isPrefix(candidate, merged[f]))
        conflict = true;
    }
  }
  if (!conflict && !axesUniquePerTensor(rule, merged))
    conflict = true;
  if (!conflict && !respectsCompoundOrder(mesh, rule, merged))
    conflict = true;

  OpDecision decision;
  if (!conflict) {
    OptionEffect effect = evaluateOption(context, opIndex, merged);
    decision.factorAxes = std::move(merged);
    decision.costUs = effect.costUs;
    return {std::move(decision), std::move(effect)};
  }

  // Enumerate: each factor takes one of its candidates (or nothing); keep the
  // assignments that use every axis at most once.
  std::vector<std::vector<AxisList>> choices(numFactors);
  size_t combinations = 1;
  for (size_t f = 0; f < numFactors; ++f) {
    choices[f].push_back({});
    // Each candidate and its major parts: where only the minor axes of a
    // split conflict, the op can keep the rest ({"data", "fsdp"} against
    // a split over "fsdp" elsewhere keeps "data").
    for (const AxisList &candidate : candidates[f])
      for (size_t n = 1; n <= candidate.size(); ++n) {
        AxisList part(candidate.begin(), candidate.begin() + n);
        if (std::find(choices[f].begin(), choices[f].end(), part) ==
            choices[f].end())
          choices[f].push_back(std::move(part));
      }
    combinations *= choices[f].size();
  }
  if (combinations > 4096) {
    // Keep the search bounded: factors whose candidates agree take them.
    for (size_t f = 0; f < numFactors; ++f) {
      bool agree = true;
      for (const AxisList &candidate : candidates[f])
        agree &=
            isPrefix(candidate, merged[f]) || isPrefix(merged[f], candidate);
      if (agree && !merged[f].empty())
        choices[f] = {{}, merged[f]};
    }
  }
  struct Scored {
    double cost;
    size_t axes;
    std::string text;
    Assignment assignment;
    OptionEffect effect;
  };
  std::vector<Scored> scored;
  Assignment current(numFactors);
  std::vector<size_t> index(numFactors, 0);
  size_t evaluated = 0;
  while (evaluated++ < 8192) {
    for (size_t f = 0; f < numFactors; ++f)
      current[f] = choices[f][index[f]];
    if (axesUniquePerTensor(rule, current) &&
        respectsCompoundOrder(mesh, rule, current)) {
      OptionEffect effect = evaluateOption(context, opIndex, current);
      double cost = effect.costUs;
      scored.push_back({cost, countAxes(current),
                        factorAssignmentToString(current), current,
                        std::move(effect)});
    }
    size_t f = 0;
    while (f < numFactors && ++index[f] == choices[f].size())
      index[f++] = 0;
    if (f == numFactors)
      break;
  }
  if (scored.empty()) {
    // No valid combination within the search bound: leave every factor
    // unsplit (always valid).
    Assignment none(numFactors);
    OptionEffect effect = evaluateOption(context, opIndex, none);
    scored.push_back({effect.costUs, 0, factorAssignmentToString(none), none,
                      effect});
  }
  std::sort(scored.begin(), scored.end(), [](const Scored &a, const Scored &b) {
    // Costs within 1e-9 µs are ties, broken by parallelism, then text.
    if (std::abs(a.cost - b.cost) > 1e-9)
      return a.cost < b.cost;
    if (a.axes != b.axes)
      return a.axes > b.axes;
    return a.text < b.text;
  });
  for (const Scored &option : scored)
    decision.options.emplace_back(option.text, option.cost);
  decision.factorAxes = std::move(scored.front().assignment);
  decision.costUs = scored.front().cost;
  return {std::move(decision), std::move(scored.front().effect)};
}

std::vector<std::vector<std::pair<int, int>>>
buildConsumers(const PropagationProblem &problem) {
  std::vector<std::vector<std::pair<int, int>>> consumers(
      problem.tensors.size());
  for (size_t op = 0; op < problem.ops.size(); ++op)
    for (size_t i = 0; i < problem.ops[op].operands.size(); ++i)
      consumers[problem.ops[op].operands[i]].emplace_back(static_cast<int>(op),
                                                          static_cast<int>(i));
  return consumers;
}

/// A proposal of one op for one tensor.
struct Proposal {
  Sharding sharding;
  int op;
  int slot; // operand index, or operands + result index
};

/// Merges the proposals for one tensor into its sharding. Only open
/// dimensions change; a dimension where proposals disagree takes the
/// candidate that is cheapest for all proposers, then the one with more
/// axes, then the lexicographically smallest.
bool mergeProposals(const PropagationProblem &problem, int tensor,
                    std::vector<Proposal> &proposals, Sharding &sharding,
                    std::vector<DimOrigin> &origins,
                    const std::vector<std::vector<DimOrigin>> &allOrigins,
                    const std::vector<Sharding> &shardingsBefore) {
  // Canonical order: the op that produces the tensor first (origins then
  // read forward), then by op name, slot and text - never by op index.
  auto produces = [&](const Proposal &p) {
    return p.slot >= static_cast<int>(problem.ops[p.op].operands.size());
  };
  std::sort(proposals.begin(), proposals.end(),
            [&](const Proposal &a, const Proposal &b) {
              if (produces(a) != produces(b))
                return produces(a);
              const std::string &nameA = problem.ops[a.op].name;
              const std::string &nameB = problem.ops[b.op].name;
              if (nameA != nameB)
                return nameA < nameB;
              if (a.slot != b.slot)
                return a.slot < b.slot;
              return a.sharding.toString() < b.sharding.toString();
            });
  const PropagationTensor &node = problem.tensors[tensor];
  bool changed = false;
  std::set<std::string> used;
  for (const DimSharding &dim : sharding.dims)
    used.insert(dim.axes.begin(), dim.axes.end());
  used.insert(sharding.partialAxes.begin(), sharding.partialAxes.end());

  for (int d = 0; d < sharding.rank(); ++d) {
    DimSharding &dim = sharding.dims[d];
    if (!dim.open)
      continue;
    std::vector<AxisList> lists;
    for (const Proposal &p : proposals) {
      const AxisList &axes = p.sharding.dims[d].axes;
      if (axes.size() > dim.axes.size() && isPrefix(dim.axes, axes) &&
          std::find(lists.begin(), lists.end(), axes) == lists.end())
        lists.push_back(axes);
    }
    if (lists.empty())
      continue;
    // Compatible lists: the longest. Otherwise score each list.
    AxisList chosen;
    bool compatible = true;
    for (const AxisList &list : lists) {
      if (isPrefix(chosen, list))
        chosen = list;
      else if (!isPrefix(list, chosen))
        compatible = false;
    }
    if (!compatible) {
      double bestCost = 0;
      bool first = true;
      for (const AxisList &list : lists) {
        Sharding candidate = sharding;
        candidate.dims[d].axes = list;
        double cost = 0;
        for (const Proposal &p : proposals)
          cost += reshardTimeUs(problem.mesh, candidate, p.sharding,
                                node.shape, node.elementBytes,
                                problem.interconnect);
        bool better = first || cost < bestCost - 1e-9 ||
                      (std::abs(cost - bestCost) <= 1e-9 &&
                       (list.size() > chosen.size() ||
                        (list.size() == chosen.size() && list < chosen)));
        if (better) {
          bestCost = cost;
          chosen = list;
          first = false;
        }
      }
    }
    bool free = true;
    for (size_t k = dim.axes.size(); k < chosen.size(); ++k)
      free &= !used.count(chosen[k]);
    if (!free)
      continue; // An earlier dimension took the axis (lower index wins).
    for (size_t k = dim.axes.size(); k < chosen.size(); ++k)
      used.insert(chosen[k]);
    const std::string firstNew = chosen[dim.axes.size()];
    dim.axes = chosen;
    changed = true;
    // Origin: the first proposal (canonical order) that carries the list.
    // A dimension keeps the origin of its first (major) axes.
    for (const Proposal &p : proposals) {
      if (origins[d].viaOp >= 0)
        break;
      if (p.sharding.dims[d].axes != chosen)
        continue;
      const PropagationOp &op = problem.ops[p.op];
      // The tensor of the op that supplied the first new axis: the first
      // other tensor of the op (operands, then results) that has it.
      DimOrigin origin{-1, p.op, -1};
      std::vector<int> neighbours(op.operands);
      neighbours.insert(neighbours.end(), op.results.begin(), op.results.end());
      for (int other : neighbours) {
        if (other == tensor)
          continue;
        const Sharding &otherSharding = shardingsBefore[other];
        int otherDim = -1;
        for (int od = 0; od < otherSharding.rank() && otherDim < 0; ++od)
          if (std::find(otherSharding.dims[od].axes.begin(),
                        otherSharding.dims[od].axes.end(),
                        firstNew) != otherSharding.dims[od].axes.end())
            otherDim = od;
        if (otherDim < 0)
          continue;
        origin.fromTensor = other;
        origin.source = problem.tensors[other].annotated
                            ? other
                            : allOrigins[other][otherDim].source;
        break;
      }
      origins[d] = origin;
      break;
    }
  }

  // Partial axes come from the op that produces the tensor.
  if (!node.annotated && sharding.partialKind == PartialKind::None) {
    for (const Proposal &p : proposals) {
      if (p.sharding.partialKind == PartialKind::None)
        continue;
      bool free = true;
      for (const std::string &axis : p.sharding.partialAxes)
        free &= !used.count(axis);
      if (!free)
        continue;
      sharding.partialKind = p.sharding.partialKind;
      sharding.partialAxes = p.sharding.partialAxes;
      changed = true;
      break;
    }
  }
  return changed;
}

} // namespace

OpDecision partita::decideOp(const PropagationProblem &problem, int opIndex,
                             const std::vector<Sharding> &shardings) {
  std::vector<bool> active(problem.tensors.size(), true);
  auto consumers = buildConsumers(problem);
  Context context{problem, shardings, active, consumers};
  return decide(context, opIndex).first;
}

OpLayout partita::layoutUnderDecision(const PropagationProblem &problem,
                                      int opIndex,
                                      const std::vector<Sharding> &shardings,
                                      const OpDecision &decision) {
  std::vector<bool> active(problem.tensors.size(), true);
  auto consumers = buildConsumers(problem);
  Context context{problem, shardings, active, consumers};
  OptionEffect effect = evaluateOption(context, opIndex, decision.factorAxes);
  return {effect.requiredOperands, effect.producedResults};
}

PropagationResult partita::propagateInOrder(const PropagationProblem &problem,
                                            PropagationOrder order) {
  size_t numTensors = problem.tensors.size();
  PropagationResult result;
  result.order = order;
  result.shardings.reserve(numTensors);
  for (const PropagationTensor &t : problem.tensors)
    result.shardings.push_back(t.sharding);
  result.origins.resize(numTensors);
  for (size_t t = 0; t < numTensors; ++t)
    result.origins[t].assign(problem.tensors[t].shape.size(), DimOrigin{});
  auto consumers = buildConsumers(problem);
  std::vector<std::vector<int>> touching(numTensors);
  for (size_t op = 0; op < problem.ops.size(); ++op) {
    for (int t : problem.ops[op].operands)
      touching[t].push_back(static_cast<int>(op));
    for (int t : problem.ops[op].results)
      touching[t].push_back(static_cast<int>(op));
  }

  std::vector<bool> hasReduction = reductionOps(problem);

  std::vector<bool> holdsBack(problem.ops.size(), false);
  if (order != PropagationOrder::PassThroughFirst)
    holdsBack = expandingOps(problem, hasReduction,
                             order == PropagationOrder::ParametersLate);

  std::set<int64_t> levels{0};
  for (const PropagationTensor &t : problem.tensors)
    if (t.annotated)
      levels.insert(t.priority);

  // The decisions of the last phase of the last level. That phase runs
  // until no tensor changes, and every op a change touches is decided again,
  // so each op's latest decision there is its decision on the final
  // shardings (a decision reads only the op's own tensors, and every tensor
  // is active at the last level).
  std::vector<OpDecision> finalDecisions(problem.ops.size());
  std::vector<bool> decidedFinally(problem.ops.size(), false);
  std::vector<bool> active(numTensors, true);
  for (int64_t level : levels) {
    bool lastLevel = level == *levels.rbegin();
    for (size_t t = 0; t < numTensors; ++t)
      active[t] =
          !problem.tensors[t].annotated || problem.tensors[t].priority <= level;
    Context context{problem, result.shardings, active, consumers};
    std::set<int> worklist;
    for (int phase = 0; phase < 3; ++phase) {
      context.passThroughOnly = phase == 0;
      context.finalize = phase == 2;
      for (size_t op = 0; op < problem.ops.size(); ++op)
        if (!context.passThroughOnly || !hasReduction[op])
          worklist.insert(static_cast<int>(op));
      while (!worklist.empty()) {
        ++result.rounds;
        std::map<int, std::vector<Proposal>> proposals;
        for (int op : worklist) {
          auto [decision, effect] = decide(context, op);
          if (lastLevel && phase == 2) {
            finalDecisions[op] = std::move(decision);
            decidedFinally[op] = true;
          }
          const PropagationOp &node = problem.ops[op];
          bool holdResults = context.passThroughOnly && holdsBack[op];
          for (size_t i = 0; i < node.operands.size(); ++i)
            proposals[node.operands[i]].push_back(
                {std::move(effect.operandShardings[i]), op,
                 static_cast<int>(i)});
          for (size_t r = 0; r < node.results.size() && !holdResults; ++r)
            proposals[node.results[r]].push_back(
                {std::move(effect.resultShardings[r]), op,
                 static_cast<int>(node.operands.size() + r)});
        }
        worklist.clear();
        // Merge against the state at the start of the round, then commit.
        std::vector<std::pair<int, Sharding>> updates;
        std::vector<std::pair<int, std::vector<DimOrigin>>> originUpdates;
        for (auto &[tensor, list] : proposals) {
          if (!active[tensor])
            continue;
          Sharding updated = result.shardings[tensor];
          std::vector<DimOrigin> origins = result.origins[tensor];
          if (mergeProposals(problem, tensor, list, updated, origins,
                             result.origins, result.shardings) &&
              !(updated == result.shardings[tensor])) {
            updates.emplace_back(tensor, std::move(updated));
            originUpdates.emplace_back(tensor, std::move(origins));
          }
        }
        for (auto &[tensor, sharding] : updates) {
          result.shardings[tensor] = std::move(sharding);
          for (int op : touching[tensor])
            if (!context.passThroughOnly || !hasReduction[op])
              worklist.insert(op);
        }
        for (auto &[tensor, origins] : originUpdates)
          result.origins[tensor] = std::move(origins);
      }
    }
  }

  std::vector<bool> allActive(numTensors, true);
  Context finalContext{problem, result.shardings, allActive, consumers};
  for (size_t op = 0; op < problem.ops.size(); ++op)
    result.decisions.push_back(
        decidedFinally[op]
            ? std::move(finalDecisions[op])
            : decide(finalContext, static_cast<int>(op)).first);
  result.estimate = estimatePlan(problem, result);
  return result;
}

PlanEstimate partita::estimatePlan(const PropagationProblem &problem,
                                   const PropagationResult &result) {
  std::vector<bool> active(problem.tensors.size(), true);
  auto consumers = buildConsumers(problem);
  Context context{problem, result.shardings, active, consumers};
  PlanEstimate estimate;
  auto add = [&](int tensor, const Sharding &from, const Sharding &to) {
    const PropagationTensor &t = problem.tensors[tensor];
    ReshardPlan plan = planReshard(problem.mesh, from, to, t.shape,
                                   t.elementBytes, problem.interconnect);
    estimate.collectives += static_cast<int64_t>(plan.steps.size());
    estimate.bytesPerDevice += t.reshardScale * plan.bytesPerDevice();
    estimate.timeUs += t.reshardScale * plan.timeUs();
  };
  for (size_t op = 0; op < problem.ops.size(); ++op) {
    const PropagationOp &node = problem.ops[op];
    OptionEffect effect = evaluateOption(context, static_cast<int>(op),
                                         result.decisions[op].factorAxes);
    for (size_t i = 0; i < node.operands.size(); ++i)
      add(node.operands[i], result.shardings[node.operands[i]],
          effect.requiredOperands[i]);
    for (size_t r = 0; r < node.results.size(); ++r)
      add(node.results[r], effect.producedResults[r],
          result.shardings[node.results[r]]);
  }
  return estimate;
}

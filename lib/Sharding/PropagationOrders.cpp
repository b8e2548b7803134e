//===- PropagationOrders.cpp - The orders propagation tries ---------------===//
//
// propagateShardings: the rules checked against the tensors, propagation
// run in each order that differs (PassThroughFirst, ParametersLate,
// ExpansionsLate; docs/Propagation.md, "The algorithm", 6) and the plan
// that moves the fewest bytes kept. The round loop itself is
// propagateInOrder in Propagation.cpp.
//
//===----------------------------------------------------------------------===//

#include "PropagationOrders.h"

#include <functional>

using namespace partita;

std::vector<bool> partita::reductionOps(const PropagationProblem &problem) {
  std::vector<bool> hasReduction(problem.ops.size(), false);
  for (size_t op = 0; op < problem.ops.size(); ++op)
    for (const Factor &factor : problem.ops[op].rule.factors)
      if (factor.type == FactorType::Reduction)
        hasReduction[op] = true;
  return hasReduction;
}

std::vector<bool> partita::expandingOps(const PropagationProblem &problem,
                                        const std::vector<bool> &hasReduction,
                                        bool parametersOnly) {
  std::vector<bool> expanding(problem.ops.size(), false);
  auto elements = [&](int tensor) {
    int64_t n = 1;
    for (int64_t d : problem.tensors[tensor].shape)
      n *= d;
    return n;
  };
  // Values that come from annotated ones through single-operand ops that
  // do not expand them (a parameter converted, reshaped or transposed).
  std::vector<int> producer(problem.tensors.size(), -1);
  for (size_t op = 0; op < problem.ops.size(); ++op)
    for (int r : problem.ops[op].results)
      producer[r] = static_cast<int>(op);
  std::vector<int> fromAnnotation(problem.tensors.size(), -1);
  std::function<bool(int, int)> parameterLike = [&](int t, int depth) {
    if (fromAnnotation[t] >= 0)
      return fromAnnotation[t] == 1;
    bool yes = problem.tensors[t].annotated;
    if (!yes && depth < 16 && producer[t] >= 0) {
      const PropagationOp &node = problem.ops[producer[t]];
      yes = !hasReduction[producer[t]] && node.operands.size() == 1 &&
            elements(node.operands[0]) == elements(t) &&
            parameterLike(node.operands[0], depth + 1);
    }
    fromAnnotation[t] = yes ? 1 : 0;
    return yes;
  };
  for (size_t op = 0; op < problem.ops.size(); ++op) {
    const PropagationOp &node = problem.ops[op];
    expanding[op] =
        !hasReduction[op] && node.operands.size() == 1 &&
        node.results.size() == 1 &&
        2 * elements(node.operands[0]) <= elements(node.results[0]) &&
        (!parametersOnly || parameterLike(node.operands[0], 0));
  }
  return expanding;
}

Expected<PropagationResult>
partita::propagateShardings(const PropagationProblem &problem) {
  // Check the rules against the tensors first.
  for (const PropagationOp &op : problem.ops) {
    std::vector<std::vector<int64_t>> operandShapes, resultShapes;
    for (int t : op.operands)
      operandShapes.push_back(problem.tensors[t].shape);
    for (int t : op.results)
      resultShapes.push_back(problem.tensors[t].shape);
    if (Status status = op.rule.validate(operandShapes, resultShapes);
        !status.ok())
      return Status::error(op.name + ": " + status.message());
  }

  // Greedy propagation settles each conflict by what is known when an op
  // decides, so the order in which splits spread shapes the plan. Where
  // the program expands small values over large ones, other orders hold
  // those expansions back (only a parameter's, or every one); the plan
  // kept is the one whose reshards move the fewest bytes per device
  // (collective counts are not comparable before the combiner packs them
  // into buckets; docs/Propagation.md, "The algorithm", 6).
  PropagationResult best =
      propagateInOrder(problem, PropagationOrder::PassThroughFirst);
  if (best.estimate.collectives == 0)
    return best;
  std::vector<bool> hasReduction = reductionOps(problem);
  std::vector<bool> none(problem.ops.size(), false);
  std::vector<bool> previous = none;
  int rounds = best.rounds;
  for (PropagationOrder order :
       {PropagationOrder::ParametersLate, PropagationOrder::ExpansionsLate}) {
    std::vector<bool> held = expandingOps(
        problem, hasReduction, order == PropagationOrder::ParametersLate);
    if (held == none || held == previous)
      continue; // Nothing held back, or the same as the order before.
    previous = held;
    PropagationResult other = propagateInOrder(problem, order);
    rounds += other.rounds;
    if (other.estimate.bytesPerDevice <
        best.estimate.bytesPerDevice * (1 - 1e-9)) {
      other.alternatives = std::move(best.alternatives);
      other.alternatives.push_back({best.order, best.estimate});
      best = std::move(other);
    } else {
      best.alternatives.push_back({other.order, other.estimate});
    }
  }
  best.rounds = rounds;
  return best;
}

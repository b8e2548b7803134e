//===- ShardingRule.h - How an op's dimensions relate -----------*- C++ -*-===//
//
// The sharding knowledge of one op, as data. Every operand and result
// dimension maps to a list of *factors* (major to minor; a plain dimension
// has one, a dimension that a reshape merges or splits has several). A factor
// is an index space the op iterates over; sharding a factor over mesh axes
// splits every dimension it appears in the same way, so the op can run on
// the local blocks. What the split costs or means depends on the factor's
// type:
//
//   pass-through     appears in results: each device computes its block;
//   reduction        appears only in operands: each device computes a partial
//                    result over its part, which is partial (sum/max/min)
//                    until combined;
//   need-replication must not be split (a sort along it, a slice that is not
//                    the whole dimension, a concatenation along it).
//
// Propagation reads these rules to move shardings between operands and
// results; the partitioner reads them to decide what each op runs locally.
// Partial values: the rule also says which operands a partial value may
// pass through (linear ops) and how.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_SHARDINGRULE_H
#define PARTITA_SHARDING_SHARDINGRULE_H

#include "partita/Sharding/Sharding.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

/// What sharding a factor means for the op.
enum class FactorType { PassThrough, Reduction, NeedReplication };

/// Keyword of a factor type ("pass-through", "reduction", "need-replication").
const char *factorTypeName(FactorType type);

/// One factor of an op: an index space of `size` elements.
struct Factor {
  int64_t size = 1;
  FactorType type = FactorType::PassThrough;
};

/// For each dimension of one tensor, its factors, major to minor. An empty
/// list means the dimension has no factor (a size-1 dimension that appears
/// or disappears) and stays unsharded.
using TensorFactors = std::vector<std::vector<int>>;

/// How partial values flow through an op.
enum class PartialFlow {
  /// No operand may be partial.
  None,
  /// Exactly one of `partialOperands` may be partial (the others must be
  /// whole); the results are then partial the same way. Ops linear in each
  /// operand separately: mul, einsum, neg.
  Single,
  /// All of `partialOperands` are partial the same way, or none is; the
  /// results follow. Ops linear in their operands jointly: add, sub.
  Joint,
  /// Result i is partial exactly when operand i is (identity-like ops with
  /// several values: optimization_barrier, loop).
  PerValue,
};

/// The sharding rule of one op.
struct OpShardingRule {
  std::vector<Factor> factors;
  std::vector<TensorFactors> operands;
  std::vector<TensorFactors> results;
  /// How the op combines values over its reduction factors; sharding a
  /// reduction factor makes the results partial with this kind.
  PartialKind reductionKind = PartialKind::Sum;
  PartialFlow partialFlow = PartialFlow::None;
  /// Operands that may carry a partial value (see PartialFlow).
  std::vector<int> partialOperands;
  /// Kinds of partial value that may pass (sum for linear ops; max/min for
  /// max/min reductions).
  std::vector<PartialKind> partialKinds;

  /// Adds a factor and returns its index.
  int addFactor(int64_t size, FactorType type = FactorType::PassThrough);
  /// True when `kind` partial values may flow through operand `operand`.
  bool allowsPartial(int operand, PartialKind kind) const;

  /// Checks the rule against the op's operand and result shapes: one entry
  /// per dimension, factor indices in range, and each dimension's size equal
  /// to the product of its factors' sizes.
  Status validate(const std::vector<std::vector<int64_t>> &operandShapes,
                  const std::vector<std::vector<int64_t>> &resultShapes) const;

  /// Readable form, factors named i, j, k, ...:
  /// `([i, j], [j, k]) -> ([i, k]) {i=8, j=16 reduction, k=32}` followed by
  /// `reduction=sum` when there are reduction factors and `partial: ...`.
  std::string toString() const;
};

/// The rule of an elementwise op over tensors of `shape`: one pass-through
/// factor per dimension shared by `numOperands` operands and `numResults`
/// results.
OpShardingRule elementwiseRule(const std::vector<int64_t> &shape,
                               int numOperands, int numResults = 1);

/// Factorizes a row-major reshape from `from` to `to`: dimensions whose
/// sizes regroup cleanly share compound factors (e.g. [4, 8] -> [32] gives
/// [[i], [j]] -> [[i, j]]); where the sizes cannot be aligned, each
/// dimension of the misaligned span gets its own need-replication factor.
OpShardingRule reshapeRule(const std::vector<int64_t> &from,
                           const std::vector<int64_t> &to);

/// The rule of an einsum: one factor per label; labels absent from the
/// output are reduction factors (sum); each operand alone may be partial.
/// `shapes` are the operand shapes (checked by the op's verifier).
OpShardingRule einsumRule(const struct EinsumSpec &spec,
                          const std::vector<std::vector<int64_t>> &shapes);

/// The rule of an op that returns its operands unchanged, value i to result
/// i (loop carries, barriers, call and return edges): one pass-through factor
/// per dimension of each value; partial values of any kind pass through.
OpShardingRule identityRule(const std::vector<std::vector<int64_t>> &shapes);

} // namespace partita

#endif // PARTITA_SHARDING_SHARDINGRULE_H

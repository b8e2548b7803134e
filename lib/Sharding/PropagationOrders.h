//===- PropagationOrders.h - Propagation in several orders ------*- C++ -*-===//
//
// Internal to lib/Sharding: what Propagation.cpp (the round loop) and
// PropagationOrders.cpp (which orders run, which plan is kept) share.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_SHARDING_PROPAGATIONORDERS_H
#define PARTITA_LIB_SHARDING_PROPAGATIONORDERS_H

#include "partita/Sharding/Propagation.h"

#include <vector>

namespace partita {

/// Which ops have a reduction factor (a matmul's contraction, a reduce).
std::vector<bool> reductionOps(const PropagationProblem &problem);

/// Ops that expand their operand at least twofold (a broadcast of a bias or
/// a norm's scale over the activations, of a norm's statistics back over
/// its input); with `parametersOnly`, those whose operand is a parameter
/// (annotated, or converted, reshaped or transposed from an annotated
/// value). The orders other than PassThroughFirst hold their forward
/// proposals back until the first phase ends.
std::vector<bool> expandingOps(const PropagationProblem &problem,
                               const std::vector<bool> &hasReduction,
                               bool parametersOnly);

/// One propagation run in `order` (the rules already checked), with the
/// estimate of its plan.
PropagationResult propagateInOrder(const PropagationProblem &problem,
                                   PropagationOrder order);

} // namespace partita

#endif // PARTITA_LIB_SHARDING_PROPAGATIONORDERS_H

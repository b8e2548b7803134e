//===- ReshardScale.h - What resharding a broadcast costs -------*- C++ -*-===//
//
// A broadcast of a value at most half its size is resharded at its source
// and broadcast again (Partitioner::rebroadcast), so its reshards cost the
// source's share of its own. Propagation and the partitioner's per-op
// decisions both weigh operands by this scale.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_RESHARDSCALE_H
#define PARTITA_TRANSFORMS_RESHARDSCALE_H

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include <algorithm>

namespace partita {

/// The factor by which resharding `value` costs less than a value of its
/// size: source elements / result elements for a broadcast of at most half
/// its size (at least 1e-3), else 1.
inline double reshardScaleOf(mlir::Value value) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  if (!broadcast)
    return 1.0;
  auto count = [](mlir::Type type) {
    double n = 1;
    for (int64_t extent : mlir::cast<mlir::RankedTensorType>(type).getShape())
      n *= static_cast<double>(extent);
    return n;
  };
  double source = count(broadcast.getOperand().getType());
  double result = count(broadcast.getType());
  if (result <= 0 || 2 * source > result)
    return 1.0;
  return std::max(source / result, 1e-3);
}

} // namespace partita

#endif // PARTITA_TRANSFORMS_RESHARDSCALE_H

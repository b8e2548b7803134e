//===- GradientRules.h - Each op's reverse-mode gradient rule ---*- C++ -*-===//
//
// Internal to lib/Transforms: the per-op half of autodiff. A gradient rule
// turns an op's results' adjoints into its operands' adjoints; the reverse
// sweep (Autodiff.cpp) looks the rule of each op up in one table, keyed by
// the op's TypeID, and never looks at op kinds itself (loops, manual
// computations and collectives excepted: the sweep differentiates those).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_TRANSFORMS_GRADIENTRULES_H
#define PARTITA_LIB_TRANSFORMS_GRADIENTRULES_H

#include "AutodiffEmitter.h"

#include <functional>
#include <string>

namespace partita {
namespace autodiff {

/// What a gradient rule sees of the reverse sweep while it visits one op:
/// the adjoints so far, a way to add to them, and a builder at the backward
/// program's insertion point.
class GradientContext {
public:
  /// For `op`, whose only result (if it has one result) has adjoint `g`.
  GradientContext(Operation *op, OpBuilder &builder, Value g);
  virtual ~GradientContext();

  /// The adjoint `value` has so far (null when nothing reached it).
  virtual Value adjoint(Value value) const = 0;
  /// Adds `gradient` to the adjoint of `value` (ignored for values that
  /// carry no adjoint, and for a null gradient).
  virtual void accumulate(Value value, Value gradient) = 0;
  /// Stops the sweep with an error naming the op: "<op>: `why`".
  virtual LogicalResult fail(const std::string &why) = 0;

  /// Where the rule emits its ops (the backward program).
  OpBuilder &builder;
  /// Emits at `builder`, at the op's location.
  Emitter e;
  /// The op's only result and its adjoint (both null for ops with several
  /// results, whose rules ask `adjoint` for each).
  Value y, g;
};

/// A gradient rule: adds to the operands' adjoints of `op` through
/// `context`; fails (through `context.fail`) where the op's attributes have
/// no rule, such as a strided slice.
using GradientRule =
    std::function<LogicalResult(Operation *op, GradientContext &context)>;

/// The gradient rule of `op`'s kind, or null when it has none. The table is
/// built once, on first use.
const GradientRule *lookupGradientRule(Operation *op);

} // namespace autodiff
} // namespace partita

#endif // PARTITA_LIB_TRANSFORMS_GRADIENTRULES_H

//===- ValueCatalog.h - The values `explain` and `show` talk about -*- C++
//-*-===//
//
// Every tensor of a module that carries a sharding — function arguments, op
// results, function results — with its names, and lookup by `--value NAME`.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_REPORTING_VALUECATALOG_H
#define PARTITA_REPORTING_VALUECATALOG_H

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace partita {

/// One tensor of the module.
struct ValueEntry {
  /// The SSA value; null for a function result.
  mlir::Value value;
  /// Names `--value` matches: the NameLoc name, argN/resultN (also with
  /// "@f:" in front), and the description.
  std::vector<std::string> names;
  /// How propagation names it in origins ("argument 0 (x) of @mlp").
  std::string description;
  /// What the value is: "argument 0 of @mlp", "partita.einsum at f:3:5".
  std::string what;
  mlir::Location loc;
  mlir::RankedTensorType type;
  ShardingAttr sharding;
  mlir::ArrayAttr origin;
};

/// All tensors of `module`, in program order.
std::vector<ValueEntry> collectValues(mlir::ModuleOp module);

/// The entry `name` selects, or null after printing `error: ...` with the
/// candidates (no match, or several).
const ValueEntry *findValue(const std::vector<ValueEntry> &entries,
                            const std::string &name);

/// The best short name of an entry (first of its names).
/// The sharding's dimensions as JAX spells them, `P("data", None)` (no
/// partial part, no open marks).
std::string dimsSpec(const Sharding &sharding);

inline const std::string &displayName(const ValueEntry &entry) {
  return entry.names.front();
}

} // namespace partita

#endif // PARTITA_REPORTING_VALUECATALOG_H

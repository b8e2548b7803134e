//===- Sharding.h - The sharding of one tensor ------------------*- C++ -*-===//
//
// The value type behind the `#partita.sharding` attribute (docs/ShardingRepresentation.md): per
// tensor dimension an ordered list of mesh axes (major to minor) and whether
// propagation may still add axes (open) or not (closed); optionally the axes
// over which the value is partial and how partial values combine; and a
// priority for propagation. Axes not named anywhere are replicated.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_SHARDING_H
#define PARTITA_SHARDING_SHARDING_H

#include "partita/Sharding/Mesh.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace partita {

/// How the per-device values of a partial tensor combine into the true value.
enum class PartialKind { None, Sum, Max, Min };

/// Keyword of a partial kind: "sum", "max", "min" ("" for None).
const char *partialKindName(PartialKind kind);

/// The sharding of one dimension.
struct DimSharding {
  /// Mesh axes, major to minor. The shard index of a device along this
  /// dimension is the mixed-radix number its coordinates on these axes form.
  std::vector<std::string> axes;
  /// True when propagation may append axes after `axes`.
  bool open = false;

  bool operator==(const DimSharding &o) const {
    return axes == o.axes && open == o.open;
  }
};

/// The sharding of a tensor.
struct Sharding {
  std::vector<DimSharding> dims;
  PartialKind partialKind = PartialKind::None;
  /// Axes over which the value is partial; empty iff partialKind is None.
  std::vector<std::string> partialAxes;
  /// Propagation priority (lower first); absent when not given.
  std::optional<int64_t> priority;

  /// A closed, fully replicated sharding of a rank-`rank` tensor.
  static Sharding replicated(int rank);
  /// A fully open sharding of a rank-`rank` tensor (nothing known).
  static Sharding open(int rank);

  int rank() const { return static_cast<int>(dims.size()); }
  /// True when no dimension names an axis and the value is not partial.
  bool isReplicated() const;
  /// Every axis named by a dimension, in dimension order.
  std::vector<std::string> dimAxes() const;

  /// The attribute body: `[{"data", "fsdp"}, {?}, {}], partial = sum{"model"}`
  /// (priority appended as `, priority = N` when set).
  std::string toString() const;

  bool operator==(const Sharding &o) const {
    return dims == o.dims && partialKind == o.partialKind &&
           partialAxes == o.partialAxes && priority == o.priority;
  }
};

/// Structural checks that need no mesh: no axis used twice (across all
/// dimensions and the partial list), partial axes present iff a partial kind
/// is, non-negative priority.
Status validateStructure(const Sharding &sharding);

/// Full checks against `mesh`: validateStructure plus every axis exists on the
/// mesh (the message lists the mesh's axes). When `shape` is given its rank
/// must equal the sharding's. Indivisible dimensions are legal here.
Status validateSharding(const Mesh &mesh, const Sharding &sharding,
                        const std::vector<int64_t> *shape = nullptr);

/// Parses JAX's PartitionSpec spelling: `P("data", None)`,
/// `P(("data", "fsdp"), "model")`, `P()`, `P("x", P.UNCONSTRAINED)`
/// (`PartitionSpec(...)` is accepted as well as `P(...)`). Named and None
/// dimensions are closed; P.UNCONSTRAINED is an open dimension with no axes.
/// With `rank` >= 0 the spec may be shorter than the rank (missing trailing
/// dimensions are closed and replicated, as in JAX) but not longer.
Expected<Sharding> parsePartitionSpec(std::string_view text, int rank = -1);

/// JAX spelling of `sharding` (dimensions only; a partial or an open
/// dimension with axes has no JAX spelling and yields a failure).
Expected<std::string> toPartitionSpec(const Sharding &sharding);

} // namespace partita

#endif // PARTITA_SHARDING_SHARDING_H

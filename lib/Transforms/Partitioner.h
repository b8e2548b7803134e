//===- Partitioner.h - The partitioner's state, shared by its files -*- C++ -*-===//
//
// Private to lib/Transforms: the layout of a value as the partitioner tracks
// it, and the Partitioner class whose per-op work is in Partition.cpp and
// whose layout changes (padding, masks, reshards) are in
// PartitionLayouts.cpp. docs/Partitioning.md describes both.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_TRANSFORMS_PARTITIONER_H
#define PARTITA_LIB_TRANSFORMS_PARTITIONER_H

#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"
#include "partita/Sharding/Layout.h"
#include "partita/Sharding/Propagation.h"
#include "partita/Transforms/Interconnect.h"
#include "partita/Transforms/Passes.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <map>
#include <tuple>

namespace partita::partitioning {

using namespace mlir;

inline constexpr llvm::StringLiteral kOriginAttrName = "partita.origin";

/// What a value is, globally.
struct Layout {
  Sharding sharding;
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
};

inline int64_t elementBytesOf(Type type) {
  unsigned bits =
      cast<ShapedType>(type).getElementType().getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

inline Sharding closed(Sharding sharding) {
  for (DimSharding &dim : sharding.dims)
    dim.open = false;
  sharding.priority.reset();
  return sharding;
}

inline std::string factorNames(const std::vector<int> &factors) {
  static const char letters[] = "ijklmnopqrstuvwxyzabcdefgh";
  std::string text;
  for (int factor : factors) {
    if (!text.empty())
      text += ", ";
    text += letters[factor % 26];
    if (factor >= 26)
      text += std::to_string(factor / 26);
  }
  return text;
}

class Partitioner {
public:
  Partitioner(ModuleOp module, MeshOp meshOp, const Interconnect &interconnect)
      : module(module), builder(module.getContext()),
        meshName(FlatSymbolRefAttr::get(meshOp.getSymNameAttr())),
        mesh(meshOp.getMesh().toMesh()), interconnect(interconnect) {}

  LogicalResult run();

private:
  ModuleOp module;
  OpBuilder builder;
  FlatSymbolRefAttr meshName;
  Mesh mesh;
  const Interconnect &interconnect;
  llvm::DenseMap<Value, Layout> layouts;
  /// Each op's sharding rule, computed on global shapes before any retyping.
  llvm::DenseMap<Operation *, OpShardingRule> globalRules;
  /// The sharding propagation gave each op result, before any retyping.
  llvm::DenseMap<Value, Sharding> propagated;
  /// Global argument/result layouts of every function.
  llvm::DenseMap<Operation *, std::vector<Layout>> argumentLayouts,
      resultLayouts;

  MLIRContext *context() { return module.getContext(); }

  ShardingAttr attrFor(const Sharding &sharding) {
    return ShardingAttr::fromSharding(context(), meshName, closed(sharding));
  }

  /// The sharding written on `value` (argument, result or op attribute), or
  /// replicated.
  Sharding declaredSharding(Value value);

  /// The local type of `global` under `sharding` (padded where a dimension
  /// does not divide); an error at `anchor` for a dynamic shape.
  FailureOr<RankedTensorType> localType(RankedTensorType global,
                                        const Sharding &sharding,
                                        Operation *anchor,
                                        const std::string &what);

  /// A 0-d zero of `element`.
  Value zeroScalar(Location loc, Type element);
  /// `value` padded with zeros at the end of `dim` to `size` (unchanged when
  /// it is that long already).
  Value padDimTo(Value value, int64_t dim, int64_t size, Location loc);
  /// The first `size` elements of `value` along `dim`.
  Value sliceDimTo(Value value, int64_t dim, int64_t size, Location loc);
  /// `operand` with the padding of dimension `dim` (split over `axes`, global
  /// size `size`) replaced by `neutral`: what a reduction over that
  /// dimension must see there.
  Value maskPadding(Value operand, int64_t dim, const std::vector<std::string> &axes,
                    int64_t size, PartialKind neutral, Location loc);
  /// Per (axes, global size, local size): this device's `i1` vector of which
  /// positions along such a dimension hold data, built before the op being
  /// partitioned (so shared by its operands).
  std::map<std::tuple<std::vector<std::string>, int64_t, int64_t>, Value>
      validPositions;
  /// Masks the padding of every operand dimension that a sharded reduction
  /// factor of `op` covers unevenly (docs/Partitioning.md).
  void maskReducedPadding(Operation *op, const OpShardingRule &rule,
                          const OpDecision &decision);

  /// An iota whose own dimension is split: only that dimension is built
  /// whole (a vector), sliced along it like the result, and broadcast to
  /// the local shape, so a batch x sequence x vocabulary iota (one-hot
  /// embeddings and targets) never exists whole on a device.
  /// A row lookup whose table rows are split over `rowAxes`: the indices
  /// rebased to the device's rows, the rows it does not hold zeroed (the
  /// result is partial over `rowAxes`).
  LogicalResult localizeRowLookup(GatherOp gather,
                                  const std::vector<std::string> &rowAxes);
  LogicalResult partitionIotaAlongSplitDim(IotaOp iota, const Sharding &target);

  /// Emits the collectives that turn `value` into `to`; returns the new value.
  /// `why` says what needs the new layout; it is spelt out only when a
  /// collective is emitted (its partita.reason).
  FailureOr<Value> reshard(Value value, const Sharding &to, Operation *consumer,
                           llvm::function_ref<std::string()> why);
  /// A broadcast's result wanted in another layout, built again from its
  /// operand in the matching one (a small operand moves instead of the big
  /// result); null when that does not apply (docs/Partitioning.md,
  /// "Broadcasts").
  FailureOr<Value> rebroadcast(Value value, const Sharding &to,
                               Operation *consumer,
                               llvm::function_ref<std::string()> why);
  /// Broadcasts built again for every use are erased.
  void eraseUnusedBroadcasts();
  /// The broadcasts rebroadcast() replaced for some consumer.
  llvm::SmallPtrSet<Operation *, 8> rebroadcasted;
  /// reshard()'s work when the layouts differ.
  FailureOr<Value> emitReshard(Value value, const Sharding &to,
                               Operation *consumer,
                               llvm::function_ref<std::string()> why);
  /// Reshards already emitted, by source value and target layout: a value
  /// several ops need in the same layout moves once (when the earlier
  /// reshard dominates the later consumer).
  std::map<std::pair<void *, std::string>, Value> reshardCache;

  LogicalResult partitionSignature(func::FuncOp function);
  LogicalResult partitionBlock(Block &block);
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionRuleOp(ShardingRuleOpInterface op);
  LogicalResult partitionLoop(LoopOp loop);
  LogicalResult partitionManual(ManualComputationOp manual);
  LogicalResult retypeResults(Operation *op,
                              const std::vector<Sharding> &results);
};


} // namespace partita::partitioning

#endif // PARTITA_LIB_TRANSFORMS_PARTITIONER_H

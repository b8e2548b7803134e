//===- Importer.h - The StableHLO importer and its helpers ------*- C++ -*-===//
//
// Internal to lib/Conversion/StableHLOToPartita: the Importer that rewrites
// one module JAX lowered into the partita dialect, and the helpers its
// conversions share for reading unregistered ops (inherent attributes, the
// printed text of opaque dialect attributes, integer lists).
//
// The Importer's members are defined by topic: the driver and the
// conversion table (ImportStableHLO.cpp), single ops (OpConversions.cpp),
// reductions (Reductions.cpp), loops and manual computations
// (ControlFlow.cpp), collectives (Collectives.cpp), and meshes and
// shardings, Shardy's and GSPMD's (Shardings.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_CONVERSION_STABLEHLOTOPARTITA_IMPORTER_H
#define PARTITA_LIB_CONVERSION_STABLEHLOTOPARTITA_IMPORTER_H

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Sharding/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace partita {
namespace stablehlo_import {

using namespace mlir;

/// The printed form of an attribute.
std::string printed(Attribute attr);

/// `text` parsed as an attribute, or null with the parser's message in
/// `*why` (when given). The parser's own diagnostic is not emitted: it
/// would point into `text`, which is not the user's file; the caller
/// reports at the op.
Attribute parseAttributeText(const std::string &text, MLIRContext *context,
                             std::string *why = nullptr);

/// An op's inherent attribute `name` (unregistered ops keep their
/// properties as a dictionary) or its discardable attribute.
Attribute property(Operation *op, StringRef name);

/// The integers of `key = [1, 2]` in an attribute's text (empty if absent).
SmallVector<int64_t> intList(StringRef text, StringRef key);

/// Integers of a dense array or an array of integer attributes.
std::optional<SmallVector<int64_t>> integers(Attribute attr);

/// Attribute `name` of `op` as `count` integers of at least 1 (all 1 when
/// absent: strides, dilations), or none when it is something else.
std::optional<SmallVector<int64_t>> positiveListOr1(Operation *op,
                                                    StringRef name,
                                                    size_t count);

/// The `padding` attribute of `op` ([count x 2] low/high pairs, zeros when
/// absent) into `low` and `high`; false when it has another shape.
bool paddingPairs(Operation *op, size_t count, SmallVector<int64_t> &low,
                  SmallVector<int64_t> &high);

/// The ranked tensor type of `value`.
RankedTensorType tensorOf(Value value);

/// Whether `value` is a constant every element of which is the identity of
/// `kind` (so an init value changes nothing).
bool isIdentityOf(Value value, ReductionKind kind);

/// The reduction a reduce body computes: its one combining op applied to
/// the two block arguments.
std::optional<ReductionKind> reductionOfBody(Region &body);

/// Rewrites one module JAX lowered into the partita dialect, in place.
class Importer {
public:
  explicit Importer(ModuleOp module)
      : module(module), context(module.getContext()), builder(context) {}

  /// Imports the whole module; failure after every problem was reported.
  LogicalResult run();

private:
  /// Builds the partita values replacing `op`'s results, at the builder's
  /// insertion point (before `op`), or fails after reporting why.
  using Conversion =
      std::function<FailureOr<SmallVector<Value>>(Importer &, Operation *)>;
  /// The conversion of each supported op name.
  static const llvm::StringMap<Conversion> &conversions();
  /// Adds to `t` the elementwise ops with a partita op of the same operands
  /// and result type.
  static void addOneToOneConversions(llvm::StringMap<Conversion> &t);
  /// Adds to `t` the elementwise ops built from several partita ops (or a
  /// checked bitcast).
  static void addComposedElementwiseConversions(llvm::StringMap<Conversion> &t);
  /// Adds to `t` ceil and rounding to the nearest integer.
  static void addRoundingConversions(llvm::StringMap<Conversion> &t);
  /// Adds to `t` select and clamp, whose scalar operands are broadcast.
  static void addSelectionConversions(llvm::StringMap<Conversion> &t);
  /// Adds to `t` the ops that build, index, reduce, reorder or combine
  /// tensors.
  static void addTensorConversions(llvm::StringMap<Conversion> &t);
  /// Adds to `t` loops, conditionals, composites and barriers.
  static void addControlFlowConversions(llvm::StringMap<Conversion> &t);
  /// Adds to `t` sharding constraints, manual computations, device ids and
  /// collectives.
  static void addShardingConversions(llvm::StringMap<Conversion> &t);

  /// An error at `op`, counted.
  InFlightDiagnostic fail(Operation *op) {
    ++failures;
    return op->emitError();
  }
  /// An error at `op` with `message`, counted, as a failed conversion.
  FailureOr<SmallVector<Value>> reject(Operation *op, const Twine &message) {
    fail(op) << message;
    return failure();
  }

  /// Replaces every `sdy.mesh` of the module with a partita mesh.
  void importMeshes();
  /// The partita sharding of Shardy's `sdy` (a `#sdy.sharding<…>`) for a
  /// value of `type`, or null after an error naming `what` at `where`.
  ShardingAttr importSharding(Operation *where, Attribute sdy, Type type,
                              StringRef what);
  /// Converts the shardings among a function's argument and result
  /// attributes and drops JAX's bookkeeping attributes.
  void importFunctionAttributes(func::FuncOp function);
  /// Converts every unregistered op of `block` (nested regions of the new
  /// ops included).
  void importBlock(Block &block);

  // Conversions of single op kinds.
  FailureOr<SmallVector<Value>> constant(Operation *op);
  FailureOr<SmallVector<Value>> iota(Operation *op);
  FailureOr<SmallVector<Value>> compare(Operation *op);
  FailureOr<SmallVector<Value>> dotGeneral(Operation *op);
  FailureOr<SmallVector<Value>> reduce(Operation *op);
  FailureOr<SmallVector<Value>> broadcastInDim(Operation *op);
  FailureOr<SmallVector<Value>> transpose(Operation *op);
  FailureOr<SmallVector<Value>> slice(Operation *op);
  FailureOr<SmallVector<Value>> concatenate(Operation *op);
  FailureOr<SmallVector<Value>> pad(Operation *op);
  FailureOr<SmallVector<Value>> shardingConstraint(Operation *op);
  /// A two-value reduce over `dims` that is an argmax or argmin.
  FailureOr<SmallVector<Value>> argReduce(Operation *op,
                                          ArrayRef<int64_t> dims);
  FailureOr<SmallVector<Value>> reduceWindow(Operation *op);
  /// A reduce_window other than a cumulative sum: pooling.
  FailureOr<SmallVector<Value>> poolWindows(Operation *op);
  FailureOr<SmallVector<Value>> gather(Operation *op);
  FailureOr<SmallVector<Value>> scatter(Operation *op);
  /// A gather with any dimension numbers (printed in `text`) as one-hot
  /// einsums (Indexing.cpp).
  FailureOr<SmallVector<Value>> generalGather(Operation *op, StringRef text);
  /// A scatter adding (or, with `replace`, storing) its updates, as one-hot
  /// einsums.
  FailureOr<SmallVector<Value>> generalScatter(Operation *op, StringRef text,
                                               bool replace);
  /// The one-hot selection of one operand dimension of a gather or scatter
  /// and its einsum labels: by index column `column` (clamped to
  /// [0, extent - window] with `clamp`), or a fixed slice from 0 when
  /// `column` < 0; a failure after an error when it would be too large.
  FailureOr<std::pair<Value, std::string>>
  dimensionSelection(Operation *op, Value indices, int64_t vectorDim,
                     int64_t column, ArrayRef<int64_t> batchShape,
                     StringRef batchLabels, int64_t window, int64_t extent,
                     char windowLabel, char position, bool clamp,
                     Type element);
  /// Column `column` of `indices` along `vectorDim` (all of it when
  /// vectorDim is the rank), reshaped to `batchShape`.
  Value indexColumn(Location loc, Value indices, int64_t vectorDim,
                    int64_t column, ArrayRef<int64_t> batchShape);
  /// sel[G..., w, p] = (p == start[G...] + w) in `element`, w < window,
  /// p < extent; the start clamped to [0, clampHigh] when given.
  Value selection(Location loc, Value start, int64_t window, int64_t extent,
                  std::optional<int64_t> clampHigh, Type element);
  FailureOr<SmallVector<Value>> whileLoop(Operation *op);
  /// lax.cond / lax.switch: every branch computed, the result selected.
  FailureOr<SmallVector<Value>> caseOp(Operation *op);
  // Sorting.cpp.
  FailureOr<SmallVector<Value>> sort(Operation *op);
  FailureOr<SmallVector<Value>> reverse(Operation *op);
  FailureOr<SmallVector<Value>> manualComputation(Operation *op);
  /// stablehlo.partition_id inside a manual computation: the device's
  /// index, from an iota split over the mesh (ControlFlow.cpp).
  FailureOr<SmallVector<Value>> partitionId(Operation *op);
  /// all_reduce, all_gather, reduce_scatter, all_to_all and
  /// collective_permute inside a manual computation.
  FailureOr<SmallVector<Value>> collective(Operation *op);
  /// The mesh axes (in order) whose groups are `groups` (device ids), or
  /// none after an error.
  /// The mesh of the manual computation being imported, or none after an
  /// error at `op` (a collective outside shard_map).
  std::optional<Mesh> manualMeshOf(Operation *op);
  /// The mesh axes JAX 0.12's #stablehlo.replica_group_mesh_axes (printed
  /// in `text`) names, or none after an error.
  std::optional<SmallVector<std::string>>
  axesOfMeshAxesGroups(Operation *op, StringRef text);
  std::optional<SmallVector<std::string>>
  axesOfGroups(Operation *op, const std::vector<std::vector<int64_t>> &groups);

  /// The conversion of a one-operand op to `OpTy` with the same result type.
  template <typename OpTy>
  static Conversion unary() {
    return [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{OpTy::create(self.builder, op->getLoc(),
                                             op->getResult(0).getType(),
                                             op->getOperand(0))};
    };
  }
  /// The conversion of a two-operand op to `OpTy` with the same result type.
  template <typename OpTy>
  static Conversion binary() {
    return [](Importer &self, Operation *op) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{OpTy::create(
          self.builder, op->getLoc(), op->getResult(0).getType(),
          op->getOperand(0), op->getOperand(1))};
    };
  }

  /// `x` padded with the scalar `padding`: `low`/`high` edge padding per
  /// dimension (negative cuts), `interior` values between elements; null
  /// after an error at `op`.
  FailureOr<Value> padded(Operation *op, Value x, Value padding,
                          ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                          ArrayRef<int64_t> interior);
  /// Windows.cpp: convolutions and max pooling's gradient.
  FailureOr<SmallVector<Value>> convolution(Operation *op);
  FailureOr<SmallVector<Value>> selectAndScatter(Operation *op);
  /// The strided slice of `x` for window offset `start` (per dimension):
  /// start + i * stride for i < out.
  Value windowSlice(Location loc, Value x, ArrayRef<int64_t> start,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> out);

  /// A splat constant of `type` holding `value`.
  Value splat(Location loc, RankedTensorType type, double value);
  /// `op`'s operand rounded to the nearest integer, ties to even or away
  /// from zero (stablehlo.round_nearest_even / _afz).
  FailureOr<SmallVector<Value>> roundToNearest(Operation *op, bool tiesToEven);

  ModuleOp module;
  MLIRContext *context;
  OpBuilder builder;
  int failures = 0;
  /// sdy mesh names already converted.
  llvm::StringMap<bool> meshes;
  /// The first mesh of each distinct (printed) mesh, and the names of its
  /// duplicates mapped to it.
  std::map<std::string, std::string> meshByText;
  llvm::StringMap<std::string> meshAliases;
  /// `sharding` on the first of its mesh's duplicates.
  ShardingAttr canonicalMesh(ShardingAttr sharding);
  /// The mesh of the manual computation being imported (collectives inside
  /// it are over its axes).
  FlatSymbolRefAttr manualMesh;
  /// The manual computation being imported, and the device index made for
  /// its partition_id ops (null until one asks).
  ManualComputationOp currentManual;
  Value manualDeviceId;
  /// GSPMD shardings (`mhlo.sharding` strings) name no mesh: they are
  /// expressed on one made for them, @gspmd_mesh, whose axes are the prime
  /// factors of the device count.
  FlatSymbolRefAttr gspmdMesh;
  /// The sizes of @gspmd_mesh's axes a0, a1, ...
  std::vector<int64_t> gspmdFactors;
  /// The partita sharding of a GSPMD sharding string (`mhlo.sharding`) for
  /// a value of `type`, or null after an error naming `what` at `where`.
  ShardingAttr importGspmdSharding(Operation *where, Attribute text, Type type,
                                   StringRef what);
  /// Makes @gspmd_mesh (once) over `mhlo.num_partitions` devices.
  void makeGspmdMesh();
};

} // namespace stablehlo_import
} // namespace partita

#endif // PARTITA_LIB_CONVERSION_STABLEHLOTOPARTITA_IMPORTER_H

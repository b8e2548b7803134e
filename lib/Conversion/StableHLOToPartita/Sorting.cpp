//===- Sorting.cpp - StableHLO sort and reverse into partita --------------===//
//
// stablehlo.sort as JAX writes it (jnp.sort, jnp.argsort, lax.sort: one
// key, ascending or descending, stable) becomes partita.top_k over the
// whole dimension; stablehlo.reverse (x[::-1]) a row lookup with reversed
// indices. docs/JAX.md lists what is refused.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace partita {
namespace stablehlo_import {

namespace {

/// Whether `value`, computed inside `block`, depends on no block argument
/// other than `argument` (constants and ops on them are allowed).
bool dependsOnlyOn(Value value, BlockArgument argument, Block &block) {
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &block && arg != argument)
        return false;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &block || !seen.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  return true;
}

/// Whether `value` is an iota along `dim` (already imported, or not yet).
bool isIotaAlong(Value value, int64_t dim) {
  Operation *def = value.getDefiningOp();
  if (auto iota = dyn_cast_or_null<IotaOp>(def))
    return iota.getDim() == static_cast<uint64_t>(dim);
  if (!def || def->getName().getStringRef() != "stablehlo.iota")
    return false;
  auto attr = dyn_cast_or_null<IntegerAttr>(property(def, "iota_dimension"));
  return attr && attr.getInt() == dim;
}

} // namespace

FailureOr<SmallVector<Value>> Importer::sort(Operation *op) {
  auto refuse = [&](const Twine &why) {
    return reject(op, "stablehlo.sort " + why +
                          " is not supported (jnp.sort, jnp.argsort and "
                          "lax.sort on one key are)");
  };
  auto dimAttr = dyn_cast_or_null<IntegerAttr>(property(op, "dimension"));
  unsigned n = op->getNumOperands();
  if (!dimAttr || n == 0 || n > 2 || op->getNumResults() != n ||
      op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock())
    return refuse("of more than a key and its positions");
  auto keyType = tensorOf(op->getOperand(0));
  int64_t dim = dimAttr.getInt();
  if (dim < 0)
    dim += keyType.getRank();
  if (dim < 0 || dim >= keyType.getRank())
    return refuse("along a dimension the operand does not have");
  // The comparator: compare(f(arg0), g(arg1)) LT (ascending) or GT
  // (descending), f and g canonicalizing one key each (JAX's total order).
  Block &body = op->getRegion(0).front();
  Operation *terminator = body.empty() ? nullptr : &body.back();
  Operation *compare =
      terminator && terminator->getNumOperands() == 1
          ? terminator->getOperand(0).getDefiningOp()
          : nullptr;
  if (!compare || compare->getName().getStringRef() != "stablehlo.compare" ||
      compare->getNumOperands() != 2 || body.getNumArguments() != 2 * n)
    return refuse("with a comparator other than one comparison");
  std::string direction = printed(property(compare, "comparison_direction"));
  bool less = direction.find(" LT") != std::string::npos;
  bool greater = direction.find(" GT") != std::string::npos;
  bool inOrder = dependsOnlyOn(compare->getOperand(0), body.getArgument(0),
                               body) &&
                 dependsOnlyOn(compare->getOperand(1), body.getArgument(1),
                               body);
  bool swapped = dependsOnlyOn(compare->getOperand(0), body.getArgument(1),
                               body) &&
                 dependsOnlyOn(compare->getOperand(1), body.getArgument(0),
                               body);
  if ((!less && !greater) || (!inOrder && !swapped))
    return refuse("with a comparator over several keys");
  bool descending = greater == inOrder;
  if (n == 2 && !isIotaAlong(op->getOperand(1), dim))
    return refuse("carrying an array other than the positions (argsort)");
  Location loc = op->getLoc();
  Value key = op->getOperand(0);
  int64_t size = keyType.getDimSize(dim);
  if (size == 0)
    return SmallVector<Value>(op->getOperands());
  auto indexType = RankedTensorType::get(
      keyType.getShape(),
      n == 2 ? tensorOf(op->getOperand(1)).getElementType()
             : builder.getI32Type());
  Type indexElement = indexType.getElementType();
  if (!indexElement.isInteger(32) && !indexElement.isInteger(64))
    indexType = RankedTensorType::get(keyType.getShape(), builder.getI32Type());
  // Ascending is the descending order of the negated keys (ties keep the
  // lower position first either way: a stable sort).
  Value ordered = descending ? key : NegOp::create(builder, loc, keyType, key);
  auto top = TopKOp::create(builder, loc, keyType, indexType, ordered, dim,
                            size);
  Value values = top.getValues();
  if (!descending)
    values = NegOp::create(builder, loc, keyType, values);
  SmallVector<Value> results{values};
  if (n == 2) {
    Value positions = top.getIndices();
    auto wanted = tensorOf(op->getResult(1));
    if (indexType != wanted)
      positions = ConvertOp::create(builder, loc, wanted, positions);
    results.push_back(positions);
  }
  return results;
}

FailureOr<SmallVector<Value>> Importer::reverse(Operation *op) {
  // x[::-1] along each listed dimension: rows looked up at n-1, ..., 0
  // (the dimension moved first and back).
  std::optional<SmallVector<int64_t>> dims =
      integers(property(op, "dimensions"));
  if (!dims || op->getNumOperands() != 1)
    return reject(op, "stablehlo.reverse without dimensions");
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  auto type = tensorOf(x);
  int64_t rank = type.getRank();
  for (int64_t dim : *dims) {
    if (dim < 0 || dim >= rank)
      return reject(op, "stablehlo.reverse along dimension " +
                            std::to_string(dim) + " of a rank-" +
                            std::to_string(rank) + " array");
    int64_t n = type.getDimSize(dim);
    if (n <= 1)
      continue;
    SmallVector<int64_t> toFront{dim}, back;
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim)
        toFront.push_back(d);
    back.resize(rank);
    for (int64_t d = 0; d < rank; ++d)
      back[toFront[d]] = d;
    SmallVector<int64_t> frontShape;
    for (int64_t d : toFront)
      frontShape.push_back(type.getDimSize(d));
    auto frontType = RankedTensorType::get(frontShape, type.getElementType());
    Value front = dim == 0 ? x
                           : TransposeOp::create(
                                 builder, loc, frontType, x,
                                 builder.getDenseI64ArrayAttr(toFront));
    SmallVector<int32_t> reversed;
    for (int64_t i = n - 1; i >= 0; --i)
      reversed.push_back(static_cast<int32_t>(i));
    auto indexType = RankedTensorType::get({n}, builder.getI32Type());
    Value indices = ConstantOp::create(
        builder, loc, indexType,
        DenseElementsAttr::get(indexType, ArrayRef<int32_t>(reversed)));
    Value flipped = GatherOp::create(builder, loc, frontType, front, indices);
    x = dim == 0 ? flipped
                 : TransposeOp::create(builder, loc, type, flipped,
                                       builder.getDenseI64ArrayAttr(back));
  }
  return SmallVector<Value>{x};
}

} // namespace stablehlo_import
} // namespace partita

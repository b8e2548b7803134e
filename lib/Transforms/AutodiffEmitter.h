//===- AutodiffEmitter.h - Op emission shared by autodiff and train steps -===//
//
// Internal to lib/Transforms: the small builder the reverse sweep
// (Autodiff.cpp) and the optimizer step (TrainStep.cpp) both emit ops with.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_TRANSFORMS_AUTODIFFEMITTER_H
#define PARTITA_LIB_TRANSFORMS_AUTODIFFEMITTER_H

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace partita {
namespace autodiff {

using namespace mlir;

using Shape = SmallVector<int64_t>;

inline RankedTensorType tensorTypeOf(Value value) {
  return dyn_cast<RankedTensorType>(value.getType());
}

inline bool isFloatTensor(Value value) {
  RankedTensorType type = tensorTypeOf(value);
  return type && isa<FloatType>(type.getElementType());
}

inline Shape shapeOf(Value value) {
  return Shape(tensorTypeOf(value).getShape());
}

/// Emits ops at a builder's insertion point, all at one location.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value splat(double value, Type type) {
    auto tensor = cast<RankedTensorType>(type);
    Attribute element;
    if (auto floating = dyn_cast<FloatType>(tensor.getElementType()))
      element = b.getFloatAttr(floating, value);
    else
      element = b.getIntegerAttr(tensor.getElementType(),
                                 static_cast<int64_t>(value));
    return b.create<ConstantOp>(loc, tensor,
                                DenseElementsAttr::get(tensor, element));
  }
  Value zerosLike(Value like) { return splat(0, like.getType()); }
  /// A loop of `trips` iterations carrying `inits`, and its body block, with
  /// its arguments: the i32 scalar iteration, then one per carried value.
  std::pair<LoopOp, Block *> loop(ArrayRef<Value> inits, int64_t trips) {
    SmallVector<Type> types;
    for (Value init : inits)
      types.push_back(init.getType());
    auto op = b.create<LoopOp>(loc, types, inits, static_cast<uint64_t>(trips));
    Block *body = new Block();
    op.getBody().push_back(body);
    body->addArgument(RankedTensorType::get({}, b.getI32Type()), loc);
    for (Type type : types)
      body->addArgument(type, loc);
    return {op, body};
  }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x.getType(), x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x.getType(), x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x.getType(), x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x.getType(), x, y); }
  Value neg(Value x) { return b.create<NegOp>(loc, x.getType(), x); }
  Value exp(Value x) { return b.create<ExpOp>(loc, x.getType(), x); }
  Value log(Value x) { return b.create<LogOp>(loc, x.getType(), x); }
  Value sqrt(Value x) { return b.create<SqrtOp>(loc, x.getType(), x); }
  Value cos(Value x) { return b.create<CosOp>(loc, x.getType(), x); }
  Value sin(Value x) { return b.create<SinOp>(loc, x.getType(), x); }
  Value sign(Value x) { return b.create<SignOp>(loc, x.getType(), x); }
  Value pow(Value x, Value y) { return b.create<PowOp>(loc, x.getType(), x, y); }
  Value select(Value p, Value x, Value y) {
    return b.create<SelectOp>(loc, x.getType(), p, x, y);
  }
  Value compare(CompareDirection direction, Value x, Value y) {
    auto type = RankedTensorType::get(tensorTypeOf(x).getShape(), b.getI1Type());
    return b.create<CompareOp>(loc, type, direction, x, y);
  }
  /// `x` itself when it already has `element` type (no identity converts).
  Value convert(Value x, Type element) {
    if (tensorTypeOf(x).getElementType() == element)
      return x;
    auto type = RankedTensorType::get(tensorTypeOf(x).getShape(), element);
    return b.create<ConvertOp>(loc, type, x);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, tensorTypeOf(x).getElementType());
    return b.create<ReshapeOp>(loc, type, x);
  }
  Value broadcast(Value x, ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
    auto type = RankedTensorType::get(shape, tensorTypeOf(x).getElementType());
    return b.create<BroadcastOp>(loc, type, x, dims);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> dims) {
    Shape in = shapeOf(x), out;
    for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
      if (!llvm::is_contained(dims, d))
        out.push_back(in[d]);
    auto type = RankedTensorType::get(out, tensorTypeOf(x).getElementType());
    return b.create<ReduceOp>(loc, type, ReductionKind::Sum, x, dims);
  }
  Value einsum(const std::string &spec, ValueRange operands,
               ArrayRef<int64_t> shape) {
    auto type =
        RankedTensorType::get(shape, tensorTypeOf(operands[0]).getElementType());
    return b.create<EinsumOp>(loc, type, b.getStringAttr(spec), operands);
  }
  Value slice(Value x, ArrayRef<int64_t> start, ArrayRef<int64_t> limit) {
    Shape shape, stride(start.size(), 1);
    for (size_t d = 0; d < start.size(); ++d)
      shape.push_back(limit[d] - start[d]);
    auto type = RankedTensorType::get(shape, tensorTypeOf(x).getElementType());
    return b.create<SliceOp>(loc, type, x, start, limit, stride);
  }
  Value dynamicSlice(Value x, ValueRange starts, ArrayRef<int64_t> sizes) {
    auto type = RankedTensorType::get(sizes, tensorTypeOf(x).getElementType());
    return b.create<DynamicSliceOp>(loc, type, x, starts, sizes);
  }
  Value dynamicUpdateSlice(Value x, Value update, ValueRange starts) {
    return b.create<DynamicUpdateSliceOp>(loc, x.getType(), x, update, starts);
  }
  /// Broadcasts a value with the kept dimensions of a reduction back to the
  /// reduced operand's shape.
  Value unreduce(Value reduced, Value operand, ArrayRef<int64_t> dims) {
    Shape kept;
    for (int64_t d = 0; d < static_cast<int64_t>(shapeOf(operand).size()); ++d)
      if (!llvm::is_contained(dims, d))
        kept.push_back(d);
    return broadcast(reduced, shapeOf(operand), kept);
  }
};

} // namespace autodiff
} // namespace partita

#endif // PARTITA_LIB_TRANSFORMS_AUTODIFFEMITTER_H

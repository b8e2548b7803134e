//===- ModelBuilder.cpp - Writing partita IR from C++ ---------------------===//

#include "partita/Models/ModelBuilder.h"

#include "partita/Sharding/Mesh.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace partita;

ModelBuilder::ModelBuilder(MLIRContext *context, const std::string &model,
                           Type element)
    : builder(context), elementType(element), model(model) {
  context->getOrLoadDialect<PartitaDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  module = ModuleOp::create(FileLineColLoc::get(context, model, 0, 0));
  builder.setInsertionPointToEnd(module->getBody());
}

void ModelBuilder::addMesh(const Mesh &mesh) {
  SmallVector<MeshAxisAttr> axes;
  for (const MeshAxis &axis : mesh.axes())
    axes.push_back(MeshAxisAttr::get(
        context(), StringAttr::get(context(), axis.name), axis.size));
  builder.create<MeshOp>(loc("mesh"), "mesh",
                         MeshAttr::get(context(), axes, {}));
}

void ModelBuilder::beginFunction(const std::string &name) {
  function = builder.create<func::FuncOp>(loc(name), name,
                                          builder.getFunctionType({}, {}));
  body = function.addEntryBlock();
  builder.setInsertionPointToStart(body);
}

Location ModelBuilder::loc(const std::string &name) {
  std::string full;
  for (const std::string &scope : scopes)
    full += scope + ".";
  full += name;
  return NameLoc::get(StringAttr::get(context(), full),
                      FileLineColLoc::get(context(), model, line++, 1));
}

void ModelBuilder::pushScope(const std::string &name) { scopes.push_back(name); }
void ModelBuilder::popScope() { scopes.pop_back(); }

RankedTensorType ModelBuilder::tensorType(std::vector<int64_t> shape,
                                          Type element) {
  return RankedTensorType::get(shape, element ? element : elementType);
}

std::vector<int64_t> ModelBuilder::shapeOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return {type.getShape().begin(), type.getShape().end()};
}

namespace {
NamedAttrList argumentAttrs(MLIRContext *context, Role role,
                            const std::vector<std::string> &axes) {
  NamedAttrList attrs;
  attrs.set(PartitaDialect::kRoleAttrName, RoleAttr::get(context, role));
  SmallVector<Attribute> names;
  for (const std::string &axis : axes)
    names.push_back(StringAttr::get(context, axis));
  attrs.set(PartitaDialect::kLogicalAxesAttrName,
            ArrayAttr::get(context, names));
  return attrs;
}
} // namespace

Value ModelBuilder::param(const std::string &name, std::vector<int64_t> shape,
                          std::vector<std::string> axes) {
  argAttrs.push_back(argumentAttrs(context(), Role::Param, axes));
  return body->addArgument(tensorType(shape), loc(name));
}

Value ModelBuilder::input(const std::string &name, std::vector<int64_t> shape,
                          std::vector<std::string> axes, Type element) {
  argAttrs.push_back(argumentAttrs(context(), Role::Input, axes));
  return body->addArgument(tensorType(shape, element), loc(name));
}

void ModelBuilder::donate(Value argument) {
  unsigned index = cast<BlockArgument>(argument).getArgNumber();
  argAttrs[index].set(PartitaDialect::kDonatedAttrName,
                      UnitAttr::get(context()));
}

void ModelBuilder::aliasResult(unsigned result, Value argument) {
  resultAliases.emplace_back(result,
                             cast<BlockArgument>(argument).getArgNumber());
}

OwningOpRef<ModuleOp> ModelBuilder::finish(ValueRange results) {
  builder.create<func::ReturnOp>(loc("return"), results);
  function.setFunctionType(builder.getFunctionType(
      body->getArgumentTypes(), TypeRange(ValueRange(results))));
  // All at once: setting them one by one builds (and keeps, uniqued in the
  // context) an array of every argument's attributes per argument, memory
  // quadratic in the layers.
  SmallVector<DictionaryAttr> dictionaries;
  for (NamedAttrList &attrs : argAttrs)
    dictionaries.push_back(attrs.getDictionary(context()));
  function.setAllArgAttrs(dictionaries);
  for (auto [result, argument] : resultAliases)
    function.setResultAttr(result, PartitaDialect::kAliasesAttrName,
                           builder.getI64IntegerAttr(argument));
  return std::move(module);
}

Value ModelBuilder::einsum(const std::string &spec, ValueRange operands,
                           std::vector<int64_t> shape,
                           const std::string &name) {
  Type element = cast<RankedTensorType>(operands[0].getType()).getElementType();
  return builder.create<EinsumOp>(loc(name), tensorType(shape, element),
                                  builder.getStringAttr(spec), operands);
}

#define PARTITA_BINARY(method, Op)                                             \
  Value ModelBuilder::method(Value a, Value b, const std::string &name) {     \
    return builder.create<Op>(loc(name), a.getType(), a, b);                   \
  }
PARTITA_BINARY(add, AddOp)
PARTITA_BINARY(sub, SubOp)
PARTITA_BINARY(mul, MulOp)
PARTITA_BINARY(div, DivOp)
PARTITA_BINARY(max, MaxOp)
PARTITA_BINARY(min, MinOp)
#undef PARTITA_BINARY

#define PARTITA_UNARY(method, Op)                                              \
  Value ModelBuilder::method(Value x, const std::string &name) {              \
    return builder.create<Op>(loc(name), x.getType(), x);                      \
  }
PARTITA_UNARY(exp, ExpOp)
PARTITA_UNARY(log, LogOp)
PARTITA_UNARY(tanh, TanhOp)
PARTITA_UNARY(rsqrt, RsqrtOp)
PARTITA_UNARY(logistic, LogisticOp)
PARTITA_UNARY(neg, NegOp)
#undef PARTITA_UNARY

Value ModelBuilder::constant(double value, std::vector<int64_t> shape,
                             const std::string &name, Type element) {
  RankedTensorType type = tensorType(shape, element);
  Attribute splat;
  if (auto floating = dyn_cast<FloatType>(type.getElementType()))
    splat = builder.getFloatAttr(floating, value);
  else
    splat = builder.getIntegerAttr(type.getElementType(),
                                   static_cast<int64_t>(value));
  return builder.create<ConstantOp>(loc(name), type,
                                    DenseElementsAttr::get(type, splat));
}

Value ModelBuilder::constantData(const std::vector<float> &values,
                                 std::vector<int64_t> shape,
                                 const std::string &name) {
  RankedTensorType type = tensorType(shape);
  SmallVector<Attribute> elements;
  for (float value : values)
    elements.push_back(builder.getFloatAttr(elementType, value));
  return builder.create<ConstantOp>(loc(name), type,
                                    DenseElementsAttr::get(type, elements));
}

Value ModelBuilder::iota(std::vector<int64_t> shape, int64_t dim, Type element,
                         const std::string &name) {
  return builder.create<IotaOp>(loc(name), tensorType(shape, element),
                                static_cast<uint64_t>(dim));
}

Value ModelBuilder::gather(Value table, Value indices, const std::string &name) {
  std::vector<int64_t> shape = shapeOf(indices), rows = shapeOf(table);
  shape.insert(shape.end(), rows.begin() + 1, rows.end());
  Type element = cast<RankedTensorType>(table.getType()).getElementType();
  return builder.create<GatherOp>(loc(name), tensorType(shape, element), table,
                                  indices);
}

Value ModelBuilder::broadcast(Value x, std::vector<int64_t> shape,
                              std::vector<int64_t> dims,
                              const std::string &name) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return builder.create<BroadcastOp>(loc(name), tensorType(shape, element), x,
                                     dims);
}

Value ModelBuilder::reduce(ReductionKind kind, Value x,
                           std::vector<int64_t> dims, const std::string &name) {
  std::vector<int64_t> shape;
  std::vector<int64_t> in = shapeOf(x);
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      shape.push_back(in[d]);
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return builder.create<ReduceOp>(loc(name), tensorType(shape, element), kind,
                                  x, dims);
}

Value ModelBuilder::stopGradient(Value x) {
  x.getDefiningOp()->setAttr(PartitaDialect::kStopGradientAttrName,
                             builder.getUnitAttr());
  return x;
}

Value ModelBuilder::reshape(Value x, std::vector<int64_t> shape,
                            const std::string &name) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return builder.create<ReshapeOp>(loc(name), tensorType(shape, element), x);
}

Value ModelBuilder::slice(Value x, std::vector<int64_t> start,
                          std::vector<int64_t> limit, const std::string &name) {
  std::vector<int64_t> shape, stride(start.size(), 1);
  for (size_t d = 0; d < start.size(); ++d)
    shape.push_back(limit[d] - start[d]);
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return builder.create<SliceOp>(loc(name), tensorType(shape, element), x,
                                 start, limit, stride);
}

Value ModelBuilder::concatenate(ValueRange inputs, int64_t dim,
                                const std::string &name) {
  std::vector<int64_t> shape = shapeOf(inputs[0]);
  shape[dim] = 0;
  for (Value input : inputs)
    shape[dim] += shapeOf(input)[dim];
  Type element = cast<RankedTensorType>(inputs[0].getType()).getElementType();
  return builder.create<ConcatenateOp>(loc(name), tensorType(shape, element),
                                       inputs, static_cast<uint64_t>(dim));
}

Value ModelBuilder::compare(CompareDirection direction, Value a, Value b,
                            const std::string &name) {
  return builder.create<CompareOp>(
      loc(name), tensorType(shapeOf(a), builder.getI1Type()), direction, a, b);
}

Value ModelBuilder::select(Value pred, Value a, Value b,
                           const std::string &name) {
  return builder.create<SelectOp>(loc(name), a.getType(), pred, a, b);
}

Value ModelBuilder::convert(Value x, Type element, const std::string &name) {
  return builder.create<ConvertOp>(loc(name), tensorType(shapeOf(x), element),
                                   x);
}

Value ModelBuilder::cumsum(Value x, int64_t dim, const std::string &name) {
  return builder.create<CumsumOp>(loc(name), x.getType(), x,
                                  static_cast<uint64_t>(dim));
}

Value ModelBuilder::argmax(Value x, int64_t dim, const std::string &name) {
  std::vector<int64_t> shape = shapeOf(x);
  shape.erase(shape.begin() + dim);
  return builder.create<ArgmaxOp>(loc(name),
                                  tensorType(shape, builder.getI32Type()), x,
                                  static_cast<uint64_t>(dim));
}

Value ModelBuilder::dynamicSlice(Value x, ValueRange starts,
                                 std::vector<int64_t> sizes,
                                 const std::string &name) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return builder.create<DynamicSliceOp>(loc(name), tensorType(sizes, element),
                                        x, starts, sizes);
}

Value ModelBuilder::transpose(Value x, std::vector<int64_t> perm,
                              const std::string &name) {
  std::vector<int64_t> in = shapeOf(x), shape;
  for (int64_t d : perm)
    shape.push_back(in[static_cast<size_t>(d)]);
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  return builder.create<TransposeOp>(loc(name), tensorType(shape, element), x,
                                     perm);
}

Value ModelBuilder::dynamicUpdateSlice(Value x, Value update, ValueRange starts,
                                       const std::string &name) {
  return builder.create<DynamicUpdateSliceOp>(loc(name), x.getType(), x, update,
                                              starts);
}

Value ModelBuilder::logicalConstraint(Value x, std::vector<std::string> axes,
                                      const std::string &name,
                                      const std::string &role) {
  SmallVector<StringRef> names(axes.begin(), axes.end());
  return builder.create<LogicalConstraintOp>(
      loc(name), x, builder.getStrArrayAttr(names),
      role.empty() ? StringAttr() : builder.getStringAttr(role));
}

Value ModelBuilder::scalarLike(double value, Value like,
                               const std::string &name) {
  auto type = cast<RankedTensorType>(like.getType());
  return constant(value, shapeOf(like), name, type.getElementType());
}

Value ModelBuilder::expandTo(Value v, Value like, std::vector<int64_t> dims,
                             const std::string &name) {
  return broadcast(v, shapeOf(like), dims, name);
}

Value ModelBuilder::mean(Value x, std::vector<int64_t> dims,
                         const std::string &name) {
  std::vector<int64_t> shape = shapeOf(x);
  double count = 1;
  for (int64_t d : dims)
    count *= static_cast<double>(shape[d]);
  Value sum = reduce(ReductionKind::Sum, x, dims, name + ".sum");
  return div(sum, scalarLike(count, sum, name + ".count"), name);
}

namespace {
std::vector<int64_t> leading(int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d + 1 < rank; ++d)
    dims.push_back(d);
  return dims;
}
} // namespace

Value ModelBuilder::softmax(Value x, const std::string &name) {
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  // softmax(x - c) = softmax(x) for any c: the maximum only keeps exp in
  // range, and carries no gradient (as in JAX's softmax).
  Value peak =
      stopGradient(reduce(ReductionKind::Max, x, {rank - 1}, name + ".max"));
  Value shifted =
      sub(x, expandTo(peak, x, leading(rank), name + ".max.b"), name + ".shift");
  Value e = exp(shifted, name + ".exp");
  Value total = reduce(ReductionKind::Sum, e, {rank - 1}, name + ".sum");
  return div(e, expandTo(total, x, leading(rank), name + ".sum.b"), name);
}

Value ModelBuilder::gelu(Value x, const std::string &name) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Value x3 = mul(mul(x, x, name + ".x2"), x, name + ".x3");
  Value inner = add(x, mul(x3, scalarLike(0.044715, x, name + ".c0"), name + ".t0"),
                    name + ".t1");
  Value t = tanh(mul(inner, scalarLike(std::sqrt(2.0 / M_PI), x, name + ".c1"),
                     name + ".t2"),
                 name + ".tanh");
  Value onePlus = add(t, scalarLike(1.0, x, name + ".one"), name + ".t3");
  return mul(mul(x, onePlus, name + ".t4"), scalarLike(0.5, x, name + ".half"),
             name);
}

Value ModelBuilder::silu(Value x, const std::string &name) {
  return mul(x, logistic(x, name + ".sigmoid"), name);
}

Value ModelBuilder::norm(Value x, Value gamma, Value beta,
                         const std::string &name) {
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  std::vector<int64_t> lead = leading(rank);
  Value centered = x;
  if (beta) {
    Value mu = mean(x, {rank - 1}, name + ".mean");
    centered = sub(x, expandTo(mu, x, lead, name + ".mean.b"), name + ".center");
  }
  Value variance =
      mean(mul(centered, centered, name + ".sq"), {rank - 1}, name + ".var");
  Value scale = rsqrt(add(variance, scalarLike(1e-5, variance, name + ".eps"),
                          name + ".var.eps"),
                      name + ".rsqrt");
  Value normed =
      mul(centered, expandTo(scale, x, lead, name + ".rsqrt.b"), name + ".normed");
  Value scaled = mul(normed, expandTo(gamma, x, {rank - 1}, name + ".gamma.b"),
                     name + ".scaled");
  if (!beta)
    return scaled;
  return add(scaled, expandTo(beta, x, {rank - 1}, name + ".beta.b"), name);
}

//===- ModelBuilder.h - Writing partita IR from C++ -------------*- C++ -*-===//
//
// A thin layer over mlir::OpBuilder for writing models: parameters and
// inputs become function arguments with a role and logical axis names; every
// op gets a name (a NameLoc such as `layer3.mlp.w1` over a file:line
// location naming the model), and composite helpers (softmax, norms, GELU)
// expand into the dialect's ops. Activations get no shardings: finding them
// is propagation's job.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_MODELS_MODELBUILDER_H
#define PARTITA_MODELS_MODELBUILDER_H

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace partita {

class Mesh;

/// Builds one module with one function, argument by argument and op by op.
class ModelBuilder {
public:
  /// `model` names the source in locations ("gpt"); `element` is the
  /// floating-point type of parameters and activations.
  ModelBuilder(mlir::MLIRContext *context, const std::string &model,
               mlir::Type element);

  mlir::MLIRContext *context() const { return builder.getContext(); }
  mlir::Type element() const { return elementType; }
  mlir::OpBuilder &ops() { return builder; }

  /// Adds `partita.mesh @mesh` with the axes of `mesh`.
  void addMesh(const Mesh &mesh);
  /// Starts the function `name`; arguments are added as they are declared.
  void beginFunction(const std::string &name);
  /// A parameter (role param) of the element type.
  mlir::Value param(const std::string &name, std::vector<int64_t> shape,
                    std::vector<std::string> axes);
  /// An input (role input) of any element type.
  mlir::Value input(const std::string &name, std::vector<int64_t> shape,
                    std::vector<std::string> axes, mlir::Type element);
  /// Marks the argument `argument` donated (partita.donated): the caller
  /// gives its buffer up, and an output of its layout may be written there.
  void donate(mlir::Value argument);
  /// Marks result `result` (of finish()) as `argument`'s new value
  /// (partita.aliases): it takes the argument's layout.
  void aliasResult(unsigned result, mlir::Value argument);
  /// Returns `results` and finishes the function; the module is complete.
  mlir::OwningOpRef<mlir::ModuleOp> finish(mlir::ValueRange results);

  /// Names the ops built next "<prefix>.<name>" (prefixes nest).
  void pushScope(const std::string &name);
  void popScope();
  /// The location for a value called `name` in the current scope.
  mlir::Location loc(const std::string &name);

  mlir::RankedTensorType tensorType(std::vector<int64_t> shape,
                                    mlir::Type element = {});
  static std::vector<int64_t> shapeOf(mlir::Value value);

  // Ops. `name` becomes the value's NameLoc.
  mlir::Value einsum(const std::string &spec, mlir::ValueRange operands,
                     std::vector<int64_t> shape, const std::string &name);
  mlir::Value add(mlir::Value a, mlir::Value b, const std::string &name);
  mlir::Value sub(mlir::Value a, mlir::Value b, const std::string &name);
  mlir::Value mul(mlir::Value a, mlir::Value b, const std::string &name);
  mlir::Value div(mlir::Value a, mlir::Value b, const std::string &name);
  mlir::Value max(mlir::Value a, mlir::Value b, const std::string &name);
  mlir::Value min(mlir::Value a, mlir::Value b, const std::string &name);
  mlir::Value exp(mlir::Value x, const std::string &name);
  mlir::Value log(mlir::Value x, const std::string &name);
  mlir::Value tanh(mlir::Value x, const std::string &name);
  mlir::Value rsqrt(mlir::Value x, const std::string &name);
  mlir::Value logistic(mlir::Value x, const std::string &name);
  mlir::Value neg(mlir::Value x, const std::string &name);
  /// A splat constant of `shape` (element type: the model's by default).
  mlir::Value constant(double value, std::vector<int64_t> shape,
                       const std::string &name, mlir::Type element = {});
  /// A constant with the given elements (row-major).
  mlir::Value constantData(const std::vector<float> &values,
                           std::vector<int64_t> shape, const std::string &name);
  mlir::Value iota(std::vector<int64_t> shape, int64_t dim, mlir::Type element,
                   const std::string &name);
  /// Rows of `table` by `indices` (partita.gather).
  mlir::Value gather(mlir::Value table, mlir::Value indices,
                     const std::string &name);
  mlir::Value broadcast(mlir::Value x, std::vector<int64_t> shape,
                        std::vector<int64_t> dims, const std::string &name);
  /// `x` with its producer marked partita.stop_gradient: no gradient
  /// flows through any use of it (a shift the result does not depend on).
  mlir::Value stopGradient(mlir::Value x);
  mlir::Value reduce(ReductionKind kind, mlir::Value x,
                     std::vector<int64_t> dims, const std::string &name);
  mlir::Value reshape(mlir::Value x, std::vector<int64_t> shape,
                      const std::string &name);
  /// Result dimension i is `x`'s dimension perm[i].
  mlir::Value transpose(mlir::Value x, std::vector<int64_t> perm,
                        const std::string &name);
  mlir::Value slice(mlir::Value x, std::vector<int64_t> start,
                    std::vector<int64_t> limit, const std::string &name);
  mlir::Value concatenate(mlir::ValueRange inputs, int64_t dim,
                          const std::string &name);
  mlir::Value compare(CompareDirection direction, mlir::Value a, mlir::Value b,
                      const std::string &name);
  mlir::Value select(mlir::Value pred, mlir::Value a, mlir::Value b,
                     const std::string &name);
  mlir::Value convert(mlir::Value x, mlir::Type element,
                      const std::string &name);
  mlir::Value cumsum(mlir::Value x, int64_t dim, const std::string &name);
  mlir::Value argmax(mlir::Value x, int64_t dim, const std::string &name);
  /// `x` with `update` written at `starts` (scalar i32 values).
  mlir::Value dynamicUpdateSlice(mlir::Value x, mlir::Value update,
                                 mlir::ValueRange starts,
                                 const std::string &name);
  mlir::Value dynamicSlice(mlir::Value x, mlir::ValueRange starts,
                           std::vector<int64_t> sizes, const std::string &name);
  /// The layout `axes` (logical names) for the rules to map, with the
  /// rules of `role` ("" : activation).
  mlir::Value logicalConstraint(mlir::Value x, std::vector<std::string> axes,
                                const std::string &name,
                                const std::string &role = "");

  // Composite helpers.
  /// A splat constant of `like`'s type.
  mlir::Value scalarLike(double value, mlir::Value like,
                         const std::string &name);
  /// Mean over `dims` (the reduced value).
  mlir::Value mean(mlir::Value x, std::vector<int64_t> dims,
                   const std::string &name);
  /// Softmax over the last dimension (max-subtracted).
  mlir::Value softmax(mlir::Value x, const std::string &name);
  /// GELU, tanh approximation.
  mlir::Value gelu(mlir::Value x, const std::string &name);
  /// x * sigmoid(x).
  mlir::Value silu(mlir::Value x, const std::string &name);
  /// LayerNorm (with `beta`) or RMSNorm (`beta` null) over the last
  /// dimension, scaled by `gamma`.
  mlir::Value norm(mlir::Value x, mlir::Value gamma, mlir::Value beta,
                   const std::string &name);
  /// `v` broadcast to `like`'s shape, its dimensions landing at `dims`.
  mlir::Value expandTo(mlir::Value v, mlir::Value like,
                       std::vector<int64_t> dims, const std::string &name);

private:
  mlir::OpBuilder builder;
  mlir::Type elementType;
  std::string model;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp function;
  mlir::Block *body = nullptr;
  std::vector<mlir::NamedAttrList> argAttrs;
  std::vector<std::pair<unsigned, unsigned>> resultAliases;
  std::vector<std::string> scopes;
  unsigned line = 1;
};

} // namespace partita

#endif // PARTITA_MODELS_MODELBUILDER_H

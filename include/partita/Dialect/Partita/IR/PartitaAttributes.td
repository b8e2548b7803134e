//===- PartitaAttributes.td - Meshes, shardings, enums -----*- tablegen -*-===//
#ifndef PARTITA_ATTRIBUTES_TD
#define PARTITA_ATTRIBUTES_TD

include "partita/Dialect/Partita/IR/PartitaDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Partita_ReductionKindAttr : I32EnumAttr<"ReductionKind",
    "how values combine in a reduction", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Min", 2, "min">,
      I32EnumAttrCase<"And", 3, "and">,
      I32EnumAttrCase<"Or", 4, "or">]> {
  let cppNamespace = "::partita";
}

def Partita_CompareDirectionAttr : I32EnumAttr<"CompareDirection",
    "comparison predicate", [
      I32EnumAttrCase<"EQ", 0, "eq">,
      I32EnumAttrCase<"NE", 1, "ne">,
      I32EnumAttrCase<"LT", 2, "lt">,
      I32EnumAttrCase<"LE", 3, "le">,
      I32EnumAttrCase<"GT", 4, "gt">,
      I32EnumAttrCase<"GE", 5, "ge">]> {
  let cppNamespace = "::partita";
}

def Partita_Role : I32EnumAttr<"Role", "what a function argument holds", [
      I32EnumAttrCase<"Param", 0, "param">,
      I32EnumAttrCase<"OptState", 1, "opt_state">,
      I32EnumAttrCase<"Grad", 2, "grad">,
      I32EnumAttrCase<"Input", 3, "input">,
      I32EnumAttrCase<"Activation", 4, "activation">]> {
  let cppNamespace = "::partita";
  let genSpecializedAttr = 0;
}
def Partita_RoleAttr : EnumAttr<Partita_Dialect, Partita_Role, "role"> {
  let summary = "Role of a function argument (`partita.role`)";
  let description = [{
    Says what a function argument holds, so that memory reports can count
    bytes by role and the runtime can update parameters in place:
    `param`, `opt_state` (optimizer state, including f32 master weights),
    `grad` (gradient buffers), `input` (data fed each step), `activation`.

    Example: `func.func @step(%w: tensor<4x4xf32> {partita.role = #partita.role<param>})`
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def Partita_MeshAxisAttr : Partita_Attr<"MeshAxis", "axis"> {
  let summary = "One named axis of a mesh";
  let description = [{
    An axis name and its size; printed inside a mesh as `"data"=4`.
  }];
  let parameters = (ins "::mlir::StringAttr":$name, "int64_t":$size);
  let assemblyFormat = "`<` $name `=` $size `>`";
}

def Partita_MeshAttr : Partita_Attr<"Mesh", "mesh"> {
  let summary = "A logical device mesh: named axes, major to minor";
  let description = [{
    An N-dimensional array of devices with named axes, listed major to minor.
    A device's id is the row-major linear index of its coordinates, unless
    `device_ids` gives the id at each row-major position explicitly.

    **Constraints:**
    * axis names are non-empty and distinct;
    * axis sizes are positive;
    * `device_ids`, when given, is a permutation of `0 .. N-1` where N is the
      product of the axis sizes.

    Example: `<["data"=2, "model"=2], device_ids = [3, 2, 1, 0]>`
  }];
  let parameters = (ins
    ArrayRefParameter<"MeshAxisAttr", "axes, major to minor">:$axes,
    OptionalArrayRefParameter<"int64_t", "explicit device ids">:$deviceIds);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The mesh as a value of the sharding algebra (the attribute is
    /// verified, so this cannot fail).
    ::partita::Mesh toMesh() const;
    /// Size of axis `name`, or 0 when the mesh has no such axis.
    int64_t axisSize(::llvm::StringRef name) const;
    /// Product of the axis sizes.
    int64_t numDevices() const;
  }];
}

//===----------------------------------------------------------------------===//
// Sharding
//===----------------------------------------------------------------------===//

def Partita_DimShardingAttr : Partita_Attr<"DimSharding", "dim_sharding"> {
  let summary = "The sharding of one tensor dimension";
  let description = [{
    An ordered list of mesh axes (major to minor) and whether propagation may
    add more axes after them. Printed as `{"data", "fsdp"}` (closed),
    `{"data", ?}` (open, with axes) or `{?}` (open, nothing known).
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr", "mesh axes, major to minor">:$axes,
    "bool":$isOpen);
  let hasCustomAssemblyFormat = 1;
}

def Partita_ShardingAttr : Partita_Attr<"Sharding", "sharding"> {
  let summary = "How a tensor is split over a mesh";
  let description = [{
    Names a mesh and gives, per tensor dimension, the mesh axes that split it
    (major to minor). A dimension is closed (`{}`, `{"x"}`) or open (`{?}`,
    `{"x", ?}`), in which case propagation may append axes. Axes not named
    anywhere are replicated. `partial = sum{"model"}` says each device holds an
    addend (`sum`) or a candidate (`max`, `min`) of the true value over the
    listed axes. `priority = N` orders user annotations for propagation
    (lower first).

    A dimension that the shard count does not divide is legal here; the
    partitioner pads and masks it or reports an error.

    **Constraints:**
    * no axis appears twice (across dimensions and the partial list);
    * the partial kind is `sum`, `max` or `min`, and its axis list is not empty;
    * the priority is non-negative;
    * where attached: the mesh symbol names a `partita.mesh`, every axis exists
      on it, and the tensor's rank equals the number of dimensions listed.

    Example:
    `#partita.sharding<@mesh, [{"data", "fsdp"}, {?}, {} ], partial = sum{"model"}, priority = 1>`
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"DimShardingAttr", "per-dimension shardings">:$dims,
    "::partita::ReductionKind":$partialKind,
    ArrayRefParameter<"::mlir::StringAttr", "partial axes">:$partialAxes,
    OptionalParameter<"std::optional<int64_t>", "propagation priority">:$priority);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::FlatSymbolRefAttr":$mesh,
                     "::llvm::ArrayRef<DimShardingAttr>":$dims), [{
      return $_get($_ctxt, mesh, dims, ::partita::ReductionKind::Sum,
                   ::llvm::ArrayRef<::mlir::StringAttr>{}, std::nullopt);
    }]>
  ];
  let extraClassDeclaration = [{
    /// True when the value is partial over some axes.
    bool isPartial() const { return !getPartialAxes().empty(); }
    /// Number of dimensions listed.
    int64_t getRank() const { return getDims().size(); }
    /// The sharding as a value of the sharding algebra.
    ::partita::Sharding toSharding() const;
    /// Builds the attribute from a value of the sharding algebra.
    static ShardingAttr fromSharding(::mlir::MLIRContext *context,
                                     ::mlir::FlatSymbolRefAttr mesh,
                                     const ::partita::Sharding &sharding);
  }];
}

#endif // PARTITA_ATTRIBUTES_TD

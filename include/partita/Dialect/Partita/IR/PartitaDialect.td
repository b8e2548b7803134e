//===- PartitaDialect.td - The partita dialect -------------*- tablegen -*-===//
//
// The dialect definition and the base classes of its ops and attributes.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DIALECT_TD
#define PARTITA_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Partita_Dialect : Dialect {
  let name = "partita";
  let cppNamespace = "::partita";
  let summary = "Sharded tensor programs: meshes, shardings, tensor ops and collectives";
  let description = [{
    The `partita` dialect describes tensor programs over a named device mesh.
    Before partitioning, ops work on global shapes and tensors carry
    `#partita.sharding` attributes saying how they are split over the mesh;
    after partitioning, ops work on per-device (local) shapes and the
    collective ops move data between devices.

    Dialect attributes understood on other ops:
    * `partita.sharding`: on function arguments and results (a
      `#partita.sharding`) and on op results (a `#partita.sharding`, or an
      array of them for ops with several results).
    * `partita.role` (`#partita.role<param>` …) and `partita.donated` (unit):
      on function arguments only.
    * `partita.origin`: written by propagation next to the shardings it
      decided (an array with, per dimension, where its axes came from);
      informational only.
    * `partita.reason` (string): on collectives the partitioner inserted, the
      op, operand and shardings that needed it.
    * `partita.partitioned` (unit): on a module the partitioner rewrote to
      local shapes.

    Example:
    ```mlir
    partita.mesh @mesh = <["data"=2, "model"=4]>
    func.func @f(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {} ]>})
        -> tensor<8x16xf32> {
      %y = partita.exp %x : tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes (defined next to their storage classes).
    void registerAttributes();

    /// Name of the sharding attribute on arguments, results and ops.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "partita.sharding";
    /// Name of the role attribute on function arguments.
    static constexpr ::llvm::StringLiteral kRoleAttrName = "partita.role";
    /// Name of the record of where propagated shardings came from (on ops,
    /// arguments and results; informational, ignored by later passes).
    static constexpr ::llvm::StringLiteral kOriginAttrName = "partita.origin";
    /// Name of the explanation the partitioner attaches to each collective
    /// it inserts (a string).
    static constexpr ::llvm::StringLiteral kReasonAttrName = "partita.reason";
    /// Name of the pipeline stage (an integer) of a top-level op of a loss
    /// function (docs/Pipeline.md).
    static constexpr ::llvm::StringLiteral kStageAttrName = "partita.stage";
    /// Name of the marker the partitioner puts on a module it partitioned.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName = "partita.partitioned";
    /// Name of the marker partita-overlap-collectives puts on a module whose
    /// collectives run asynchronously: each is waited for just before the
    /// first use of its result (docs/Runtime.md, "Overlapping
    /// communication").
    static constexpr ::llvm::StringLiteral kAsyncCollectivesAttrName = "partita.async_collectives";
    /// Name of the marker (a unit attribute) on an op whose results the
    /// program does not depend on to first order, so that differentiation
    /// sends no gradient through it: the maximum softmax and log-sum-exp
    /// subtract and add back (docs/Autodiff.md, as JAX's stop_gradient).
    static constexpr ::llvm::StringLiteral kStopGradientAttrName = "partita.stop_gradient";
    /// Name of the donation marker on function arguments.
    static constexpr ::llvm::StringLiteral kDonatedAttrName = "partita.donated";
    /// Name of the logical axis names of a function argument (one string
    /// per dimension, "" for none), which logical axis rules map to mesh
    /// axes.
    static constexpr ::llvm::StringLiteral kLogicalAxesAttrName = "partita.logical_axes";
    /// Name of the marker on a function result that is the new value of a
    /// (donated) argument: the argument's index. The result gets the
    /// argument's layout, so the runtime can update it in place.
    static constexpr ::llvm::StringLiteral kAliasesAttrName = "partita.aliases";
    /// Name of the global shape the partitioner records on an argument or
    /// result of a partitioned function when a dimension is padded (the
    /// local shape times the shard counts would overstate it).
    static constexpr ::llvm::StringLiteral kGlobalShapeAttrName = "partita.global_shape";
    /// The reasons on the ops the partitioner adds around uneven
    /// dimensions (the report counts them): a pad before a split, a slice
    /// after a gather, a select before a reduction (followed by the
    /// dimension).
    static constexpr ::llvm::StringLiteral kPadReason = "padding of an uneven dimension";
    static constexpr ::llvm::StringLiteral kCutReason = "drops the padding of an uneven dimension";
    static constexpr ::llvm::StringLiteral kMaskReasonPrefix = "masks the padding of dimension ";
  }];
}

class Partita_Op<string mnemonic, list<Trait> traits = []>
    : Op<Partita_Dialect, mnemonic, traits>;

class Partita_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Partita_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Partita_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def Partita_IntElement : AnyTypeOf<[I1, I8, I16, I32, I64]>;
def Partita_Element : AnyTypeOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64]>;

def Partita_Tensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64]>;
def Partita_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Partita_IntTensor : StaticShapeTensorOf<[I1, I8, I16, I32, I64]>;
def Partita_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Partita_BoolTensor : StaticShapeTensorOf<[I1]>;
def Partita_ScalarIndex : 0DTensorOf<[I32, I64]>;
def Partita_ScalarTensor : 0DTensorOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64]>;

#endif // PARTITA_DIALECT_TD

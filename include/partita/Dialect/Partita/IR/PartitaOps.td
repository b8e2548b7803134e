//===- PartitaOps.td - All ops of the partita dialect ------*- tablegen -*-===//
#ifndef PARTITA_OPS_TD
#define PARTITA_OPS_TD

include "partita/Dialect/Partita/IR/PartitaDialect.td"
include "partita/Dialect/Partita/IR/PartitaAttributes.td"
include "partita/Dialect/Partita/IR/PartitaInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def Partita_MeshOp : Partita_Op<"mesh", [Symbol]> {
  let summary = "Declares a named device mesh";
  let description = [{
    A module-level symbol naming the mesh that shardings and collectives refer
    to. See `#partita.mesh` for the meaning of axes and `device_ids`.

    Example:
    ```mlir
    partita.mesh @mesh = <["data"=4, "model"=2]>
    partita.mesh @rev = <["x"=2], device_ids = [1, 0]>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Partita_MeshAttr:$mesh);
  let assemblyFormat = "$sym_name `=` $mesh attr-dict";
}

include "partita/Dialect/Partita/IR/PartitaTensorOps.td"
include "partita/Dialect/Partita/IR/PartitaShardingOps.td"
include "partita/Dialect/Partita/IR/PartitaCollectiveOps.td"

#endif // PARTITA_OPS_TD

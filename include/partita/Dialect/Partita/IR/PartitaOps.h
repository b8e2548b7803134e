//===- PartitaOps.h - Ops of the partita dialect ----------------*- C++ -*-===//
#ifndef PARTITA_DIALECT_PARTITA_IR_PARTITAOPS_H
#define PARTITA_DIALECT_PARTITA_IR_PARTITAOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "partita/Dialect/Partita/IR/PartitaAttributes.h"
#include "partita/Sharding/ShardingRule.h"

#include "partita/Dialect/Partita/IR/PartitaInterfaces.h.inc"

#define GET_OP_CLASSES
#include "partita/Dialect/Partita/IR/PartitaOps.h.inc"

namespace partita {

/// The `partita.mesh` op that `meshName` refers to from `from`, or null.
MeshOp lookupMesh(mlir::Operation *from, mlir::FlatSymbolRefAttr meshName);

/// Checks `sharding` where it is attached: its mesh exists and every axis is
/// on it, and (when `type` is a ranked tensor) the ranks agree. Diagnostics
/// go through `emitError`; `what` names the value in messages ("result 0").
mlir::LogicalResult
verifyShardingFor(mlir::Operation *anchor, ShardingAttr sharding,
                  mlir::Type type, llvm::StringRef what,
                  llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_IR_PARTITAOPS_H

//===- PartitaAttributes.h - Meshes, shardings, enums -----------*- C++ -*-===//
#ifndef PARTITA_DIALECT_PARTITA_IR_PARTITAATTRIBUTES_H
#define PARTITA_DIALECT_PARTITA_IR_PARTITAATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Sharding.h"

#include "partita/Dialect/Partita/IR/PartitaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "partita/Dialect/Partita/IR/PartitaAttributes.h.inc"

namespace partita {

/// The sharding algebra's partial kind for a reduction kind (None for the
/// kinds a partial value cannot have: and, or).
PartialKind toPartialKind(ReductionKind kind);

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_IR_PARTITAATTRIBUTES_H

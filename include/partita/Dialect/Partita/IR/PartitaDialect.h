//===- PartitaDialect.h - The partita dialect -------------------*- C++ -*-===//
//
// Include this header to use the dialect: it brings in the attributes and
// ops. It avoids heavy MLIR headers (Pass.h, Tensor.h) on purpose.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DIALECT_PARTITA_IR_PARTITADIALECT_H
#define PARTITA_DIALECT_PARTITA_IR_PARTITADIALECT_H

#include "mlir/IR/Dialect.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h.inc"

#include "partita/Dialect/Partita/IR/PartitaAttributes.h"
#include "partita/Dialect/Partita/IR/PartitaOps.h"

#endif // PARTITA_DIALECT_PARTITA_IR_PARTITADIALECT_H

//===- Passes.h - Partita's passes ------------------------------*- C++ -*-===//
#ifndef PARTITA_TRANSFORMS_PASSES_H
#define PARTITA_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Transforms/Pipeline.h"

#include <memory>

namespace partita {

#define GEN_PASS_DECL
#include "partita/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "partita/Transforms/Passes.h.inc"

} // namespace partita

#endif // PARTITA_TRANSFORMS_PASSES_H

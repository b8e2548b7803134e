//===- Registration.h - Register Partita with an MLIR context ---*- C++ -*-===//
//
// One place that knows every dialect a Partita program may contain and every
// pass Partita provides, for partita-opt, the partita CLI and embedders.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_REGISTRATION_H
#define PARTITA_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace partita {

/// Adds the partita dialect and the upstream dialects Partita programs use
/// (func) to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers Partita's passes with the global pass registry, so that
/// MlirOptMain-based tools can run them by flag.
void registerAllPasses();

} // namespace partita

#endif // PARTITA_REGISTRATION_H

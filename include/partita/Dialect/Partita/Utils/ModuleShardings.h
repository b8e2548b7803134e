//===- ModuleShardings.h - What a module says about its layout --*- C++ -*-===//
//
// Whether a module carries any sharding at all, and how many devices its
// meshes hold: a module with no sharding on a mesh of several devices is
// partitioned into copies of the whole program, which the commands say
// (compile warns; compile --train --pp refuses).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DIALECT_PARTITA_UTILS_MODULESHARDINGS_H
#define PARTITA_DIALECT_PARTITA_UTILS_MODULESHARDINGS_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>

namespace partita {

/// True when any argument, result or op of `module` carries a sharding (or
/// a list of them, as a manual computation's in_shardings).
bool hasShardings(mlir::ModuleOp module);

/// The most devices any mesh of `module` holds (0 without a mesh).
int64_t largestMeshDevices(mlir::ModuleOp module);

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_UTILS_MODULESHARDINGS_H

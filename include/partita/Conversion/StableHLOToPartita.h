//===- StableHLOToPartita.h - Programs JAX lowered, into the partita dialect ===//
//
// JAX lowers a jitted function to StableHLO with Shardy (`sdy`) shardings;
// `lowered.compiler_ir("stablehlo").operation.get_asm(
// print_generic_op_form=True, enable_debug_info=True)` prints it in MLIR's
// generic op form, which MLIR 22 parses with unregistered dialects allowed
// (no StableHLO dialect needed). importStableHLO() rewrites such a module
// in place into the partita dialect: meshes, argument/result shardings and
// sharding constraints become ours, and every StableHLO op the table in
// docs/JAX.md lists becomes the partita op(s) computing the same values.
// Source locations stay on the new ops, so values keep JAX's names.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_CONVERSION_STABLEHLOTOPARTITA_H
#define PARTITA_CONVERSION_STABLEHLOTOPARTITA_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace partita {

/// Whether `module` holds ops of the dialects JAX's StableHLO uses
/// (`stablehlo`, `chlo`, `sdy`, `mhlo`), which are unregistered here.
bool looksLikeStableHLO(mlir::ModuleOp module);

/// Rewrites `module` (as JAX lowered it) into the partita dialect. Every
/// unsupported op or attribute gets an error at its location — all of them
/// in one run — followed by one error with the count; the result is then
/// failure and the module is left partly converted.
mlir::LogicalResult importStableHLO(mlir::ModuleOp module);

} // namespace partita

#endif // PARTITA_CONVERSION_STABLEHLOTOPARTITA_H

//===- Fusion.h - Elementwise chains into fused instructions ----*- C++ -*-===//
//
// Groups runs of f32 elementwise instructions, with the splat constants and
// the broadcasts of a leading/trailing block that feed them, the einsum
// whose product they read (the head) and the reductions that consume them,
// into fused instructions (partita/Runtime/Program/Fused.h) that the
// runtime evaluates in one pass over cache-sized tiles. Values only the run
// reads are never written to memory. docs/Runtime.md, "Fusion".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_CODEGEN_FUSION_H
#define PARTITA_CODEGEN_FUSION_H

#include "partita/Runtime/Program/Executable.h"

namespace partita {

/// What fuseElementwise did.
struct FusionSummary {
  /// Fused instructions made, and the instructions they replaced.
  int64_t fused = 0, replaced = 0;
  /// Einsums taken as heads, reductions taken, and heads left out because
  /// the buffer plan or the product's uses did not allow them.
  int64_t heads = 0, reductions = 0, headsRefused = 0;
};

/// Rewrites `program`'s instruction stream in place (buffer plan and
/// slots unchanged).
FusionSummary fuseElementwise(Executable &program);

} // namespace partita

#endif // PARTITA_CODEGEN_FUSION_H

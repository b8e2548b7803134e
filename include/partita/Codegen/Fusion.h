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

/// Per slot, whether anything names it: an instruction's operand or
/// result, a loop's counter or carried copies, an input or an output.
/// After fusion a chain's inner values are named by nothing.
std::vector<bool> referencedSlots(const Executable &program);

/// Removes the slots nothing names (referencedSlots), renumbering the
/// others in order everywhere they are named; the buffer plan keeps their
/// offsets and the arena's size.
void dropUnreferencedSlots(Executable &program);

} // namespace partita

#endif // PARTITA_CODEGEN_FUSION_H

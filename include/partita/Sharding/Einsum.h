//===- Einsum.h - Einsum specs ----------------------------------*- C++ -*-===//
//
// The `partita.einsum` op is written as an einsum spec ("bsd,dh->bsh"). The
// spec is both the op's semantics (the CPU runtime executes it) and its
// factor mapping (propagation reads it), so its parser lives here, free of
// IR and LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_EINSUM_H
#define PARTITA_SHARDING_EINSUM_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace partita {

/// A parsed einsum spec: one label string per operand and one for the
/// result; each character labels one dimension.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;

  /// Labels that appear in some input but not in the output (summed over).
  std::string contractedLabels() const;
  /// The spec written back ("bsd,dh->bsh").
  std::string toString() const;
};

/// The input terms and the output of `text` ("ab,bc->ac"), unchecked;
/// false when `text` has no "->".
bool splitEinsumTerms(std::string_view text, std::vector<std::string> &inputs,
                      std::string &output);

/// Parses `text` as an einsum spec with explicit output. Labels are letters
/// (a-z, A-Z); whitespace is not allowed. Fails when the term count differs
/// from `numOperands` (when >= 0), a label repeats within a term, or an output
/// label appears in no input.
Expected<EinsumSpec> parseEinsumSpec(std::string_view text,
                                     int numOperands = -1);

/// The result shape of `spec` applied to operands of `shapes`. Fails when a
/// term's length differs from its operand's rank or one label has two sizes.
Expected<std::vector<int64_t>>
einsumResultShape(const EinsumSpec &spec,
                  const std::vector<std::vector<int64_t>> &shapes);

} // namespace partita

#endif // PARTITA_SHARDING_EINSUM_H

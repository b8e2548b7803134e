//===- Fused.cpp - The CPU kernel of fused elementwise chains -------------===//
//
// A fused instruction (Fused.h) runs tile by tile: every step of the chain
// over one tile of kTile elements into a small buffer that stays in the
// cache, then the results' tiles to memory. Each step is a plain loop over
// the tile with the same math as the op-at-a-time kernels
// (ElementwiseMath.h), so the results are the same bits. Every operand of a
// tile is read before any result of that tile is written: a result may
// share its bytes with a full-size operand (the buffer plan's in-place
// updates), never partly (the compiler checks, lib/Codegen/Fusion.cpp).
//
//===----------------------------------------------------------------------===//

#include "ElementwiseMath.h"
#include "KernelSupport.h"

#include "partita/Runtime/Program/Fused.h"

#include <algorithm>
#include <cstring>

namespace partita {
namespace cpu {

namespace {
constexpr int64_t kTile = 1024;

// The step loop is built for AVX-512 and AVX2 as well as the baseline, the
// processor's best chosen when the program loads (GCC and Clang function
// clones). The file builds with -ffp-contract=off, so every version gives
// the same bits as the others and as the op-at-a-time kernels. Sanitizer
// builds keep the one version.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&     \
    !defined(PARTITA_NO_FUNCTION_CLONES)
#define PARTITA_VECTOR_CLONES                                                  \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PARTITA_VECTOR_CLONES
#endif

/// out[0, n) = op(a, b) element by element; false when `op` is not a
/// float elementwise op.
PARTITA_VECTOR_CLONES
bool runStep(OpCode op, const float *__restrict a, const float *__restrict b,
             float *__restrict out, int64_t n) {
  return visitFloatUnary<float>(op,
                                [&](auto fn) {
                                  for (int64_t j = 0; j < n; ++j)
                                    out[j] = fn(a[j]);
                                }) ||
         visitFloatBinary<float>(op, [&](auto fn) {
           for (int64_t j = 0; j < n; ++j)
             out[j] = fn(a[j], b[j]);
         });
}
} // namespace

Status runFused(const KernelContext &ctx) {
  Expected<FusedProgram> decoded = decodeFused(
      ctx.call.inst, ctx.call.operandTypes, ctx.call.resultTypes);
  if (!decoded)
    return Status::error(decoded.status().message());
  const FusedProgram &program = *decoded;
  int64_t count = ctx.resultType(0).numElements();
  size_t steps = program.steps.size();
  // Tiles: one per step, one per operand that is not read in place, one
  // per constant reference; one scratch buffer per device thread, reused.
  std::vector<int64_t> constantTile(2 * steps, -1);
  int64_t constants = 0;
  for (size_t s = 0; s < steps; ++s) {
    if (program.steps[s].a.kind == FusedRefKind::Constant)
      constantTile[2 * s] = constants++;
    if (program.steps[s].b.kind == FusedRefKind::Constant)
      constantTile[2 * s + 1] = constants++;
  }
  thread_local std::vector<float> scratch;
  size_t tiles = steps + program.operands.size() + constants;
  if (scratch.size() < tiles * kTile)
    scratch.resize(tiles * kTile);
  float *stepTiles = scratch.data();
  float *operandTiles = stepTiles + steps * kTile;
  float *constantTiles = operandTiles + program.operands.size() * kTile;
  for (size_t s = 0; s < steps; ++s) {
    const FusedRef *refs[2] = {&program.steps[s].a, &program.steps[s].b};
    for (int k = 0; k < 2; ++k)
      if (constantTile[2 * s + k] >= 0)
        std::fill_n(constantTiles + constantTile[2 * s + k] * kTile, kTile,
                    fusedConstant(*refs[k]));
  }
  // A step whose inputs are the same for every element (constants, scalar
  // operands, such steps) is computed on the first tile only: its tile is
  // the same for every other.
  std::vector<bool> uniform(steps, false);
  auto uniformRef = [&](const FusedRef &ref) {
    switch (ref.kind) {
    case FusedRefKind::Constant:
      return true;
    case FusedRefKind::Operand:
      return program.operands[ref.value].size == 1;
    case FusedRefKind::Step:
      return static_cast<bool>(uniform[ref.value]);
    }
    return false;
  };
  for (size_t s = 0; s < steps; ++s)
    uniform[s] = uniformRef(program.steps[s].a) &&
                 uniformRef(program.steps[s].b);
  auto fullSize = [&](size_t e) {
    return program.operands[e].inner == 1 &&
           program.operands[e].size == count;
  };
  std::vector<const float *> operandAt(program.operands.size());
  for (int64_t begin = 0; begin < count; begin += kTile) {
    int64_t n = std::min(kTile, count - begin);
    for (size_t e = 0; e < program.operands.size(); ++e) {
      const float *data = ctx.operand<float>(e);
      if (fullSize(e)) {
        operandAt[e] = data + begin;
        continue;
      }
      if (begin > 0 && program.operands[e].size == 1)
        continue; // Its tile holds the one value already.
      // Element i reads data[(i / inner) % size], walked without a
      // division per element.
      const FusedOperand &operand = program.operands[e];
      float *tile = operandTiles + e * kTile;
      int64_t index = (begin / operand.inner) % operand.size;
      int64_t within = begin % operand.inner;
      for (int64_t j = 0; j < n;) {
        int64_t run = std::min(n - j, operand.inner - within);
        std::fill_n(tile + j, run, data[index]);
        j += run;
        within = 0;
        if (++index == operand.size)
          index = 0;
      }
      operandAt[e] = tile;
    }
    for (size_t s = 0; s < steps; ++s) {
      if (begin > 0 && uniform[s])
        continue;
      const FusedStep &step = program.steps[s];
      auto pointer = [&](const FusedRef &ref, int k) -> const float * {
        switch (ref.kind) {
        case FusedRefKind::Operand:
          return operandAt[ref.value];
        case FusedRefKind::Step:
          return stepTiles + ref.value * kTile;
        case FusedRefKind::Constant:
          break;
        }
        return constantTiles + constantTile[2 * s + k] * kTile;
      };
      const float *a = pointer(step.a, 0);
      const float *b = pointer(step.b, 1);
      float *out = stepTiles + s * kTile;
      if (!runStep(step.op, a, b, out, n))
        return ctx.error("step " + std::to_string(s) + " is not fusible");
    }
    for (size_t r = 0; r < program.results.size(); ++r)
      std::memcpy(ctx.result<float>(r) + begin,
                  stepTiles + program.results[r] * kTile,
                  static_cast<size_t>(n) * sizeof(float));
  }
  return Status::success();
}

} // namespace cpu
} // namespace partita

//===- Fused.cpp - The CPU kernel of fused elementwise chains -------------===//
//
// A fused instruction (Fused.h) runs tile by tile: every step of the chain
// over one tile of kTile elements into a small buffer that stays in the
// cache, then the results' tiles to memory and the reduced steps' tiles
// into their accumulators. Each step is a plain loop over the tile with the
// same math as the op-at-a-time kernels (ElementwiseMath.h), and reductions
// combine in element order, so the results are the same bits. Every operand
// of a tile is read before any result of that tile is written: a result may
// share its bytes with a full-size operand (the buffer plan's in-place
// updates) or the head's product, never partly (the compiler checks,
// lib/Codegen/Fusion.cpp). With a head, the einsum hands its product over
// block by block (Einsum.cpp) and the chain runs on each block; reductions'
// results are written once every block is done.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseMath.h"
#include "KernelSupport.h"

#include "partita/Runtime/Program/Fused.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace partita {
namespace cpu {

namespace {
/// 256 floats: with a chain of AdamW's length every step's tile stays in L1
/// (GPT-2 small's [12565, 768] update ran at 0.38 of memcpy's bandwidth
/// with 1,024-element tiles, 0.49 with 256; bench/compute.cpp).
constexpr int64_t kTile = 256;

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

/// Combines values[0, n), elements [begin, begin + n) of the chain, into
/// the reduction's result in element order: element i into
/// acc[(i / inner) % size].
template <typename Combine>
void reduceTile(const FusedReduction &reduction, const float *values,
                int64_t begin, int64_t n, float *acc, Combine combine) {
  int64_t index = (begin / reduction.inner) % reduction.size;
  if (reduction.inner == 1) { // Consecutive elements, consecutive sums.
    for (int64_t j = 0; j < n;) {
      int64_t run = std::min(n - j, reduction.size - index);
      for (int64_t t = 0; t < run; ++t)
        acc[index + t] = combine(acc[index + t], values[j + t]);
      j += run;
      index = 0;
    }
    return;
  }
  int64_t within = begin % reduction.inner;
  for (int64_t j = 0; j < n;) {
    int64_t run = std::min(n - j, reduction.inner - within);
    float partial = acc[index];
    for (int64_t t = 0; t < run; ++t)
      partial = combine(partial, values[j + t]);
    acc[index] = partial;
    j += run;
    within = 0;
    if (++index == reduction.size)
      index = 0;
  }
}

/// One fused instruction's evaluation: its tiles, and the chain run over
/// ranges of elements in order (the whole chain at once, or each block of
/// the head's product as the GEMM completes it).
class FusedRun {
public:
  FusedRun(const KernelContext &ctx, const FusedProgram &program)
      : ctx(ctx), program(program) {}

  void prepare();
  Status run(int64_t begin, int64_t end);
  /// Writes the reductions' results (last: they may take the bytes of
  /// anything the chain reads).
  void finish();

private:
  const KernelContext &ctx;
  const FusedProgram &program;
  std::vector<int64_t> constantTile;
  std::vector<bool> uniform;
  std::vector<const float *> operandAt;
  /// Each reduction's accumulators, from reductionAt[q].
  std::vector<size_t> reductionAt;
  float *accumulators = nullptr;
  float *stepTiles = nullptr, *operandTiles = nullptr,
        *constantTiles = nullptr;
  /// Per step, the result it writes straight into (its tile is then that
  /// result's elements), or null.
  std::vector<float *> directResult;
  /// Whether a tile has been computed (uniform steps are computed on the
  /// first only).
  bool started = false;
};

void FusedRun::prepare() {
  size_t steps = program.steps.size();
  // Tiles: one per step, one per operand that is not read in place, one
  // per constant reference; one scratch buffer per device thread, reused.
  constantTile.assign(2 * steps, -1);
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
  stepTiles = scratch.data();
  operandTiles = stepTiles + steps * kTile;
  constantTiles = operandTiles + program.operands.size() * kTile;
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
  uniform.assign(steps, false);
  auto uniformRef = [&](const FusedRef &ref) {
    switch (ref.kind) {
    case FusedRefKind::Constant:
      return true;
    case FusedRefKind::Operand:
      return program.operands[ref.value].size == 1;
    case FusedRefKind::Step:
      return static_cast<bool>(uniform[ref.value]);
    case FusedRefKind::Head:
      return false;
    }
    return false;
  };
  for (size_t s = 0; s < steps; ++s)
    uniform[s] = uniformRef(program.steps[s].a) &&
                 uniformRef(program.steps[s].b);
  operandAt.assign(program.operands.size(), nullptr);
  // A step written as a result goes straight into the result when the
  // result's bytes meet nothing the chain reads (an in-place update reads
  // an operand's tile after earlier steps of that tile are computed, so
  // its steps keep their tiles and are copied out): one pass over the
  // result instead of a tile and a copy.
  directResult.assign(steps, nullptr);
  auto meets = [](const void *a, size_t aBytes, const void *b,
                  size_t bBytes) {
    auto *x = static_cast<const uint8_t *>(a);
    auto *y = static_cast<const uint8_t *>(b);
    return x < y + bBytes && y < x + aBytes;
  };
  size_t first = program.firstElementResult();
  for (size_t r = 0; r < program.results.size(); ++r) {
    size_t s = static_cast<size_t>(program.results[r]);
    if (uniform[s] || directResult[s])
      continue;
    float *out = ctx.result<float>(first + r);
    auto outBytes = static_cast<size_t>(ctx.resultType(first + r).bytes());
    bool apart = !program.head ||
                 !meets(out, outBytes, ctx.result(0),
                        static_cast<size_t>(ctx.resultType(0).bytes()));
    // Every operand: the head's two (read block by block) and the chain's.
    for (size_t at = 0; apart && at < ctx.numOperands(); ++at)
      apart = !meets(out, outBytes, ctx.operand(at),
                     static_cast<size_t>(ctx.operandType(at).bytes()));
    if (apart)
      directResult[s] = out;
  }
  // Reductions accumulate apart, from the kind's identity.
  thread_local std::vector<float> reduced;
  reductionAt.clear();
  size_t total = 0;
  for (const FusedReduction &reduction : program.reductions) {
    reductionAt.push_back(total);
    total += static_cast<size_t>(reduction.size);
  }
  if (reduced.size() < total)
    reduced.resize(total);
  accumulators = reduced.data();
  for (size_t q = 0; q < program.reductions.size(); ++q) {
    float identity = 0;
    if (program.reductions[q].kind == ReductionCode::Max)
      identity = -std::numeric_limits<float>::infinity();
    else if (program.reductions[q].kind == ReductionCode::Min)
      identity = std::numeric_limits<float>::infinity();
    std::fill_n(accumulators + reductionAt[q], program.reductions[q].size,
                identity);
  }
}

void FusedRun::finish() {
  for (size_t q = 0; q < program.reductions.size(); ++q)
    std::memcpy(ctx.result<float>(program.firstReductionResult() + q),
                accumulators + reductionAt[q],
                static_cast<size_t>(program.reductions[q].size) *
                    sizeof(float));
}

Status FusedRun::run(int64_t rangeBegin, int64_t rangeEnd) {
  size_t steps = program.steps.size();
  size_t external = program.firstExternal();
  const float *product =
      program.head ? ctx.result<float>(0) : nullptr;
  auto fullSize = [&](size_t e) {
    return program.operands[e].inner == 1 &&
           program.operands[e].size == program.count;
  };
  for (int64_t begin = rangeBegin; begin < rangeEnd; begin += kTile) {
    int64_t n = std::min(kTile, rangeEnd - begin);
    for (size_t e = 0; e < program.operands.size(); ++e) {
      const float *data = ctx.operand<float>(external + e);
      if (fullSize(e)) {
        operandAt[e] = data + begin;
        continue;
      }
      if (program.operands[e].size == 1) {
        // One value for every element: its whole tile is filled once, for
        // every tile to come, whatever its length.
        if (!started)
          std::fill_n(operandTiles + e * kTile, kTile, data[0]);
        operandAt[e] = operandTiles + e * kTile;
        continue;
      }
      // Element i reads data[(i / inner) % size], walked without a
      // division per element.
      const FusedOperand &operand = program.operands[e];
      float *tile = operandTiles + e * kTile;
      int64_t index = (begin / operand.inner) % operand.size;
      if (operand.inner == 1) {
        // Consecutive elements read consecutive values (a bias or a norm's
        // scale along the last dimension): in place when the tile stays
        // within one pass over them, else copied a pass at a time (it was
        // a fill of one element per element).
        if (index + n <= operand.size) {
          operandAt[e] = data + index;
          continue;
        }
        for (int64_t j = 0; j < n;) {
          int64_t run = std::min(n - j, operand.size - index);
          std::memcpy(tile + j, data + index,
                      static_cast<size_t>(run) * sizeof(float));
          j += run;
          index = 0;
        }
        operandAt[e] = tile;
        continue;
      }
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
      if (started && uniform[s])
        continue;
      const FusedStep &step = program.steps[s];
      auto pointer = [&](const FusedRef &ref, int k) -> const float * {
        switch (ref.kind) {
        case FusedRefKind::Operand:
          return operandAt[ref.value];
        case FusedRefKind::Step:
          return directResult[ref.value] ? directResult[ref.value] + begin
                                         : stepTiles + ref.value * kTile;
        case FusedRefKind::Head:
          return product + begin;
        case FusedRefKind::Constant:
          break;
        }
        return constantTiles + constantTile[2 * s + k] * kTile;
      };
      const float *a = pointer(step.a, 0);
      const float *b = pointer(step.b, 1);
      float *out = directResult[s] ? directResult[s] + begin
                                   : stepTiles + s * kTile;
      // A uniform step's tile serves every later tile: computed whole.
      if (!runStep(step.op, a, b, out, uniform[s] ? kTile : n))
        return ctx.error("step " + std::to_string(s) + " is not fusible");
    }
    started = true;
    for (size_t q = 0; q < program.reductions.size(); ++q) {
      const FusedReduction &reduction = program.reductions[q];
      const float *values = directResult[reduction.step]
                                ? directResult[reduction.step] + begin
                                : stepTiles + reduction.step * kTile;
      float *acc = accumulators + reductionAt[q];
      switch (reduction.kind) {
      case ReductionCode::Max:
        reduceTile(reduction, values, begin, n, acc,
                   [](float a, float b) { return nanAwareMax(a, b); });
        break;
      case ReductionCode::Min:
        reduceTile(reduction, values, begin, n, acc,
                   [](float a, float b) { return nanAwareMin(a, b); });
        break;
      default:
        reduceTile(reduction, values, begin, n, acc,
                   [](float a, float b) { return a + b; });
        break;
      }
    }
    size_t first = program.firstElementResult();
    for (size_t r = 0; r < program.results.size(); ++r) {
      float *out = ctx.result<float>(first + r) + begin;
      const float *from = directResult[program.results[r]]
                              ? directResult[program.results[r]] + begin
                              : stepTiles + program.results[r] * kTile;
      if (out != from)
        std::memcpy(out, from, static_cast<size_t>(n) * sizeof(float));
    }
  }
  return Status::success();
}

} // namespace

Status runFused(const KernelContext &ctx) {
  Expected<FusedProgram> decoded = decodeFused(
      ctx.call.inst, ctx.call.operandTypes, ctx.call.resultTypes);
  if (!decoded)
    return Status::error(decoded.status().message());
  const FusedProgram &program = *decoded;
  FusedRun fused(ctx, program);
  fused.prepare();
  if (!program.head) {
    if (Status status = fused.run(0, program.count); !status)
      return status;
    fused.finish();
    return Status::success();
  }
  // The head: the einsum of the first two operands into result 0, the
  // chain run on each block of it as it completes.
  Instruction einsum;
  einsum.op = OpCode::Einsum;
  einsum.text = ctx.call.inst.text;
  std::vector<TensorType> operandTypes(ctx.call.operandTypes.begin(),
                                       ctx.call.operandTypes.begin() + 2);
  std::vector<const void *> operands(ctx.call.operands.begin(),
                                     ctx.call.operands.begin() + 2);
  std::vector<TensorType> resultTypes{ctx.call.resultTypes[0]};
  std::vector<void *> results{ctx.call.results[0]};
  KernelCall call{einsum, operandTypes, operands, resultTypes, results};
  ProductEpilogue epilogue = [&](int64_t begin, int64_t end) {
    return fused.run(begin, end);
  };
  if (Status status = runEinsum(KernelContext{call}, &epilogue); !status)
    return status;
  fused.finish();
  return Status::success();
}

} // namespace cpu
} // namespace partita

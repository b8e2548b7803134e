//===- CudaElementwise.cu - Elementwise ops and fused chains on a GPU -----===//
//
// The unary and binary elementwise ops (one thread per element) and fused
// chains of them (partita/Runtime/Program/Fused.h: one thread per element,
// the chain in registers), with the float math shared between the two. The
// CPU kernels are the reference (lib/Runtime/CPU/ElementwiseMath.h).
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "CudaElements.cuh"
#include "CudaOps.h"

#include "partita/Runtime/Program/Fused.h"

#include <cmath>
#include <type_traits>

namespace partita {

using namespace cuda_detail;

namespace {

/// True for the binary ops among the fusible ones.
__host__ __device__ inline bool isFusibleBinary(int op) {
  return op >= static_cast<int>(OpCode::Add) &&
         op <= static_cast<int>(OpCode::Pow);
}

/// The math of the floating-point unary ops, shared by the op-at-a-time
/// kernel and the fused one.
template <typename C> __device__ C floatUnary(int op, C x) {
  switch (static_cast<OpCode>(op)) {
  case OpCode::Neg: return -x;
  case OpCode::Abs: return x < 0 ? -x : x;
  case OpCode::Sign: return x > 0 ? C(1) : (x < 0 ? C(-1) : x);
  case OpCode::Exp: return exp(x);
  case OpCode::Log: return log(x);
  case OpCode::Log1p: return log1p(x);
  case OpCode::Tanh: return tanh(x);
  case OpCode::Logistic: return C(1) / (C(1) + exp(-x));
  case OpCode::Sqrt: return sqrt(x);
  case OpCode::Rsqrt: return C(1) / sqrt(x);
  case OpCode::Erf: return erf(x);
  case OpCode::Sin: return sin(x);
  case OpCode::Cos: return cos(x);
  case OpCode::Floor: return floor(x);
  default: return x;
  }
}

/// The math of the floating-point binary ops, shared likewise.
template <typename C> __device__ C floatBinary(int op, C x, C y) {
  switch (static_cast<OpCode>(op)) {
  case OpCode::Add: return x + y;
  case OpCode::Sub: return x - y;
  case OpCode::Mul: return x * y;
  case OpCode::Max: return (x > y || x != x) ? x : y;
  case OpCode::Min: return (x < y || x != x) ? x : y;
  case OpCode::Div: return x / y;
  case OpCode::Rem: return fmod(x, y);
  case OpCode::Pow: return pow(x, y);
  default: return x;
  }
}

template <typename T>
__global__ void unaryKernel(const typename T::Storage *in,
                            typename T::Storage *out, int64_t count, int op) {
  using C = typename T::Compute;
  PARTITA_GRID_LOOP(i, count) {
    C x = T::load(in[i]), y = x;
    if constexpr (std::is_floating_point<C>::value) {
      y = floatUnary<C>(op, x);
    } else {
      switch (static_cast<OpCode>(op)) {
      case OpCode::Neg: y = -x; break;
      case OpCode::Abs: y = x < 0 ? -x : x; break;
      case OpCode::Sign: y = x > 0 ? 1 : (x < 0 ? -1 : 0); break;
      case OpCode::Not: y = ~x; break;
      default: break;
      }
    }
    out[i] = T::store(y);
  }
}

/// StableHLO's shifts at the storage width S (the CPU's are in
/// Elementwise.cpp): the amount read as unsigned; at or past the width, 0
/// (left and logical) or every bit the sign (arithmetic).
template <typename S, typename C>
__device__ C integerShift(OpCode op, C x, C y) {
  using U = typename std::make_unsigned<S>::type;
  using Signed = typename std::make_signed<S>::type;
  U bits = static_cast<U>(static_cast<S>(x));
  U shift = static_cast<U>(static_cast<S>(y));
  bool past = shift >= sizeof(S) * 8;
  switch (op) {
  case OpCode::ShiftLeft:
    return past ? C(0)
                : static_cast<C>(static_cast<S>(static_cast<U>(bits << shift)));
  case OpCode::ShiftRightLogical:
    return past ? C(0)
                : static_cast<C>(static_cast<S>(static_cast<U>(bits >> shift)));
  default: {
    Signed value = static_cast<Signed>(bits);
    if (past)
      return value < 0 ? C(-1) : C(0);
    return static_cast<C>(static_cast<S>(value >> shift));
  }
  }
}

template <typename T>
__global__ void binaryKernel(const typename T::Storage *a,
                             const typename T::Storage *b,
                             typename T::Storage *out, int64_t count, int op) {
  using C = typename T::Compute;
  PARTITA_GRID_LOOP(i, count) {
    C x = T::load(a[i]), y = T::load(b[i]), z = x;
    if constexpr (std::is_floating_point<C>::value) {
      z = floatBinary<C>(op, x, y);
    } else {
      switch (static_cast<OpCode>(op)) {
      case OpCode::Add: z = x + y; break;
      case OpCode::Sub: z = x - y; break;
      case OpCode::Mul: z = x * y; break;
      case OpCode::Max: z = x > y ? x : y; break;
      case OpCode::Min: z = x < y ? x : y; break;
      case OpCode::Div: z = y == 0 ? 0 : x / y; break;
      case OpCode::Rem: z = y == 0 ? 0 : x % y; break;
      case OpCode::And: z = x & y; break;
      case OpCode::Or: z = x | y; break;
      case OpCode::Xor: z = x ^ y; break;
      case OpCode::ShiftLeft:
      case OpCode::ShiftRightLogical:
      case OpCode::ShiftRightArithmetic:
        z = integerShift<typename T::Storage>(static_cast<OpCode>(op), x, y);
        break;
      default: break;
      }
    }
    out[i] = T::store(z);
  }
}

/// A fused chain (Fused.h) as the kernel's argument.
struct FusedKernelProgram {
  int32_t steps, operands, results;
  struct Step {
    int32_t op;
    int32_t kind[2];
    int32_t index[2];
    float constant[2];
  } step[kMaxFusedSteps];
  const float *operand[kMaxFusedOperands];
  int64_t inner[kMaxFusedOperands], size[kMaxFusedOperands];
  float *result[kMaxFusedResults];
  int32_t resultStep[kMaxFusedResults];
};

/// One thread per element: every step in registers, then the results.
__global__ void fusedKernel(FusedKernelProgram p, int64_t count) {
  PARTITA_GRID_LOOP(i, count) {
    float value[kMaxFusedSteps];
    for (int s = 0; s < p.steps; ++s) {
      const FusedKernelProgram::Step &step = p.step[s];
      float in[2];
      for (int k = 0; k < 2; ++k) {
        int32_t index = step.index[k];
        if (step.kind[k] == static_cast<int32_t>(FusedRefKind::Operand))
          in[k] = p.operand[index][(i / p.inner[index]) % p.size[index]];
        else if (step.kind[k] == static_cast<int32_t>(FusedRefKind::Step))
          in[k] = value[index];
        else
          in[k] = step.constant[k];
      }
      value[s] = isFusibleBinary(step.op) ? floatBinary<float>(step.op, in[0], in[1])
                                          : floatUnary<float>(step.op, in[0]);
    }
    for (int r = 0; r < p.results; ++r)
      p.result[r][i] = value[p.resultStep[r]];
  }
}

} // namespace

Status runCudaElementwise(const CudaOp &op) {
  bool binary = opFamily(op.inst.op) == OpFamily::ElementwiseBinary;
  return withDType(op.out.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    using Storage = typename T::Storage;
    const auto *in = static_cast<const Storage *>(op.operands[0]);
    auto *out = static_cast<Storage *>(op.results[0]);
    int code = static_cast<int>(op.inst.op);
    if (op.count > 0 && binary)
      binaryKernel<T>
          <<<blocksFor(op.count), threadsPerBlock, 0, op.ctx.stream>>>(
              in, static_cast<const Storage *>(op.operands[1]), out, op.count,
              code);
    else if (op.count > 0)
      unaryKernel<T>
          <<<blocksFor(op.count), threadsPerBlock, 0, op.ctx.stream>>>(
              in, out, op.count, code);
    return launched(op.name.c_str());
  });
}

/// A fused chain: the head's einsum first (cuBLAS), then one kernel for
/// the chain, which also writes every reduced step to scratch memory, then
/// one reduction per reduced step (Fused.h).
Status runCudaFused(const CudaOp &op) {
  Expected<FusedProgram> decoded =
      decodeFused(op.inst, op.operandTypes, op.resultTypes);
  if (!decoded)
    return op.fail(decoded.status().message());
  const FusedProgram &program = *decoded;
  if (program.head) {
    Instruction einsum;
    einsum.op = OpCode::Einsum;
    einsum.text = op.inst.text;
    std::vector<TensorType> types(op.operandTypes.begin(),
                                  op.operandTypes.begin() + 2);
    std::vector<const void *> operands(op.operands.begin(),
                                       op.operands.begin() + 2);
    if (Status status = cudaEinsum(op.ctx, einsum, types, operands,
                                   op.resultTypes[0], op.results[0]);
        !status)
      return status;
  }
  FusedKernelProgram p{};
  p.steps = static_cast<int32_t>(program.steps.size());
  size_t externals = program.operands.size();
  p.operands = static_cast<int32_t>(externals + (program.head ? 1 : 0));
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const FusedStep &step = program.steps[s];
    p.step[s].op = static_cast<int32_t>(step.op);
    const FusedRef *refs[2] = {&step.a, &step.b};
    for (int k = 0; k < 2; ++k) {
      // The head's product is the operand after the external ones.
      bool head = refs[k]->kind == FusedRefKind::Head;
      bool constant = refs[k]->kind == FusedRefKind::Constant;
      p.step[s].kind[k] = static_cast<int32_t>(
          head ? FusedRefKind::Operand : refs[k]->kind);
      p.step[s].index[k] =
          constant ? 0
                   : static_cast<int32_t>(head ? externals : refs[k]->value);
      p.step[s].constant[k] = constant ? fusedConstant(*refs[k]) : 0.0f;
    }
  }
  for (size_t e = 0; e < externals; ++e) {
    p.operand[e] = static_cast<const float *>(
        op.operands[program.firstExternal() + e]);
    p.inner[e] = program.operands[e].inner;
    p.size[e] = program.operands[e].size;
  }
  if (program.head) {
    p.operand[externals] = static_cast<const float *>(op.results[0]);
    p.inner[externals] = 1;
    p.size[externals] = program.count;
  }
  size_t results = program.results.size();
  for (size_t r = 0; r < results; ++r) {
    p.result[r] =
        static_cast<float *>(op.results[program.firstElementResult() + r]);
    p.resultStep[r] = static_cast<int32_t>(program.results[r]);
  }
  std::vector<float *> reduced;
  for (size_t q = 0; q < program.reductions.size(); ++q) {
    auto *values = static_cast<float *>(op.ctx.scratch(
        op.ctx.backend, std::max<int64_t>(program.count, 1) * sizeof(float)));
    if (!values)
      return op.fail("no device memory for a fused reduction");
    p.result[results + q] = values;
    p.resultStep[results + q] =
        static_cast<int32_t>(program.reductions[q].step);
    reduced.push_back(values);
  }
  p.results = static_cast<int32_t>(results + reduced.size());
  if (program.count > 0)
    fusedKernel<<<blocksFor(program.count), threadsPerBlock, 0,
                  op.ctx.stream>>>(p, program.count);
  if (Status status = launched(op.name.c_str()); !status)
    return status;
  // Reduction q: its values seen as [N / (inner * size), size, inner],
  // reduced over the first and last dimensions.
  for (size_t q = 0; q < reduced.size(); ++q) {
    const FusedReduction &reduction = program.reductions[q];
    std::vector<int64_t> shape{
        program.count / (reduction.inner * reduction.size), reduction.size,
        reduction.inner};
    if (Status status = cudaReduce(
            op.ctx, static_cast<int>(reduction.kind), DType::F32, shape,
            {0, 2}, reduced[q],
            op.results[program.firstReductionResult() + q], reduction.size);
        !status)
      return status;
  }
  return Status::success();
}

} // namespace partita

//===- Kernels.cpp - Dispatch and the simplest CPU kernels ----------------===//
//
// runKernel checks what every op shares (arity, buffer presence, valid
// shapes) and dispatches to the kernel families; constant, iota, reshape
// and optimization_barrier live here, as do the shared helpers of
// KernelSupport.h.
//
//===----------------------------------------------------------------------===//
#include "KernelSupport.h"

#include <algorithm>
#include <cstring>

namespace partita {
namespace cpu {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t productOf(const std::vector<int64_t> &shape) {
  int64_t product = 1;
  for (int64_t size : shape)
    product *= size;
  return product;
}

std::string describe(const TensorType &type) {
  return std::string(dtypeName(type.dtype)) + formatShape(type.shape);
}

namespace {

template <typename Word>
void copyStridedTyped(char *dst, const std::vector<int64_t> &dstStrides,
                      const char *src, const std::vector<int64_t> &srcStrides,
                      const std::vector<int64_t> &shape) {
  Word *out = reinterpret_cast<Word *>(dst);
  const Word *in = reinterpret_cast<const Word *>(src);
  size_t rank = shape.size();
  if (rank == 0) {
    std::memcpy(out, in, sizeof(Word));
    return;
  }
  int64_t inner = shape[rank - 1];
  int64_t dstInner = dstStrides[rank - 1], srcInner = srcStrides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  int64_t dstOffset = 0, srcOffset = 0;
  while (true) {
    Word *row = out + dstOffset;
    const Word *from = in + srcOffset;
    if (dstInner == 1 && srcInner == 1) {
      std::memcpy(row, from, inner * sizeof(Word));
    } else if (dstInner == 1 && srcInner == 0) { // A broadcast row: a fill.
      Word value;
      std::memcpy(&value, from, sizeof(Word));
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(row + j, &value, sizeof(Word));
    } else
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(row + j * dstInner, from + j * srcInner, sizeof(Word));
    // Advance the odometer over the leading dimensions.
    int64_t dim = static_cast<int64_t>(rank) - 2;
    for (; dim >= 0; --dim) {
      ++index[dim];
      dstOffset += dstStrides[dim];
      srcOffset += srcStrides[dim];
      if (index[dim] < shape[dim])
        break;
      dstOffset -= dstStrides[dim] * shape[dim];
      srcOffset -= srcStrides[dim] * shape[dim];
      index[dim] = 0;
    }
    if (dim < 0)
      return;
  }
}

} // namespace

void copyStrided(void *dst, const std::vector<int64_t> &dstStrides,
                 const void *src, const std::vector<int64_t> &srcStrides,
                 const std::vector<int64_t> &shape, int64_t elementSize) {
  if (productOf(shape) == 0)
    return;
  char *out = static_cast<char *>(dst);
  const char *in = static_cast<const char *>(src);
  switch (elementSize) {
  case 1:
    return copyStridedTyped<uint8_t>(out, dstStrides, in, srcStrides, shape);
  case 2:
    return copyStridedTyped<uint16_t>(out, dstStrides, in, srcStrides, shape);
  case 4:
    return copyStridedTyped<uint32_t>(out, dstStrides, in, srcStrides, shape);
  default:
    return copyStridedTyped<uint64_t>(out, dstStrides, in, srcStrides, shape);
  }
}

int64_t loadIndex(DType dtype, const void *data, int64_t position) {
  if (dtype == DType::I32) {
    int32_t value;
    std::memcpy(&value, static_cast<const char *>(data) + 4 * position, 4);
    return value;
  }
  if (dtype == DType::I64) {
    int64_t value;
    std::memcpy(&value, static_cast<const char *>(data) + 8 * position, 8);
    return value;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Constant, iota, reshape, optimization_barrier
//===----------------------------------------------------------------------===//

namespace {

Status runConstant(const KernelContext &ctx) {
  const std::vector<HostArray> *pool = ctx.call.constantPool;
  bool splat = ctx.ints().size() == 2 && ctx.ints()[1] == 1;
  if (ctx.ints().size() != 1 && !splat)
    return ctx.error("expects ints = {constant pool index} or {index, 1} "
                     "(a splat)");
  int64_t index = ctx.ints()[0];
  if (!pool || index < 0 || index >= static_cast<int64_t>(pool->size()))
    return ctx.error("constant pool index " + std::to_string(index) +
                     " out of range (pool has " +
                     std::to_string(pool ? pool->size() : 0) + " entries)");
  const HostArray &value = (*pool)[index];
  const TensorType &type = ctx.resultType(0);
  if (splat) {
    if (value.dtype != type.dtype || value.numElements() != 1)
      return ctx.error("splat constant " + std::to_string(index) + " is " +
                       dtypeName(value.dtype) + formatShape(value.shape) +
                       ", not one element of the result's " + describe(type));
    int64_t size = dtypeSize(type.dtype), count = type.bytes() / size;
    auto *out = static_cast<uint8_t *>(ctx.result(0));
    // Typed stores for the common widths (a memcpy call per element was
    // most of the step's constants).
    auto fill = [&](auto tag) {
      using Word = decltype(tag);
      Word word;
      std::memcpy(&word, value.bytes.data(), sizeof(Word));
      std::fill_n(reinterpret_cast<Word *>(out), count, word);
    };
    if (size == 4)
      fill(uint32_t());
    else if (size == 2)
      fill(uint16_t());
    else if (size == 1)
      std::memset(out, value.bytes[0], static_cast<size_t>(count));
    else
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(out + i * size, value.bytes.data(), size);
    return Status::success();
  }
  if (value.dtype != type.dtype || value.shape != type.shape ||
      static_cast<int64_t>(value.bytes.size()) != type.bytes())
    return ctx.error("constant " + std::to_string(index) + " is " +
                     dtypeName(value.dtype) + formatShape(value.shape) +
                     " but the result is " + describe(type));
  if (!value.bytes.empty())
    std::memcpy(ctx.result(0), value.bytes.data(), value.bytes.size());
  return Status::success();
}

Status runIota(const KernelContext &ctx) {
  const TensorType &type = ctx.resultType(0);
  int64_t rank = static_cast<int64_t>(type.shape.size());
  if (Status s = ctx.checkDimInts(1, rank, "dim"); !s)
    return s;
  int64_t dim = ctx.ints()[0];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < rank; ++d)
    inner *= type.shape[d];
  int64_t size = type.shape[dim];
  int64_t total = type.numElements();
  return visitDType(type.dtype, [&](auto tag) -> Status {
    using Storage = decltype(tag);
    using Traits = ElementTraits<Storage>;
    if constexpr (Traits::isBool) {
      return ctx.unsupported(type.dtype);
    } else {
      // Blocks of `inner` equal values, `size` of them: no division per
      // element (two were most of a one-hot's cost). Every outer index
      // repeats the first one's block, so it is copied (along the last
      // dimension, a fill per element was most of the time).
      Storage *out = ctx.template result<Storage>(0);
      if (total == 0)
        return Status::success();
      int64_t block = inner * size;
      for (int64_t v = 0; v < size; ++v)
        std::fill_n(out + v * inner, inner,
                    Traits::store(static_cast<ComputeOf<Storage>>(v)));
      for (int64_t at = block; at < total; at += block)
        std::memcpy(out + at, out, static_cast<size_t>(block) * sizeof(Storage));
      return Status::success();
    }
  });
}

Status runCopyThrough(const KernelContext &ctx) {
  for (size_t i = 0; i < ctx.numOperands(); ++i) {
    const TensorType &in = ctx.operandType(i), &out = ctx.resultType(i);
    if (in.dtype != out.dtype || in.numElements() != out.numElements() ||
        (ctx.call.inst.op != OpCode::Reshape && in.shape != out.shape))
      return ctx.error("operand " + std::to_string(i) + " is " + describe(in) +
                       " but result is " + describe(out));
    if (ctx.result(i) != ctx.operand(i) && in.bytes() > 0)
      std::memmove(ctx.result(i), ctx.operand(i), in.bytes());
  }
  return Status::success();
}

/// The operand's bytes as the result's element type (same shape and
/// element size).
Status runBitcastConvert(const KernelContext &ctx) {
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  if (in.shape != out.shape || dtypeSize(in.dtype) != dtypeSize(out.dtype) ||
      in.dtype == DType::Bool || out.dtype == DType::Bool)
    return ctx.error("operand " + describe(in) + " and result " +
                     describe(out) + " differ in shape or element size");
  if (ctx.result(0) != ctx.operand(0) && in.bytes() > 0)
    std::memmove(ctx.result(0), ctx.operand(0), in.bytes());
  return Status::success();
}

/// True for the op codes a kernel runs (not collectives or loops).
bool hasKernel(OpCode op) {
  if (!isValidOpCode(static_cast<uint16_t>(op)))
    return false;
  OpFamily family = opFamily(op);
  return family != OpFamily::Collective && family != OpFamily::Control;
}

/// Runs the ops with a kernel of their own.
Status runDedicated(const KernelContext &ctx) {
  switch (ctx.call.inst.op) {
  case OpCode::Constant:
    return runConstant(ctx);
  case OpCode::Iota:
    return runIota(ctx);
  case OpCode::Compare:
    return runCompare(ctx);
  case OpCode::Select:
    return runSelect(ctx);
  case OpCode::Fused:
    return runFused(ctx);
  case OpCode::Convert:
    return runConvert(ctx);
  case OpCode::BitcastConvert:
    return runBitcastConvert(ctx);
  case OpCode::Einsum:
    return runEinsum(ctx);
  case OpCode::Reduce:
    return runReduce(ctx);
  case OpCode::Argmax:
    return runArgmax(ctx);
  case OpCode::TopK:
    return runTopK(ctx);
  case OpCode::Cumsum:
    return runCumsum(ctx);
  case OpCode::Broadcast:
    return runBroadcast(ctx);
  case OpCode::Transpose:
    return runTranspose(ctx);
  case OpCode::Slice:
    return runSlice(ctx);
  case OpCode::DynamicSlice:
    return runDynamicSlice(ctx);
  case OpCode::DynamicUpdateSlice:
    return runDynamicUpdateSlice(ctx);
  case OpCode::Concatenate:
    return runConcatenate(ctx);
  case OpCode::Pad:
    return runPad(ctx);
  case OpCode::Gather:
    return runGather(ctx);
  case OpCode::ScatterAdd:
    return runScatterAdd(ctx);
  default:
    return ctx.error("no kernel");
  }
}

} // namespace

Status runKernel(const KernelCall &call) {
  const Instruction &inst = call.inst;
  if (!hasKernel(inst.op))
    return Status::error("unknown op code " +
                         std::to_string(static_cast<int>(inst.op)));
  KernelContext ctx{call};
  if (call.operands.size() != call.operandTypes.size() ||
      call.results.size() != call.resultTypes.size())
    return ctx.error("buffer and type counts differ");
  OpArity arity = opArity(inst.op);
  if ((arity.operands >= 0 &&
       call.operands.size() != static_cast<size_t>(arity.operands)) ||
      (arity.results >= 0 &&
       call.results.size() != static_cast<size_t>(arity.results)))
    return ctx.error("expects " + std::to_string(arity.operands) +
                     " operand(s) and " + std::to_string(arity.results) +
                     " result(s), got " + std::to_string(call.operands.size()) +
                     " and " + std::to_string(call.results.size()));
  auto checkBuffer = [&](const TensorType &type, const void *data,
                         const char *what, size_t i) -> Status {
    Expected<int64_t> bytes = checkedNumBytes(type.dtype, type.shape);
    if (!bytes)
      return ctx.error(std::string(what) + " " + std::to_string(i) + ": " +
                       bytes.status().message());
    if (*bytes > 0 && !data)
      return ctx.error(std::string(what) + " " + std::to_string(i) +
                       " has no buffer");
    return Status::success();
  };
  for (size_t i = 0; i < call.operands.size(); ++i)
    if (Status s =
            checkBuffer(call.operandTypes[i], call.operands[i], "operand", i);
        !s)
      return s;
  for (size_t i = 0; i < call.results.size(); ++i)
    if (Status s =
            checkBuffer(call.resultTypes[i], call.results[i], "result", i);
        !s)
      return s;

  switch (opFamily(inst.op)) {
  case OpFamily::Dedicated:
    return runDedicated(ctx);
  case OpFamily::ElementwiseUnary:
    return runElementwiseUnary(ctx);
  case OpFamily::ElementwiseBinary:
    return runElementwiseBinary(ctx);
  case OpFamily::Copy:
    if (call.operands.size() != call.results.size())
      return ctx.error("expects as many results as operands");
    return runCopyThrough(ctx);
  case OpFamily::Collective:
  case OpFamily::Control:
    break;
  }
  return ctx.error("no kernel");
}

Status runKernel(const Instruction &inst,
                 const std::vector<TensorType> &operandTypes,
                 const std::vector<const void *> &operands,
                 const std::vector<TensorType> &resultTypes,
                 const std::vector<void *> &results,
                 const std::vector<HostArray> *constantPool) {
  KernelCall call{inst,        operandTypes, operands,
                  resultTypes, results,      constantPool};
  return runKernel(call);
}

} // namespace cpu
} // namespace partita

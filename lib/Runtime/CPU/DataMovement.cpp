//===- DataMovement.cpp - Broadcast, transpose, slices, concat, pad -------===//
//
// Ops that move elements without arithmetic. Each is one or more strided
// copies (copyStrided) with strides derived from the attributes, so they
// work on raw element bytes and every dtype.
//
//===----------------------------------------------------------------------===//
#include "KernelSupport.h"

#include <algorithm>

namespace partita {
namespace cpu {
namespace {

Status checkSameDType(const KernelContext &ctx, const TensorType &in,
                      const TensorType &out) {
  if (in.dtype != out.dtype)
    return ctx.error("operand " + describe(in) + " and result " +
                     describe(out) + " differ in element type");
  return Status::success();
}

std::string formatList(const std::vector<int64_t> &values) {
  return formatShape(values);
}

} // namespace

Status runBroadcast(const KernelContext &ctx) {
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  if (Status s = checkSameDType(ctx, in, out); !s)
    return s;
  const std::vector<int64_t> &dims = ctx.ints();
  size_t inRank = in.shape.size(), outRank = out.shape.size();
  if (dims.size() != inRank)
    return ctx.error("expects one result dimension per operand dimension, "
                     "got " +
                     formatList(dims));
  std::vector<int64_t> inStrides = rowMajorStrides(in.shape);
  std::vector<int64_t> srcStrides(outRank, 0);
  for (size_t i = 0; i < inRank; ++i) {
    int64_t target = dims[i];
    if (target < 0 || target >= static_cast<int64_t>(outRank) ||
        (i > 0 && target <= dims[i - 1]))
      return ctx.error("dims " + formatList(dims) +
                       " must be strictly increasing and below the result "
                       "rank " +
                       std::to_string(outRank));
    if (in.shape[i] != 1 && in.shape[i] != out.shape[target])
      return ctx.error("operand dimension " + std::to_string(i) + " of " +
                       describe(in) + " cannot expand to result dimension " +
                       std::to_string(target) + " of " + describe(out));
    srcStrides[target] = in.shape[i] == 1 ? 0 : inStrides[i];
  }
  copyStrided(ctx.result(0), rowMajorStrides(out.shape), ctx.operand(0),
              srcStrides, out.shape, dtypeSize(in.dtype));
  return Status::success();
}

Status runTranspose(const KernelContext &ctx) {
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  if (Status s = checkSameDType(ctx, in, out); !s)
    return s;
  const std::vector<int64_t> &perm = ctx.ints();
  size_t rank = in.shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank && out.shape.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    valid = perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank) &&
            !seen[perm[i]] && out.shape[i] == in.shape[perm[i]];
    if (valid)
      seen[perm[i]] = true;
  }
  if (!valid)
    return ctx.error("perm " + formatList(perm) + " does not map " +
                     describe(in) + " to " + describe(out));
  std::vector<int64_t> inStrides = rowMajorStrides(in.shape);
  std::vector<int64_t> srcStrides(rank);
  for (size_t i = 0; i < rank; ++i)
    srcStrides[i] = inStrides[perm[i]];
  copyStrided(ctx.result(0), rowMajorStrides(out.shape), ctx.operand(0),
              srcStrides, out.shape, dtypeSize(in.dtype));
  return Status::success();
}

Status runSlice(const KernelContext &ctx) {
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  if (Status s = checkSameDType(ctx, in, out); !s)
    return s;
  size_t rank = in.shape.size();
  const std::vector<int64_t> &attrs = ctx.ints();
  if (attrs.size() != 3 * rank || out.shape.size() != rank)
    return ctx.error("expects ints = start..., limit..., stride... (3 x rank " +
                     std::to_string(rank) + ")");
  std::vector<int64_t> inStrides = rowMajorStrides(in.shape);
  std::vector<int64_t> srcStrides(rank);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t start = attrs[d], limit = attrs[rank + d],
            stride = attrs[2 * rank + d];
    if (start < 0 || start > limit || limit > in.shape[d] || stride < 1)
      return ctx.error("dimension " + std::to_string(d) + ": start " +
                       std::to_string(start) + ", limit " +
                       std::to_string(limit) + ", stride " +
                       std::to_string(stride) + " invalid for size " +
                       std::to_string(in.shape[d]));
    if (out.shape[d] != (limit - start + stride - 1) / stride)
      return ctx.error("result " + describe(out) +
                       " does not match the slice of dimension " +
                       std::to_string(d));
    offset += start * inStrides[d];
    srcStrides[d] = stride * inStrides[d];
  }
  int64_t elementSize = dtypeSize(in.dtype);
  copyStrided(ctx.result(0), rowMajorStrides(out.shape),
              ctx.operand<char>(0) + offset * elementSize, srcStrides,
              out.shape, elementSize);
  return Status::success();
}

namespace {

/// Reads the run-time start indices (operands first..first+rank) and clamps
/// each to [0, size - blockSize]. Returns the element offset of the block.
Status clampedBlockOffset(const KernelContext &ctx, size_t firstIndexOperand,
                          const std::vector<int64_t> &shape,
                          const std::vector<int64_t> &blockShape,
                          int64_t &offset) {
  size_t rank = shape.size();
  if (ctx.numOperands() != firstIndexOperand + rank)
    return ctx.error("expects one start index per dimension (" +
                     std::to_string(rank) + "), got " +
                     std::to_string(ctx.numOperands() - firstIndexOperand));
  std::vector<int64_t> strides = rowMajorStrides(shape);
  offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    const TensorType &indexType = ctx.operandType(firstIndexOperand + d);
    if ((indexType.dtype != DType::I32 && indexType.dtype != DType::I64) ||
        !indexType.shape.empty())
      return ctx.error("start index " + std::to_string(d) +
                       " must be a 0-d i32 or i64 tensor, got " +
                       describe(indexType));
    if (blockShape[d] < 0 || blockShape[d] > shape[d])
      return ctx.error("block " + formatShape(blockShape) +
                       " does not fit in " + formatShape(shape));
    int64_t start =
        loadIndex(indexType.dtype, ctx.operand(firstIndexOperand + d), 0);
    start = std::min(std::max<int64_t>(start, 0), shape[d] - blockShape[d]);
    offset += start * strides[d];
  }
  return Status::success();
}

} // namespace

Status runDynamicSlice(const KernelContext &ctx) {
  if (ctx.numOperands() < 1)
    return ctx.error("expects an operand and its start indices");
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  if (Status s = checkSameDType(ctx, in, out); !s)
    return s;
  const std::vector<int64_t> &sizes = ctx.ints();
  if (sizes.size() != in.shape.size() || out.shape != sizes)
    return ctx.error("sizes " + formatList(sizes) +
                     " must have one entry per dimension of " + describe(in) +
                     " and equal the result shape " + formatShape(out.shape));
  int64_t offset = 0;
  if (Status s = clampedBlockOffset(ctx, 1, in.shape, sizes, offset); !s)
    return s;
  int64_t elementSize = dtypeSize(in.dtype);
  copyStrided(ctx.result(0), rowMajorStrides(out.shape),
              ctx.operand<char>(0) + offset * elementSize,
              rowMajorStrides(in.shape), out.shape, elementSize);
  return Status::success();
}

Status runDynamicUpdateSlice(const KernelContext &ctx) {
  if (ctx.numOperands() < 2)
    return ctx.error("expects an operand, an update and start indices");
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  const TensorType &update = ctx.operandType(1);
  if (in.dtype != out.dtype || in.shape != out.shape ||
      update.dtype != in.dtype || update.shape.size() != in.shape.size())
    return ctx.error("operand " + describe(in) + ", update " +
                     describe(update) + " and result " + describe(out) +
                     " do not match");
  int64_t offset = 0;
  if (Status s = clampedBlockOffset(ctx, 2, in.shape, update.shape, offset); !s)
    return s;
  if (ctx.result(0) != ctx.operand(0) && in.bytes() > 0)
    std::memmove(ctx.result(0), ctx.operand(0), in.bytes());
  int64_t elementSize = dtypeSize(in.dtype);
  copyStrided(ctx.result<char>(0) + offset * elementSize,
              rowMajorStrides(in.shape), ctx.operand(1),
              rowMajorStrides(update.shape), update.shape, elementSize);
  return Status::success();
}

Status runConcatenate(const KernelContext &ctx) {
  const TensorType &out = ctx.resultType(0);
  int64_t rank = static_cast<int64_t>(out.shape.size());
  if (ctx.numOperands() == 0)
    return ctx.error("expects at least one operand");
  if (Status s = ctx.checkDimInts(1, rank, "dim"); !s)
    return s;
  int64_t dim = ctx.ints()[0];
  int64_t total = 0;
  for (size_t i = 0; i < ctx.numOperands(); ++i) {
    const TensorType &in = ctx.operandType(i);
    bool matches =
        in.dtype == out.dtype && static_cast<int64_t>(in.shape.size()) == rank;
    for (int64_t d = 0; matches && d < rank; ++d)
      matches = d == dim || in.shape[d] == out.shape[d];
    if (!matches)
      return ctx.error("operand " + std::to_string(i) + " " + describe(in) +
                       " does not fit result " + describe(out) +
                       " along dimension " + std::to_string(dim));
    total += in.shape[dim];
  }
  if (total != out.shape[dim])
    return ctx.error("operand sizes along dimension " + std::to_string(dim) +
                     " add up to " + std::to_string(total) + ", result has " +
                     std::to_string(out.shape[dim]));
  std::vector<int64_t> outStrides = rowMajorStrides(out.shape);
  int64_t elementSize = dtypeSize(out.dtype);
  int64_t position = 0;
  for (size_t i = 0; i < ctx.numOperands(); ++i) {
    const TensorType &in = ctx.operandType(i);
    copyStrided(ctx.result<char>(0) + position * outStrides[dim] * elementSize,
                outStrides, ctx.operand(i), rowMajorStrides(in.shape), in.shape,
                elementSize);
    position += in.shape[dim];
  }
  return Status::success();
}

Status runPad(const KernelContext &ctx) {
  const TensorType &in = ctx.operandType(0), &out = ctx.resultType(0);
  const TensorType &padType = ctx.operandType(1);
  size_t rank = in.shape.size();
  if (Status s = checkSameDType(ctx, in, out); !s)
    return s;
  if (padType.dtype != in.dtype || !padType.shape.empty())
    return ctx.error("padding value must be a 0-d " +
                     std::string(dtypeName(in.dtype)) + " tensor, got " +
                     describe(padType));
  const std::vector<int64_t> &attrs = ctx.ints();
  if (attrs.size() != 2 * rank || out.shape.size() != rank)
    return ctx.error("expects ints = low..., high... (2 x rank " +
                     std::to_string(rank) + ")");
  std::vector<int64_t> outStrides = rowMajorStrides(out.shape);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t low = attrs[d], high = attrs[rank + d];
    if (low < 0 || high < 0 || out.shape[d] != low + in.shape[d] + high)
      return ctx.error("low " + std::to_string(low) + " and high " +
                       std::to_string(high) + " do not pad dimension " +
                       std::to_string(d) + " of " + describe(in) + " to " +
                       describe(out));
    offset += low * outStrides[d];
  }
  int64_t elementSize = dtypeSize(in.dtype);
  char *result = ctx.result<char>(0);
  const char *padding = ctx.operand<char>(1);
  int64_t count = out.numElements();
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(result + i * elementSize, padding, elementSize);
  copyStrided(result + offset * elementSize, outStrides, ctx.operand(0),
              rowMajorStrides(in.shape), in.shape, elementSize);
  return Status::success();
}

} // namespace cpu
} // namespace partita

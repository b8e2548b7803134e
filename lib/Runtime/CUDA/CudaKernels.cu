//===- CudaKernels.cu - The runtime's tensor ops on a GPU -----------------===//
//
// One entry point, runCudaKernel(), runs an Instruction on device buffers on
// the backend's stream: it dispatches on the op's family (Ops.def) to one
// launcher per family or op. Semantics are the CPU kernels' (the reference):
// bf16/f16 compute in f32 and round to nearest even on store, integers in
// 64 bits, booleans as bytes 0/1. Data movement is one strided-copy kernel
// evaluating DeviceMath.h's views; einsum is cuBLAS (CudaEinsum.cu);
// elementwise ops and fused chains are CudaElementwise.cu's; the rest are
// simple one-thread-per-output kernels (deterministic: no atomics).
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "CudaOps.h"
#include "CudaElements.cuh"

#include "partita/Runtime/Program/DeviceMath.h"
#include "partita/Runtime/Program/Instruction.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace partita {

using device::StridedView;
using namespace cuda_detail;

namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

template <int Bytes>
__global__ void stridedCopyKernel(const Chunk<Bytes> *source,
                                  Chunk<Bytes> *destination, StridedView view,
                                  int64_t count) {
  PARTITA_GRID_LOOP(i, count)
  destination[i] = source[device::sourceOffset(view, i)];
}

/// Scatters a contiguous block into a strided place of the destination.
template <int Bytes>
__global__ void placeKernel(const Chunk<Bytes> *block, Chunk<Bytes> *destination,
                            StridedView place, int64_t count) {
  PARTITA_GRID_LOOP(i, count)
  destination[device::sourceOffset(place, i)] = block[i];
}

template <int Bytes>
__global__ void fillKernel(const Chunk<Bytes> *value, Chunk<Bytes> *out,
                           int64_t count) {
  PARTITA_GRID_LOOP(i, count)
  out[i] = *value;
}

template <typename T>
__global__ void compareKernel(const typename T::Storage *a,
                              const typename T::Storage *b, uint8_t *out,
                              int64_t count, int direction) {
  PARTITA_GRID_LOOP(i, count) {
    auto x = T::load(a[i]), y = T::load(b[i]);
    bool r = false;
    switch (static_cast<CompareCode>(direction)) {
    case CompareCode::EQ: r = x == y; break;
    case CompareCode::NE: r = x != y; break;
    case CompareCode::LT: r = x < y; break;
    case CompareCode::LE: r = x <= y; break;
    case CompareCode::GT: r = x > y; break;
    case CompareCode::GE: r = x >= y; break;
    }
    out[i] = r;
  }
}

template <int Bytes>
__global__ void selectKernel(const uint8_t *predicate, const Chunk<Bytes> *a,
                             const Chunk<Bytes> *b, Chunk<Bytes> *out,
                             int64_t count) {
  PARTITA_GRID_LOOP(i, count)
  out[i] = predicate[i] ? a[i] : b[i];
}

template <typename From, typename To>
__global__ void convertKernel(const typename From::Storage *in,
                              typename To::Storage *out, int64_t count) {
  PARTITA_GRID_LOOP(i, count) {
    auto x = From::load(in[i]);
    using C = typename To::Compute;
    if constexpr (std::is_floating_point<decltype(x)>::value &&
                  !std::is_floating_point<C>::value) {
      // Float to integer truncates toward zero; NaN becomes 0.
      out[i] = To::store(x != x ? C(0) : static_cast<C>(trunc(x)));
    } else {
      out[i] = To::store(static_cast<C>(x));
    }
  }
}

template <typename T>
__global__ void iotaKernel(typename T::Storage *out, StridedView shape,
                           int dim, int64_t count) {
  PARTITA_GRID_LOOP(i, count) {
    int64_t rest = i, coordinate = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      if (d == dim)
        coordinate = rest % shape.shape[d];
      rest /= shape.shape[d];
    }
    out[i] = T::store(static_cast<typename T::Compute>(coordinate));
  }
}

template <typename T>
__global__ void reduceKernel(const typename T::Storage *in,
                             typename T::Storage *out, StridedView kept,
                             StridedView reduced, int kind, int64_t count) {
  using C = typename T::Compute;
  int64_t inner = device::viewElements(reduced);
  PARTITA_GRID_LOOP(i, count) {
    int64_t base = device::sourceOffset(kept, i);
    C acc = inner > 0 ? T::load(in[base + device::sourceOffset(reduced, 0)])
                      : C(0);
    if (inner == 0) {
      if (static_cast<ReductionCode>(kind) == ReductionCode::Max)
        acc = std::is_floating_point<C>::value ? C(-INFINITY) : C(0);
      if (static_cast<ReductionCode>(kind) == ReductionCode::Min)
        acc = std::is_floating_point<C>::value ? C(INFINITY) : C(0);
    }
    for (int64_t j = 1; j < inner; ++j) {
      C x = T::load(in[base + device::sourceOffset(reduced, j)]);
      switch (static_cast<ReductionCode>(kind)) {
      case ReductionCode::Sum: acc = acc + x; break;
      case ReductionCode::Max: acc = (acc > x || acc != acc) ? acc : x; break;
      case ReductionCode::Min: acc = (acc < x || acc != acc) ? acc : x; break;
      case ReductionCode::And:
        if constexpr (!std::is_floating_point<C>::value)
          acc = acc & x;
        break;
      case ReductionCode::Or:
        if constexpr (!std::is_floating_point<C>::value)
          acc = acc | x;
        break;
      }
    }
    out[i] = T::store(acc);
  }
}

/// One thread per line along `dim` (lines: `outer` x `inner`).
template <typename T>
__global__ void cumsumKernel(const typename T::Storage *in,
                             typename T::Storage *out, int64_t outer,
                             int64_t length, int64_t inner, bool reverse) {
  PARTITA_GRID_LOOP(line, outer * inner) {
    int64_t o = line / inner, n = line % inner;
    typename T::Compute acc = 0;
    for (int64_t j = 0; j < length; ++j) {
      int64_t k = reverse ? length - 1 - j : j;
      int64_t at = (o * length + k) * inner + n;
      acc = acc + T::load(in[at]);
      out[at] = T::store(acc);
    }
  }
}

/// argmax along `dim`: first index of the largest value (NaN wins).
template <typename T, typename Index>
__global__ void argmaxKernel(const typename T::Storage *in, Index *out,
                             int64_t outer, int64_t length, int64_t inner) {
  PARTITA_GRID_LOOP(line, outer * inner) {
    int64_t o = line / inner, n = line % inner;
    auto best = T::load(in[(o * length) * inner + n]);
    int64_t bestIndex = 0;
    for (int64_t j = 1; j < length && best == best; ++j) {
      auto x = T::load(in[(o * length + j) * inner + n]);
      if (x > best || x != x) {
        best = x;
        bestIndex = j;
      }
    }
    out[line] = static_cast<Index>(bestIndex);
  }
}

/// top_k along `dim`: k passes of selection per line, largest first, ties
/// to the lower index.
template <typename T, typename Index>
__global__ void topKKernel(const typename T::Storage *in,
                           typename T::Storage *values, Index *indices,
                           int64_t outer, int64_t length, int64_t inner,
                           int64_t k) {
  PARTITA_GRID_LOOP(line, outer * inner) {
    int64_t o = line / inner, n = line % inner;
    for (int64_t r = 0; r < k; ++r) {
      int64_t best = -1;
      for (int64_t j = 0; j < length; ++j) {
        bool taken = false;
        for (int64_t q = 0; q < r; ++q)
          taken |= indices[(o * k + q) * inner + n] == static_cast<Index>(j);
        if (taken)
          continue;
        auto x = T::load(in[(o * length + j) * inner + n]);
        if (best < 0 || x > T::load(in[(o * length + best) * inner + n]))
          best = j;
      }
      indices[(o * k + r) * inner + n] = static_cast<Index>(best);
      values[(o * k + r) * inner + n] = in[(o * length + best) * inner + n];
    }
  }
}

template <typename Index>
__device__ int64_t clampIndex(Index value, int64_t rows) {
  int64_t v = static_cast<int64_t>(value);
  return v < 0 ? 0 : (v >= rows ? rows - 1 : v);
}

/// result[i, r] = table[clamp(indices[i]), r]
template <int Bytes, typename Index>
__global__ void gatherKernel(const Chunk<Bytes> *table, const Index *indices,
                             Chunk<Bytes> *out, int64_t lookups, int64_t rows,
                             int64_t rowElements) {
  PARTITA_GRID_LOOP(i, lookups * rowElements) {
    int64_t lookup = i / rowElements, element = i % rowElements;
    out[i] = table[clampIndex(indices[lookup], rows) * rowElements + element];
  }
}

/// table[r, e] += sum of updates[i, e] over i with clamp(indices[i]) == r,
/// in index order (deterministic).
template <typename T, typename Index>
__global__ void scatterAddKernel(const typename T::Storage *table,
                                 const Index *indices,
                                 const typename T::Storage *updates,
                                 typename T::Storage *out, int64_t lookups,
                                 int64_t rows, int64_t rowElements) {
  PARTITA_GRID_LOOP(i, rows * rowElements) {
    int64_t row = i / rowElements, element = i % rowElements;
    auto acc = T::load(table[i]);
    for (int64_t l = 0; l < lookups; ++l)
      if (clampIndex(indices[l], rows) == row)
        acc = acc + T::load(updates[l * rowElements + element]);
    out[i] = T::store(acc);
  }
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//


Status stridedCopy(const CudaContext &ctx, const void *source,
                   void *destination, const StridedView &view,
                   int64_t elementSize) {
  int64_t count = device::viewElements(view);
  if (count == 0)
    return Status::success();
  switch (elementSize) {
#define PARTITA_COPY_CASE(B)                                                   \
  case B:                                                                      \
    stridedCopyKernel<B><<<blocksFor(count), threadsPerBlock, 0, ctx.stream>>>( \
        static_cast<const Chunk<B> *>(source),                                 \
        static_cast<Chunk<B> *>(destination), view, count);                    \
    return launched("strided copy");
    PARTITA_COPY_CASE(1)
    PARTITA_COPY_CASE(2)
    PARTITA_COPY_CASE(4)
    PARTITA_COPY_CASE(8)
#undef PARTITA_COPY_CASE
  }
  return Status::error("strided copy of " + std::to_string(elementSize) +
                       "-byte elements");
}

Status place(const CudaContext &ctx, const void *block, void *destination,
             const StridedView &view, int64_t elementSize) {
  int64_t count = device::viewElements(view);
  if (count == 0)
    return Status::success();
  switch (elementSize) {
#define PARTITA_PLACE_CASE(B)                                                  \
  case B:                                                                      \
    placeKernel<B><<<blocksFor(count), threadsPerBlock, 0, ctx.stream>>>(      \
        static_cast<const Chunk<B> *>(block),                                  \
        static_cast<Chunk<B> *>(destination), view, count);                    \
    return launched("place");
    PARTITA_PLACE_CASE(1)
    PARTITA_PLACE_CASE(2)
    PARTITA_PLACE_CASE(4)
    PARTITA_PLACE_CASE(8)
#undef PARTITA_PLACE_CASE
  }
  return Status::error("placement of " + std::to_string(elementSize) +
                       "-byte elements");
}

Status fill(const CudaContext &ctx, const void *scalar, void *out,
            int64_t count, int64_t elementSize) {
  if (count == 0)
    return Status::success();
  switch (elementSize) {
#define PARTITA_FILL_CASE(B)                                                   \
  case B:                                                                      \
    fillKernel<B><<<blocksFor(count), threadsPerBlock, 0, ctx.stream>>>(       \
        static_cast<const Chunk<B> *>(scalar), static_cast<Chunk<B> *>(out),   \
        count);                                                                \
    return launched("fill");
    PARTITA_FILL_CASE(1)
    PARTITA_FILL_CASE(2)
    PARTITA_FILL_CASE(4)
    PARTITA_FILL_CASE(8)
#undef PARTITA_FILL_CASE
  }
  return Status::error("fill of " + std::to_string(elementSize) +
                       "-byte elements");
}

/// outer x length x inner around `dim`.
void lineShape(const std::vector<int64_t> &shape, int64_t dim, int64_t &outer,
               int64_t &length, int64_t &inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  length = shape[dim];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

Status readIndex(const CudaContext &ctx, const void *scalar, DType dtype,
                 int64_t &value) {
  PARTITA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  if (dtype == DType::I32) {
    int32_t v = 0;
    PARTITA_CUDA_CHECK(cudaMemcpy(&v, scalar, 4, cudaMemcpyDeviceToHost));
    value = v;
  } else {
    PARTITA_CUDA_CHECK(cudaMemcpy(&value, scalar, 8, cudaMemcpyDeviceToHost));
  }
  return Status::success();
}

} // namespace

Status cudaStridedCopy(cudaStream_t stream, const void *source,
                       void *destination, const StridedView &view,
                       int64_t elementSize) {
  CudaContext ctx;
  ctx.stream = stream;
  return stridedCopy(ctx, source, destination, view, elementSize);
}

Status cudaPlace(cudaStream_t stream, const void *block, void *destination,
                 const StridedView &view, int64_t elementSize) {
  CudaContext ctx;
  ctx.stream = stream;
  return place(ctx, block, destination, view, elementSize);
}

namespace {


Status runConstant(const CudaOp &op) {
  const Instruction &inst = op.inst;
  const CudaContext &ctx = op.ctx;
  bool splat = inst.ints.size() == 2 && inst.ints[1] == 1;
  if ((inst.ints.size() != 1 && !splat) || inst.ints[0] < 0 ||
      inst.ints[0] >= static_cast<int64_t>(op.constants.size()))
    return op.fail("bad constant index");
  const HostArray &value = op.constants[inst.ints[0]];
  if (splat) {
    // One element up, then a fill on the device.
    int64_t size = dtypeSize(op.out.dtype);
    if (value.dtype != op.out.dtype || value.numElements() != 1)
      return op.fail("a splat constant is one element of the result's type");
    if (op.count == 0)
      return Status::success();
    void *scalar = ctx.scratch(ctx.backend, size);
    if (!scalar)
      return op.fail("no device memory for a splat constant");
    PARTITA_CUDA_CHECK(cudaMemcpyAsync(scalar, value.bytes.data(), size,
                                       cudaMemcpyHostToDevice, ctx.stream));
    return fill(ctx, scalar, op.results[0], op.count, size);
  }
  if (static_cast<int64_t>(value.bytes.size()) != op.out.bytes())
    return op.fail("the constant's size differs from the result's");
  if (op.count > 0)
    PARTITA_CUDA_CHECK(cudaMemcpyAsync(op.results[0], value.bytes.data(),
                                       op.out.bytes(), cudaMemcpyHostToDevice,
                                       ctx.stream));
  // The pool outlives the program, but make the copy complete before the
  // host may reuse anything.
  PARTITA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return Status::success();
}

Status runIota(const CudaOp &op) {
  const Instruction &inst = op.inst;
  if (inst.ints.size() != 1 || op.out.shape.size() > device::maxRank)
    return op.fail("bad attributes");
  StridedView shape;
  shape.rank = static_cast<int>(op.out.shape.size());
  for (size_t d = 0; d < op.out.shape.size(); ++d)
    shape.shape[d] = op.out.shape[d];
  return withDType(op.out.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (op.count > 0)
      iotaKernel<T><<<blocksFor(op.count), threadsPerBlock, 0, op.ctx.stream>>>(
          static_cast<typename T::Storage *>(op.results[0]), shape,
          static_cast<int>(inst.ints[0]), op.count);
    return launched("iota");
  });
}

/// Both elementwise families: one kernel per family selects the op.
Status runCompare(const CudaOp &op) {
  if (op.inst.ints.size() != 1)
    return op.fail("bad attributes");
  return withDType(op.operandTypes[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (op.count > 0)
      compareKernel<T>
          <<<blocksFor(op.count), threadsPerBlock, 0, op.ctx.stream>>>(
              static_cast<const typename T::Storage *>(op.operands[0]),
              static_cast<const typename T::Storage *>(op.operands[1]),
              static_cast<uint8_t *>(op.results[0]), op.count,
              static_cast<int>(op.inst.ints[0]));
    return launched("compare");
  });
}

Status runSelect(const CudaOp &op) {
  if (op.count == 0)
    return Status::success();
  int64_t count = op.count;
  switch (op.elementSize) {
#define PARTITA_SELECT_CASE(B)                                                 \
  case B:                                                                      \
    selectKernel<B><<<blocksFor(count), threadsPerBlock, 0, op.ctx.stream>>>(  \
        static_cast<const uint8_t *>(op.operands[0]),                          \
        static_cast<const Chunk<B> *>(op.operands[1]),                         \
        static_cast<const Chunk<B> *>(op.operands[2]),                         \
        static_cast<Chunk<B> *>(op.results[0]), count);                        \
    return launched("select");
    PARTITA_SELECT_CASE(1)
    PARTITA_SELECT_CASE(2)
    PARTITA_SELECT_CASE(4)
    PARTITA_SELECT_CASE(8)
#undef PARTITA_SELECT_CASE
  }
  return op.fail("bad element size");
}

Status runConvert(const CudaOp &op) {
  if (op.operandTypes[0].dtype == op.out.dtype)
    return op.sameBytes();
  return withDType(op.operandTypes[0].dtype, [&](auto from) -> Status {
    return withDType(op.out.dtype, [&](auto to) -> Status {
      using From = decltype(from);
      using To = decltype(to);
      if (op.count > 0)
        convertKernel<From, To>
            <<<blocksFor(op.count), threadsPerBlock, 0, op.ctx.stream>>>(
                static_cast<const typename From::Storage *>(op.operands[0]),
                static_cast<typename To::Storage *>(op.results[0]), op.count);
      return launched("convert");
    });
  });
}

/// reshape and optimization_barrier: every result is its operand's bytes.
Status runCopy(const CudaOp &op) {
  for (size_t i = 0; i < op.operands.size() && i < op.results.size(); ++i)
    if (op.operands[i] != op.results[i] && op.resultTypes[i].bytes() > 0)
      PARTITA_CUDA_CHECK(cudaMemcpyAsync(
          op.results[i], op.operands[i], op.resultTypes[i].bytes(),
          cudaMemcpyDeviceToDevice, op.ctx.stream));
  return Status::success();
}

/// broadcast, transpose and slice: one strided copy of operand 0.
Status runViewCopy(const CudaOp &op) {
  const Instruction &inst = op.inst;
  const std::vector<int64_t> &inShape = op.operandTypes[0].shape;
  StridedView view;
  switch (inst.op) {
  case OpCode::Broadcast:
    if (!device::broadcastView(inShape, op.out.shape, inst.ints, view))
      return op.fail("bad dims");
    break;
  case OpCode::Transpose:
    if (!device::transposeView(inShape, inst.ints, view))
      return op.fail("bad permutation");
    break;
  default: { // OpCode::Slice
    size_t rank = op.out.shape.size();
    if (inst.ints.size() != 3 * rank)
      return op.fail("bad attributes");
    std::vector<int64_t> start(inst.ints.begin(), inst.ints.begin() + rank);
    std::vector<int64_t> stride(inst.ints.begin() + 2 * rank, inst.ints.end());
    if (!device::sliceView(inShape, start, stride, op.out.shape, view))
      return op.fail("bad bounds");
    break;
  }
  }
  return stridedCopy(op.ctx, op.operands[0], op.results[0], view,
                     op.elementSize);
}

Status runConcatenate(const CudaOp &op) {
  const Instruction &inst = op.inst;
  if (inst.ints.size() != 1)
    return op.fail("bad attributes");
  std::vector<int64_t> offset(op.out.shape.size(), 0);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    StridedView view;
    if (!device::placementView(op.out.shape, op.operandTypes[i].shape, offset,
                               view))
      return op.fail("operands do not fit the result");
    if (Status status =
            place(op.ctx, op.operands[i], op.results[0], view, op.elementSize);
        !status)
      return status;
    offset[inst.ints[0]] += op.operandTypes[i].shape[inst.ints[0]];
  }
  return Status::success();
}

Status runPad(const CudaOp &op) {
  const Instruction &inst = op.inst;
  size_t rank = op.out.shape.size();
  if (inst.ints.size() != 2 * rank)
    return op.fail("bad attributes");
  if (Status status =
          fill(op.ctx, op.operands[1], op.results[0], op.count, op.elementSize);
      !status)
    return status;
  std::vector<int64_t> low(inst.ints.begin(), inst.ints.begin() + rank);
  StridedView view;
  if (!device::placementView(op.out.shape, op.operandTypes[0].shape, low, view))
    return op.fail("bad padding");
  return place(op.ctx, op.operands[0], op.results[0], view, op.elementSize);
}

/// dynamic_slice and dynamic_update_slice: start indices read back from the
/// device, then a strided copy or a placement.
Status runDynamicSlice(const CudaOp &op) {
  const Instruction &inst = op.inst;
  bool update = inst.op == OpCode::DynamicUpdateSlice;
  const TensorType &operand = op.operandTypes[0];
  size_t first = update ? 2 : 1;
  std::vector<int64_t> sizes = update ? op.operandTypes[1].shape : inst.ints;
  if (op.operands.size() != first + operand.shape.size() ||
      sizes.size() != operand.shape.size())
    return op.fail("bad operands");
  std::vector<int64_t> start;
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    int64_t value = 0;
    if (Status status = readIndex(op.ctx, op.operands[first + d],
                                  op.operandTypes[first + d].dtype, value);
        !status)
      return status;
    // Clamped so the window stays inside (the dialect's rule).
    int64_t limit = operand.shape[d] - sizes[d];
    start.push_back(value < 0 ? 0 : (value > limit ? limit : value));
  }
  if (!update) {
    StridedView view;
    std::vector<int64_t> ones(start.size(), 1);
    if (!device::sliceView(operand.shape, start, ones, op.out.shape, view))
      return op.fail("bad window");
    return stridedCopy(op.ctx, op.operands[0], op.results[0], view,
                       op.elementSize);
  }
  if (Status status = op.sameBytes(); !status)
    return status;
  StridedView view;
  if (!device::placementView(op.out.shape, sizes, start, view))
    return op.fail("bad window");
  return place(op.ctx, op.operands[1], op.results[0], view, op.elementSize);
}

Status runReduce(const CudaOp &op) {
  const Instruction &inst = op.inst;
  if (inst.ints.empty())
    return op.fail("bad attributes");
  std::vector<int64_t> dims(inst.ints.begin() + 1, inst.ints.end());
  return cudaReduce(op.ctx, static_cast<int>(inst.ints[0]), op.out.dtype,
                    op.operandTypes[0].shape, dims, op.operands[0],
                    op.results[0], op.count);
}

Status runCumsum(const CudaOp &op) {
  const Instruction &inst = op.inst;
  if (inst.ints.size() != 2)
    return op.fail("bad attributes");
  int64_t outer, length, inner;
  lineShape(op.out.shape, inst.ints[0], outer, length, inner);
  return withDType(op.out.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (op.count > 0)
      cumsumKernel<T>
          <<<blocksFor(outer * inner), threadsPerBlock, 0, op.ctx.stream>>>(
              static_cast<const typename T::Storage *>(op.operands[0]),
              static_cast<typename T::Storage *>(op.results[0]), outer, length,
              inner, inst.ints[1] != 0);
    return launched("cumsum");
  });
}

/// argmax and top_k: one thread per line along the op's dim.
Status runArgmaxTopK(const CudaOp &op) {
  const Instruction &inst = op.inst;
  bool topK = inst.op == OpCode::TopK;
  if (inst.ints.size() != (topK ? 2u : 1u))
    return op.fail("bad attributes");
  int64_t outer, length, inner;
  lineShape(op.operandTypes[0].shape, inst.ints[0], outer, length, inner);
  DType indexType = op.resultTypes[topK ? 1 : 0].dtype;
  return withDType(op.operandTypes[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    auto run = [&](auto index) -> Status {
      using Index = decltype(index);
      if (outer * inner == 0)
        return Status::success();
      if (topK)
        topKKernel<T, Index>
            <<<blocksFor(outer * inner), threadsPerBlock, 0, op.ctx.stream>>>(
                static_cast<const typename T::Storage *>(op.operands[0]),
                static_cast<typename T::Storage *>(op.results[0]),
                static_cast<Index *>(op.results[1]), outer, length, inner,
                inst.ints[1]);
      else
        argmaxKernel<T, Index>
            <<<blocksFor(outer * inner), threadsPerBlock, 0, op.ctx.stream>>>(
                static_cast<const typename T::Storage *>(op.operands[0]),
                static_cast<Index *>(op.results[0]), outer, length, inner);
      return launched(op.name.c_str());
    };
    return indexType == DType::I32 ? run(int32_t{}) : run(int64_t{});
  });
}

/// The rows of a gather or scatter_add table and the lookups into it.
struct TableLookup {
  int64_t rows;
  int64_t rowElements;
  int64_t lookups;
  bool wide; // i64 indices
};

TableLookup tableLookup(const CudaOp &op) {
  const TensorType &table = op.operandTypes[0];
  TableLookup lookup;
  lookup.rows = table.shape.empty() ? 1 : table.shape[0];
  lookup.rowElements = lookup.rows > 0 ? table.numElements() / lookup.rows : 0;
  lookup.lookups = op.operandTypes[1].numElements();
  lookup.wide = op.operandTypes[1].dtype == DType::I64;
  return lookup;
}

Status runGather(const CudaOp &op) {
  TableLookup t = tableLookup(op);
  int64_t count = op.count;
  if (count == 0)
    return Status::success();
  switch (op.elementSize) {
#define PARTITA_GATHER_CASE(B)                                                 \
  case B:                                                                      \
    if (t.wide)                                                                \
      gatherKernel<B, int64_t>                                                 \
          <<<blocksFor(count), threadsPerBlock, 0, op.ctx.stream>>>(           \
              static_cast<const Chunk<B> *>(op.operands[0]),                   \
              static_cast<const int64_t *>(op.operands[1]),                    \
              static_cast<Chunk<B> *>(op.results[0]), t.lookups, t.rows,       \
              t.rowElements);                                                  \
    else                                                                       \
      gatherKernel<B, int32_t>                                                 \
          <<<blocksFor(count), threadsPerBlock, 0, op.ctx.stream>>>(           \
              static_cast<const Chunk<B> *>(op.operands[0]),                   \
              static_cast<const int32_t *>(op.operands[1]),                    \
              static_cast<Chunk<B> *>(op.results[0]), t.lookups, t.rows,       \
              t.rowElements);                                                  \
    return launched("gather");
    PARTITA_GATHER_CASE(1)
    PARTITA_GATHER_CASE(2)
    PARTITA_GATHER_CASE(4)
    PARTITA_GATHER_CASE(8)
#undef PARTITA_GATHER_CASE
  }
  return op.fail("bad element size");
}

Status runScatterAdd(const CudaOp &op) {
  TableLookup t = tableLookup(op);
  return withDType(op.out.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (op.count == 0)
      return Status::success();
    auto run = [&](auto index) -> Status {
      using Index = decltype(index);
      scatterAddKernel<T, Index>
          <<<blocksFor(op.count), threadsPerBlock, 0, op.ctx.stream>>>(
              static_cast<const typename T::Storage *>(op.operands[0]),
              static_cast<const Index *>(op.operands[1]),
              static_cast<const typename T::Storage *>(op.operands[2]),
              static_cast<typename T::Storage *>(op.results[0]), t.lookups,
              t.rows, t.rowElements);
      return launched("scatter_add");
    };
    return t.wide ? run(int64_t{}) : run(int32_t{});
  });
}

/// The ops with a kernel (or a launcher) of their own.
Status runDedicated(const CudaOp &op) {
  switch (op.inst.op) {
  case OpCode::Constant:
    return runConstant(op);
  case OpCode::Iota:
    return runIota(op);
  case OpCode::Compare:
    return runCompare(op);
  case OpCode::Select:
    return runSelect(op);
  case OpCode::Convert:
    return runConvert(op);
  case OpCode::BitcastConvert:
    if (op.operandTypes.size() != 1 ||
        op.operandTypes[0].bytes() != op.out.bytes())
      return op.fail("operand and result differ in size");
    return runCopy(op);
  case OpCode::Broadcast:
  case OpCode::Transpose:
  case OpCode::Slice:
    return runViewCopy(op);
  case OpCode::Concatenate:
    return runConcatenate(op);
  case OpCode::Pad:
    return runPad(op);
  case OpCode::DynamicSlice:
  case OpCode::DynamicUpdateSlice:
    return runDynamicSlice(op);
  case OpCode::Reduce:
    return runReduce(op);
  case OpCode::Cumsum:
    return runCumsum(op);
  case OpCode::Argmax:
  case OpCode::TopK:
    return runArgmaxTopK(op);
  case OpCode::Gather:
    return runGather(op);
  case OpCode::ScatterAdd:
    return runScatterAdd(op);
  case OpCode::Einsum:
    return cudaEinsum(op.ctx, op.inst, op.operandTypes, op.operands, op.out,
                  op.results[0]);
  case OpCode::Fused:
    return runCudaFused(op);
  default:
    return op.fail("not a tensor op the CUDA backend runs");
  }
}

} // namespace

Status cudaReduce(const CudaContext &ctx, int kind, DType dtype,
                  const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &dims, const void *operand,
                  void *result, int64_t count) {
  StridedView kept, reduced;
  if (!device::reductionViews(shape, dims, kept, reduced))
    return Status::error("reduce on CUDA: bad dims");
  return withDType(dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (count > 0)
      reduceKernel<T><<<blocksFor(count), threadsPerBlock, 0, ctx.stream>>>(
          static_cast<const typename T::Storage *>(operand),
          static_cast<typename T::Storage *>(result), kept, reduced, kind,
          count);
    return launched("reduce");
  });
}

/// Runs one tensor instruction on device buffers (CudaBackend.cu).
Status runCudaKernel(const CudaContext &ctx, const Instruction &inst,
                     const std::vector<TensorType> &operandTypes,
                     const std::vector<const void *> &operands,
                     const std::vector<TensorType> &resultTypes,
                     const std::vector<void *> &results,
                     const std::vector<HostArray> &constants) {
  std::string name = opCodeName(inst.op);
  if (resultTypes.empty())
    return Status::error(name + " on CUDA: no result");
  const TensorType &out = resultTypes[0];
  CudaOp op{ctx,
            inst,
            operandTypes,
            operands,
            resultTypes,
            results,
            constants,
            name,
            out,
            out.numElements(),
            dtypeSize(out.dtype)};
  if (!isValidOpCode(static_cast<uint16_t>(inst.op)))
    return op.fail("not a tensor op the CUDA backend runs");
  switch (opFamily(inst.op)) {
  case OpFamily::Dedicated:
    return runDedicated(op);
  case OpFamily::ElementwiseUnary:
  case OpFamily::ElementwiseBinary:
    return runCudaElementwise(op);
  case OpFamily::Copy:
    return runCopy(op);
  case OpFamily::Collective:
  case OpFamily::Control:
    break;
  }
  return op.fail("not a tensor op the CUDA backend runs");
}

} // namespace partita

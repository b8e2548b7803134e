//===- Communicator.cpp - Group membership, shapes and reductions ---------===//
//
// The parts of the collectives every Communicator shares and that need no
// communication: who is in a device's group, what shape a result has, how a
// block is copied between tensors and how values are combined. Keeping them
// here means the in-process, MPI and NCCL implementations agree by
// construction on group order and on the bits of a bf16 sum.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Sharding/EnumName.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace partita {

double &threadCollectiveWaitSeconds() {
  thread_local double seconds = 0;
  return seconds;
}

Communicator::~Communicator() = default;

PendingCollective Communicator::startCollective(const CollectiveCall &call) {
  PendingCollective pending;
  pending.status = dispatchCollective(*this, call);
  pending.completedAt = std::chrono::steady_clock::now();
  return pending;
}

Status Communicator::finishCollective(PendingCollective &pending) {
  return pending.status;
}

const char *reductionCodeName(ReductionCode kind) {
  static const char *const names[] = {"sum", "max", "min", "and", "or"};
  return enumName<ReductionCode::Or>(kind, names);
}

const char *communicatorOpName(CommunicatorOp kind) {
  static const char *const names[] = {"all_gather", "all_reduce",
                                      "reduce_scatter", "all_to_all",
                                      "collective_permute"};
  return enumName<CommunicatorOp::CollectivePermute>(kind, names);
}

std::string formatDeviceList(const std::vector<int64_t> &devices) {
  std::string text = "[";
  for (size_t i = 0; i < devices.size(); ++i)
    text += (i ? ", " : "") + std::to_string(devices[i]);
  return text + "]";
}

Expected<std::vector<int64_t>>
collectiveResultShape(CommunicatorOp kind,
                      const std::vector<int64_t> &inputShape, int64_t groupSize,
                      int64_t dim, int64_t splitDim, int64_t concatDim) {
  auto rank = static_cast<int64_t>(inputShape.size());
  auto checkDim = [&](int64_t d, const char *what) -> Status {
    if (d < 0 || d >= rank)
      return Status::error(std::string(what) + " " + std::to_string(d) +
                           " is out of range for a rank-" +
                           std::to_string(rank) + " input");
    return Status::success();
  };
  auto checkDivides = [&](int64_t d) -> Status {
    if (inputShape[d] % groupSize != 0)
      return Status::error("the group size " + std::to_string(groupSize) +
                           " does not divide dimension " + std::to_string(d) +
                           " of the input shape " + formatShape(inputShape));
    return Status::success();
  };
  std::vector<int64_t> shape = inputShape;
  switch (kind) {
  case CommunicatorOp::AllReduce:
  case CommunicatorOp::CollectivePermute:
    return shape;
  case CommunicatorOp::AllGather:
    if (Status status = checkDim(dim, "dim"); !status)
      return status;
    shape[dim] *= groupSize;
    return shape;
  case CommunicatorOp::ReduceScatter:
    if (Status status = checkDim(dim, "dim"); !status)
      return status;
    if (Status status = checkDivides(dim); !status)
      return status;
    shape[dim] /= groupSize;
    return shape;
  case CommunicatorOp::AllToAll:
    if (Status status = checkDim(splitDim, "split_dim"); !status)
      return status;
    if (Status status = checkDim(concatDim, "concat_dim"); !status)
      return status;
    if (Status status = checkDivides(splitDim); !status)
      return status;
    shape[splitDim] /= groupSize;
    shape[concatDim] *= groupSize;
    return shape;
  }
  return Status::error("unknown collective kind");
}

Status checkCollectiveBuffers(CommunicatorOp kind, int64_t groupSize,
                              const ConstBufferRef &input,
                              const BufferRef &output, int64_t dim,
                              int64_t splitDim, int64_t concatDim) {
  if (input.dtype != output.dtype)
    return Status::error(std::string("the input is ") + dtypeName(input.dtype) +
                         " but the output is " + dtypeName(output.dtype));
  Expected<int64_t> inputBytes = checkedNumBytes(input.dtype, input.shape);
  if (!inputBytes)
    return inputBytes.status();
  Expected<std::vector<int64_t>> expected = collectiveResultShape(
      kind, input.shape, groupSize, dim, splitDim, concatDim);
  if (!expected)
    return expected.status();
  if (*expected != output.shape)
    return Status::error("the output shape is " + formatShape(output.shape) +
                         " but the input shape " + formatShape(input.shape) +
                         " in a group of " + std::to_string(groupSize) +
                         " gives " + formatShape(*expected));
  Expected<int64_t> outputBytes = checkedNumBytes(output.dtype, output.shape);
  if (!outputBytes)
    return outputBytes.status();
  if ((*inputBytes > 0 && !input.data) || (*outputBytes > 0 && !output.data))
    return Status::error("a non-empty buffer has no data pointer");
  auto inBegin = static_cast<const uint8_t *>(input.data);
  auto outBegin = static_cast<const uint8_t *>(output.data);
  bool overlap = *inputBytes > 0 && *outputBytes > 0 &&
                 inBegin < outBegin + *outputBytes &&
                 outBegin < inBegin + *inputBytes;
  bool inPlaceAllowed = (kind == CommunicatorOp::AllReduce ||
                         kind == CommunicatorOp::CollectivePermute) &&
                        inBegin == outBegin;
  if (overlap && !inPlaceAllowed)
    return Status::error("the input and output buffers overlap (only "
                         "all_reduce and collective_permute run in place)");
  return Status::success();
}

#if defined(__x86_64__)
namespace {
/// copyStreaming's body on a processor with AVX: 32-byte loads and
/// non-temporal stores from a 32-byte aligned destination on, then a fence
/// so that the stores are visible before the caller signals it is done.
__attribute__((target("avx"))) void
copyStreamingAvx(uint8_t *dst, const uint8_t *src, size_t bytes) {
  size_t head = (32 - (reinterpret_cast<uintptr_t>(dst) & 31)) & 31;
  if (bytes < head + 128) { // Too short for one aligned block of four.
    std::memcpy(dst, src, bytes);
    return;
  }
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  size_t body = bytes & ~size_t(127);
  for (size_t i = 0; i < body; i += 128) {
    auto from = reinterpret_cast<const __m256i *>(src + i);
    auto to = reinterpret_cast<__m256i *>(dst + i);
    __m256i a = _mm256_loadu_si256(from);
    __m256i b = _mm256_loadu_si256(from + 1);
    __m256i c = _mm256_loadu_si256(from + 2);
    __m256i d = _mm256_loadu_si256(from + 3);
    _mm256_stream_si256(to, a);
    _mm256_stream_si256(to + 1, b);
    _mm256_stream_si256(to + 2, c);
    _mm256_stream_si256(to + 3, d);
  }
  _mm_sfence();
  std::memcpy(dst + body, src + body, bytes - body);
}
} // namespace
#endif

void copyStreaming(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__)
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx) {
    copyStreamingAvx(static_cast<uint8_t *>(dst),
                     static_cast<const uint8_t *>(src), bytes);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

void copyTensorBox(const void *src, const std::vector<int64_t> &srcShape,
                   const std::vector<int64_t> &srcOffset, void *dst,
                   const std::vector<int64_t> &dstShape,
                   const std::vector<int64_t> &dstOffset,
                   const std::vector<int64_t> &box, int64_t elementSize,
                   bool streaming) {
  int rank = static_cast<int>(box.size());
  for (int64_t extent : box)
    if (extent == 0)
      return;
  if (rank == 0) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  std::vector<int64_t> srcStride(rank), dstStride(rank);
  int64_t srcAcc = elementSize, dstAcc = elementSize;
  for (int d = rank - 1; d >= 0; --d) {
    srcStride[d] = srcAcc;
    dstStride[d] = dstAcc;
    srcAcc *= srcShape[d];
    dstAcc *= dstShape[d];
  }
  // Trailing dimensions the box covers fully in both tensors are contiguous
  // in both, so they merge into one memcpy run.
  int runDim = rank - 1;
  int64_t runBytes = box[runDim] * elementSize;
  while (runDim > 0 && box[runDim] == srcShape[runDim] &&
         box[runDim] == dstShape[runDim]) {
    --runDim;
    runBytes *= box[runDim];
  }
  auto srcBase = static_cast<const uint8_t *>(src);
  auto dstBase = static_cast<uint8_t *>(dst);
  for (int d = 0; d < rank; ++d) {
    srcBase += srcOffset[d] * srcStride[d];
    dstBase += dstOffset[d] * dstStride[d];
  }
  std::vector<int64_t> index(runDim, 0);
  while (true) {
    const uint8_t *from = srcBase;
    uint8_t *to = dstBase;
    for (int d = 0; d < runDim; ++d) {
      from += index[d] * srcStride[d];
      to += index[d] * dstStride[d];
    }
    if (streaming)
      copyStreaming(to, from, runBytes);
    else
      std::memcpy(to, from, runBytes);
    int d = runDim - 1;
    while (d >= 0 && ++index[d] == box[d])
      index[d--] = 0;
    if (d < 0)
      return;
  }
}

namespace {

/// Loads every input tile into an accumulator of type Acc, combines in
/// input order and stores once, so an output aliasing an input is safe and
/// narrow floats are rounded a single time.
template <typename T, typename Acc, typename Load, typename Store,
          typename Combine>
void reduceTiled(const std::vector<const void *> &inputs, void *output,
                 int64_t count, Load load, Store store, Combine combine) {
  constexpr int64_t tileSize = 2048;
  Acc acc[tileSize];
  for (int64_t start = 0; start < count; start += tileSize) {
    int64_t n = std::min(tileSize, count - start);
    const T *first = static_cast<const T *>(inputs[0]) + start;
    for (int64_t j = 0; j < n; ++j)
      acc[j] = load(first[j]);
    for (size_t i = 1; i < inputs.size(); ++i) {
      const T *in = static_cast<const T *>(inputs[i]) + start;
      for (int64_t j = 0; j < n; ++j)
        acc[j] = combine(acc[j], load(in[j]));
    }
    T *out = static_cast<T *>(output) + start;
    for (int64_t j = 0; j < n; ++j)
      out[j] = store(acc[j]);
  }
}

template <typename T, typename Acc, typename Load, typename Store>
Status reduceFloating(ReductionCode kind,
                      const std::vector<const void *> &inputs, void *output,
                      int64_t count, Load load, Store store) {
  switch (kind) {
  case ReductionCode::Sum:
    reduceTiled<T, Acc>(inputs, output, count, load, store,
                        [](Acc a, Acc b) { return a + b; });
    return Status::success();
  case ReductionCode::Max: // NaN wins, as in XLA.
    reduceTiled<T, Acc>(inputs, output, count, load, store,
                        [](Acc a, Acc b) { return (a > b || a != a) ? a : b; });
    return Status::success();
  case ReductionCode::Min:
    reduceTiled<T, Acc>(inputs, output, count, load, store,
                        [](Acc a, Acc b) { return (a < b || a != a) ? a : b; });
    return Status::success();
  case ReductionCode::And:
  case ReductionCode::Or:
    break;
  }
  return Status::error(std::string("reduction '") + reductionCodeName(kind) +
                       "' needs integer or bool elements");
}

template <typename T>
Status reduceInteger(ReductionCode kind,
                     const std::vector<const void *> &inputs, void *output,
                     int64_t count) {
  using Unsigned = std::make_unsigned_t<T>;
  auto same = [](T v) { return v; };
  switch (kind) {
  case ReductionCode::Sum: // Wraps around, as two's complement hardware does.
    reduceTiled<T, T>(inputs, output, count, same, same, [](T a, T b) {
      return static_cast<T>(static_cast<Unsigned>(static_cast<Unsigned>(a) +
                                                  static_cast<Unsigned>(b)));
    });
    break;
  case ReductionCode::Max:
    reduceTiled<T, T>(inputs, output, count, same, same,
                      [](T a, T b) { return a > b ? a : b; });
    break;
  case ReductionCode::Min:
    reduceTiled<T, T>(inputs, output, count, same, same,
                      [](T a, T b) { return a < b ? a : b; });
    break;
  case ReductionCode::And:
    reduceTiled<T, T>(inputs, output, count, same, same,
                      [](T a, T b) { return static_cast<T>(a & b); });
    break;
  case ReductionCode::Or:
    reduceTiled<T, T>(inputs, output, count, same, same,
                      [](T a, T b) { return static_cast<T>(a | b); });
    break;
  }
  return Status::success();
}

} // namespace

Status checkReduction(ReductionCode kind, DType dtype) {
  bool floating = dtype == DType::F64 || dtype == DType::F32 ||
                  dtype == DType::F16 || dtype == DType::BF16;
  if (floating && (kind == ReductionCode::And || kind == ReductionCode::Or))
    return Status::error(std::string("reduction '") + reductionCodeName(kind) +
                         "' needs integer or bool elements, not " +
                         dtypeName(dtype));
  return Status::success();
}

Status reduceElements(ReductionCode kind, DType dtype,
                      const std::vector<const void *> &inputs, void *output,
                      int64_t count) {
  if (Status status = checkReduction(kind, dtype); !status)
    return status;
  if (inputs.empty())
    return Status::error("a reduction needs at least one input");
  if (count == 0)
    return Status::success();
  auto sameFloat = [](float v) { return v; };
  auto sameDouble = [](double v) { return v; };
  switch (dtype) {
  case DType::F32:
    return reduceFloating<float, float>(kind, inputs, output, count, sameFloat,
                                        sameFloat);
  case DType::F64:
    return reduceFloating<double, double>(kind, inputs, output, count,
                                          sameDouble, sameDouble);
  case DType::BF16:
    return reduceFloating<uint16_t, float>(kind, inputs, output, count,
                                           bfloat16ToFloat, floatToBFloat16);
  case DType::F16:
    return reduceFloating<uint16_t, float>(kind, inputs, output, count,
                                           halfToFloat, floatToHalf);
  case DType::I64:
    return reduceInteger<int64_t>(kind, inputs, output, count);
  case DType::I32:
    return reduceInteger<int32_t>(kind, inputs, output, count);
  case DType::I16:
    return reduceInteger<int16_t>(kind, inputs, output, count);
  case DType::I8:
    return reduceInteger<int8_t>(kind, inputs, output, count);
  case DType::U8:
    return reduceInteger<uint8_t>(kind, inputs, output, count);
  case DType::Bool: {
    // Bools are 0 or 1: sum and max are or, min is and.
    bool isAnd = kind == ReductionCode::Min || kind == ReductionCode::And;
    return reduceInteger<uint8_t>(
        isAnd ? ReductionCode::And : ReductionCode::Or, inputs, output, count);
  }
  }
  return Status::error("unknown dtype");
}

Status allSlice(const Mesh &mesh, int64_t deviceId,
                const std::vector<std::string> &axes, int64_t dim,
                const ConstBufferRef &input, const BufferRef &output) {
  auto fail = [&](const Status &status) {
    return Status::error("all_slice over mesh axes " + formatAxes(axes) +
                         " on device " + std::to_string(deviceId) + ": " +
                         status.message());
  };
  Expected<CollectiveGroup> group = resolveGroup(mesh, deviceId, axes);
  if (!group)
    return fail(group.status());
  auto groupSize = static_cast<int64_t>(group->members.size());
  // all_slice has reduce_scatter's shapes.
  if (Status status = checkCollectiveBuffers(CommunicatorOp::ReduceScatter,
                                             groupSize, input, output, dim);
      !status)
    return fail(status);
  std::vector<int64_t> srcOffset(input.shape.size(), 0);
  srcOffset[dim] = group->position * output.shape[dim];
  copyTensorBox(input.data, input.shape, srcOffset, output.data, output.shape,
                std::vector<int64_t>(output.shape.size(), 0), output.shape,
                dtypeSize(input.dtype));
  return Status::success();
}

std::string describeCollective(const CollectiveCall &call) {
  std::string text = communicatorOpName(call.kind);
  if (call.kind == CommunicatorOp::AllReduce ||
      call.kind == CommunicatorOp::ReduceScatter)
    text += std::string(" ") + reductionCodeName(call.reduction);
  text += " over mesh axes " + formatAxes(call.axes);
  if (call.kind == CommunicatorOp::AllGather ||
      call.kind == CommunicatorOp::ReduceScatter)
    text += " dim " + std::to_string(call.dim);
  if (call.kind == CommunicatorOp::AllToAll)
    text += " split_dim " + std::to_string(call.splitDim) + " concat_dim " +
            std::to_string(call.concatDim);
  if (call.kind == CommunicatorOp::CollectivePermute) {
    text += " pairs [";
    for (size_t i = 0; i < call.pairs.size(); ++i)
      text += (i ? ", " : "") + std::to_string(call.pairs[i].first) + " -> " +
              std::to_string(call.pairs[i].second);
    text += "]";
  }
  return text + " on " + dtypeName(call.input.dtype) +
         formatShape(call.input.shape);
}

bool sameCollective(const CollectiveCall &a, const CollectiveCall &b) {
  return a.kind == b.kind && a.axes == b.axes && a.reduction == b.reduction &&
         a.dim == b.dim && a.splitDim == b.splitDim &&
         a.concatDim == b.concatDim && a.pairs == b.pairs &&
         a.input.dtype == b.input.dtype && a.input.shape == b.input.shape;
}

namespace {

Status checkPairs(const std::vector<SourceTargetPair> &pairs,
                  int64_t groupSize) {
  std::vector<bool> isSource(groupSize), isTarget(groupSize);
  for (const SourceTargetPair &pair : pairs) {
    for (int64_t position : {pair.first, pair.second})
      if (position < 0 || position >= groupSize)
        return Status::error("pair position " + std::to_string(position) +
                             " is outside the group of " +
                             std::to_string(groupSize));
    if (isSource[pair.first] || isTarget[pair.second])
      return Status::error(
          "position " +
          std::to_string(isSource[pair.first] ? pair.first : pair.second) +
          " appears twice as a " +
          (isSource[pair.first] ? "source" : "target"));
    isSource[pair.first] = isTarget[pair.second] = true;
  }
  return Status::success();
}

} // namespace

Status checkCollectiveCall(const CollectiveCall &call, int64_t groupSize) {
  if (Status status =
          checkCollectiveBuffers(call.kind, groupSize, call.input, call.output,
                                 call.dim, call.splitDim, call.concatDim);
      !status)
    return status;
  if (call.kind == CommunicatorOp::CollectivePermute)
    return checkPairs(call.pairs, groupSize);
  if (call.kind == CommunicatorOp::AllReduce ||
      call.kind == CommunicatorOp::ReduceScatter)
    return checkReduction(call.reduction, call.input.dtype);
  return Status::success();
}

Status dispatchCollective(Communicator &communicator,
                          const CollectiveCall &call) {
  return communicator.run(call);
}

Status Communicator::run(const CollectiveCall &call) {
  switch (call.kind) {
  case CommunicatorOp::AllGather:
    return allGather(call.deviceId, call.axes, call.dim, call.input,
                     call.output);
  case CommunicatorOp::AllReduce:
    return allReduce(call.deviceId, call.axes, call.reduction, call.input,
                     call.output);
  case CommunicatorOp::ReduceScatter:
    return reduceScatter(call.deviceId, call.axes, call.reduction, call.dim,
                         call.input, call.output);
  case CommunicatorOp::AllToAll:
    return allToAll(call.deviceId, call.axes, call.splitDim, call.concatDim,
                    call.input, call.output);
  case CommunicatorOp::CollectivePermute:
    return collectivePermute(call.deviceId, call.axes, call.pairs, call.input,
                             call.output);
  }
  return Status::error("unknown collective kind");
}

// Each call is a CollectiveCall in its fields' order: kind, device, axes,
// reduction, dim, splitDim, concatDim, pairs, input, output.

Status CallForwardingCommunicator::allGather(
    int64_t deviceId, const std::vector<std::string> &axes, int64_t dim,
    const ConstBufferRef &input, const BufferRef &output) {
  return runCall({CommunicatorOp::AllGather, deviceId, axes,
                  ReductionCode::Sum, dim, 0, 0, {}, input, output});
}

Status CallForwardingCommunicator::allReduce(
    int64_t deviceId, const std::vector<std::string> &axes,
    ReductionCode kind, const ConstBufferRef &input, const BufferRef &output) {
  return runCall({CommunicatorOp::AllReduce, deviceId, axes, kind, 0, 0, 0,
                  {}, input, output});
}

Status CallForwardingCommunicator::reduceScatter(
    int64_t deviceId, const std::vector<std::string> &axes,
    ReductionCode kind, int64_t dim, const ConstBufferRef &input,
    const BufferRef &output) {
  return runCall({CommunicatorOp::ReduceScatter, deviceId, axes, kind, dim, 0,
                  0, {}, input, output});
}

Status CallForwardingCommunicator::allToAll(
    int64_t deviceId, const std::vector<std::string> &axes, int64_t splitDim,
    int64_t concatDim, const ConstBufferRef &input, const BufferRef &output) {
  return runCall({CommunicatorOp::AllToAll, deviceId, axes, ReductionCode::Sum,
                  0, splitDim, concatDim, {}, input, output});
}

Status CallForwardingCommunicator::collectivePermute(
    int64_t deviceId, const std::vector<std::string> &axes,
    const std::vector<SourceTargetPair> &pairs, const ConstBufferRef &input,
    const BufferRef &output) {
  return runCall({CommunicatorOp::CollectivePermute, deviceId, axes,
                  ReductionCode::Sum, 0, 0, 0, pairs, input, output});
}

} // namespace partita

//===- DeviceMath.cpp - Planning strided views on the host ----------------===//

#include "partita/Runtime/Program/DeviceMath.h"

#include <algorithm>
#include <cstring>

namespace partita {
namespace device {

namespace {

bool fits(size_t rank) { return rank <= static_cast<size_t>(maxRank); }

void setShape(StridedView &view, const std::vector<int64_t> &shape) {
  view.rank = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    view.shape[d] = shape[d];
}

} // namespace

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

bool broadcastView(const std::vector<int64_t> &operandShape,
                   const std::vector<int64_t> &resultShape,
                   const std::vector<int64_t> &dims, StridedView &view) {
  if (!fits(resultShape.size()) || dims.size() != operandShape.size())
    return false;
  view = StridedView();
  setShape(view, resultShape);
  std::vector<int64_t> strides = rowMajorStrides(operandShape);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d < 0 || d >= static_cast<int64_t>(resultShape.size()))
      return false;
    if (operandShape[i] == resultShape[d])
      view.stride[d] = strides[i];
    else if (operandShape[i] != 1)
      return false; // Size-1 dims expand: stride 0.
  }
  return true;
}

bool transposeView(const std::vector<int64_t> &operandShape,
                   const std::vector<int64_t> &perm, StridedView &view) {
  if (!fits(perm.size()) || perm.size() != operandShape.size())
    return false;
  view = StridedView();
  view.rank = static_cast<int>(perm.size());
  std::vector<int64_t> strides = rowMajorStrides(operandShape);
  std::vector<bool> used(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || used[p])
      return false;
    used[p] = true;
    view.shape[i] = operandShape[p];
    view.stride[i] = strides[p];
  }
  return true;
}

bool sliceView(const std::vector<int64_t> &operandShape,
               const std::vector<int64_t> &start,
               const std::vector<int64_t> &stride,
               const std::vector<int64_t> &resultShape, StridedView &view) {
  size_t rank = operandShape.size();
  if (!fits(rank) || start.size() != rank || stride.size() != rank ||
      resultShape.size() != rank)
    return false;
  view = StridedView();
  setShape(view, resultShape);
  std::vector<int64_t> strides = rowMajorStrides(operandShape);
  for (size_t d = 0; d < rank; ++d) {
    if (start[d] < 0 || stride[d] < 1 ||
        (resultShape[d] > 0 &&
         start[d] + (resultShape[d] - 1) * stride[d] >= operandShape[d]))
      return false;
    view.stride[d] = strides[d] * stride[d];
    view.offset += start[d] * strides[d];
  }
  return true;
}

bool placementView(const std::vector<int64_t> &resultShape,
                   const std::vector<int64_t> &blockShape,
                   const std::vector<int64_t> &blockOffset,
                   StridedView &view) {
  size_t rank = resultShape.size();
  if (!fits(rank) || blockShape.size() != rank || blockOffset.size() != rank)
    return false;
  view = StridedView();
  setShape(view, blockShape);
  std::vector<int64_t> strides = rowMajorStrides(resultShape);
  for (size_t d = 0; d < rank; ++d) {
    if (blockOffset[d] < 0 || blockOffset[d] + blockShape[d] > resultShape[d])
      return false;
    view.stride[d] = strides[d];
    view.offset += blockOffset[d] * strides[d];
  }
  return true;
}

bool isContiguous(const StridedView &view) {
  int64_t expected = 1;
  for (int d = view.rank - 1; d >= 0; --d) {
    if (view.shape[d] == 1)
      continue;
    if (view.shape[d] == 0)
      return true; // No elements: nothing to copy.
    if (view.stride[d] != expected)
      return false;
    expected *= view.shape[d];
  }
  return true;
}

bool boxCopyViews(const std::vector<int64_t> &srcShape,
                  const std::vector<int64_t> &srcOffset,
                  const std::vector<int64_t> &dstShape,
                  const std::vector<int64_t> &dstOffset,
                  const std::vector<int64_t> &box, StridedView &from,
                  StridedView &to) {
  return placementView(srcShape, box, srcOffset, from) &&
         placementView(dstShape, box, dstOffset, to);
}

void boxCopyOnHost(const void *source, const StridedView &from,
                   void *destination, const StridedView &to,
                   int64_t elementSize) {
  int64_t count = viewElements(from);
  const auto *src = static_cast<const uint8_t *>(source);
  auto *dst = static_cast<uint8_t *>(destination);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + sourceOffset(to, i) * elementSize,
                src + sourceOffset(from, i) * elementSize, elementSize);
}

bool reductionViews(const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &dims, StridedView &kept,
                    StridedView &reduced) {
  if (!fits(shape.size()))
    return false;
  std::vector<bool> isReduced(shape.size(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(shape.size()) || isReduced[d])
      return false;
    isReduced[d] = true;
  }
  std::vector<int64_t> strides = rowMajorStrides(shape);
  kept = StridedView();
  reduced = StridedView();
  for (size_t d = 0; d < shape.size(); ++d) {
    StridedView &target = isReduced[d] ? reduced : kept;
    target.shape[target.rank] = shape[d];
    target.stride[target.rank] = strides[d];
    ++target.rank;
  }
  return true;
}

void stridedCopyOnHost(const void *source, void *destination,
                       const StridedView &view, int64_t elementSize) {
  auto from = static_cast<const uint8_t *>(source);
  auto to = static_cast<uint8_t *>(destination);
  int64_t count = viewElements(view);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(to + i * elementSize,
                from + sourceOffset(view, i) * elementSize, elementSize);
}

} // namespace device
} // namespace partita

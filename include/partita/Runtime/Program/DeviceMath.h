//===- DeviceMath.h - Index math shared by host and device kernels -*- C++ -*-===//
//
// The arithmetic a GPU kernel does per element, written once as plain
// functions that compile both as host C++ (tested here, against the CPU
// kernels) and as CUDA `__host__ __device__` code (lib/Runtime/CUDA). Every
// data-movement op of the runtime — broadcast, transpose, slice, reshape,
// concatenate, pad, dynamic_slice — is one strided copy: output element i
// (row-major over the output shape) reads the source element at
// `offset + sum_d coord_d(i) * stride_d`. The planners below build those
// views from an op's attributes on the host; the kernel only evaluates them.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_DEVICEMATH_H
#define PARTITA_RUNTIME_DEVICEMATH_H

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__CUDACC__)
#define PARTITA_HD __host__ __device__
#else
#define PARTITA_HD
#endif

namespace partita {
namespace device {

/// The most dimensions a view handles (more is an error at planning time).
constexpr int maxRank = 8;

/// Where each element of a row-major `shape` comes from in a source buffer.
struct StridedView {
  int rank = 0;
  int64_t shape[maxRank] = {};
  int64_t stride[maxRank] = {}; // Source elements per step of each dim.
  int64_t offset = 0;           // Source element of the first output.
};

/// Number of elements of the view's shape.
PARTITA_HD inline int64_t viewElements(const StridedView &view) {
  int64_t count = 1;
  for (int d = 0; d < view.rank; ++d)
    count *= view.shape[d];
  return count;
}

/// Source element of output element `index`.
PARTITA_HD inline int64_t sourceOffset(const StridedView &view,
                                       int64_t index) {
  int64_t offset = view.offset;
  for (int d = view.rank - 1; d >= 0; --d) {
    int64_t extent = view.shape[d];
    offset += (index % extent) * view.stride[d];
    index /= extent;
  }
  return offset;
}

/// bfloat16 <-> float: the top 16 bits; rounding to nearest even, NaN kept
/// a (quiet) NaN — the CPU kernels' rule.
PARTITA_HD inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  memcpy(&value, &wide, sizeof(value));
  return value;
}
PARTITA_HD inline uint16_t floatToBf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t bias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + bias) >> 16);
}

/// IEEE binary16 <-> float (round to nearest even).
PARTITA_HD inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // Subnormal: normalise.
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}
PARTITA_HD inline uint16_t floatToHalf(float value) {
  uint32_t x;
  memcpy(&x, &value, sizeof(x));
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u)
    return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (x >= 0x477ff000u)
    return sign | 0x7c00u;
  if (x < 0x38800000u) {
    if (x < 0x33000000u)
      return sign;
    uint32_t exponent = x >> 23;
    uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (x - 0x38000000u) >> 13;
  uint32_t rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

//===----------------------------------------------------------------------===//
// Host-side planners (plain C++; false when the shapes or attributes do not
// fit, which the caller reports).
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

/// broadcast: operand dim i becomes result dim dims[i] (size 1 may expand).
bool broadcastView(const std::vector<int64_t> &operandShape,
                   const std::vector<int64_t> &resultShape,
                   const std::vector<int64_t> &dims, StridedView &view);

/// transpose: result dim i is operand dim perm[i].
bool transposeView(const std::vector<int64_t> &operandShape,
                   const std::vector<int64_t> &perm, StridedView &view);

/// slice: result element j of dim d is operand element start[d] + j *
/// stride[d].
bool sliceView(const std::vector<int64_t> &operandShape,
               const std::vector<int64_t> &start,
               const std::vector<int64_t> &stride,
               const std::vector<int64_t> &resultShape, StridedView &view);

/// The part of a result of `resultShape` that a block of `blockShape` at
/// `blockOffset` occupies, as a destination view: element i of the block
/// (row-major) goes to destination element sourceOffset(view, i). Used by
/// concatenate and pad (write each piece into its place).
bool placementView(const std::vector<int64_t> &resultShape,
                   const std::vector<int64_t> &blockShape,
                   const std::vector<int64_t> &blockOffset,
                   StridedView &view);

/// Whether a view reads (or, as a placement, writes) one contiguous run of
/// elements starting at its offset: a box copy between two such views is a
/// memcpy.
bool isContiguous(const StridedView &view);

/// copyTensorBox() as two views over the same box: element i of the box
/// (row-major) moves from source element sourceOffset(from, i) to
/// destination element sourceOffset(to, i). False when the box does not fit
/// either tensor or the rank exceeds maxRank.
bool boxCopyViews(const std::vector<int64_t> &srcShape,
                  const std::vector<int64_t> &srcOffset,
                  const std::vector<int64_t> &dstShape,
                  const std::vector<int64_t> &dstOffset,
                  const std::vector<int64_t> &box, StridedView &from,
                  StridedView &to);

/// Runs a box copy on the host from its two views (the GPU kernel's
/// reference).
void boxCopyOnHost(const void *source, const StridedView &from,
                   void *destination, const StridedView &to,
                   int64_t elementSize);

/// A reduction over `dims` of an operand of `shape`, as two views: `kept`
/// maps each result element to its first operand element, `reduced` walks
/// the reduced elements relative to it (row-major over the reduced dims).
bool reductionViews(const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &dims, StridedView &kept,
                    StridedView &reduced);

/// Runs a view on the host: `destination[i] = source[sourceOffset(view, i)]`
/// for elements of `elementSize` bytes (the reference of the GPU kernel,
/// and what the tests check against the CPU kernels).
void stridedCopyOnHost(const void *source, void *destination,
                       const StridedView &view, int64_t elementSize);

} // namespace device
} // namespace partita

#endif // PARTITA_RUNTIME_DEVICEMATH_H

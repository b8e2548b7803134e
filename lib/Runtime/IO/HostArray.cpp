//===- HostArray.cpp - A dense array in host memory -----------------------===//
//
// Element types, their names and sizes, and the small amount of element
// interpretation (widening to double, printing) that messages and tools need.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/HostArray.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace partita {

namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
  int64_t size;
};

const DTypeInfo dtypeTable[] = {
    {DType::F64, "f64", 8},   {DType::F32, "f32", 4}, {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2}, {DType::I64, "i64", 8}, {DType::I32, "i32", 4},
    {DType::I16, "i16", 2},   {DType::I8, "i8", 1},   {DType::U8, "u8", 1},
    {DType::Bool, "bool", 1},
};

const DTypeInfo &infoOf(DType dtype) {
  for (const DTypeInfo &info : dtypeTable)
    if (info.dtype == dtype)
      return info;
  return dtypeTable[0]; // Unreachable: the table covers every enumerator.
}

std::string formatFloating(double value, int significantDigits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g", significantDigits, value);
  return buffer;
}

} // namespace

const std::vector<DType> &allDTypes() {
  static const std::vector<DType> dtypes = [] {
    std::vector<DType> list;
    for (const DTypeInfo &info : dtypeTable)
      list.push_back(info.dtype);
    return list;
  }();
  return dtypes;
}

int64_t dtypeSize(DType dtype) { return infoOf(dtype).size; }

const char *dtypeName(DType dtype) { return infoOf(dtype).name; }

Expected<DType> parseDType(std::string_view name) {
  std::string accepted;
  for (const DTypeInfo &info : dtypeTable) {
    if (name == info.name)
      return info.dtype;
    accepted += accepted.empty() ? "" : ", ";
    accepted += info.name;
  }
  return Status::error("unknown element type '" + std::string(name) +
                       "'; expected one of " + accepted);
}

Expected<int64_t> checkedNumElements(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return Status::error("negative dimension " + std::to_string(dim) +
                           " in shape " + formatShape(shape));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      return Status::error("shape " + formatShape(shape) +
                           " has too many elements");
    count *= dim;
  }
  return count;
}

Expected<int64_t> checkedNumBytes(DType dtype,
                                  const std::vector<int64_t> &shape) {
  Expected<int64_t> count = checkedNumElements(shape);
  if (!count)
    return count;
  if (*count > std::numeric_limits<int64_t>::max() / dtypeSize(dtype))
    return Status::error("shape " + formatShape(shape) + " is too large");
  return *count * dtypeSize(dtype);
}

std::string joinDims(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  return "[" + joinDims(shape) + "]";
}

int64_t numElementsOf(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

HostArray HostArray::zeros(DType dtype, std::vector<int64_t> shape) {
  HostArray array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.bytes.assign(static_cast<size_t>(array.numBytes()), 0);
  return array;
}

int64_t HostArray::numElements() const { return numElementsOf(shape); }

int64_t HostArray::numBytes() const { return numElements() * dtypeSize(dtype); }

Status HostArray::checkConsistent() const {
  Expected<int64_t> expectedBytes = checkedNumBytes(dtype, shape);
  if (!expectedBytes)
    return expectedBytes.status();
  int64_t expected = *expectedBytes;
  if (static_cast<int64_t>(bytes.size()) != expected)
    return Status::error("a " + std::string(dtypeName(dtype)) +
                         " array of "
                         "shape " +
                         formatShape(shape) + " needs " +
                         std::to_string(expected) + " bytes but holds " +
                         std::to_string(bytes.size()));
  return Status::success();
}

float halfToFloat(uint16_t bits) {
  bool negative = bits & 0x8000;
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0) // Zero or subnormal: mantissa * 2^-24.
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 0x1f)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else // (1024 + mantissa) * 2^(exponent - 15 - 10).
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return negative ? -magnitude : magnitude;
}

float bfloat16ToFloat(uint16_t bits) {
  // bfloat16 is the upper half of an IEEE single.
  uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof(value));
  return value;
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep sign, force quiet.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN.
    return sign | 0x7e00u | static_cast<uint16_t>((magnitude >> 13) & 0x3ffu);
  if (magnitude >= 0x477ff000u) // Rounds to or beyond 65520: infinity.
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) { // Below 2^-14: subnormal half or zero.
    // Scale so that the half's subnormal unit (2^-24) becomes 1, and let
    // the FPU round to nearest even.
    float scaled = std::fabs(value) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits.
  uint32_t rebiased = magnitude - (112u << 23);
  uint32_t roundingBias = 0xfffu + ((rebiased >> 13) & 1u);
  return sign | static_cast<uint16_t>((rebiased + roundingBias) >> 13);
}

void storeElement(DType dtype, uint8_t *at, double value) {
  switch (dtype) {
  case DType::F64:
    std::memcpy(at, &value, 8);
    return;
  case DType::F32: {
    float narrow = static_cast<float>(value);
    std::memcpy(at, &narrow, 4);
    return;
  }
  case DType::BF16: {
    uint16_t bits = floatToBFloat16(static_cast<float>(value));
    std::memcpy(at, &bits, 2);
    return;
  }
  case DType::F16: {
    uint16_t bits = floatToHalf(static_cast<float>(value));
    std::memcpy(at, &bits, 2);
    return;
  }
  case DType::Bool:
    *at = value != 0;
    return;
  default: {
    int64_t whole = static_cast<int64_t>(value);
    std::memcpy(at, &whole, dtypeSize(dtype)); // little-endian
    return;
  }
  }
}

void setElementFromDouble(HostArray &array, int64_t flatIndex, double value) {
  storeElement(array.dtype,
               array.bytes.data() + flatIndex * dtypeSize(array.dtype), value);
}

double HostArray::elementAsDouble(int64_t flatIndex) const {
  switch (dtype) {
  case DType::F64:
    return element<double>(flatIndex);
  case DType::F32:
    return element<float>(flatIndex);
  case DType::F16:
    return halfToFloat(element<uint16_t>(flatIndex));
  case DType::BF16:
    return bfloat16ToFloat(element<uint16_t>(flatIndex));
  case DType::I64:
    return static_cast<double>(element<int64_t>(flatIndex));
  case DType::I32:
    return element<int32_t>(flatIndex);
  case DType::I16:
    return element<int16_t>(flatIndex);
  case DType::I8:
    return element<int8_t>(flatIndex);
  case DType::U8:
    return element<uint8_t>(flatIndex);
  case DType::Bool:
    return element<uint8_t>(flatIndex) != 0;
  }
  return 0;
}

std::string HostArray::formatElement(int64_t flatIndex) const {
  switch (dtype) {
  case DType::F64:
    return formatFloating(elementAsDouble(flatIndex), 17);
  case DType::F32:
    return formatFloating(elementAsDouble(flatIndex), 9);
  case DType::F16:
  case DType::BF16:
    return formatFloating(elementAsDouble(flatIndex), 5);
  case DType::I64:
    return std::to_string(element<int64_t>(flatIndex));
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U8:
    return std::to_string(static_cast<int64_t>(elementAsDouble(flatIndex)));
  case DType::Bool:
    return element<uint8_t>(flatIndex) ? "true" : "false";
  }
  return "?";
}

} // namespace partita

double partita::elementAsDouble(const HostArray &array, int64_t i) {
  switch (array.dtype) {
  case DType::F64:
    return array.element<double>(i);
  case DType::F32:
    return array.element<float>(i);
  case DType::BF16:
    return bfloat16ToFloat(array.element<uint16_t>(i));
  case DType::F16:
    return halfToFloat(array.element<uint16_t>(i));
  case DType::I64:
    return static_cast<double>(array.element<int64_t>(i));
  case DType::I32:
    return array.element<int32_t>(i);
  case DType::I16:
    return array.element<int16_t>(i);
  case DType::I8:
    return array.element<int8_t>(i);
  case DType::U8:
  case DType::Bool:
    return array.element<uint8_t>(i);
  }
  return 0;
}

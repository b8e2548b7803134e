//===- ExecutableInfo.cpp - What a compiled program holds and moves ------===//
//
// Descriptions and summaries of an Executable (its communication per step,
// a one-line fingerprint of an array) and the deterministic inputs a run
// draws when the user gives none.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Runtime/Program/Executable.h"
#include "partita/Runtime/Program/Fused.h"
#include "partita/Sharding/Cost.h"
#include "partita/Sharding/Layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include <unistd.h>

using namespace partita;

Status partita::checkLoopInstruction(const Executable &program,
                                     const Instruction &inst, size_t index,
                                     size_t end) {
  size_t carriedCount = inst.operands.size();
  auto slots = static_cast<int64_t>(program.slots.size());
  if (inst.ints.size() != 3 + 3 * carriedCount ||
      inst.results.size() != carriedCount || inst.ints[1] < 0 ||
      static_cast<uint64_t>(inst.ints[1]) > end - index - 1)
    return Status::error("loop: malformed instruction");
  for (size_t i = 2; i < inst.ints.size(); ++i)
    if (inst.ints[i] < 0 || inst.ints[i] >= slots)
      return Status::error("loop: slot out of range");
  const TensorType &counter = program.slots[inst.ints[2]];
  if (counter.dtype != DType::I32 || !counter.shape.empty())
    return Status::error("loop: the trip counter's slot is not an i32 "
                         "scalar");
  for (size_t i = 0; i < carriedCount; ++i) {
    const TensorType &type = program.slots[inst.operands[i]];
    for (int64_t slot : {inst.ints[3 + i], inst.ints[3 + carriedCount + i],
                         inst.ints[3 + 2 * carriedCount + i],
                         static_cast<int64_t>(inst.results[i])}) {
      const TensorType &other = program.slots[slot];
      if (other.dtype != type.dtype || other.shape != type.shape)
        return Status::error("loop: carried value " + std::to_string(i) +
                             " has slots of different types (slot " +
                             std::to_string(slot) + ")");
    }
  }
  return Status::success();
}

double partita::collectiveBusBytes(const Executable &program,
                                  const Instruction &inst) {
  if (!isCollective(inst.op) || inst.op == OpCode::AllSlice ||
      inst.operands.empty())
    return 0;
  int64_t groupSize = 1;
  for (const std::string &axis : collectiveAxes(inst))
    groupSize *= program.mesh.axisSize(axis);
  static const std::pair<OpCode, CollectiveKind> kinds[] = {
      {OpCode::AllReduce, CollectiveKind::AllReduce},
      {OpCode::ReduceScatter, CollectiveKind::ReduceScatter},
      {OpCode::AllToAll, CollectiveKind::AllToAll},
      {OpCode::CollectivePermute, CollectiveKind::CollectivePermute}};
  CollectiveKind kind = CollectiveKind::AllGather;
  for (const auto &[op, collective] : kinds)
    if (inst.op == op)
      kind = collective;
  return collectiveBytesPerDevice(
      kind, groupSize,
      static_cast<double>(program.slots[inst.operands[0]].bytes()));
}

namespace {
void summarizeRange(const Executable &program, size_t begin, size_t end,
                    int64_t multiplier, CommunicationSummary &summary) {
  for (size_t index = begin; index < end; ++index) {
    const Instruction &inst = program.instructions[index];
    if (inst.op == OpCode::Loop && inst.ints.size() >= 2) {
      size_t bodyEnd =
          std::min(end, index + 1 + static_cast<size_t>(inst.ints[1]));
      summarizeRange(program, index + 1, bodyEnd, multiplier * inst.ints[0],
                     summary);
      index = bodyEnd - 1;
      continue;
    }
    if (!isCollective(inst.op) || inst.op == OpCode::AllSlice ||
        inst.operands.empty())
      continue;
    summary.collectives += multiplier;
    summary.bytesPerDevice += multiplier * collectiveBusBytes(program, inst);
  }
}
} // namespace

CommunicationSummary
partita::summarizeCommunication(const Executable &program) {
  CommunicationSummary summary;
  summarizeRange(program, 0, program.instructions.size(), 1, summary);
  return summary;
}

Status partita::checkInputsFit(const Executable &program) {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  int64_t memory = pages > 0 && pageSize > 0
                       ? static_cast<int64_t>(pages) * pageSize
                       : std::numeric_limits<int64_t>::max();
  int64_t total = 0;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const ExecutableValue &input = program.inputs[i];
    DType dtype = program.slots[input.slot].dtype;
    std::string what = "input " + std::to_string(i) + " (" + input.name +
                       "): " + dtypeName(dtype) +
                       formatShape(input.globalShape);
    int64_t bytes = dtypeSize(dtype);
    for (int64_t dim : input.globalShape) {
      if (dim < 0)
        return Status::error(what + " has a negative dimension");
      if (dim != 0 && bytes > std::numeric_limits<int64_t>::max() / dim)
        return Status::error(what + " has more bytes than a 64-bit count "
                             "holds");
      bytes *= dim;
    }
    if (bytes > memory - total)
      return Status::error(what + " needs " + std::to_string(bytes) +
                           " bytes; with the inputs before it that is more "
                           "than this machine's memory (" +
                           std::to_string(memory) + " bytes)");
    total += bytes;
  }
  return Status::success();
}

namespace {

/// SplitMix64's finaliser: a well-mixed 64-bit value of `x`.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

void partita::drawRandomInputRegion(const Executable &program, size_t input,
                                    uint64_t seed, size_t stream,
                                    const std::vector<IndexRange> &ranges,
                                    const std::vector<int64_t> &paddedShape,
                                    uint8_t *into) {
  const ExecutableValue &value = program.inputs[input];
  const std::vector<int64_t> &shape = value.globalShape;
  float bound = 1.0f;
  if (value.role == "param" && shape.size() >= 2)
    bound = 1.0f / std::sqrt(static_cast<float>(
                       std::max<int64_t>(1, shape[shape.size() - 2])));
  // Optimizer state as an optimizer leaves it: second moments are never
  // negative (a negative one made an AdamW step's update NaN).
  float low = value.role == "opt_state" ? 0.0f : -bound;
  DType dtype = program.slots[value.slot].dtype;
  // Each element is a function of (seed, stream, its global index), so any
  // region of the value is drawn alone, equal to the whole value's.
  uint64_t key = mix64(mix64(seed) ^ (static_cast<uint64_t>(stream) + 1));
  int64_t size = dtypeSize(dtype);
  bool isFloat = dtype == DType::F64 || dtype == DType::F32 ||
                 dtype == DType::BF16 || dtype == DType::F16;
  auto drawRow = [&](int64_t global, int64_t local, int64_t length) {
    uint8_t *element = into + local * size;
    for (int64_t k = 0; k < length; ++k, element += size) {
      uint64_t bits = mix64(key ^ static_cast<uint64_t>(global + k));
      if (isFloat) {
        float unit = static_cast<float>(bits >> 40) * 0x1.0p-24f;
        storeElement(dtype, element, low + (bound - low) * unit);
      } else if (dtype == DType::Bool) {
        *element = static_cast<uint8_t>(bits >> 63);
      } else {
        auto small = static_cast<int64_t>((bits >> 32) % 4);
        std::memcpy(element, &small, size); // little-endian: the low bytes
      }
    }
    return Status::success();
  };
  (void)forEachRegionRow(ranges, shape, paddedShape, drawRow);
}

HostArray partita::randomInputRegion(const Executable &program, size_t input,
                                     uint64_t seed, size_t stream,
                                     const std::vector<IndexRange> &ranges,
                                     const std::vector<int64_t> &paddedShape) {
  HostArray array = HostArray::zeros(
      program.slots[program.inputs[input].slot].dtype, paddedShape);
  drawRandomInputRegion(program, input, seed, stream, ranges, paddedShape,
                        array.bytes.data());
  return array;
}

HostArray partita::randomInput(const Executable &program, size_t input,
                               uint64_t seed, size_t stream) {
  const std::vector<int64_t> &shape = program.inputs[input].globalShape;
  std::vector<IndexRange> whole;
  for (int64_t extent : shape)
    whole.push_back({0, extent});
  return randomInputRegion(program, input, seed, stream, whole, shape);
}

Expected<std::vector<HostArray>>
partita::randomInputs(const Executable &program, uint64_t seed) {
  if (Status status = checkInputsFit(program); !status)
    return status;
  std::vector<HostArray> inputs;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    inputs.push_back(randomInput(program, i, seed, i));
  return inputs;
}

std::string partita::summaryText(DType dtype, const std::vector<int64_t> &shape,
                                 double sum, double low, double high) {
  std::string text = std::string(dtypeName(dtype)) + "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  char numbers[96];
  std::snprintf(numbers, sizeof(numbers), "] sum=%.6g min=%.6g max=%.6g", sum,
                low, high);
  return text + numbers;
}

std::string partita::summarizeArray(const HostArray &array) {
  double sum = 0, low = INFINITY, high = -INFINITY;
  for (int64_t i = 0; i < array.numElements(); ++i) {
    double value = elementAsDouble(array, i);
    sum += value;
    low = std::min(low, value);
    high = std::max(high, value);
  }
  return summaryText(array.dtype, array.shape, sum, low, high);
}

int64_t Executable::allocatedBytes() const {
  int64_t total = 0;
  if (slotOffsets.size() == slots.size())
    return arenaBytes;
  for (const TensorType &slot : slots)
    total += slot.bytes();
  return total;
}

std::string partita::describeExecutable(const Executable &program) {
  std::string text = "mesh " + program.mesh.toString() + " (" +
                     std::to_string(program.mesh.numDevices()) + " devices)\n";
  auto value = [&](const char *kind, size_t index, const ExecutableValue &v) {
    const TensorType &local = program.slots[v.slot];
    text += std::string("  ") + kind + " " + std::to_string(index) + " " +
            v.name + ": " + dtypeName(local.dtype) + "[";
    for (size_t d = 0; d < v.globalShape.size(); ++d)
      text += (d ? "x" : "") + std::to_string(v.globalShape[d]);
    text += "] " + v.sharding.toString();
    if (!v.role.empty())
      text += " " + v.role;
    if (v.donated)
      text += " donated";
    if (v.aliasedInput >= 0)
      text += " updates input " + std::to_string(v.aliasedInput) + " in place";
    text += "\n";
  };
  text += std::to_string(program.inputs.size()) + " inputs\n";
  for (size_t i = 0; i < program.inputs.size(); ++i)
    value("input", i, program.inputs[i]);
  text += std::to_string(program.outputs.size()) + " outputs\n";
  for (size_t o = 0; o < program.outputs.size(); ++o)
    value("output", o, program.outputs[o]);
  std::map<std::string, int64_t> counts;
  for (const Instruction &inst : program.instructions)
    ++counts[opCodeName(inst.op)];
  text += std::to_string(program.instructions.size()) + " instructions:";
  for (const auto &[name, count] : counts)
    text += " " + name + " " + std::to_string(count);
  text += "\n";
  // What the fused instructions hold beyond elementwise steps.
  int64_t fused = 0, heads = 0, reductions = 0;
  for (const Instruction &inst : program.instructions) {
    if (inst.op != OpCode::Fused)
      continue;
    std::vector<TensorType> operandTypes, resultTypes;
    for (int32_t slot : inst.operands)
      operandTypes.push_back(program.slots[slot]);
    for (int32_t slot : inst.results)
      resultTypes.push_back(program.slots[slot]);
    Expected<FusedProgram> decoded =
        decodeFused(inst, operandTypes, resultTypes);
    if (!decoded)
      continue;
    ++fused;
    heads += decoded->head;
    reductions += static_cast<int64_t>(decoded->reductions.size());
  }
  if (fused > 0)
    text += "fused: " + std::to_string(fused) + " instructions, " +
            std::to_string(heads) + " with an einsum head, " +
            std::to_string(reductions) + " reductions\n";
  int64_t slotBytes = 0, constantBytes = 0;
  for (const TensorType &slot : program.slots)
    slotBytes += slot.bytes();
  for (const HostArray &constant : program.constants)
    constantBytes += static_cast<int64_t>(constant.bytes.size());
  text += "buffer plan: " + std::to_string(program.slots.size()) + " slots (" +
          std::to_string(slotBytes) + " bytes) " +
          (program.slotOffsets.empty() ? "each in its own allocation, "
                                       : "in one arena, ") +
          std::to_string(program.allocatedBytes()) + " bytes per device\n";
  text += std::to_string(program.constants.size()) + " constants, " +
          std::to_string(constantBytes) + " bytes\n";
  return text;
}

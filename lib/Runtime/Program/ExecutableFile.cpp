//===- ExecutableFile.cpp - The Executable on disk ------------------------===//

#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Runtime/Program/Fused.h"
#include "partita/Sharding/Layout.h"
#include "partita/Runtime/IO/Files.h"

#include <climits>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

using namespace partita;

namespace {

constexpr char kMagic[8] = {'P', 'A', 'R', 'T', 'E', 'X', 'E', '\0'};


class Writer {
public:
  std::vector<uint8_t> bytes;
  template <typename T> void number(T value) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    bytes.insert(bytes.end(), raw, raw + sizeof(T));
  }
  void string(const std::string &text) {
    number<uint32_t>(static_cast<uint32_t>(text.size()));
    bytes.insert(bytes.end(), text.begin(), text.end());
  }
  template <typename T> void list(const std::vector<T> &values) {
    number<uint32_t>(static_cast<uint32_t>(values.size()));
    for (const T &value : values)
      number<T>(value);
  }
  void strings(const std::vector<std::string> &values) {
    number<uint32_t>(static_cast<uint32_t>(values.size()));
    for (const std::string &value : values)
      string(value);
  }
  void sharding(const Sharding &value) {
    number<uint32_t>(static_cast<uint32_t>(value.dims.size()));
    for (const DimSharding &dim : value.dims)
      strings(dim.axes);
    number<uint8_t>(static_cast<uint8_t>(value.partialKind));
    strings(value.partialAxes);
  }
};

class Reader {
public:
  Reader(const std::vector<uint8_t> &bytes, size_t end, std::string source)
      : bytes(bytes), end(end), source(std::move(source)) {}

  Status failure(const std::string &what) const {
    return Status::error(source + ": " + what + " (at byte " +
                         std::to_string(at) + ")");
  }
  template <typename T> bool number(T &value) {
    if (end - at < sizeof(T))
      return false;
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return true;
  }
  bool count(uint32_t &value, size_t elementBytes) {
    // A count can never promise more elements than bytes are left.
    return number(value) &&
           static_cast<uint64_t>(value) * elementBytes <= end - at;
  }
  bool string(std::string &text) {
    uint32_t size;
    if (!count(size, 1))
      return false;
    text.assign(reinterpret_cast<const char *>(bytes.data() + at), size);
    at += size;
    return true;
  }
  template <typename T> bool list(std::vector<T> &values) {
    uint32_t size;
    if (!count(size, sizeof(T)))
      return false;
    values.resize(size);
    for (T &value : values)
      number(value);
    return true;
  }
  bool strings(std::vector<std::string> &values) {
    uint32_t size;
    if (!count(size, 4))
      return false;
    values.resize(size);
    for (std::string &value : values)
      if (!string(value))
        return false;
    return true;
  }
  bool sharding(Sharding &value) {
    uint32_t rank;
    if (!count(rank, 4))
      return false;
    value.dims.resize(rank);
    for (DimSharding &dim : value.dims)
      if (!strings(dim.axes))
        return false;
    uint8_t kind;
    if (!number(kind) || kind > static_cast<uint8_t>(PartialKind::Min))
      return false;
    value.partialKind = static_cast<PartialKind>(kind);
    return strings(value.partialAxes);
  }
  size_t position() const { return at; }

private:
  const std::vector<uint8_t> &bytes;
  size_t end;
  size_t at = 0;
  std::string source;

  friend Expected<Executable>
  partita::deserializeExecutable(const std::vector<uint8_t> &,
                                 const std::string &);
};

bool validDType(uint8_t value) {
  return value <= static_cast<uint8_t>(DType::Bool);
}

} // namespace

bool partita::looksLikeExecutable(const std::vector<uint8_t> &bytes) {
  return bytes.size() >= sizeof(kMagic) &&
         std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
}

std::vector<uint8_t> partita::serializeExecutable(const Executable &program) {
  Writer out;
  out.bytes.assign(kMagic, kMagic + sizeof(kMagic));
  out.number<uint32_t>(kExecutableFormatVersion);
  out.number<uint32_t>(static_cast<uint32_t>(program.mesh.axes().size()));
  for (const MeshAxis &axis : program.mesh.axes()) {
    out.string(axis.name);
    out.number<int64_t>(axis.size);
  }
  out.list<int64_t>(program.mesh.deviceIds());
  out.number<uint32_t>(static_cast<uint32_t>(program.slots.size()));
  for (const TensorType &slot : program.slots) {
    out.number<uint8_t>(static_cast<uint8_t>(slot.dtype));
    out.list<int64_t>(slot.shape);
  }
  for (const std::vector<ExecutableValue> *values :
       {&program.inputs, &program.outputs}) {
    out.number<uint32_t>(static_cast<uint32_t>(values->size()));
    for (const ExecutableValue &value : *values) {
      out.number<int32_t>(value.slot);
      out.string(value.name);
      out.list<int64_t>(value.globalShape);
      out.sharding(value.sharding);
      out.string(value.role);
      out.number<uint8_t>(value.donated ? 1 : 0);
      out.number<int32_t>(value.aliasedInput);
    }
  }
  out.number<uint32_t>(static_cast<uint32_t>(program.instructions.size()));
  for (const Instruction &inst : program.instructions) {
    out.number<uint16_t>(static_cast<uint16_t>(inst.op));
    out.list<int32_t>(inst.operands);
    out.list<int32_t>(inst.results);
    out.list<int64_t>(inst.ints);
    out.string(inst.text);
  }
  out.list<int64_t>(program.slotOffsets);
  out.number<int64_t>(program.arenaBytes);
  out.number<uint32_t>(static_cast<uint32_t>(program.constants.size()));
  for (const HostArray &constant : program.constants) {
    out.number<uint8_t>(static_cast<uint8_t>(constant.dtype));
    out.list<int64_t>(constant.shape);
    out.list<uint8_t>(constant.bytes);
  }
  out.number<uint64_t>(executableChecksum(out.bytes.data(), out.bytes.size()));
  return out.bytes;
}

namespace {

/// Whether instruction `inst` may write slot `born` over the bytes of slot
/// `dying`, which dies there (the buffer plan's in-place updates:
/// elementwise ops, select, reshape, fused chains (fusedWritesInPlace()),
/// all_reduce, which every
/// communicator runs in place, and a loop, whose carry k may take the bytes
/// of initial value k, and whose results those of any initial value: it
/// copies them at its start and never reads them again).
bool writesInPlace(const Instruction &inst, int32_t dying, int32_t born) {
  if (inst.op == OpCode::Loop) {
    // Initial values are copied into the carries in order, so carry k may
    // sit only on initial value k; results and the trip counter are written
    // after every copy.
    size_t carried = inst.operands.size();
    for (size_t k = 0; k < carried && 3 + k < inst.ints.size(); ++k)
      if (inst.ints[3 + k] == born)
        return inst.operands[k] == dying;
    return std::find(inst.operands.begin(), inst.operands.end(), dying) !=
           inst.operands.end();
  }
  if (inst.op == OpCode::Fused)
    return fusedWritesInPlace(inst, dying, born);
  // A dynamic_update_slice writes its update into its operand's bytes; the
  // update itself must stay apart.
  if (inst.op == OpCode::DynamicUpdateSlice)
    return !inst.operands.empty() && inst.operands[0] == dying;
  OpFamily family = opFamily(inst.op);
  return family == OpFamily::ElementwiseUnary ||
         family == OpFamily::ElementwiseBinary ||
         inst.op == OpCode::Select || inst.op == OpCode::Reshape ||
         inst.op == OpCode::AllReduce;
}

/// Every loop is well formed (checkLoopInstruction()), its body inside the
/// body around it; every wait names a collective that moves data (not
/// all_slice), earlier
/// in the wait's own stretch of the stream (Instruction.h), waited for
/// once; its operands are that collective's result and operand, or only
/// the result when the collective runs in place (the same bytes under the
/// buffer plan), so checkSlotsApart() sees both alive until the wait.
Status checkLoopsAndWaits(const Executable &program) {
  const std::vector<Instruction> &stream = program.instructions;
  auto count = static_cast<int64_t>(stream.size());
  // The innermost loop around each instruction (-1: the top level).
  std::vector<int64_t> stretch(count, -1);
  std::vector<std::pair<int64_t, int64_t>> open; // (loop, end of its body)
  for (int64_t i = 0; i < count; ++i) {
    while (!open.empty() && i >= open.back().second)
      open.pop_back();
    stretch[i] = open.empty() ? -1 : open.back().first;
    const Instruction &inst = stream[i];
    if (inst.op == OpCode::Loop && inst.ints.size() >= 2 && inst.ints[1] >= 0)
      open.push_back({i, std::min(count, i + 1 + inst.ints[1])});
  }
  // Loops are well formed, each body inside the body around it.
  for (int64_t i = 0; i < count; ++i) {
    if (stream[i].op != OpCode::Loop)
      continue;
    int64_t end = count, outer = stretch[i];
    if (outer >= 0)
      end = std::min(count, outer + 1 + std::max<int64_t>(
                                            stream[outer].ints[1], 0));
    if (Status valid = checkLoopInstruction(program, stream[i],
                                            static_cast<size_t>(i),
                                            static_cast<size_t>(end));
        !valid.ok())
      return Status::error("instruction " + std::to_string(i) + ": " +
                           valid.message());
  }
  std::vector<bool> waited(count, false);
  for (int64_t q = 0; q < count; ++q) {
    const Instruction &wait = stream[q];
    if (wait.op != OpCode::Wait)
      continue;
    std::string where = "wait (instruction " + std::to_string(q) + ")";
    if (wait.ints.size() != 1 || wait.ints[0] <= 0 || wait.ints[0] > q)
      return Status::error(where + " does not name an earlier instruction");
    int64_t s = q - wait.ints[0];
    const Instruction &start = stream[s];
    if (!isCollective(start.op) || start.op == OpCode::AllSlice ||
        start.operands.size() != 1 || start.results.size() != 1)
      return Status::error(where + " names instruction " + std::to_string(s) +
                           ", " + opCodeName(start.op) +
                           ", not a collective that moves data");
    if (stretch[s] != stretch[q])
      return Status::error(where + " and its collective (instruction " +
                           std::to_string(s) +
                           ") are not in the same loop body");
    if (waited[s])
      return Status::error(where + ": instruction " + std::to_string(s) +
                           " is waited for twice");
    waited[s] = true;
    int32_t operand = start.operands[0], result = start.results[0];
    bool inPlace = operand == result ||
                   (!program.slotOffsets.empty() &&
                    program.slotOffsets[operand] == program.slotOffsets[result]);
    bool listed = !wait.operands.empty() && wait.operands[0] == result &&
                  ((wait.operands.size() == 2 && wait.operands[1] == operand) ||
                   (wait.operands.size() == 1 && inPlace));
    if (!listed)
      return Status::error(where + " must list its collective's result slot "
                                   "and, unless it runs in place, its operand "
                                   "slot");
  }
  return Status::success();
}

/// Under a buffer plan, no two slots alive at the same point may share a
/// byte, except a result written in place of an operand that dies at that
/// instruction (same offset and size). Inputs are alive from the start,
/// outputs to the end. Points: the instructions in order, and each loop's
/// yield (where an iteration ends) after its body's last instruction.
/// A loop's initial values, results and carries are alive at the loop's
/// instruction, the carries, the yielded values and their copies at its
/// yield; and a slot alive before a loop that its body touches stays alive
/// until the yield (every iteration reads it) — the liveness the buffer
/// plan is made from (Liveness.h).
Status checkSlotsApart(const Executable &program) {
  size_t slots = program.slots.size();
  if (program.slotOffsets.size() != slots)
    return Status::success();
  const std::vector<Instruction> &stream = program.instructions;
  auto count = static_cast<int64_t>(stream.size());
  // Program points in order: each instruction, and each loop's yield right
  // after its body (an inner loop's before the outer's when both bodies end
  // at the same instruction). `instructionAt` maps a point back (-1: a
  // yield).
  std::vector<int64_t> pointOf(count, 0), yieldOf(count, -1), instructionAt;
  {
    std::vector<std::pair<int64_t, int64_t>> open; // (loop, end of its body)
    auto closeUntil = [&](int64_t i) {
      while (!open.empty() && open.back().second <= i) {
        yieldOf[open.back().first] =
            static_cast<int64_t>(instructionAt.size());
        instructionAt.push_back(-1);
        open.pop_back();
      }
    };
    for (int64_t i = 0; i < count; ++i) {
      closeUntil(i);
      pointOf[i] = static_cast<int64_t>(instructionAt.size());
      instructionAt.push_back(i);
      const Instruction &inst = stream[i];
      if (inst.op == OpCode::Loop && inst.ints.size() >= 3) {
        int64_t length = std::max<int64_t>(inst.ints[1], 0);
        open.push_back({i, std::min(count, i + 1 + length)});
        closeUntil(i + 1);
      }
    }
    closeUntil(count);
  }
  int64_t end = static_cast<int64_t>(instructionAt.size());
  std::vector<int64_t> first(slots, INT64_MAX), last(slots, -2);
  auto touch = [&](int64_t slot, int64_t at) {
    if (slot < 0 || slot >= static_cast<int64_t>(slots))
      return;
    first[slot] = std::min(first[slot], at);
    last[slot] = std::max(last[slot], at);
  };
  for (int64_t i = 0; i < count; ++i) {
    const Instruction &inst = stream[i];
    for (int32_t slot : inst.operands)
      touch(slot, pointOf[i]);
    for (int32_t slot : inst.results)
      touch(slot, pointOf[i]);
    if (yieldOf[i] < 0)
      continue;
    size_t carried = inst.operands.size();
    touch(inst.ints[2], pointOf[i]);
    for (size_t k = 3; k < inst.ints.size(); ++k) {
      if (k < 3 + carried)
        touch(inst.ints[k], pointOf[i]);
      touch(inst.ints[k], yieldOf[i]);
    }
  }
  for (const ExecutableValue &input : program.inputs)
    touch(input.slot, -1);
  for (const ExecutableValue &output : program.outputs)
    touch(output.slot, end);
  for (int64_t i = 0; i < count; ++i)
    if (yieldOf[i] >= 0)
      for (size_t s = 0; s < slots; ++s)
        if (first[s] < pointOf[i] && last[s] > pointOf[i])
          last[s] = std::max(last[s], yieldOf[i]);

  // A sweep over the instructions with the live slots by offset: slots
  // alive together must be apart, so checking a new slot against its
  // neighbours by offset finds any overlap.
  std::vector<std::vector<int32_t>> startsAt(end + 2), endsAt(end + 2);
  for (size_t s = 0; s < slots; ++s)
    if (last[s] >= -1 && program.slots[s].bytes() > 0) {
      startsAt[first[s] + 1].push_back(static_cast<int32_t>(s));
      endsAt[last[s] + 1].push_back(static_cast<int32_t>(s));
    }
  std::multimap<int64_t, int32_t> live;
  auto highOf = [&](int32_t s) {
    return program.slotOffsets[s] + program.slots[s].bytes();
  };
  for (int64_t t = -1; t <= end; ++t) {
    for (int32_t s : startsAt[t + 1]) {
      int64_t low = program.slotOffsets[s], high = highOf(s);
      // Every live slot that starts below `high` and ends above `low`.
      for (auto it = live.upper_bound(high - 1); it != live.begin();) {
        --it;
        int32_t other = it->second;
        if (highOf(other) <= low)
          break;
        // A fused instruction's head product is born with the results
        // that may take its bytes: the pair is checked in either order.
        const Instruction *at =
            t >= 0 && t < end && instructionAt[t] >= 0
                ? &stream[instructionAt[t]]
                : nullptr;
        // A fused instruction's reduction results are written after all
        // its reads: they may overlap anything that dies there, except
        // each other (they are written one after another).
        bool exact = program.slotOffsets[other] == low && highOf(other) == high;
        auto writtenLast = [&](int32_t born, int32_t dying) {
          return fusedWritesLast(*at, born) && !fusedWritesLast(*at, dying);
        };
        bool inPlace =
            at &&
            ((last[other] == t &&
              ((exact && writesInPlace(*at, other, s)) ||
               writtenLast(s, other))) ||
             (first[other] == t && last[s] == t &&
              ((exact && writesInPlace(*at, s, other)) ||
               writtenLast(other, s))));
        if (!inPlace)
          return Status::error(
              "the buffer plan puts slots " + std::to_string(other) +
              " and " + std::to_string(s) +
              " on the same bytes while both are alive");
      }
      live.emplace(low, s);
    }
    for (int32_t s : endsAt[t + 1]) {
      auto range = live.equal_range(program.slotOffsets[s]);
      for (auto it = range.first; it != range.second; ++it)
        if (it->second == s) {
          live.erase(it);
          break;
        }
    }
  }
  return Status::success();
}

} // namespace

uint64_t partita::executableChecksum(const uint8_t *data, size_t size) {
  uint64_t hash = 14695981039346656037ULL;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ULL;
  }
  return hash;
}

namespace {

/// Checks what precedes and follows the sections of an Executable's
/// `bytes`: the magic, the format version and the trailing checksum.
Status checkFraming(const std::vector<uint8_t> &bytes,
                    const std::string &source) {
  if (!looksLikeExecutable(bytes))
    return Status::error(source + ": not a Partita Executable (bad magic)");
  if (bytes.size() < sizeof(kMagic) + 4 + 8)
    return Status::error(source + ": truncated Executable");
  uint32_t version;
  std::memcpy(&version, bytes.data() + sizeof(kMagic), 4);
  if (version != kExecutableFormatVersion)
    return Status::error(
        source + ": Executable format version " + std::to_string(version) +
        ", this build reads version " +
        std::to_string(kExecutableFormatVersion) + "; recompile the program");
  size_t end = bytes.size() - 8;
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + end, 8);
  if (stored != executableChecksum(bytes.data(), end))
    return Status::error(source + ": corrupt Executable (checksum mismatch)");
  return Status::success();
}

/// The failure for a section `what` that ends early or does not parse.
Status truncated(const Reader &in, const char *what) {
  return in.failure(std::string("truncated or malformed ") + what);
}

/// Reads the mesh: its axes and device ids.
Status readMesh(Reader &in, Executable &program) {
  uint32_t axes;
  if (!in.count(axes, 12))
    return truncated(in, "mesh");
  std::vector<MeshAxis> meshAxes(axes);
  for (MeshAxis &axis : meshAxes)
    if (!in.string(axis.name) || !in.number(axis.size))
      return truncated(in, "mesh axis");
  std::vector<int64_t> ids;
  if (!in.list(ids))
    return truncated(in, "device ids");
  Expected<Mesh> mesh = Mesh::create(meshAxes, ids);
  if (!mesh)
    return in.failure("invalid mesh: " + mesh.status().message());
  program.mesh = *mesh;
  return Status::success();
}

/// Reads the slots' types, checking their sizes.
Status readSlots(Reader &in, Executable &program) {
  uint32_t slots;
  if (!in.count(slots, 5))
    return truncated(in, "slots");
  program.slots.resize(slots);
  for (TensorType &slot : program.slots) {
    uint8_t dtype;
    if (!in.number(dtype) || !validDType(dtype) || !in.list(slot.shape))
      return truncated(in, "slot type");
    slot.dtype = static_cast<DType>(dtype);
    for (int64_t size : slot.shape)
      if (size < 0 || size > (int64_t(1) << 40))
        return in.failure("slot with an invalid dimension size");
    // The byte count must be a number (no overflow of the product).
    if (!checkedNumBytes(slot.dtype, slot.shape))
      return in.failure("slot whose size in bytes overflows");
  }
  return Status::success();
}

/// Reads one input or output, checking its slot, its donation flag and that
/// its global shape, sharding and slot agree.
Status readValue(Reader &in, const Executable &program,
                 ExecutableValue &value) {
  uint8_t donated = 0;
  if (!in.number(value.slot) || !in.string(value.name) ||
      !in.list(value.globalShape) || !in.sharding(value.sharding) ||
      !in.string(value.role) || !in.number(donated) ||
      !in.number(value.aliasedInput))
    return truncated(in, "input/output");
  if (value.slot < 0 ||
      value.slot >= static_cast<int32_t>(program.slots.size()))
    return in.failure("input/output slot out of range");
  if (donated > 1)
    return in.failure("invalid donation flag");
  value.donated = donated == 1;
  // The global shape, the sharding and the local slot must agree
  // (otherwise a run would build inputs of the global shape, however
  // large, for a slot that cannot hold their blocks).
  if (Status valid =
          validateSharding(program.mesh, value.sharding, &value.globalShape);
      !valid.ok())
    return in.failure("input/output '" + value.name + "': " + valid.message());
  for (int64_t dim : value.globalShape)
    if (dim < 0)
      return in.failure("input/output '" + value.name +
                        "' has a negative dimension");
  if (localShape(program.mesh, value.sharding, value.globalShape) !=
      program.slots[value.slot].shape)
    return in.failure("input/output '" + value.name +
                      "': its global shape split by its sharding is not "
                      "its slot's shape");
  return Status::success();
}

/// Reads the inputs, then the outputs, and checks that an output aliases
/// only a donated input.
Status readInputsAndOutputs(Reader &in, Executable &program) {
  for (std::vector<ExecutableValue> *values :
       {&program.inputs, &program.outputs}) {
    uint32_t count;
    if (!in.count(count, 12))
      return truncated(in, "inputs/outputs");
    values->resize(count);
    for (ExecutableValue &value : *values)
      if (Status status = readValue(in, program, value); !status.ok())
        return status;
  }
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    int32_t input = program.outputs[o].aliasedInput;
    if (input < -1 || input >= static_cast<int32_t>(program.inputs.size()) ||
        (input >= 0 && !program.inputs[input].donated))
      return in.failure("output " + std::to_string(o) +
                        " aliases an input that is not donated");
  }
  return Status::success();
}

/// Reads one instruction, checking its opcode, its operand and result
/// counts and that it names only the `slots` slots that exist.
Status readInstruction(Reader &in, uint32_t slots, Instruction &inst) {
  uint16_t op;
  if (!in.number(op) || !isValidOpCode(op) || !in.list(inst.operands) ||
      !in.list(inst.results) || !in.list(inst.ints) || !in.string(inst.text))
    return truncated(in, "instruction");
  inst.op = static_cast<OpCode>(op);
  OpArity arity = opArity(inst.op);
  if ((arity.operands >= 0 &&
       inst.operands.size() != static_cast<size_t>(arity.operands)) ||
      (arity.results >= 0 &&
       inst.results.size() != static_cast<size_t>(arity.results)))
    return in.failure(std::string("instruction ") + opCodeName(inst.op) +
                      " has " + std::to_string(inst.operands.size()) +
                      " operand(s) and " + std::to_string(inst.results.size()) +
                      " result(s), not " + std::to_string(arity.operands) +
                      " and " + std::to_string(arity.results));
  // Variadic ops the kernels index before counting: their least operand
  // counts (a dynamic_update_slice without its update read past its
  // operand list: found by fuzzing).
  size_t least = 0;
  if (inst.op == OpCode::DynamicUpdateSlice)
    least = 2;
  else if (inst.op == OpCode::DynamicSlice || inst.op == OpCode::Concatenate ||
           inst.op == OpCode::Einsum)
    least = 1;
  if (inst.operands.size() < least)
    return in.failure(std::string("instruction ") + opCodeName(inst.op) +
                      " has " + std::to_string(inst.operands.size()) +
                      " operand(s), fewer than its " + std::to_string(least));
  for (const std::vector<int32_t> *list : {&inst.operands, &inst.results})
    for (int32_t slot : *list)
      if (slot < 0 || slot >= static_cast<int32_t>(slots))
        return in.failure(std::string("instruction ") + opCodeName(inst.op) +
                          " names slot " + std::to_string(slot) + " of " +
                          std::to_string(slots));
  return Status::success();
}

/// Reads the instruction stream.
Status readInstructions(Reader &in, Executable &program) {
  uint32_t instructions;
  if (!in.count(instructions, 18))
    return truncated(in, "instructions");
  program.instructions.resize(instructions);
  uint32_t slots = static_cast<uint32_t>(program.slots.size());
  for (Instruction &inst : program.instructions)
    if (Status status = readInstruction(in, slots, inst); !status.ok())
      return status;
  return Status::success();
}

/// Reads the buffer plan (the slots' offsets and the arena's size), checking
/// that, when present, it puts every slot inside the arena on its element
/// size.
Status readBufferPlan(Reader &in, Executable &program) {
  if (!in.list(program.slotOffsets) || !in.number(program.arenaBytes))
    return truncated(in, "buffer plan");
  if (program.slotOffsets.empty())
    return Status::success();
  size_t slots = program.slots.size();
  if (program.slotOffsets.size() != slots)
    return in.failure("the buffer plan does not cover every slot");
  for (size_t s = 0; s < slots; ++s) {
    int64_t offset = program.slotOffsets[s];
    if (offset < 0 || offset > program.arenaBytes ||
        program.arenaBytes - offset < program.slots[s].bytes())
      return in.failure("the buffer plan puts slot " + std::to_string(s) +
                        " outside the arena");
    // Kernels read elements in place: a slot starts on its element size.
    if (offset % dtypeSize(program.slots[s].dtype) != 0)
      return in.failure("the buffer plan puts slot " + std::to_string(s) +
                        " at offset " + std::to_string(offset) +
                        ", not a multiple of its element size");
  }
  return Status::success();
}

/// Checks that an output updating an input in place is written into its
/// storage: the two share their type and their bytes.
Status checkInPlaceOutputs(const Reader &in, const Executable &program) {
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    int32_t input = program.outputs[o].aliasedInput;
    if (input < 0)
      continue;
    int32_t from = program.inputs[input].slot, to = program.outputs[o].slot;
    bool sameType = program.slots[from].dtype == program.slots[to].dtype &&
                    program.slots[from].shape == program.slots[to].shape;
    bool sameStorage =
        from == to || (!program.slotOffsets.empty() &&
                       program.slotOffsets[from] == program.slotOffsets[to]);
    if (!sameType || !sameStorage)
      return in.failure("output " + std::to_string(o) +
                        " updates input " + std::to_string(input) +
                        " in place but does not share its type and storage");
  }
  return Status::success();
}

/// Reads the constants, checking that each one's bytes match its shape.
Status readConstants(Reader &in, Executable &program) {
  uint32_t constants;
  if (!in.count(constants, 9))
    return truncated(in, "constants");
  program.constants.resize(constants);
  for (HostArray &constant : program.constants) {
    uint8_t dtype;
    if (!in.number(dtype) || !validDType(dtype) || !in.list(constant.shape) ||
        !in.list(constant.bytes))
      return truncated(in, "constant");
    constant.dtype = static_cast<DType>(dtype);
    if (!constant.checkConsistent().ok())
      return in.failure("constant whose bytes do not match its shape");
  }
  return Status::success();
}

} // namespace

Expected<Executable>
partita::deserializeExecutable(const std::vector<uint8_t> &bytes,
                               const std::string &source) {
  if (Status status = checkFraming(bytes, source); !status.ok())
    return status;
  size_t end = bytes.size() - 8;
  Reader in(bytes, end, source);
  in.at = sizeof(kMagic) + 4;
  Executable program;
  if (Status status = readMesh(in, program); !status.ok())
    return status;
  if (Status status = readSlots(in, program); !status.ok())
    return status;
  if (Status status = readInputsAndOutputs(in, program); !status.ok())
    return status;
  if (Status status = readInstructions(in, program); !status.ok())
    return status;
  if (Status status = readBufferPlan(in, program); !status.ok())
    return status;
  if (Status status = checkLoopsAndWaits(program); !status.ok())
    return in.failure(status.message());
  if (Status status = checkSlotsApart(program); !status.ok())
    return in.failure(status.message());
  if (Status status = checkInPlaceOutputs(in, program); !status.ok())
    return status;
  if (Status status = readConstants(in, program); !status.ok())
    return status;
  if (in.position() != end)
    return in.failure("trailing bytes after the constants");
  return program;
}

Status partita::writeExecutableFile(const Executable &program,
                                    const std::string &path) {
  std::vector<uint8_t> bytes = serializeExecutable(program);
  return writeFileAtomically(
      path, std::string_view(reinterpret_cast<const char *>(bytes.data()),
                             bytes.size()));
}

Expected<Executable> partita::readExecutableFile(const std::string &path) {
  // Reading a directory fails inside the stream buffer, which reports it by
  // throwing, and a device or FIFO may never end: ask the file system first.
  if (Status regular = requireRegularFile(path); !regular)
    return Status::error("cannot read '" + path + "': " + regular.message());
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::error("cannot read '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  return deserializeExecutable(bytes, path);
}

//===- ExecutableFile.cpp - The Executable on disk ------------------------===//

#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Runtime/IO/Files.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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

uint64_t partita::executableChecksum(const uint8_t *data, size_t size) {
  uint64_t hash = 14695981039346656037ULL;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ULL;
  }
  return hash;
}

Expected<Executable>
partita::deserializeExecutable(const std::vector<uint8_t> &bytes,
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

  Reader in(bytes, end, source);
  in.at = sizeof(kMagic) + 4;
  Executable program;
  auto truncated = [&](const char *what) {
    return in.failure(std::string("truncated or malformed ") + what);
  };
  uint32_t axes;
  if (!in.count(axes, 12))
    return truncated("mesh");
  std::vector<MeshAxis> meshAxes(axes);
  for (MeshAxis &axis : meshAxes)
    if (!in.string(axis.name) || !in.number(axis.size))
      return truncated("mesh axis");
  std::vector<int64_t> ids;
  if (!in.list(ids))
    return truncated("device ids");
  Expected<Mesh> mesh = Mesh::create(meshAxes, ids);
  if (!mesh)
    return in.failure("invalid mesh: " + mesh.status().message());
  program.mesh = *mesh;
  uint32_t slots;
  if (!in.count(slots, 5))
    return truncated("slots");
  program.slots.resize(slots);
  for (TensorType &slot : program.slots) {
    uint8_t dtype;
    if (!in.number(dtype) || !validDType(dtype) || !in.list(slot.shape))
      return truncated("slot type");
    slot.dtype = static_cast<DType>(dtype);
    for (int64_t size : slot.shape)
      if (size < 0 || size > (int64_t(1) << 40))
        return in.failure("slot with an invalid dimension size");
    // The byte count must be a number (no overflow of the product).
    if (!checkedNumBytes(slot.dtype, slot.shape))
      return in.failure("slot whose size in bytes overflows");
  }
  for (std::vector<ExecutableValue> *values :
       {&program.inputs, &program.outputs}) {
    uint32_t count;
    if (!in.count(count, 12))
      return truncated("inputs/outputs");
    values->resize(count);
    for (ExecutableValue &value : *values) {
      uint8_t donated = 0;
      if (!in.number(value.slot) || !in.string(value.name) ||
          !in.list(value.globalShape) || !in.sharding(value.sharding) ||
          !in.string(value.role) || !in.number(donated) ||
          !in.number(value.aliasedInput))
        return truncated("input/output");
      if (value.slot < 0 || value.slot >= static_cast<int32_t>(slots))
        return in.failure("input/output slot out of range");
      if (donated > 1)
        return in.failure("invalid donation flag");
      value.donated = donated == 1;
    }
  }
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    int32_t input = program.outputs[o].aliasedInput;
    if (input < -1 || input >= static_cast<int32_t>(program.inputs.size()) ||
        (input >= 0 && !program.inputs[input].donated))
      return in.failure("output " + std::to_string(o) +
                        " aliases an input that is not donated");
  }
  uint32_t instructions;
  if (!in.count(instructions, 18))
    return truncated("instructions");
  program.instructions.resize(instructions);
  for (Instruction &inst : program.instructions) {
    uint16_t op;
    if (!in.number(op) || !isValidOpCode(op) ||
        !in.list(inst.operands) || !in.list(inst.results) ||
        !in.list(inst.ints) || !in.string(inst.text))
      return truncated("instruction");
    inst.op = static_cast<OpCode>(op);
    OpArity arity = opArity(inst.op);
    if ((arity.operands >= 0 &&
         inst.operands.size() != static_cast<size_t>(arity.operands)) ||
        (arity.results >= 0 &&
         inst.results.size() != static_cast<size_t>(arity.results)))
      return in.failure(std::string("instruction ") + opCodeName(inst.op) +
                        " has " + std::to_string(inst.operands.size()) +
                        " operand(s) and " +
                        std::to_string(inst.results.size()) +
                        " result(s), not " + std::to_string(arity.operands) +
                        " and " + std::to_string(arity.results));
    for (const std::vector<int32_t> *list : {&inst.operands, &inst.results})
      for (int32_t slot : *list)
        if (slot < 0 || slot >= static_cast<int32_t>(slots))
          return in.failure(std::string("instruction ") + opCodeName(inst.op) +
                            " names slot " + std::to_string(slot) + " of " +
                            std::to_string(slots));
  }
  if (!in.list(program.slotOffsets) || !in.number(program.arenaBytes))
    return truncated("buffer plan");
  if (!program.slotOffsets.empty()) {
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
  }
  // An output updating an input in place is written into its storage.
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
  uint32_t constants;
  if (!in.count(constants, 9))
    return truncated("constants");
  program.constants.resize(constants);
  for (HostArray &constant : program.constants) {
    uint8_t dtype;
    if (!in.number(dtype) || !validDType(dtype) || !in.list(constant.shape) ||
        !in.list(constant.bytes))
      return truncated("constant");
    constant.dtype = static_cast<DType>(dtype);
    if (!constant.checkConsistent().ok())
      return in.failure("constant whose bytes do not match its shape");
  }
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

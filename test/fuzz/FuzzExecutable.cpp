//===- FuzzExecutable.cpp - libFuzzer target: the Executable loader -------===//
//
// Any bytes, with the trailing checksum made to match (a corrupt field
// must be caught by validation, not by the checksum: docs/Robustness.md),
// go through deserializeExecutable; a program it accepts that is small
// enough to run quickly then runs on its mesh's CPU devices with random
// inputs. The loader must refuse, and the run fail cleanly, rather than
// crash, hang or touch memory out of bounds.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/Program/ExecutableFile.h"

#include <cstring>

using namespace partita;

namespace {
/// Work bounds for running an accepted program (a fuzzer input must take
/// milliseconds).
bool smallEnough(const Executable &program) {
  if (program.mesh.numDevices() > 8 || program.arenaBytes > (1 << 22) ||
      program.instructions.size() > 64)
    return false;
  int64_t bytes = 0;
  for (const TensorType &slot : program.slots)
    bytes += slot.bytes();
  if (bytes > (1 << 22))
    return false;
  for (const Instruction &inst : program.instructions)
    if (inst.op == OpCode::Loop && (inst.ints.empty() || inst.ints[0] > 16))
      return false;
  return true;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (bytes.size() >= 16) {
    uint64_t sum = executableChecksum(bytes.data(), bytes.size() - 8);
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  Expected<Executable> program = deserializeExecutable(bytes, "fuzz");
  if (!program || !smallEnough(*program))
    return 0;
  Expected<std::vector<HostArray>> inputs = randomInputs(*program, 1);
  if (!inputs)
    return 0;
  (void)runOnCpuDevices(*program, *inputs);
  return 0;
}

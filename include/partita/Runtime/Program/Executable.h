//===- Executable.h - A compiled program ------------------------*- C++ -*-===//
//
// The program every device runs: instructions over buffer slots with static
// local types, a constant pool, the mesh, and how each input and output is
// laid out over the mesh. The compiler produces it (lib/Codegen); the file
// format (ExecutableFile.h) serializes exactly these fields; running it is
// the Execution room's (Execution/Run.h). Nothing here needs MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_EXECUTABLE_H
#define PARTITA_RUNTIME_EXECUTABLE_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Runtime/Program/Instruction.h"
#include "partita/Sharding/Layout.h"
#include "partita/Sharding/Sharding.h"

#include <memory>
#include <string>
#include <vector>

namespace partita {

/// How a program input or output is laid out over the mesh.
struct ExecutableValue {
  int32_t slot = 0;
  std::vector<int64_t> globalShape;
  Sharding sharding;
  /// For messages: the value's name.
  std::string name;
  /// Inputs: what the argument holds (`partita.role`: "param", "opt_state",
  /// "grad", "input", "activation"), or empty.
  std::string role;
  /// Inputs: the caller gives the buffer up (`partita.donated`); the program
  /// may reuse its storage once the value is dead.
  bool donated = false;
  /// Outputs: the donated input whose storage this output is written into
  /// (the program updates that argument in place), or -1.
  int32_t aliasedInput = -1;
};

/// A compiled program.
struct Executable {
  Mesh mesh;
  /// Local type of every buffer slot.
  std::vector<TensorType> slots;
  std::vector<ExecutableValue> inputs;
  std::vector<ExecutableValue> outputs;
  std::vector<Instruction> instructions;
  std::vector<HostArray> constants;
  /// The buffer plan: each slot's byte offset in one arena per device, and
  /// the arena's size. Slots whose live ranges do not overlap may share
  /// bytes. Empty: every slot has its own allocation.
  std::vector<int64_t> slotOffsets;
  int64_t arenaBytes = 0;

  /// Bytes a device allocates under the plan.
  int64_t allocatedBytes() const;
};

/// Deterministic random global inputs for `program` from `seed`: floats
/// uniform in [-1, 1], except parameters (role "param") of rank >= 2, which
/// are initialised as a model would be, uniform in ±1/sqrt(fan_in) with
/// fan_in the next-to-last dimension (so activations keep their scale and
/// checks are well conditioned); integers in [0, 4), booleans at random (the
/// same in `partita run` and `partita-exec run`). Fails, naming the input
/// and its size, when an input's bytes overflow or the inputs together
/// exceed this machine's memory (allocating them could only abort).
/// Input `input` of `program` as randomInputs makes it, drawn from random
/// stream `stream` (randomInputs uses the input's index; a pipeline stage
/// uses the whole model's parameter index, so that its parameters start as
/// the non-pipelined step's).
/// Each element is a function of the seed, the stream and its global
/// index alone, so any region is drawn without the rest
/// (randomInputRegion) and equals that region of the whole value.
HostArray randomInput(const Executable &program, size_t input, uint64_t seed,
                      size_t stream);

/// The elements of randomInput()'s value inside `ranges` (one per
/// dimension, within the global shape), in an array of `paddedShape` whose
/// other elements are zero: a device's block, drawn alone.
HostArray randomInputRegion(const Executable &program, size_t input,
                            uint64_t seed, size_t stream,
                            const std::vector<IndexRange> &ranges,
                            const std::vector<int64_t> &paddedShape);
/// randomInputRegion() written into `into`, the zeroed bytes of an array
/// of `paddedShape`.
void drawRandomInputRegion(const Executable &program, size_t input,
                           uint64_t seed, size_t stream,
                           const std::vector<IndexRange> &ranges,
                           const std::vector<int64_t> &paddedShape,
                           uint8_t *into);

Expected<std::vector<HostArray>> randomInputs(const Executable &program,
                                              uint64_t seed);

/// Checks that the global inputs of `program` can be allocated here: every
/// shape valid, no byte count overflowing, the total within this machine's
/// physical memory. The error names the input, its shape and its bytes.
Status checkInputsFit(const Executable &program);

/// "f32[4x8] sum=… min=… max=…": a one-line fingerprint of an array.
std::string summarizeArray(const HostArray &array);
/// summarizeArray()'s line for an array of `dtype` and `shape` whose
/// elements sum to `sum` (NaN when one is NaN), least `low`, largest
/// `high` (NaNs left out of both).
std::string summaryText(DType dtype, const std::vector<int64_t> &shape,
                        double sum, double low, double high);

/// Checks loop instruction `inst` of `program` whose body must end by
/// instruction `end`: as many results as initial values, `ints` of the
/// documented length (Instruction.h), a body inside [index + 1, end), slots
/// in range, an i32 scalar trip counter, and the same type for each
/// carried value's initial value, carry, yielded value, copy and result
/// (the loop copies between them). The error says what is wrong.
Status checkLoopInstruction(const Executable &program, const Instruction &inst,
                            size_t index, size_t end);

/// A human-readable description of `program`: mesh, inputs (donated or
/// not), outputs (and the input each updates in place), instruction counts
/// by op, the buffer plan and the constants.
std::string describeExecutable(const Executable &program);

/// What a program communicates per step, by the report's convention
/// (bus-traffic bytes per device, loops counted once per iteration,
/// all_slice not counted).
struct CommunicationSummary {
  int64_t collectives = 0;
  double bytesPerDevice = 0;
};

/// Bus-traffic bytes per device of collective instruction `inst` of
/// `program`, by the report's convention (0 for all_slice and non-collectives).
double collectiveBusBytes(const Executable &program, const Instruction &inst);

/// The communication of `program` (the same figures as the compile report).
CommunicationSummary summarizeCommunication(const Executable &program);

} // namespace partita

#endif // PARTITA_RUNTIME_EXECUTABLE_H

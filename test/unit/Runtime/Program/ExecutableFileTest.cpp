//===- ExecutableFileTest.cpp - The Executable on disk --------------------===//
//
// Round trips, and the loader's answers to truncated, corrupted, foreign
// and inconsistent files: always a clear error, never a crash.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Runtime/Program/Fused.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace partita;

namespace {

/// A small program touching every field: a 2x2 mesh with device ids, a
/// sharded input, a constant, an einsum, a loop and a collective.
Executable sampleProgram() {
  Executable program;
  program.mesh = *Mesh::create({{"data", 2}, {"model", 2}}, {3, 2, 1, 0});
  program.slots = {{DType::F32, {2, 4}}, {DType::F32, {4, 4}},
                   {DType::F32, {2, 4}}, {DType::I32, {}},
                   {DType::F32, {2, 4}}, {DType::F32, {2, 4}},
                   {DType::F32, {2, 4}}};
  ExecutableValue input{
      0, {4, 4}, *parsePartitionSpec("P(\"data\", None)", 2), "x"};
  ExecutableValue output{
      5, {4, 4}, *parsePartitionSpec("P(\"data\", None)", 2), "result 0"};
  output.sharding.partialKind = PartialKind::None;
  // The input is donated and the output updates it in place.
  input.role = "param";
  input.donated = true;
  output.aliasedInput = 0;
  program.inputs = {input};
  program.outputs = {output};
  Instruction constant{OpCode::Constant, {}, {1}, {0}, ""};
  Instruction einsum{OpCode::Einsum, {0, 1}, {2}, {}, "bd,df->bf"};
  Instruction loop{OpCode::Loop, {2}, {5}, {3, 1, 3, 4, 4, 6}, ""};
  Instruction reduce{OpCode::AllReduce, {4}, {4}, {0}, "model"};
  program.instructions = {constant, einsum, loop, reduce};
  program.constants = {HostArray::zeros(DType::F32, {4, 4})};
  // A buffer plan in which slots 2 and 4 share bytes, and the output
  // (slot 5) takes the donated input's place (slot 0).
  program.slotOffsets = {0, 64, 128, 192, 128, 0, 224};
  program.arenaBytes = 256;
  return program;
}

bool sameProgram(const Executable &a, const Executable &b) {
  if (!(a.mesh == b.mesh) || a.slots.size() != b.slots.size() ||
      a.instructions.size() != b.instructions.size() ||
      a.constants.size() != b.constants.size() ||
      a.inputs.size() != b.inputs.size() ||
      a.outputs.size() != b.outputs.size())
    return false;
  for (size_t i = 0; i < a.slots.size(); ++i)
    if (a.slots[i].dtype != b.slots[i].dtype ||
        a.slots[i].shape != b.slots[i].shape)
      return false;
  for (size_t i = 0; i < a.instructions.size(); ++i) {
    const Instruction &x = a.instructions[i], &y = b.instructions[i];
    if (x.op != y.op || x.operands != y.operands || x.results != y.results ||
        x.ints != y.ints || x.text != y.text)
      return false;
  }
  auto sameValues = [](const std::vector<ExecutableValue> &x,
                       const std::vector<ExecutableValue> &y) {
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].slot != y[i].slot || x[i].name != y[i].name ||
          x[i].globalShape != y[i].globalShape ||
          !(x[i].sharding == y[i].sharding) || x[i].role != y[i].role ||
          x[i].donated != y[i].donated ||
          x[i].aliasedInput != y[i].aliasedInput)
        return false;
    return true;
  };
  if (!sameValues(a.inputs, b.inputs) || !sameValues(a.outputs, b.outputs))
    return false;
  if (a.slotOffsets != b.slotOffsets || a.arenaBytes != b.arenaBytes)
    return false;
  for (size_t i = 0; i < a.constants.size(); ++i)
    if (a.constants[i].bytes != b.constants[i].bytes ||
        a.constants[i].shape != b.constants[i].shape)
      return false;
  return true;
}

/// Rewrites the trailing checksum so a deliberate edit passes it.
void resealChecksum(std::vector<uint8_t> &bytes) {
  uint64_t hash = executableChecksum(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &hash, 8);
}

} // namespace

TEST_CASE("the checksum is FNV-1a 64", "[executable]") {
  // The published FNV-1a 64 values of "" and "a".
  CHECK(executableChecksum(nullptr, 0) == 0xcbf29ce484222325ULL);
  const uint8_t a = 'a';
  CHECK(executableChecksum(&a, 1) == 0xaf63dc4c8601ec8cULL);
}

TEST_CASE("an Executable survives a round trip", "[executable]") {
  Executable program = sampleProgram();
  std::vector<uint8_t> bytes = serializeExecutable(program);
  REQUIRE(looksLikeExecutable(bytes));
  Expected<Executable> back = deserializeExecutable(bytes, "mem");
  REQUIRE(back.ok());
  CHECK(sameProgram(program, *back));
  // Serializing is deterministic.
  CHECK(serializeExecutable(*back) == bytes);
}

TEST_CASE("every truncation is rejected", "[executable]") {
  std::vector<uint8_t> bytes = serializeExecutable(sampleProgram());
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + length);
    Expected<Executable> result = deserializeExecutable(cut, "cut");
    INFO("length " << length);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().rfind("cut: ", 0) == 0);
  }
}

TEST_CASE("random corruptions are rejected without crashing", "[executable]") {
  std::vector<uint8_t> bytes = serializeExecutable(sampleProgram());
  std::mt19937 random(42);
  int rejected = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<uint8_t> corrupt = bytes;
    int flips = 1 + static_cast<int>(random() % 4);
    for (int f = 0; f < flips; ++f)
      corrupt[random() % corrupt.size()] ^=
          static_cast<uint8_t>(1 + random() % 255);
    // Half the time reseal the checksum, so the structural checks are hit.
    if (trial % 2)
      resealChecksum(corrupt);
    Expected<Executable> result = deserializeExecutable(corrupt, "fuzz");
    rejected += !result.ok();
  }
  // Unsealed corruptions always fail the checksum; sealed ones may land on
  // bytes that are still valid (a constant's value), but most are caught.
  CHECK(rejected >= 2500);
}

TEST_CASE("foreign, old and inconsistent files get clear errors",
          "[executable]") {
  std::vector<uint8_t> bytes = serializeExecutable(sampleProgram());
  SECTION("bad magic") {
    std::vector<uint8_t> other = bytes;
    other[0] = 'X';
    Expected<Executable> result = deserializeExecutable(other, "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() ==
          "f: not a Partita Executable (bad magic)");
  }
  SECTION("wrong version") {
    std::vector<uint8_t> other = bytes;
    uint32_t version = kExecutableFormatVersion + 1;
    std::memcpy(other.data() + 8, &version, 4);
    resealChecksum(other);
    Expected<Executable> result = deserializeExecutable(other, "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() ==
          "f: Executable format version " +
              std::to_string(kExecutableFormatVersion + 1) +
              ", this build reads version " +
              std::to_string(kExecutableFormatVersion) +
              "; recompile the program");
  }
  SECTION("checksum") {
    std::vector<uint8_t> other = bytes;
    other[20] ^= 0xFF;
    Expected<Executable> result = deserializeExecutable(other, "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() ==
          "f: corrupt Executable (checksum mismatch)");
  }
  SECTION("slot out of range") {
    Executable program = sampleProgram();
    program.instructions[1].results = {99};
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "instruction einsum names slot 99 of 7") != std::string::npos);
  }
  SECTION("a global shape its slot cannot hold") {
    // Found by bench/fuzz.sh Executable: a run drew a 16842760 x 4 input
    // for a 2 x 4 slot.
    Executable program = sampleProgram();
    program.inputs[0].globalShape = {16842760, 4};
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "input/output 'x': its global shape split by its sharding is "
              "not its slot's shape") != std::string::npos);
    program = sampleProgram();
    program.inputs[0].globalShape = {4, 4, 1};
    result = deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    program = sampleProgram();
    program.outputs[0].sharding.dims[0].axes = {"nosuch"};
    result = deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find("nosuch") != std::string::npos);
  }
  SECTION("buffer plan too small") {
    Executable program = sampleProgram();
    program.slotOffsets[2] = 240;
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "the buffer plan puts slot 2 outside the arena") !=
          std::string::npos);
  }
  SECTION("in-place output of an input that is not donated") {
    Executable program = sampleProgram();
    program.inputs[0].donated = false;
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "f: output 0 aliases an input that is not donated") == 0);
  }
  SECTION("in-place output in other storage") {
    Executable program = sampleProgram();
    program.slotOffsets[5] = 256; // Bytes of its own.
    program.arenaBytes = 320;
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "f: output 0 updates input 0 in place but does not share its "
              "type and storage") == 0);
  }
  SECTION("misaligned slot") {
    Executable program = sampleProgram();
    program.slotOffsets[3] = 194; // f32: not a multiple of 4
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "the buffer plan puts slot 3 at offset 194, not a multiple of "
              "its element size") != std::string::npos);
  }
  SECTION("an instruction with the wrong number of operands") {
    Executable program = sampleProgram();
    program.instructions[3].operands = {4, 4};
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "instruction all_reduce has 2 operand(s) and 1 result(s), not "
              "1 and 1") != std::string::npos);
  }
  SECTION("a variadic instruction with too few operands") {
    // Found by fuzzing: a dynamic_update_slice without its update read past
    // its operand list.
    Executable program = sampleProgram();
    program.instructions[3].op = OpCode::DynamicUpdateSlice;
    program.instructions[3].operands = {4};
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "instruction dynamic_update_slice has 1 operand(s), fewer than "
              "its 2") != std::string::npos);
  }
  SECTION("a slot whose byte count overflows") {
    Executable program = sampleProgram();
    program.slots.push_back({DType::F32, {int64_t(1) << 40, int64_t(1) << 40}});
    program.slotOffsets.push_back(0);
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "slot whose size in bytes overflows") != std::string::npos);
  }
  SECTION("two slots on the same bytes while both are alive") {
    // b = -a; c = exp(a); d = b + c: b is alive while c is written.
    Executable program;
    program.slots.assign(4, {DType::F32, {16}});
    program.inputs = {{0, {16}, Sharding::replicated(1), "a"}};
    program.outputs = {{3, {16}, Sharding::replicated(1), "d"}};
    program.instructions = {{OpCode::Neg, {0}, {1}, {}, ""},
                            {OpCode::Exp, {0}, {2}, {}, ""},
                            {OpCode::Add, {1, 2}, {3}, {}, ""}};
    program.slotOffsets = {0, 64, 128, 192};
    program.arenaBytes = 256;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    // d in place of b (b dies at the add): allowed.
    program.slotOffsets[3] = 64;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    // c on b's bytes while b is still to be read: refused.
    program.slotOffsets = {0, 64, 96, 192};
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "the buffer plan puts slots 1 and 2 on the same bytes while "
              "both are alive") != std::string::npos);
  }
  SECTION("a fused instruction's head, results and reductions") {
    // r = tanh(a @ w) and s = sum(r), fused with the einsum as the head
    // (its product p is result 0) and the sum as a reduction.
    Executable program;
    program.slots.assign(4, {DType::F32, {4, 4}});
    program.slots.push_back({DType::F32, {}});
    program.inputs = {{0, {4, 4}, Sharding::replicated(2), "a"},
                      {1, {4, 4}, Sharding::replicated(2), "w"}};
    program.outputs = {{3, {4, 4}, Sharding::replicated(2), "r"},
                       {4, {}, Sharding::replicated(0), "s"}};
    FusedProgram fused;
    fused.count = 16;
    fused.head = true;
    fused.steps = {{OpCode::Tanh,
                    {FusedRefKind::Head, 0},
                    {FusedRefKind::Head, 0}}};
    fused.results = {0};
    fused.reductions = {{ReductionCode::Sum, 0, 16, 1}};
    program.instructions = {
        {OpCode::Fused, {0, 1}, {2, 3, 4}, encodeFused(fused), "ij,jk->ik"}};
    program.slotOffsets = {0, 64, 128, 192, 256};
    program.arenaBytes = 320;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    // r in place of the product, which dies there: allowed.
    program.slotOffsets[3] = 128;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    // s, written last, on bytes of a, which dies there: allowed.
    program.slotOffsets[4] = 4;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    auto refused = [&](const std::string &slots) {
      Expected<Executable> result =
          deserializeExecutable(serializeExecutable(program), "f");
      REQUIRE_FALSE(result.ok());
      CHECK(result.status().message().find("puts slots " + slots +
                                           " on the same bytes") !=
            std::string::npos);
    };
    // r on w's bytes: the head's operand, read by every block: refused.
    program.slotOffsets = {0, 64, 128, 64, 256};
    refused("1 and 3");
    // s on r's bytes (both alive after it): refused.
    program.slotOffsets = {0, 64, 128, 192, 196};
    refused("3 and 4");
    // The chain reads w as well (r = tanh(a @ w) + w): r still may not
    // take w's bytes, which every block of the GEMM reads.
    fused.operands = {{1, 16}};
    fused.steps.push_back({OpCode::Add,
                           {FusedRefKind::Step, 0},
                           {FusedRefKind::Operand, 0}});
    fused.results = {1};
    fused.reductions = {{ReductionCode::Sum, 1, 16, 1}};
    program.instructions = {{OpCode::Fused, {0, 1, 1}, {2, 3, 4},
                             encodeFused(fused), "ij,jk->ik"}};
    program.slotOffsets = {0, 64, 128, 192, 256};
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    program.slotOffsets = {0, 64, 128, 64, 256};
    refused("1 and 3");
    // Two reductions, one read later (an output) and one not: the second,
    // written after the first, may not take its bytes.
    fused.reductions = {{ReductionCode::Sum, 1, 16, 1},
                        {ReductionCode::Max, 1, 16, 1}};
    program.slots.push_back({DType::F32, {}});
    program.instructions = {{OpCode::Fused, {0, 1, 1}, {2, 3, 4, 5},
                             encodeFused(fused), "ij,jk->ik"}};
    program.slotOffsets = {0, 64, 128, 192, 256, 260};
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    program.slotOffsets = {0, 64, 128, 192, 256, 256};
    refused("4 and 5");
  }
  SECTION("a loop body's slot on the bytes of a value every iteration reads") {
    // o = -a; loop 2 times { x = c + o; y = exp(x); yield y }: o is read by
    // every iteration, so it is alive until the loop's yield.
    Executable program;
    program.slots.assign(7, {DType::F32, {16}});
    program.slots.push_back({DType::I32, {}});
    program.inputs = {{0, {16}, Sharding::replicated(1), "a"}};
    program.outputs = {{6, {16}, Sharding::replicated(1), "r"}};
    program.instructions = {{OpCode::Neg, {0}, {1}, {}, ""},
                            {OpCode::Loop, {0}, {6}, {2, 2, 7, 2, 4, 5}, ""},
                            {OpCode::Add, {2, 1}, {3}, {}, ""},
                            {OpCode::Exp, {3}, {4}, {}, ""}};
    program.slotOffsets = {0, 64, 128, 192, 256, 320, 384, 448};
    program.arenaBytes = 512;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    // y in place of x (x dies at the exp): allowed.
    program.slotOffsets[4] = 192;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    // The yield's copy of y on y's bytes: refused (both alive at the yield).
    program.slotOffsets[5] = 192;
    REQUIRE_FALSE(deserializeExecutable(serializeExecutable(program), "f").ok());
    program.slotOffsets[5] = 320;
    // y on o's bytes: the second iteration would read y's bytes as o.
    program.slotOffsets[4] = 64;
    Expected<Executable> result =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(
              "the buffer plan puts slots 1 and 4 on the same bytes while "
              "both are alive") != std::string::npos);
  }
  SECTION("nested loops whose bodies end together") {
    // loop 2 { loop 2 { y1 = -c1; yield y1 }; yield r1 }: the inner yield
    // comes before the outer one, so the outer's copy may take the inner
    // copy's bytes.
    Executable program;
    program.slots.assign(10, {DType::F32, {16}});
    program.slots[2] = program.slots[6] = {DType::I32, {}};
    program.inputs = {{0, {16}, Sharding::replicated(1), "a"}};
    program.outputs = {{9, {16}, Sharding::replicated(1), "r"}};
    program.instructions = {{OpCode::Loop, {0}, {9}, {2, 2, 2, 1, 3, 4}, ""},
                            {OpCode::Loop, {1}, {3}, {2, 1, 6, 5, 7, 8}, ""},
                            {OpCode::Neg, {5}, {7}, {}, ""}};
    program.slotOffsets.clear();
    for (int64_t s = 0; s < 10; ++s)
      program.slotOffsets.push_back(64 * s);
    program.arenaBytes = 640;
    REQUIRE(deserializeExecutable(serializeExecutable(program), "f").ok());
    program.slotOffsets[4] = program.slotOffsets[8];
    CHECK(deserializeExecutable(serializeExecutable(program), "f")
              .status()
              .message() == "");
    // The outer carry is read by every inner iteration: not on y1's bytes.
    program.slotOffsets[4] = 64 * 4;
    program.slotOffsets[7] = program.slotOffsets[1];
    CHECK_FALSE(deserializeExecutable(serializeExecutable(program), "f").ok());
  }
  SECTION("a loop's carries on its initial values, each on its own") {
    // loop 1 { y = c0 + c1; yield y, c1 } from inputs a, b.
    Executable program;
    program.slots.assign(10, {DType::F32, {16}});
    program.slots[4] = {DType::I32, {}};
    program.inputs = {{0, {16}, Sharding::replicated(1), "a"},
                      {1, {16}, Sharding::replicated(1), "b"}};
    program.outputs = {{8, {16}, Sharding::replicated(1), "r0"},
                       {9, {16}, Sharding::replicated(1), "r1"}};
    program.instructions = {
        {OpCode::Loop, {0, 1}, {8, 9}, {1, 1, 4, 2, 3, 5, 3, 6, 7}, ""},
        {OpCode::Add, {2, 3}, {5}, {}, ""}};
    program.slotOffsets.clear();
    for (int64_t s = 0; s < 10; ++s)
      program.slotOffsets.push_back(64 * s);
    program.arenaBytes = 640;
    program.slotOffsets[2] = 0;  // carry 0 on a
    program.slotOffsets[3] = 64; // carry 1 on b
    CHECK(deserializeExecutable(serializeExecutable(program), "f")
              .status()
              .message() == "");
    // Slots of one carried value with different types (the loop copies
    // between them: found by fuzzing, a heap overflow), a trip counter
    // that is no i32 scalar: refused.
    Executable mistyped = program;
    mistyped.slots[6] = {DType::F32, {8}};
    Expected<Executable> copies =
        deserializeExecutable(serializeExecutable(mistyped), "f");
    REQUIRE_FALSE(copies.ok());
    CHECK(copies.status().message().find(
              "instruction 0: loop: carried value 0 has slots of different "
              "types (slot 6)") != std::string::npos);
    mistyped = program;
    mistyped.slots[4] = {DType::F32, {}};
    CHECK(deserializeExecutable(serializeExecutable(mistyped), "f")
              .status()
              .message()
              .find("the trip counter's slot is not an i32 scalar") !=
          std::string::npos);
    // Crossed: copying a into carry 0 would overwrite b before it is read.
    program.slotOffsets[2] = 64;
    program.slotOffsets[3] = 0;
    Expected<Executable> crossed =
        deserializeExecutable(serializeExecutable(program), "f");
    REQUIRE_FALSE(crossed.ok());
    CHECK(crossed.status().message().find("on the same bytes while both are "
                                          "alive") != std::string::npos);
  }
  SECTION("missing file") {
    Expected<Executable> result = readExecutableFile("/nonexistent/p.exe");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() == "cannot read '/nonexistent/p.exe'");
  }
}

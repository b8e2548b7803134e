//===- Fusion.cpp - Elementwise chains into fused instructions ------------===//
//
// A run of consecutive candidates inside one straight-line stretch of the
// stream (loop bodies are stretches of their own) becomes one fused
// instruction when it holds at least two elementwise ops. Candidates, all
// f32 with the run's element count N:
//   * an elementwise op whose operands are produced in the run, or are
//     slots of N elements or of one;
//   * a splat constant, which becomes a constant in the steps;
//   * a broadcast of a slot produced outside the run along a leading and a
//     trailing block of dimensions, which becomes an operand read at
//     (i / inner) % size.
// The fused instruction writes every value of the run that something after
// it reads (or the program returns); a constant or broadcast read after the
// run stays an instruction of its own, placed before the fused one.
//
// The buffer plan stays as it was, so the run's writes must not clobber
// what it still reads: a tile's operands are read before its results are
// written, which is safe for a result at exactly an operand's bytes (an
// in-place update) and for disjoint bytes only. A run whose written slots
// overlap what it reads in any other way is left alone.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/Fusion.h"
#include "partita/Runtime/Program/Fused.h"

#include <cstring>
#include <map>
#include <set>

using namespace partita;

namespace {

class Fuser {
public:
  explicit Fuser(Executable &program) : program(program) { countReads(); }

  /// The stream of instructions [begin, end), fused.
  std::vector<Instruction> fuseRange(size_t begin, size_t end);

  FusionSummary summary;

private:
  void countReads();
  bool isElementwise(const Instruction &inst, int64_t count) const;
  bool isSplatConstant(const Instruction &inst, int64_t count) const;
  /// For an absorbable broadcast, its operand's (inner, size).
  bool broadcastLayout(const Instruction &inst, int64_t count,
                       FusedOperand &layout) const;
  /// The run [begin, end) as instructions: fused, or as it was.
  void emitRun(size_t begin, size_t end, std::vector<Instruction> &out);
  bool overlaps(int32_t a, int32_t b) const;

  Executable &program;
  /// Reads of each slot by instructions, loops and the program's outputs.
  std::vector<int64_t> reads;
};

void Fuser::countReads() {
  reads.assign(program.slots.size(), 0);
  auto read = [&](int64_t slot) {
    if (slot >= 0 && slot < static_cast<int64_t>(reads.size()))
      ++reads[slot];
  };
  for (const Instruction &inst : program.instructions) {
    for (int32_t slot : inst.operands)
      read(slot);
    // A loop names its counter, carried, yielded and copy slots: all count.
    if (inst.op == OpCode::Loop)
      for (size_t k = 2; k < inst.ints.size(); ++k)
        read(inst.ints[k]);
  }
  for (const ExecutableValue &output : program.outputs)
    read(output.slot);
}

bool Fuser::isElementwise(const Instruction &inst, int64_t count) const {
  if (!isFusibleOp(inst.op) || inst.results.size() != 1)
    return false;
  const TensorType &result = program.slots[inst.results[0]];
  return result.dtype == DType::F32 && result.numElements() == count &&
         count > 1;
}

bool Fuser::isSplatConstant(const Instruction &inst, int64_t count) const {
  if (inst.op != OpCode::Constant || inst.ints.size() != 2 ||
      inst.ints[1] != 1 || inst.results.size() != 1)
    return false;
  const TensorType &result = program.slots[inst.results[0]];
  if (result.dtype != DType::F32 || result.numElements() != count)
    return false;
  int64_t index = inst.ints[0];
  return index >= 0 && index < static_cast<int64_t>(program.constants.size()) &&
         program.constants[index].dtype == DType::F32 &&
         program.constants[index].bytes.size() == sizeof(float);
}

bool Fuser::broadcastLayout(const Instruction &inst, int64_t count,
                            FusedOperand &layout) const {
  if (inst.op != OpCode::Broadcast || inst.operands.size() != 1 ||
      inst.results.size() != 1)
    return false;
  const TensorType &operand = program.slots[inst.operands[0]];
  const TensorType &result = program.slots[inst.results[0]];
  if (operand.dtype != DType::F32 || result.dtype != DType::F32 ||
      result.numElements() != count || count <= 1 ||
      inst.ints.size() != operand.shape.size())
    return false;
  // The operand's dimensions map to consecutive result dimensions, in
  // order, each of the same size: then element i reads (i / inner) % size.
  for (size_t d = 0; d < inst.ints.size(); ++d) {
    int64_t to = inst.ints[d];
    if (to < 0 || to >= static_cast<int64_t>(result.shape.size()) ||
        (d > 0 && to != inst.ints[d - 1] + 1) ||
        result.shape[to] != operand.shape[d])
      return false;
  }
  int64_t inner = 1;
  size_t after = inst.ints.empty() ? result.shape.size()
                                   : static_cast<size_t>(inst.ints.back()) + 1;
  for (size_t d = after; d < result.shape.size(); ++d)
    inner *= result.shape[d];
  layout.inner = std::max<int64_t>(inner, 1);
  layout.size = std::max<int64_t>(operand.numElements(), 1);
  return operand.numElements() >= 1;
}

bool Fuser::overlaps(int32_t a, int32_t b) const {
  if (program.slotOffsets.empty())
    return a == b;
  int64_t aLow = program.slotOffsets[a], aHigh = aLow + program.slots[a].bytes();
  int64_t bLow = program.slotOffsets[b], bHigh = bLow + program.slots[b].bytes();
  return aLow < bHigh && bLow < aHigh;
}

void Fuser::emitRun(size_t begin, size_t end, std::vector<Instruction> &out) {
  const std::vector<Instruction> &stream = program.instructions;
  auto keepAsItWas = [&]() {
    out.insert(out.end(), stream.begin() + begin, stream.begin() + end);
  };
  int64_t elementwise = 0;
  for (size_t i = begin; i < end; ++i)
    elementwise += isFusibleOp(stream[i].op);
  if (elementwise < 2)
    return keepAsItWas();

  int64_t count = program.slots[stream[begin].results[0]].numElements();
  FusedProgram fused;
  Instruction inst;
  inst.op = OpCode::Fused;
  std::vector<Instruction> keptBefore;
  // What each slot written in the run is to the steps.
  std::map<int32_t, FusedRef> refOf;
  std::map<int32_t, int64_t> readsInRun;
  std::map<std::pair<int32_t, std::pair<int64_t, int64_t>>, int64_t> operandOf;
  auto external = [&](int32_t slot, FusedOperand layout) {
    auto key = std::make_pair(slot, std::make_pair(layout.inner, layout.size));
    auto it = operandOf.find(key);
    if (it != operandOf.end())
      return it->second;
    int64_t index = static_cast<int64_t>(fused.operands.size());
    fused.operands.push_back(layout);
    inst.operands.push_back(slot);
    operandOf[key] = index;
    return index;
  };
  std::vector<std::pair<int32_t, int64_t>> stepResults; // (slot, step)
  for (size_t i = begin; i < end; ++i) {
    const Instruction &member = stream[i];
    int32_t slot = member.results[0];
    FusedOperand layout;
    if (isSplatConstant(member, count)) {
      float value;
      std::memcpy(&value, program.constants[member.ints[0]].bytes.data(),
                  sizeof(value));
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      refOf[slot] = {FusedRefKind::Constant, static_cast<int64_t>(bits)};
      continue;
    }
    if (broadcastLayout(member, count, layout)) {
      refOf[slot] = {FusedRefKind::Operand, external(member.operands[0], layout)};
      continue;
    }
    FusedStep step{member.op, {}, {}};
    FusedRef *refs[2] = {&step.a, &step.b};
    for (size_t k = 0; k < member.operands.size() && k < 2; ++k) {
      int32_t operand = member.operands[k];
      auto it = refOf.find(operand);
      if (it != refOf.end()) {
        *refs[k] = it->second;
        ++readsInRun[operand];
        continue;
      }
      int64_t size = program.slots[operand].numElements();
      *refs[k] = {FusedRefKind::Operand,
                  external(operand, size == count ? FusedOperand{1, count}
                                                  : FusedOperand{1, 1})};
    }
    if (member.operands.size() == 1)
      step.b = step.a;
    int64_t index = static_cast<int64_t>(fused.steps.size());
    fused.steps.push_back(step);
    refOf[slot] = {FusedRefKind::Step, index};
    stepResults.emplace_back(slot, index);
  }
  // Values read after the run: results of the fused instruction, or (a
  // constant, a broadcast) instructions of their own before it.
  std::vector<int32_t> written;
  for (size_t i = begin; i < end; ++i) {
    const Instruction &member = stream[i];
    int32_t slot = member.results[0];
    bool readAfter = reads[slot] > readsInRun[slot];
    bool last = i + 1 == end;
    if (!isFusibleOp(member.op)) {
      if (readAfter) {
        keptBefore.push_back(member);
        written.push_back(slot);
      }
      continue;
    }
    if (readAfter || last) {
      inst.results.push_back(slot);
      fused.results.push_back(refOf[slot].value);
      written.push_back(slot);
    }
  }
  // Writes against reads: the same bytes exactly (a fused result over a
  // full-size operand) or none.
  std::set<int32_t> fusedResults(inst.results.begin(), inst.results.end());
  for (int32_t w : written)
    for (size_t e = 0; e < inst.operands.size(); ++e) {
      int32_t r = inst.operands[e];
      if (!overlaps(w, r))
        continue;
      bool inPlace = fusedResults.count(w) && fused.operands[e].inner == 1 &&
                     fused.operands[e].size == count &&
                     (program.slotOffsets.empty() ||
                      program.slotOffsets[w] == program.slotOffsets[r]) &&
                     program.slots[w].bytes() == program.slots[r].bytes();
      if (!inPlace)
        return keepAsItWas();
    }
  for (size_t a = 0; a < written.size(); ++a)
    for (size_t b = a + 1; b < written.size(); ++b)
      if (overlaps(written[a], written[b]))
        return keepAsItWas();
  if (static_cast<int64_t>(fused.operands.size()) > kMaxFusedOperands ||
      static_cast<int64_t>(fused.results.size()) > kMaxFusedResults)
    return keepAsItWas();
  inst.ints = encodeFused(fused);
  out.insert(out.end(), keptBefore.begin(), keptBefore.end());
  out.push_back(std::move(inst));
  ++summary.fused;
  summary.replaced += static_cast<int64_t>(end - begin);
}

std::vector<Instruction> Fuser::fuseRange(size_t begin, size_t end) {
  const std::vector<Instruction> &stream = program.instructions;
  std::vector<Instruction> out;
  size_t i = begin;
  while (i < end) {
    const Instruction &inst = stream[i];
    if (inst.op == OpCode::Loop && inst.ints.size() >= 2) {
      size_t bodyEnd = std::min(end, i + 1 + static_cast<size_t>(inst.ints[1]));
      std::vector<Instruction> body = fuseRange(i + 1, bodyEnd);
      Instruction loop = inst;
      loop.ints[1] = static_cast<int64_t>(body.size());
      out.push_back(std::move(loop));
      out.insert(out.end(), std::make_move_iterator(body.begin()),
                 std::make_move_iterator(body.end()));
      i = bodyEnd;
      continue;
    }
    // The longest run of candidates from i, within the limits of steps and
    // external operands (Fused.h).
    int64_t count = -1;
    std::set<int32_t> producedInRun, externals;
    int64_t steps = 0;
    size_t j = i;
    for (; j < end; ++j) {
      const Instruction &member = stream[j];
      if (member.results.size() != 1)
        break;
      int64_t size = program.slots[member.results[0]].numElements();
      int64_t n = count < 0 ? size : count;
      FusedOperand layout;
      std::set<int32_t> added;
      bool candidate = false;
      if (isElementwise(member, n) && steps < kMaxFusedSteps) {
        candidate = true;
        for (int32_t operand : member.operands) {
          if (producedInRun.count(operand))
            continue;
          const TensorType &type = program.slots[operand];
          candidate &= type.dtype == DType::F32 &&
                       (type.numElements() == n || type.numElements() == 1);
          added.insert(operand);
        }
      } else if (isSplatConstant(member, n)) {
        candidate = true;
      } else if (broadcastLayout(member, n, layout) &&
                 !producedInRun.count(member.operands[0])) {
        candidate = true;
        added.insert(member.operands[0]);
      }
      added.insert(externals.begin(), externals.end());
      if (!candidate ||
          static_cast<int64_t>(added.size()) > kMaxFusedOperands)
        break;
      externals = std::move(added);
      steps += isFusibleOp(member.op);
      count = n;
      producedInRun.insert(member.results[0]);
    }
    // Constants and broadcasts at the end of a run feed nothing in it.
    while (j > i && !isFusibleOp(stream[j - 1].op))
      --j;
    if (j == i) {
      out.push_back(inst);
      ++i;
      continue;
    }
    emitRun(i, j, out);
    i = j;
  }
  return out;
}

} // namespace

FusionSummary partita::fuseElementwise(Executable &program) {
  // Collectives and waits are never fused and keep their order: a wait's
  // distance back to its collective is restored from the collectives'
  // ordinals.
  std::vector<int64_t> waitedOrdinal;
  {
    std::vector<int64_t> ordinal(program.instructions.size(), -1);
    int64_t collectives = 0;
    for (size_t i = 0; i < program.instructions.size(); ++i) {
      const Instruction &inst = program.instructions[i];
      if (isCollective(inst.op))
        ordinal[i] = collectives++;
      else if (inst.op == OpCode::Wait)
        waitedOrdinal.push_back(ordinal[i - inst.ints[0]]);
    }
  }
  Fuser fuser(program);
  std::vector<Instruction> stream =
      fuser.fuseRange(0, program.instructions.size());
  std::vector<size_t> collectiveAt;
  size_t waits = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    if (isCollective(stream[i].op))
      collectiveAt.push_back(i);
    else if (stream[i].op == OpCode::Wait)
      stream[i].ints[0] = static_cast<int64_t>(
          i - collectiveAt[waitedOrdinal[waits++]]);
  }
  program.instructions = std::move(stream);
  return fuser.summary;
}

//===- Fusion.cpp - Elementwise chains into fused instructions ------------===//
//
// A run of consecutive candidates inside one straight-line stretch of the
// stream (loop bodies are stretches of their own) becomes one fused
// instruction when it holds at least two elementwise ops (one is enough
// with a head, a reduction, or a broadcast it reads that nothing after the
// run reads, which then is never written). Candidates, all f32 with the run's
// element count N:
//   * an elementwise op whose operands are produced in the run, or are
//     slots of N elements or of one;
//   * a splat constant, which becomes a constant in the steps;
//   * a broadcast of a slot produced outside the run along a leading and a
//     trailing block of dimensions, which becomes an operand read at
//     (i / inner) % size;
//   * a reshape of a step's value or of a slot produced outside the run
//     (the same elements in the same order), which only renames it.
// The run also takes
//   * the head: the f32 einsum of two operands right before it whose
//     product the run reads, which the runtime then computes block by block,
//     running the chain on each block while it is in the cache (a GEMM
//     epilogue: bias, activation, residual);
//   * the reductions right after it (sum, max, min) of an elementwise
//     step's values that keep one contiguous block of dimensions: each
//     becomes a result accumulated tile by tile (softmax's sums, norms'
//     statistics, a bias gradient's sum over the batch).
// The fused instruction writes every value of the run that something after
// it reads (or the program returns); a constant or broadcast read after the
// run stays an instruction of its own, placed before the fused one.
//
// A wait between the run's candidates for a collective started before the
// run does not end it (a norm's scale, gathered under FSDP, is waited for
// just before the broadcast in the middle of the norm's chain): it goes
// before the fused instruction. Waiting earlier is always safe: the buffer
// plan keeps the collective's operand and result apart from everything
// the run writes from the start to the wait.
//
// The buffer plan stays as it was, so the run's writes must not clobber
// what it still reads: a tile's operands are read before its results are
// written, which is safe for a result at exactly an operand's bytes (an
// in-place update, the head's product included) and for disjoint bytes
// only. Nothing written during the run may touch the head's operands
// (later blocks read them); reductions' results, written last, may take
// the bytes of anything the run reads but not of its other writes. A run
// whose writes overlap what it reads in any other way is left alone.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/Fusion.h"
#include "partita/Runtime/Program/Fused.h"

#include <cstdint>
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
  /// An f32 reshape of `count` elements: the same elements in order.
  bool isReshape(const Instruction &inst, int64_t count) const;
  /// An f32 einsum of two operands with `count` elements: a head.
  bool isHeadEinsum(const Instruction &inst, int64_t count) const;
  /// For an absorbable broadcast, its operand's (inner, size).
  bool broadcastLayout(const Instruction &inst, int64_t count,
                       FusedOperand &layout) const;
  /// For a reduction of an f32 value of `count` elements that keeps one
  /// contiguous block of dimensions: the reduction's layout in the chain.
  bool reductionLayout(const Instruction &inst, int64_t count,
                       FusedReduction &layout) const;
  /// The instructions of a run: its candidates, and the waits between
  /// them (stream indices, in order).
  struct Run {
    std::vector<size_t> members, waits;
  };
  /// The fused instruction being drafted for a run (emitRun).
  struct Draft {
    /// The run's element count (N).
    int64_t count = 0;
    FusedProgram fused;
    /// The head's product (-1: no head), and whether the chain reads it.
    int32_t product = -1;
    bool productRead = false;
    Instruction inst;
    /// Constants and broadcasts read after the run, placed before it.
    std::vector<Instruction> keptBefore;
    /// What each slot written in the run is to the steps.
    std::map<int32_t, FusedRef> refOf;
    std::map<int32_t, int64_t> readsInRun;
    std::map<std::pair<int32_t, std::pair<int64_t, int64_t>>, int64_t>
        operandOf;
    /// The slots the fused instruction (or those kept before it) writes.
    std::vector<int32_t> written;
    /// Whether the product is read other than as the head, by the chain.
    bool retryWithoutHead = false;
  };
  /// The run as instructions, with the reductions at
  /// `reductions` after it and the einsum at `head` (-1: none) before it:
  /// fused (the head taken from the end of `out`), or false with nothing
  /// emitted.
  bool emitRun(const Run &run, const std::vector<size_t> &reductions,
               int64_t head, std::vector<Instruction> &out);
  /// Whether the run's elementwise ops are worth a fused instruction;
  /// `loneWithBroadcast` is set when that depends on a broadcast being
  /// absorbed.
  bool worthFusing(const Run &run, const std::vector<size_t> &reductions,
                   int64_t head, bool &loneWithBroadcast) const;
  /// A draft for the run's elements, with the einsum at `head` (-1: none)
  /// as its head.
  Draft startDraft(const Run &run, int64_t head) const;
  /// The reference of the chain to `slot`, produced outside the run and
  /// read with `layout`: the head's product, or an external operand.
  FusedRef external(Draft &draft, int32_t slot, FusedOperand layout);
  /// Adds a member of the run to the draft: a constant, an operand, a
  /// renaming or a step.
  void addMember(Draft &draft, const Instruction &member);
  /// Adds the reductions at `reductions`; false when one does not reduce a
  /// step's value.
  bool addReductions(Draft &draft, const std::vector<size_t> &reductions);
  /// Whether a broadcast of the run is read only in it (and so absorbed).
  bool absorbsBroadcast(const Run &run, Draft &draft);
  /// The values read after the run: results of the fused instruction, or
  /// (a constant, a broadcast) instructions of their own before it.
  void collectWritten(const Run &run, const std::vector<size_t> &reductions,
                      Draft &draft);
  /// Whether the draft's writes leave what it reads intact, and it fits
  /// the limits of operands and results.
  bool writesAreSafe(const Draft &draft,
                     const std::vector<size_t> &reductions) const;
  /// Whether the draft's writes leave the head's operands and product
  /// intact.
  bool headIsSafe(const Draft &draft, const std::set<int32_t> &reductionResults,
                  const std::set<int32_t> &elementResults) const;
  /// Emits the draft into `out`: the waits, the instructions kept before
  /// it, then the fused instruction (in place of the head's einsum).
  void emitDraft(const Run &run, const std::vector<size_t> &reductions,
                 Draft &draft, std::vector<Instruction> &out);
  bool overlaps(int32_t a, int32_t b) const;
  /// Whether slots `a` and `b` have the same bytes.
  bool sameBytes(int32_t a, int32_t b) const;

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

bool Fuser::isReshape(const Instruction &inst, int64_t count) const {
  if (inst.op != OpCode::Reshape || inst.operands.size() != 1 ||
      inst.results.size() != 1)
    return false;
  const TensorType &operand = program.slots[inst.operands[0]];
  const TensorType &result = program.slots[inst.results[0]];
  return operand.dtype == DType::F32 && result.dtype == DType::F32 &&
         result.numElements() == count && operand.numElements() == count &&
         count > 1;
}

bool Fuser::isHeadEinsum(const Instruction &inst, int64_t count) const {
  if (inst.op != OpCode::Einsum || inst.operands.size() != 2 ||
      inst.results.size() != 1 || inst.text.empty())
    return false;
  return program.slots[inst.operands[0]].dtype == DType::F32 &&
         program.slots[inst.operands[1]].dtype == DType::F32 &&
         program.slots[inst.results[0]].dtype == DType::F32 &&
         program.slots[inst.results[0]].numElements() == count;
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

bool Fuser::reductionLayout(const Instruction &inst, int64_t count,
                            FusedReduction &layout) const {
  if (inst.op != OpCode::Reduce || inst.operands.size() != 1 ||
      inst.results.size() != 1 || inst.ints.empty())
    return false;
  int64_t kind = inst.ints[0];
  if (kind != static_cast<int64_t>(ReductionCode::Sum) &&
      kind != static_cast<int64_t>(ReductionCode::Max) &&
      kind != static_cast<int64_t>(ReductionCode::Min))
    return false;
  const TensorType &operand = program.slots[inst.operands[0]];
  const TensorType &result = program.slots[inst.results[0]];
  auto rank = static_cast<int64_t>(operand.shape.size());
  if (operand.dtype != DType::F32 || result.dtype != DType::F32 ||
      operand.numElements() != count || count < 1)
    return false;
  std::vector<bool> reduced(rank, false);
  for (size_t k = 1; k < inst.ints.size(); ++k) {
    int64_t dim = inst.ints[k];
    if (dim < 0 || dim >= rank || reduced[dim])
      return false;
    reduced[dim] = true;
  }
  // The kept dimensions [first, last) must be one block.
  int64_t first = 0;
  while (first < rank && reduced[first])
    ++first;
  int64_t last = first;
  while (last < rank && !reduced[last])
    ++last;
  for (int64_t d = last; d < rank; ++d)
    if (!reduced[d])
      return false;
  layout.kind = static_cast<ReductionCode>(kind);
  layout.size = 1;
  layout.inner = 1;
  for (int64_t d = first; d < last; ++d)
    layout.size *= operand.shape[d];
  for (int64_t d = last; d < rank; ++d)
    layout.inner *= operand.shape[d];
  if (first == last) // Everything reduced: one result element.
    layout.inner = count;
  return layout.size >= 1 && result.numElements() == layout.size;
}

bool Fuser::overlaps(int32_t a, int32_t b) const {
  if (program.slotOffsets.empty())
    return a == b;
  int64_t aLow = program.slotOffsets[a], aHigh = aLow + program.slots[a].bytes();
  int64_t bLow = program.slotOffsets[b], bHigh = bLow + program.slots[b].bytes();
  return aLow < bHigh && bLow < aHigh;
}

bool Fuser::sameBytes(int32_t a, int32_t b) const {
  return (program.slotOffsets.empty() ||
          program.slotOffsets[a] == program.slotOffsets[b]) &&
         program.slots[a].bytes() == program.slots[b].bytes();
}

bool Fuser::worthFusing(const Run &run, const std::vector<size_t> &reductions,
                        int64_t head, bool &loneWithBroadcast) const {
  const std::vector<Instruction> &stream = program.instructions;
  int64_t elementwise = 0, broadcasts = 0;
  for (size_t i : run.members) {
    elementwise += isFusibleOp(stream[i].op);
    broadcasts += stream[i].op == OpCode::Broadcast;
  }
  // One elementwise op alone is worth a fused instruction only when it
  // also reads a broadcast that then need not be written (checked later,
  // once the reads in the run are counted).
  loneWithBroadcast =
      elementwise == 1 && head < 0 && reductions.empty() && broadcasts > 0;
  return elementwise >= (head >= 0 || !reductions.empty() ? 1 : 2) ||
         loneWithBroadcast;
}

Fuser::Draft Fuser::startDraft(const Run &run, int64_t head) const {
  const std::vector<Instruction> &stream = program.instructions;
  Draft draft;
  draft.count = program.slots[stream[run.members[0]].results[0]].numElements();
  draft.fused.count = draft.count;
  draft.fused.head = head >= 0;
  draft.product = draft.fused.head ? stream[head].results[0] : -1;
  draft.inst.op = OpCode::Fused;
  if (draft.fused.head) {
    draft.inst.text = stream[head].text;
    draft.inst.operands = stream[head].operands;
    draft.inst.results.push_back(draft.product);
  }
  return draft;
}

FusedRef Fuser::external(Draft &draft, int32_t slot, FusedOperand layout) {
  if (slot == draft.product && layout.inner == 1 &&
      layout.size == draft.count) {
    draft.productRead = true;
    return {FusedRefKind::Head, 0};
  }
  auto key = std::make_pair(slot, std::make_pair(layout.inner, layout.size));
  auto it = draft.operandOf.find(key);
  if (it != draft.operandOf.end())
    return {FusedRefKind::Operand, it->second};
  int64_t index = static_cast<int64_t>(draft.fused.operands.size());
  draft.fused.operands.push_back(layout);
  draft.inst.operands.push_back(slot);
  draft.operandOf[key] = index;
  return {FusedRefKind::Operand, index};
}

void Fuser::addMember(Draft &draft, const Instruction &member) {
  int64_t count = draft.count;
  std::map<int32_t, FusedRef> &refOf = draft.refOf;
  int32_t slot = member.results[0];
  FusedOperand layout;
  if (isSplatConstant(member, count)) {
    float value;
    std::memcpy(&value, program.constants[member.ints[0]].bytes.data(),
                sizeof(value));
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    refOf[slot] = {FusedRefKind::Constant, static_cast<int64_t>(bits)};
    return;
  }
  if (broadcastLayout(member, count, layout)) {
    refOf[slot] = external(draft, member.operands[0], layout);
    return;
  }
  if (member.op == OpCode::Reshape) { // The same elements, renamed.
    int32_t operand = member.operands[0];
    auto it = refOf.find(operand);
    if (it != refOf.end()) {
      refOf[slot] = it->second;
      ++draft.readsInRun[operand];
    } else {
      refOf[slot] = external(draft, operand, FusedOperand{1, count});
    }
    return;
  }
  FusedStep step{member.op, {}, {}};
  FusedRef *refs[2] = {&step.a, &step.b};
  for (size_t k = 0; k < member.operands.size() && k < 2; ++k) {
    int32_t operand = member.operands[k];
    auto it = refOf.find(operand);
    if (it != refOf.end()) {
      *refs[k] = it->second;
      ++draft.readsInRun[operand];
      continue;
    }
    int64_t size = program.slots[operand].numElements();
    *refs[k] =
        external(draft, operand,
                 size == count ? FusedOperand{1, count} : FusedOperand{1, 1});
  }
  if (member.operands.size() == 1)
    step.b = step.a;
  int64_t index = static_cast<int64_t>(draft.fused.steps.size());
  draft.fused.steps.push_back(step);
  refOf[slot] = {FusedRefKind::Step, index};
}

bool Fuser::addReductions(Draft &draft, const std::vector<size_t> &reductions) {
  const std::vector<Instruction> &stream = program.instructions;
  for (size_t at : reductions) {
    FusedReduction reduction;
    int32_t operand = stream[at].operands[0];
    auto it = draft.refOf.find(operand);
    if (!reductionLayout(stream[at], draft.count, reduction) ||
        it == draft.refOf.end() || it->second.kind != FusedRefKind::Step)
      return false;
    reduction.step = it->second.value;
    ++draft.readsInRun[operand];
    draft.fused.reductions.push_back(reduction);
  }
  return true;
}

bool Fuser::absorbsBroadcast(const Run &run, Draft &draft) {
  const std::vector<Instruction> &stream = program.instructions;
  bool absorbed = false;
  for (size_t i : run.members) {
    int32_t slot = stream[i].results[0];
    absorbed |= stream[i].op == OpCode::Broadcast &&
                draft.refOf[slot].kind == FusedRefKind::Operand &&
                reads[slot] <= draft.readsInRun[slot];
  }
  return absorbed;
}

void Fuser::collectWritten(const Run &run,
                           const std::vector<size_t> &reductions,
                           Draft &draft) {
  const std::vector<Instruction> &stream = program.instructions;
  std::map<int32_t, FusedRef> &refOf = draft.refOf;
  // The product must be read only as the head, by the chain.
  draft.retryWithoutHead = draft.fused.head && !draft.productRead;
  for (size_t i : run.members) {
    const Instruction &member = stream[i];
    int32_t slot = member.results[0];
    bool readAfter = reads[slot] > draft.readsInRun[slot];
    bool last = i == run.members.back() && reductions.empty();
    if (member.op == OpCode::Reshape &&
        refOf[slot].kind == FusedRefKind::Step) {
      if (readAfter) { // Written as the step it renames.
        draft.inst.results.push_back(slot);
        draft.fused.results.push_back(refOf[slot].value);
        draft.written.push_back(slot);
      }
      continue;
    }
    if (!isFusibleOp(member.op)) {
      if (readAfter) {
        draft.keptBefore.push_back(member);
        draft.written.push_back(slot);
        for (int32_t operand : member.operands)
          draft.retryWithoutHead |= operand == draft.product;
      }
      continue;
    }
    if (readAfter || last) {
      draft.inst.results.push_back(slot);
      draft.fused.results.push_back(refOf[slot].value);
      draft.written.push_back(slot);
    }
  }
  for (size_t at : reductions) {
    draft.inst.results.push_back(stream[at].results[0]);
    draft.written.push_back(stream[at].results[0]);
  }
}

bool Fuser::writesAreSafe(const Draft &draft,
                          const std::vector<size_t> &reductions) const {
  const FusedProgram &fused = draft.fused;
  const Instruction &inst = draft.inst;
  const std::vector<int32_t> &written = draft.written;
  // Writes against reads: the same bytes exactly (a fused result over a
  // full-size operand) or none.
  std::set<int32_t> elementResults(inst.results.begin() + (fused.head ? 1 : 0),
                                   inst.results.begin() + (fused.head ? 1 : 0) +
                                       fused.results.size());
  // Reduction results are written after everything is read: they only
  // need to stay apart from the other writes.
  std::set<int32_t> reductionResults;
  for (size_t at : reductions)
    reductionResults.insert(program.instructions[at].results[0]);
  bool safe = true;
  size_t firstExternal = fused.head ? 2 : 0;
  for (int32_t w : written)
    for (size_t e = firstExternal;
         !reductionResults.count(w) && e < inst.operands.size(); ++e) {
      int32_t r = inst.operands[e];
      const FusedOperand &layout = fused.operands[e - firstExternal];
      if (overlaps(w, r) && !(elementResults.count(w) && layout.inner == 1 &&
                              layout.size == draft.count && sameBytes(w, r)))
        safe = false;
    }
  for (size_t a = 0; a < written.size(); ++a)
    for (size_t b = a + 1; b < written.size(); ++b)
      safe &= !overlaps(written[a], written[b]);
  if (fused.head)
    safe &= headIsSafe(draft, reductionResults, elementResults);
  if (static_cast<int64_t>(fused.operands.size()) + (fused.head ? 1 : 0) >
          kMaxFusedOperands ||
      static_cast<int64_t>(fused.results.size() + fused.reductions.size()) >
          kMaxFusedResults)
    safe = false;
  return safe;
}

bool Fuser::headIsSafe(const Draft &draft,
                       const std::set<int32_t> &reductionResults,
                       const std::set<int32_t> &elementResults) const {
  // The GEMM's operands are read block by block: nothing written may
  // touch them. The product may share bytes only with an element result,
  // exactly, and with nothing the chain reads.
  const Instruction &inst = draft.inst;
  int32_t product = draft.product;
  bool safe = true;
  for (int32_t w : draft.written) {
    if (reductionResults.count(w))
      continue;
    for (size_t e = 0; e < 2; ++e)
      safe &= !overlaps(w, inst.operands[e]);
    if (overlaps(w, product) &&
        !(elementResults.count(w) && sameBytes(w, product)))
      safe = false;
  }
  for (size_t e = 0; e < inst.operands.size(); ++e)
    safe &= !overlaps(product, inst.operands[e]);
  return safe;
}

void Fuser::emitDraft(const Run &run, const std::vector<size_t> &reductions,
                      Draft &draft, std::vector<Instruction> &out) {
  const std::vector<Instruction> &stream = program.instructions;
  const FusedProgram &fused = draft.fused;
  draft.inst.ints = encodeFused(fused);
  if (fused.head)
    out.pop_back(); // The einsum, now the head.
  for (size_t i : run.waits)
    out.push_back(stream[i]);
  out.insert(out.end(), draft.keptBefore.begin(), draft.keptBefore.end());
  out.push_back(std::move(draft.inst));
  ++summary.fused;
  summary.replaced += static_cast<int64_t>(
      run.members.size() + reductions.size() + (fused.head ? 1 : 0));
  summary.heads += fused.head;
  summary.reductions += static_cast<int64_t>(fused.reductions.size());
}

bool Fuser::emitRun(const Run &run, const std::vector<size_t> &reductions,
                    int64_t head, std::vector<Instruction> &out) {
  bool loneWithBroadcast = false;
  if (!worthFusing(run, reductions, head, loneWithBroadcast))
    return false;
  Draft draft = startDraft(run, head);
  for (size_t i : run.members)
    addMember(draft, program.instructions[i]);
  if (!addReductions(draft, reductions))
    return false;
  if (loneWithBroadcast && !absorbsBroadcast(run, draft))
    return false;
  collectWritten(run, reductions, draft);
  bool safe = writesAreSafe(draft, reductions);
  if (draft.fused.head && (draft.retryWithoutHead || !safe)) {
    if (!emitRun(run, reductions, -1, out))
      return false;
    ++summary.headsRefused;
    return true;
  }
  if (!safe)
    return false;
  emitDraft(run, reductions, draft, out);
  return true;
}

std::vector<Instruction> Fuser::fuseRange(size_t begin, size_t end) {
  const std::vector<Instruction> &stream = program.instructions;
  std::vector<Instruction> out;
  // The stream index of the last instruction emitted as it was at this
  // level (not in a loop body, not fused): a head must be that one.
  size_t lastPlain = SIZE_MAX;
  size_t i = begin;
  while (i < end) {
    const Instruction &inst = stream[i];
    if (inst.op == OpCode::Loop && inst.ints.size() >= 2) {
      lastPlain = SIZE_MAX;
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
    // Values of the run, and those of them that are steps' values.
    std::set<int32_t> producedInRun, externals, stepValues;
    int64_t steps = 0;
    size_t j = i;
    for (; j < end; ++j) {
      const Instruction &member = stream[j];
      // A wait for a collective started before the run steps aside.
      if (j > i && member.op == OpCode::Wait && !member.ints.empty() &&
          member.ints[0] > 0 && static_cast<size_t>(member.ints[0]) <= j &&
          j - static_cast<size_t>(member.ints[0]) < i)
        continue;
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
      } else if (isReshape(member, n) &&
                 (stepValues.count(member.operands[0]) ||
                  !producedInRun.count(member.operands[0]))) {
        candidate = true;
        if (!producedInRun.count(member.operands[0]))
          added.insert(member.operands[0]);
        else
          stepValues.insert(member.results[0]);
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
      if (isFusibleOp(member.op))
        stepValues.insert(member.results[0]);
      count = n;
      producedInRun.insert(member.results[0]);
    }
    // Constants and broadcasts at the end of a run feed nothing in it;
    // waits there stay where they are.
    size_t whole = j;
    while (j > i && !isFusibleOp(stream[j - 1].op))
      --j;
    Run run;
    for (size_t k = i; k < j; ++k)
      (stream[k].op == OpCode::Wait ? run.waits : run.members).push_back(k);
    if (j == i) {
      out.push_back(inst);
      lastPlain = i;
      ++i;
      continue;
    }
    // The reductions right after the run of steps it computes.
    std::vector<size_t> reductions;
    FusedReduction layout;
    for (size_t k = j; whole == j && k < end &&
                       reductionLayout(stream[k], count, layout) &&
                       stepValues.count(stream[k].operands[0]);
         ++k)
      reductions.push_back(k);
    // The einsum right before it, when its product is read in the run.
    int64_t head = -1;
    if (i > begin && lastPlain == i - 1 && isHeadEinsum(stream[i - 1], count))
      head = static_cast<int64_t>(i - 1);
    lastPlain = SIZE_MAX;
    if (!reductions.empty() && emitRun(run, reductions, head, out)) {
      i = j + reductions.size();
      continue;
    }
    if (!emitRun(run, {}, head, out))
      out.insert(out.end(), stream.begin() + i, stream.begin() + j);
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

std::vector<bool> partita::referencedSlots(const Executable &program) {
  std::vector<bool> named(program.slots.size(), false);
  auto name = [&](int64_t slot) {
    if (slot >= 0 && slot < static_cast<int64_t>(named.size()))
      named[slot] = true;
  };
  for (const Instruction &inst : program.instructions) {
    for (int32_t slot : inst.operands)
      name(slot);
    for (int32_t slot : inst.results)
      name(slot);
    // A loop's ints from the third on are slots (Instruction.h).
    if (inst.op == OpCode::Loop)
      for (size_t k = 2; k < inst.ints.size(); ++k)
        name(inst.ints[k]);
  }
  for (const ExecutableValue &value : program.inputs)
    name(value.slot);
  for (const ExecutableValue &value : program.outputs)
    name(value.slot);
  return named;
}

void partita::dropUnreferencedSlots(Executable &program) {
  std::vector<bool> named = referencedSlots(program);
  std::vector<int32_t> renumbered(program.slots.size(), -1);
  std::vector<TensorType> slots;
  std::vector<int64_t> offsets;
  for (size_t s = 0; s < named.size(); ++s) {
    if (!named[s])
      continue;
    renumbered[s] = static_cast<int32_t>(slots.size());
    slots.push_back(program.slots[s]);
    if (!program.slotOffsets.empty())
      offsets.push_back(program.slotOffsets[s]);
  }
  if (slots.size() == program.slots.size())
    return;
  for (Instruction &inst : program.instructions) {
    for (int32_t &slot : inst.operands)
      slot = renumbered[slot];
    for (int32_t &slot : inst.results)
      slot = renumbered[slot];
    if (inst.op == OpCode::Loop)
      for (size_t k = 2; k < inst.ints.size(); ++k)
        inst.ints[k] = renumbered[inst.ints[k]];
  }
  for (ExecutableValue &value : program.inputs)
    value.slot = renumbered[value.slot];
  for (ExecutableValue &value : program.outputs)
    value.slot = renumbered[value.slot];
  program.slots = std::move(slots);
  if (!program.slotOffsets.empty())
    program.slotOffsets = std::move(offsets);
}

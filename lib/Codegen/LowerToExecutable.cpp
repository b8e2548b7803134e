//===- LowerToExecutable.cpp - partita IR to the runtime's program --------===//

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Codegen/Fusion.h"
#include "partita/Codegen/PlacedBlocks.h"

#include "partita/Analysis/Liveness.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"
#include "partita/Dialect/Partita/Utils/RemakeValues.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Sharding/Layout.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace partita;

Expected<DType> partita::tensorDType(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  if (element.isF32())
    return DType::F32;
  if (element.isF64())
    return DType::F64;
  if (element.isF16())
    return DType::F16;
  if (element.isBF16())
    return DType::BF16;
  if (element.isInteger(1))
    return DType::Bool;
  if (element.isInteger(8))
    return DType::I8;
  if (element.isInteger(16))
    return DType::I16;
  if (element.isInteger(32))
    return DType::I32;
  if (element.isInteger(64))
    return DType::I64;
  return Status::error("unsupported element type");
}

namespace {

Expected<DType> dtypeOf(Type type) { return tensorDType(type); }

/// The op code of each partita op that lowers to one instruction: the
/// DialectOp column of Ops.def, plus the sharding annotations, which on
/// global values (the unpartitioned program) are identities.
const llvm::StringMap<OpCode> &opCodes() {
  static const llvm::StringMap<OpCode> table = [] {
    llvm::StringMap<OpCode> codes;
#define PARTITA_OP(Name, Code, Printed, DialectOp, Family, Operands, Results)  \
  if (*(DialectOp))                                                            \
    codes[DialectOp] = OpCode::Name;
#include "partita/Runtime/Program/Ops.def"
    for (const char *identity :
         {"partita.sharding_constraint", "partita.logical_constraint",
          "partita.reshard"})
      codes[identity] = OpCode::OptimizationBarrier;
    return codes;
  }();
  return table;
}

std::string joinAxes(ArrayAttr axes) {
  std::string text;
  for (Attribute axis : axes)
    text += (text.empty() ? "" : ",") + cast<StringAttr>(axis).str();
  return text;
}

/// The constant's value as a host array: every element, or for a splat of
/// more than one element the one value as a scalar (`splat` set), which the
/// runtime broadcasts — a model's splat constants are activation-sized.
Expected<HostArray> constantValue(ElementsAttr attr, bool &splat) {
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return Status::error("only dense constants are supported");
  Expected<DType> dtype = dtypeOf(dense.getType());
  if (!dtype)
    return dtype.status();
  auto type = cast<RankedTensorType>(dense.getType());
  splat = dense.isSplat() && type.getNumElements() > 1;
  HostArray array = HostArray::zeros(
      *dtype, splat ? std::vector<int64_t>{}
                    : std::vector<int64_t>(type.getShape().begin(),
                                           type.getShape().end()));
  int64_t count = array.numElements(), size = dtypeSize(*dtype);
  Type element = type.getElementType();
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = dense.isSplat() ? 0 : i;
    uint8_t *at = array.bytes.data() + i * size;
    if (isa<FloatType>(element)) {
      APFloat value = dense.getValues<APFloat>()[index];
      APInt bits = value.bitcastToAPInt();
      uint64_t raw = bits.getZExtValue();
      std::memcpy(at, &raw, size);
    } else {
      APInt value = dense.getValues<APInt>()[index];
      uint64_t raw = element.isInteger(1) ? (value.isZero() ? 0 : 1)
                                          : value.getZExtValue();
      std::memcpy(at, &raw, size);
    }
  }
  return array;
}

/// Attributes of `op` in the runtime's conventions (Instruction.h).
void lowerAttributes(Operation *op, Instruction &inst) {
  auto append = [&](ArrayRef<int64_t> values) {
    inst.ints.insert(inst.ints.end(), values.begin(), values.end());
  };
  if (auto iota = dyn_cast<IotaOp>(op))
    inst.ints = {static_cast<int64_t>(iota.getDim())};
  else if (auto argmax = dyn_cast<ArgmaxOp>(op))
    inst.ints = {static_cast<int64_t>(argmax.getDim())};
  else if (auto cumsum = dyn_cast<CumsumOp>(op))
    inst.ints = {static_cast<int64_t>(cumsum.getDim()),
                 cumsum.getReverse() ? 1 : 0};
  else if (auto topk = dyn_cast<TopKOp>(op))
    inst.ints = {static_cast<int64_t>(topk.getDim()),
                 static_cast<int64_t>(topk.getK())};
  else if (auto concat = dyn_cast<ConcatenateOp>(op))
    inst.ints = {static_cast<int64_t>(concat.getDim())};
  else if (auto reduce = dyn_cast<ReduceOp>(op)) {
    inst.ints = {static_cast<int64_t>(reduce.getKind())};
    append(reduce.getDims());
  } else if (auto compare = dyn_cast<CompareOp>(op))
    inst.ints = {static_cast<int64_t>(compare.getDirection())};
  else if (auto broadcast = dyn_cast<BroadcastOp>(op))
    append(broadcast.getDims());
  else if (auto transpose = dyn_cast<TransposeOp>(op))
    append(transpose.getPerm());
  else if (auto slice = dyn_cast<SliceOp>(op)) {
    append(slice.getStart());
    append(slice.getLimit());
    append(slice.getStride());
  } else if (auto dynamicSlice = dyn_cast<DynamicSliceOp>(op))
    append(dynamicSlice.getSizes());
  else if (auto pad = dyn_cast<PadOp>(op)) {
    append(pad.getLow());
    append(pad.getHigh());
  } else if (auto einsum = dyn_cast<EinsumOp>(op))
    inst.text = einsum.getSpec().str();
  else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    inst.text = joinAxes(gather.getAxes());
    inst.ints = {static_cast<int64_t>(gather.getDim())};
  } else if (auto slice = dyn_cast<AllSliceOp>(op)) {
    inst.text = joinAxes(slice.getAxes());
    inst.ints = {static_cast<int64_t>(slice.getDim())};
  } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    inst.text = joinAxes(reduce.getAxes());
    inst.ints = {static_cast<int64_t>(reduce.getKind())};
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    inst.text = joinAxes(scatter.getAxes());
    inst.ints = {static_cast<int64_t>(scatter.getKind()),
                 static_cast<int64_t>(scatter.getDim())};
  } else if (auto toAll = dyn_cast<AllToAllOp>(op)) {
    inst.text = joinAxes(toAll.getAxes());
    inst.ints = {static_cast<int64_t>(toAll.getSplitDim()),
                 static_cast<int64_t>(toAll.getConcatDim())};
  } else if (auto permute = dyn_cast<CollectivePermuteOp>(op)) {
    inst.text = joinAxes(permute.getAxes());
    append(permute.getPairs());
  }
}

/// A live range of the buffer plan: program points, bytes, the slots that
/// share it.
struct PlanRange {
  int64_t begin, end, bytes;
  std::vector<int32_t> slots;
  /// The range whose bytes this one may take in place, or -1.
  int32_t source = -1;
  /// Points (holeBegin, holeEnd), exclusive, where the range holds nothing
  /// (-1: none): a donated input's last use and the output that updates it
  /// in place; other buffers may use its bytes between them.
  int64_t holeBegin = -1, holeEnd = -1;

  /// The closed spans of points where the range is live.
  llvm::SmallVector<std::pair<int64_t, int64_t>, 2> spans() const {
    if (holeBegin < 0)
      return {{begin, end}};
    return {{begin, holeBegin}, {holeEnd, end}};
  }
  /// How many points it is live at.
  int64_t length() const {
    int64_t points = 0;
    for (auto [low, high] : spans())
      points += high - low + 1;
    return points;
  }
};

/// Places the ranges of `order` one by one, each at the lowest offset free
/// for all its live spans; a range that may take its source's bytes in
/// place takes them when they are free, and otherwise keeps off them.
/// Fills `offsets` (indexed by range) and returns the arena's size.
int64_t placeRanges(const std::vector<PlanRange> &ranges,
                    const std::vector<size_t> &order,
                    const std::vector<bool> &merged,
                    const std::vector<int32_t> &rangeOf,
                    const std::vector<int64_t> &points,
                    std::vector<int64_t> &offsetOf) {
  constexpr int64_t kAlignment = 64;
  auto align = [](int64_t at) {
    return (at + kAlignment - 1) / kAlignment * kAlignment;
  };
  offsetOf.assign(ranges.size(), 0);
  std::vector<bool> placed(ranges.size(), false);
  PlacedBlocks blocks(points);
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t arena = 0;
  for (size_t r : order) {
    const PlanRange &range = ranges[r];
    // The bytes of blocks already placed whose live ranges meet this one.
    busy.clear();
    for (auto [low, high] : range.spans())
      blocks.busy(low, high, busy);
    std::sort(busy.begin(), busy.end());
    auto freeAt = [&](int64_t at) {
      for (const auto &[low, high] : busy)
        if (at < high && low < at + range.bytes)
          return false;
      return true;
    };
    int64_t offset = -1;
    // The range that holds the source now (it may have been merged into
    // another: an in-place all_reduce's result, an output into its input).
    int32_t source = range.source;
    while (source >= 0 && merged[source])
      source = rangeOf[ranges[source].slots.front()];
    if (source >= 0 && placed[source]) {
      if (freeAt(offsetOf[source])) {
        offset = offsetOf[source];
      } else {
        // Not at the source's address: then not on its bytes at all.
        int64_t low = offsetOf[source];
        busy.push_back({low, low + ranges[source].bytes});
        std::sort(busy.begin(), busy.end());
      }
    }
    if (offset < 0) {
      // The first gap between the busy runs (they may overlap) that holds
      // it, else past them all.
      offset = 0;
      for (const auto &[low, high] : busy) {
        if (offset + range.bytes <= low)
          break;
        offset = std::max(offset, align(high));
      }
    }
    offsetOf[r] = offset;
    placed[r] = true;
    for (auto [low, high] : range.spans())
      blocks.add(low, high, offset, offset + range.bytes);
    arena = std::max(arena, offset + range.bytes);
  }
  return arena;
}

/// The live ranges of a buffer plan being built (planBuffers): one per
/// slot at first, merged where slots share storage.
struct PlanRanges {
  std::vector<PlanRange> ranges;
  /// The range of each slot.
  std::vector<int32_t> rangeOf;
  /// Whether each range was merged into another.
  std::vector<bool> merged;
};

/// One range per slot the liveness analysis sees (a yield's copy, or a
/// value), from the first buffer that names it.
PlanRanges
collectRanges(const BufferLiveness &liveness,
              const llvm::DenseMap<Value, int32_t> &slots,
              const llvm::DenseMap<OpOperand *, int32_t> &yieldCopies,
              const Executable &program) {
  PlanRanges plan;
  plan.rangeOf.assign(program.slots.size(), -1);
  for (const LiveBuffer &buffer : liveness.buffers) {
    int32_t slot = -1;
    if (buffer.yieldCopy) {
      auto it = yieldCopies.find(buffer.yieldCopy);
      slot = it == yieldCopies.end() ? -1 : it->second;
    } else if (auto it = slots.find(buffer.value); it != slots.end()) {
      slot = it->second;
    }
    if (slot < 0 || plan.rangeOf[slot] >= 0)
      continue;
    plan.rangeOf[slot] = static_cast<int32_t>(plan.ranges.size());
    plan.ranges.push_back(
        {buffer.begin, buffer.end, program.slots[slot].bytes(), {slot}});
  }
  return plan;
}

/// In-place pairs (Liveness.h): same address or apart. A result that may
/// take its operand's bytes gets the operand's range as its source; an
/// asynchronous all_reduce in place shares its operand's range: those
/// pairs (source range, result range) are returned, to be merged.
std::vector<std::pair<int32_t, int32_t>>
linkInPlacePairs(const BufferLiveness &liveness,
                 const llvm::DenseMap<Value, int32_t> &slots,
                 PlanRanges &plan) {
  std::vector<std::pair<int32_t, int32_t>> shared;
  for (const LiveBuffer &buffer : liveness.buffers) {
    if (!buffer.inPlaceOf || !buffer.value)
      continue;
    auto result = slots.find(buffer.value);
    auto source = slots.find(buffer.inPlaceOf);
    if (result == slots.end() || source == slots.end() ||
        plan.rangeOf[result->second] < 0 || plan.rangeOf[source->second] < 0)
      continue;
    if (buffer.sharesStorage)
      shared.push_back(
          {plan.rangeOf[source->second], plan.rangeOf[result->second]});
    else
      plan.ranges[plan.rangeOf[result->second]].source =
          plan.rangeOf[source->second];
  }
  return shared;
}

/// Gives the slots the analysis does not see a range live for the whole
/// program (`points` points).
void addUnseenSlots(PlanRanges &plan, const Executable &program,
                    int64_t points) {
  for (size_t s = 0; s < program.slots.size(); ++s)
    if (plan.rangeOf[s] < 0) {
      plan.rangeOf[s] = static_cast<int32_t>(plan.ranges.size());
      plan.ranges.push_back(
          {0, points, program.slots[s].bytes(), {static_cast<int32_t>(s)}});
    }
}

/// Merges each shared pair's result range into its source's.
void mergeShared(PlanRanges &plan,
                 const std::vector<std::pair<int32_t, int32_t>> &shared) {
  std::vector<PlanRange> &ranges = plan.ranges;
  for (auto [from, to] : shared) {
    while (plan.merged[from])
      from = plan.rangeOf[ranges[from].slots.front()];
    if (from == to || plan.merged[to])
      continue;
    ranges[from].end = std::max(ranges[from].end, ranges[to].end);
    ranges[from].slots.insert(ranges[from].slots.end(),
                              ranges[to].slots.begin(), ranges[to].slots.end());
    for (int32_t slot : ranges[to].slots)
      plan.rangeOf[slot] = from;
    plan.merged[to] = true;
  }
}

/// Whether values `a` and `b` have the same type, shape, global shape and
/// sharding (an output may then update an input in place).
bool sameLayout(const Executable &program, const ExecutableValue &a,
                const ExecutableValue &b) {
  return program.slots[a.slot].dtype == program.slots[b.slot].dtype &&
         program.slots[a.slot].shape == program.slots[b.slot].shape &&
         a.globalShape == b.globalShape && a.sharding == b.sharding;
}

/// Where the elementwise chain making the value of `slot` starts reading
/// values made after `after`: a donated input's bytes stay free until
/// then, not only until the output is written, so nothing the chain reads
/// sits on them and the fuser can still fuse it (a fused run must not
/// write over bytes it reads). `valueOf` maps slots back to values.
int64_t chainStart(const PlanRanges &plan,
                   const llvm::DenseMap<Value, int32_t> &slots,
                   const llvm::DenseMap<int32_t, Value> &valueOf, int32_t slot,
                   int64_t after) {
  int64_t first = plan.ranges[plan.rangeOf[slot]].begin;
  SmallVector<Value> work{valueOf.lookup(slot)};
  llvm::DenseSet<Value> seen;
  for (int budget = 64; !work.empty() && budget > 0; --budget) {
    Value value = work.pop_back_val();
    Operation *op = value ? value.getDefiningOp() : nullptr;
    if (!op || op->getNumResults() != 1 || op->getNumRegions() != 0 ||
        !seen.insert(value).second)
      continue;
    for (Value operand : op->getOperands()) {
      auto it = slots.find(operand);
      if (it == slots.end() || plan.rangeOf[it->second] < 0)
        continue;
      int64_t begin = plan.ranges[plan.rangeOf[it->second]].begin;
      if (begin <= after)
        continue;
      first = std::min(first, begin);
      if (operand.getType() == value.getType())
        work.push_back(operand);
    }
  }
  return first;
}

/// Merges the range of `output` into that of the donated `input` it
/// updates in place; with `holes`, the input's bytes are free between its
/// last use and the start of the output's chain. Returns whether it made
/// a hole.
bool mergeIntoInput(PlanRanges &plan, const ExecutableValue &input,
                    const ExecutableValue &output,
                    const llvm::DenseMap<Value, int32_t> &slots,
                    const llvm::DenseMap<int32_t, Value> &valueOf, bool holes) {
  std::vector<PlanRange> &ranges = plan.ranges;
  PlanRange &from = ranges[plan.rangeOf[input.slot]];
  int32_t to = plan.rangeOf[output.slot];
  // Between the input's last use and the output's definition the bytes
  // hold nothing anyone reads (a gradient buffer the step overwrites:
  // its bytes are free through the backward pass's peak).
  int64_t holeEnd =
      holes ? chainStart(plan, slots, valueOf, output.slot, from.end)
            : ranges[to].begin;
  bool holeMade = false;
  if (holes && from.holeBegin < 0 && from.end + 1 < holeEnd) {
    from.holeBegin = from.end;
    from.holeEnd = holeEnd;
    holeMade = true;
  }
  from.end = std::max(from.end, ranges[to].end);
  from.slots.insert(from.slots.end(), ranges[to].slots.begin(),
                    ranges[to].slots.end());
  for (int32_t slot : ranges[to].slots)
    plan.rangeOf[slot] = plan.rangeOf[input.slot];
  plan.merged[to] = true;
  return holeMade;
}

/// Outputs updating donated inputs in place share one range: each output
/// takes the first unclaimed donated input of its layout that is dead
/// before the output is defined (aliasedInput). Returns how many holes
/// it made.
int64_t aliasDonatedInputs(PlanRanges &plan, Executable &program,
                           const llvm::DenseMap<Value, int32_t> &slots,
                           bool holes) {
  llvm::DenseMap<int32_t, Value> valueOf;
  for (auto [value, slot] : slots)
    valueOf[slot] = value;
  int64_t holesMade = 0;
  std::vector<bool> claimed(program.inputs.size(), false);
  for (ExecutableValue &output : program.outputs) {
    for (size_t i = 0; i < program.inputs.size() && output.aliasedInput < 0;
         ++i) {
      const ExecutableValue &input = program.inputs[i];
      if (!input.donated || claimed[i] || !sameLayout(program, input, output))
        continue;
      const PlanRange &from = plan.ranges[plan.rangeOf[input.slot]];
      int32_t to = plan.rangeOf[output.slot];
      if (input.slot != output.slot &&
          (plan.merged[to] || from.end >= plan.ranges[to].begin))
        continue;
      claimed[i] = true;
      output.aliasedInput = static_cast<int32_t>(i);
      if (input.slot == output.slot)
        continue;
      if (mergeIntoInput(plan, input, output, slots, valueOf, holes))
        ++holesMade;
    }
    // The same value returned twice updates the input once.
    for (const ExecutableValue &other : program.outputs)
      if (&other != &output && other.slot == output.slot &&
          other.aliasedInput >= 0 && output.aliasedInput < 0)
        output.aliasedInput = other.aliasedInput;
  }
  return holesMade;
}

/// Places the ranges not merged into others in one arena, largest first,
/// and sets the program's arena size and slot offsets.
void placePlan(const PlanRanges &plan, Executable &program) {
  const std::vector<PlanRange> &ranges = plan.ranges;
  std::vector<size_t> live;
  std::vector<int64_t> points;
  for (size_t r = 0; r < ranges.size(); ++r)
    if (!plan.merged[r]) {
      live.push_back(r);
      for (auto [low, high] : ranges[r].spans()) {
        points.push_back(low);
        points.push_back(high);
      }
    }
  // Greedy by size: the largest buffers first, each at the lowest offset
  // free for its live spans. (Other orders — by bytes times points, by
  // first point, by length — and best fit were measured and not kept: on
  // GPT-2 small's train step this order's arena was the smallest of the
  // eight, within 0.03% of the liveness peak, and trying all eight made a
  // 96-layer compile 1.1 s slower.)
  std::sort(live.begin(), live.end(), [&](size_t a, size_t b) {
    if (ranges[a].bytes != ranges[b].bytes)
      return ranges[a].bytes > ranges[b].bytes;
    return ranges[a].begin != ranges[b].begin
               ? ranges[a].begin < ranges[b].begin
               : a < b;
  });
  std::vector<int64_t> offsetOf;
  program.arenaBytes =
      placeRanges(ranges, live, plan.merged, plan.rangeOf, points, offsetOf);
  program.slotOffsets.assign(program.slots.size(), 0);
  for (size_t s = 0; s < program.slots.size(); ++s)
    program.slotOffsets[s] = offsetOf[plan.rangeOf[s]];
}

/// The buffer plan from the liveness analysis the memory report uses (one
/// code path): every slot gets an offset in one arena per device, and slots
/// alive at the same program point never overlap. Greedy by size: the
/// largest buffers are placed first, each at the lowest offset free for its
/// whole live range (an elementwise op may take the storage of an operand
/// that dies at it; see Liveness.h). An output takes the place of a donated
/// input of its type and layout that is dead before the output is defined:
/// the program updates that argument in place (aliasedInput); with `holes`,
/// the bytes are free between the input's last use and the start of the
/// chain making the output (a gradient buffer the step overwrites is not
/// held through the backward pass's peak: GPT-2 small's dp+tp train step,
/// 1.461 -> 1.375 GB per device; docs/Runtime.md, "The buffer plan").
/// Programs with inlined calls keep one storage per slot (their callee
/// bodies are not in the caller's liveness). Slots marked in `inner` (a
/// fused chain's inner values: never written) take no bytes. Returns how
/// many holes it made.
int64_t planBuffers(func::FuncOp entry,
                    const llvm::DenseMap<Value, int32_t> &slots,
                    const llvm::DenseMap<OpOperand *, int32_t> &yieldCopies,
                    Executable &program, bool inlinedCalls, bool holes,
                    const std::vector<bool> &inner) {
  int64_t holesMade = 0;
  if (inlinedCalls)
    return holesMade;
  BufferLiveness liveness = analyzeLiveness(entry);
  PlanRanges plan = collectRanges(liveness, slots, yieldCopies, program);
  std::vector<std::pair<int32_t, int32_t>> shared =
      linkInPlacePairs(liveness, slots, plan);
  addUnseenSlots(plan, program, liveness.points);
  plan.merged.assign(plan.ranges.size(), false);
  mergeShared(plan, shared);
  holesMade = aliasDonatedInputs(plan, program, slots, holes);
  for (size_t r = 0; r < plan.ranges.size() && !inner.empty(); ++r) {
    bool allInner = !plan.merged[r];
    for (int32_t slot : plan.ranges[r].slots)
      allInner &= static_cast<bool>(inner[slot]);
    if (allInner)
      plan.ranges[r].bytes = 0;
  }
  placePlan(plan, program);
  return holesMade;
}

} // namespace

namespace {

/// The lowering of one entry function (calls already inlined where
/// possible) into `program`: every tensor value gets a buffer slot, every op
/// one instruction (a loop's body follows its Loop instruction, see
/// Instruction.h), the entry's arguments and results become the program's
/// inputs and outputs.
class Lowering {
public:
  Lowering(func::FuncOp entry, bool partitioned)
      : entry(entry), partitioned(partitioned) {}

  /// The mesh of a partitioned module: the one its shardings name, or its
  /// only mesh.
  void findMesh(ModuleOp module);
  Status lowerArguments();
  /// Lowers the ops of `block` in order. `callResults`: for a callee's
  /// body, the slots its return copies into; null for the entry function,
  /// whose return defines the outputs.
  Status lowerBlock(Block &block, const std::vector<int32_t> *callResults);
  /// The program with its buffer plan; `holes`: a donated input's bytes
  /// are free between its last use and the output that updates it.
  Executable planned(bool holes, int64_t *holesMade = nullptr,
                     const std::vector<bool> &inner = {});
  /// planned() then fused, with the slots in `inner` (the inner values of
  /// chains fused in the unplanned program) given no bytes when the
  /// planned program fuses them away too; slots it still names get their
  /// bytes back, and the plan is redone (at most a few times, then
  /// without).
  Executable plannedAndFused(bool holes, std::vector<bool> inner,
                             int64_t *holesMade = nullptr);
  /// The program with no buffer plan: one storage per slot.
  Executable unplanned() const { return program; }

private:
  Expected<int32_t> slotFor(Value value);
  /// Slots of `values`, appended to `into`.
  Status slotsOf(ValueRange values, std::vector<int32_t> &into);
  /// The global layout of an argument or result: its sharding (when the
  /// module is partitioned) and the global shape it implies.
  ExecutableValue layoutOf(Type local, ShardingAttr attr,
                           DenseI64ArrayAttr globalShape,
                           const std::string &name, int32_t slot);
  /// An instruction copying slot `from` into slot `to`.
  void copy(int32_t from, int32_t to);

  Status lowerCall(func::CallOp call);
  Status lowerCalleeReturn(func::ReturnOp ret,
                           const std::vector<int32_t> &callResults);
  Status lowerReturn(func::ReturnOp ret);
  Status lowerLoop(LoopOp loop, const std::vector<int32_t> *callResults);
  /// Every other op: one instruction with the op's runtime code.
  Status lowerTensorOp(Operation &op);

  func::FuncOp entry;
  bool partitioned;
  Executable program;
  llvm::DenseMap<Value, int32_t> slots;
  /// The callees being lowered (a recursive call cannot run).
  std::vector<Operation *> callStack;
  bool inlinedCalls = false;
  llvm::DenseMap<OpOperand *, int32_t> yieldCopies;
};

void Lowering::findMesh(ModuleOp module) {
  if (!partitioned)
    return;
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  FlatSymbolRefAttr meshName;
  entry.walk([&](Operation *op) {
    for (NamedAttribute attr : op->getAttrs())
      if (auto sharding = dyn_cast<ShardingAttr>(attr.getValue()))
        meshName = meshName ? meshName : sharding.getMesh();
  });
  for (unsigned i = 0; i < entry.getNumArguments() && !meshName; ++i)
    if (auto sharding = entry.getArgAttrOfType<ShardingAttr>(
            i, PartitaDialect::kShardingAttrName))
      meshName = sharding.getMesh();
  MeshOp mesh = meshName ? lookupMesh(module, meshName)
                         : (meshes.size() == 1 ? meshes.front() : MeshOp());
  if (mesh)
    program.mesh = mesh.getMesh().toMesh();
}

Expected<int32_t> Lowering::slotFor(Value value) {
  auto it = slots.find(value);
  if (it != slots.end())
    return it->second;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return Status::error("non-tensor value " + describeValue(value));
  Expected<DType> dtype = dtypeOf(type);
  if (!dtype)
    return Status::error(describeValue(value) + ": " +
                         dtype.status().message());
  program.slots.push_back(
      {*dtype,
       std::vector<int64_t>(type.getShape().begin(), type.getShape().end())});
  int32_t slot = static_cast<int32_t>(program.slots.size()) - 1;
  slots[value] = slot;
  return slot;
}

Status Lowering::slotsOf(ValueRange values, std::vector<int32_t> &into) {
  for (Value value : values) {
    Expected<int32_t> slot = slotFor(value);
    if (!slot)
      return slot.status();
    into.push_back(*slot);
  }
  return Status::success();
}

ExecutableValue Lowering::layoutOf(Type local, ShardingAttr attr,
                                   DenseI64ArrayAttr globalShape,
                                   const std::string &name, int32_t slot) {
  auto type = cast<RankedTensorType>(local);
  ExecutableValue value;
  value.slot = slot;
  value.name = name;
  value.sharding = partitioned && attr
                       ? attr.toSharding()
                       : Sharding::replicated(static_cast<int>(type.getRank()));
  for (DimSharding &dim : value.sharding.dims)
    dim.open = false;
  // A padded dimension's global size is recorded by the partitioner; any
  // other is the local size times its shard count.
  if (partitioned && globalShape) {
    value.globalShape.assign(globalShape.asArrayRef().begin(),
                             globalShape.asArrayRef().end());
    return value;
  }
  std::vector<int64_t> counts = shardCounts(program.mesh, value.sharding);
  for (int64_t d = 0; d < type.getRank(); ++d)
    value.globalShape.push_back(type.getDimSize(d) * counts[d]);
  return value;
}

void Lowering::copy(int32_t from, int32_t to) {
  Instruction inst;
  inst.op = OpCode::OptimizationBarrier;
  inst.operands = {from};
  inst.results = {to};
  program.instructions.push_back(inst);
}

Status Lowering::lowerArguments() {
  for (BlockArgument arg : entry.getArguments()) {
    Expected<int32_t> slot = slotFor(arg);
    if (!slot)
      return slot.status();
    unsigned index = arg.getArgNumber();
    program.inputs.push_back(layoutOf(
        arg.getType(),
        entry.getArgAttrOfType<ShardingAttr>(index,
                                             PartitaDialect::kShardingAttrName),
        entry.getArgAttrOfType<DenseI64ArrayAttr>(
            index, PartitaDialect::kGlobalShapeAttrName),
        describeValue(arg), *slot));
    if (auto role =
            entry.getArgAttrOfType<RoleAttr>(index, PartitaDialect::kRoleAttrName))
      program.inputs.back().role = stringifyRole(role.getValue()).str();
    program.inputs.back().donated =
        entry.getArgAttr(index, PartitaDialect::kDonatedAttrName) != nullptr;
  }
  return Status::success();
}

Status Lowering::lowerBlock(Block &block,
                            const std::vector<int32_t> *callResults) {
  // Asynchronous collectives started in this block, by the op before which
  // each is waited for (Liveness.h's collectiveWaitPoint()).
  llvm::DenseMap<Operation *, std::vector<size_t>> waitsBefore;
  for (Operation &op : block) {
    if (auto waits = waitsBefore.find(&op); waits != waitsBefore.end())
      for (size_t start : waits->second) {
        const Instruction &collective = program.instructions[start];
        Instruction wait;
        wait.op = OpCode::Wait;
        wait.ints = {static_cast<int64_t>(program.instructions.size() - start)};
        wait.operands = {collective.results[0], collective.operands[0]};
        program.instructions.push_back(std::move(wait));
      }
    Status status = Status::success();
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      status = callResults ? lowerCalleeReturn(ret, *callResults)
                           : lowerReturn(ret);
    else if (auto call = dyn_cast<func::CallOp>(op))
      status = lowerCall(call);
    else if (isa<YieldOp>(op))
      continue; // The parent loop reads its operands.
    else if (auto loop = dyn_cast<LoopOp>(op))
      status = lowerLoop(loop, callResults);
    else
      status = lowerTensorOp(op);
    if (!status.ok())
      return status;
    if (isAsyncCollective(&op))
      waitsBefore[collectiveWaitPoint(&op)].push_back(
          program.instructions.size() - 1);
  }
  return Status::success();
}

Status Lowering::lowerCalleeReturn(func::ReturnOp ret,
                                   const std::vector<int32_t> &callResults) {
  for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
    Expected<int32_t> slot = slotFor(operand);
    if (!slot)
      return slot.status();
    copy(*slot, callResults[index]);
  }
  return Status::success();
}

Status Lowering::lowerCall(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!callee || callee.isExternal())
    return Status::error(describeOp(call) + ": the callee has no body");
  if (llvm::is_contained(callStack, callee.getOperation()))
    return Status::error(describeOp(call) + ": recursive calls cannot run");
  for (auto [index, operand] : llvm::enumerate(call.getOperands())) {
    Expected<int32_t> from = slotFor(operand);
    Expected<int32_t> to = slotFor(callee.getArgument(index));
    if (!from || !to)
      return !from ? from.status() : to.status();
    copy(*from, *to);
  }
  std::vector<int32_t> results;
  if (Status status = slotsOf(call.getResults(), results); !status.ok())
    return status;
  inlinedCalls = true;
  callStack.push_back(callee.getOperation());
  Status status = lowerBlock(callee.getBody().front(), &results);
  callStack.pop_back();
  return status;
}

Status Lowering::lowerReturn(func::ReturnOp ret) {
  for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
    Expected<int32_t> slot = slotFor(operand);
    if (!slot)
      return slot.status();
    program.outputs.push_back(
        layoutOf(operand.getType(),
                 entry.getResultAttrOfType<ShardingAttr>(
                     index, PartitaDialect::kShardingAttrName),
                 entry.getResultAttrOfType<DenseI64ArrayAttr>(
                     index, PartitaDialect::kGlobalShapeAttrName),
                 "result " + std::to_string(index), *slot));
  }
  return Status::success();
}

Status Lowering::lowerLoop(LoopOp loop,
                           const std::vector<int32_t> *callResults) {
  Instruction inst;
  inst.op = OpCode::Loop;
  Block &body = loop.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  Expected<int32_t> counter = slotFor(body.getArgument(0));
  if (!counter)
    return counter.status();
  inst.ints = {static_cast<int64_t>(loop.getTripCount()), 0, *counter};
  std::vector<int32_t> carried;
  if (Status status = slotsOf(loop.getInits(), inst.operands); !status.ok())
    return status;
  if (Status status = slotsOf(loop.getResults(), inst.results); !status.ok())
    return status;
  if (Status status = slotsOf(loop.getCarried(), carried); !status.ok())
    return status;
  inst.ints.insert(inst.ints.end(), carried.begin(), carried.end());
  size_t at = program.instructions.size();
  program.instructions.push_back(inst);
  if (Status status = lowerBlock(body, callResults); !status.ok())
    return status;
  std::vector<int32_t> yielded;
  if (Status status = slotsOf(yield.getValues(), yielded); !status.ok())
    return status;
  Instruction &loopInst = program.instructions[at];
  loopInst.ints.insert(loopInst.ints.end(), yielded.begin(), yielded.end());
  // A slot for the copy of each yielded value.
  for (OpOperand &operand : yield->getOpOperands()) {
    program.slots.push_back(program.slots[slots.lookup(operand.get())]);
    int32_t copySlot = static_cast<int32_t>(program.slots.size()) - 1;
    yieldCopies[&operand] = copySlot;
    program.instructions[at].ints.push_back(copySlot);
  }
  program.instructions[at].ints[1] =
      static_cast<int64_t>(program.instructions.size() - at - 1);
  return Status::success();
}

Status Lowering::lowerTensorOp(Operation &op) {
  auto code = opCodes().find(op.getName().getStringRef());
  if (code == opCodes().end())
    return Status::error(describeOp(&op) + ": the runtime cannot run '" +
                         op.getName().getStringRef().str() + "' yet");
  Instruction inst;
  inst.op = code->second;
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    bool splat = false;
    Expected<HostArray> value = constantValue(constant.getValue(), splat);
    if (!value)
      return Status::error(describeOp(&op) + ": " + value.status().message());
    inst.ints = {static_cast<int64_t>(program.constants.size())};
    if (splat)
      inst.ints.push_back(1);
    program.constants.push_back(std::move(*value));
  } else {
    lowerAttributes(&op, inst);
  }
  if (Status status = slotsOf(op.getOperands(), inst.operands); !status.ok())
    return status;
  if (Status status = slotsOf(op.getResults(), inst.results); !status.ok())
    return status;
  program.instructions.push_back(std::move(inst));
  return Status::success();
}

Executable Lowering::planned(bool holes, int64_t *holesMade,
                             const std::vector<bool> &inner) {
  Executable program = this->program;
  int64_t made = planBuffers(entry, slots, yieldCopies, program, inlinedCalls,
                             holes, inner);
  if (holesMade)
    *holesMade = made;
  // A collective in place (an all_reduce on its operand's storage) reads
  // and writes one slot's bytes: its wait lists the result only.
  if (!program.slotOffsets.empty())
    for (Instruction &inst : program.instructions)
      if (inst.op == OpCode::Wait && inst.operands.size() == 2 &&
          program.slotOffsets[inst.operands[0]] ==
              program.slotOffsets[inst.operands[1]])
        inst.operands.pop_back();
  return program;
}

Executable Lowering::plannedAndFused(bool holes, std::vector<bool> inner,
                                     int64_t *holesMade) {
  // Every slot with its bytes: what the fuser does on the plain plan.
  Executable plain = planned(holes, holesMade);
  fuseElementwise(plain);
  for (int attempt = 0; attempt < 3; ++attempt) {
    int64_t made = 0;
    Executable candidate = planned(holes, &made, inner);
    fuseElementwise(candidate);
    std::vector<bool> named = referencedSlots(candidate);
    bool fits = true;
    for (size_t s = 0; s < inner.size(); ++s)
      if (inner[s] && named[s]) {
        inner[s] = false;
        fits = false;
      }
    if (!fits)
      continue;
    // Packed tighter, buffers a fused run writes may land on bytes it
    // reads, and the fuser then leaves the run apart: the plan that
    // fuses more is kept, else the smaller arena.
    if (candidate.instructions.size() > plain.instructions.size() ||
        (candidate.instructions.size() == plain.instructions.size() &&
         candidate.arenaBytes >= plain.arenaBytes))
      return plain;
    if (holesMade)
      *holesMade = made;
    return candidate;
  }
  return plain;
}

} // namespace

Expected<Executable> partita::lowerToExecutable(ModuleOp original,
                                                const LoweringOptions &options) {
  // Calls are inlined first, so the buffer plan sees every buffer.
  OwningOpRef<ModuleOp> inlined = cloneWithCallsInlined(original);
  // Fusion remakes cheap values near their users, on a copy.
  if (!inlined && options.fuse)
    inlined = original.clone();
  ModuleOp module = inlined ? *inlined : original;
  func::FuncOp entry;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() &&
        (!entry || (entry.isPrivate() && function.isPublic())))
      entry = function;
  if (!entry)
    return Status::error("the module has no function with a body to run");
  if (options.fuse)
    remakeNearFusedUsers(entry);
  Lowering lowering(entry,
                    module->hasAttr(PartitaDialect::kPartitionedAttrName));
  lowering.findMesh(module);
  if (Status status = lowering.lowerArguments(); !status.ok())
    return status;
  if (Status status = lowering.lowerBlock(entry.getBody().front(), nullptr);
      !status.ok())
    return status;
  int64_t holes = 0;
  if (!options.fuse)
    return lowering.planned(/*holes=*/true, &holes);
  // Fused with no buffer plan (every slot its own storage) the fuser is
  // limited by nothing but the program: the inner values of its chains
  // are never written, and the plan gives them no bytes.
  Executable apart = lowering.unplanned();
  fuseElementwise(apart);
  std::vector<bool> inner = referencedSlots(apart);
  inner.flip();
  Executable program = lowering.plannedAndFused(/*holes=*/true, inner, &holes);
  // A buffer placed in a donated input's bytes between its last use and
  // its update can stop the fuser from fusing a chain that reads it (the
  // fused run would write over bytes it still reads): where the plan
  // without such holes fuses more (AdamW's update chains of a small GPT's
  // dp step: 294 instructions against 416), that plan is kept.
  // Nothing to weigh when the holes cost no fusion: no plan fuses more
  // than none.
  if (holes > 0 && apart.instructions.size() != program.instructions.size()) {
    Executable solid = lowering.plannedAndFused(/*holes=*/false, inner);
    if (solid.instructions.size() < program.instructions.size())
      program = std::move(solid);
  }
  dropUnreferencedSlots(program);
  return program;
}

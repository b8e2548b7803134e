//===- StageCut.cpp - Placing a loss function's ops in pipeline stages ----===//
//
// Where a model is cut decides how well a pipeline runs: every stage waits
// for the slowest. Layers are the natural units (a transformer's are alike),
// so the automatic cut keeps each layer whole and balances FLOPs over
// contiguous runs of layers; annotations let a user cut anywhere between
// top-level ops. See docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//

#include "StageFunctions.h"

#include "partita/Dialect/Partita/IR/PartitaOps.h"
#include "partita/Models/Models.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace mlir;
using namespace partita;

namespace {

/// The layer number an op's name starts with (`layer12.attn.q` -> 12).
std::optional<int64_t> layerOf(Operation *op) {
  auto named = dyn_cast<NameLoc>(op->getLoc());
  if (!named)
    return std::nullopt;
  StringRef text = named.getName().getValue();
  StringRef head = text.take_until([](char c) { return c == '.'; });
  if (!head.consume_front("layer") || head.empty() ||
      !llvm::all_of(head, [](char c) { return llvm::isDigit(c); }))
    return std::nullopt;
  int64_t number = 0;
  if (head.getAsInteger(10, number))
    return std::nullopt;
  return number;
}

/// Splits `weights` into `parts` contiguous non-empty runs minimizing the
/// largest run's sum; returns the index each run starts at.
std::vector<size_t> balancedCuts(const std::vector<int64_t> &weights,
                                 int parts) {
  size_t n = weights.size();
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + weights[i];
  const int64_t infinite = std::numeric_limits<int64_t>::max();
  // best[k][i]: the smallest largest sum covering units [0, i) with k runs.
  std::vector<std::vector<int64_t>> best(
      parts + 1, std::vector<int64_t>(n + 1, infinite));
  std::vector<std::vector<size_t>> from(parts + 1,
                                        std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == infinite)
          continue;
        int64_t cost = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        // Ties go to the later cut, which keeps earlier stages lighter
        // (they hold more micro-batches' activations).
        if (cost <= best[k][i]) {
          best[k][i] = cost;
          from[k][i] = j;
        }
      }
  std::vector<size_t> starts(parts);
  size_t end = n;
  for (int k = parts; k >= 1; --k) {
    starts[k - 1] = from[k][end];
    end = from[k][end];
  }
  return starts;
}

/// Annotated placement: the attribute where present, else the op before's.
Status annotatedStages(func::FuncOp loss, StageAssignment &assignment) {
  int current = 0;
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    Operation *op = assignment.ops[k];
    if (auto attr = op->getAttrOfType<IntegerAttr>(kStageAttrName)) {
      int64_t stage = attr.getInt();
      if (stage < 0 || stage >= assignment.stages) {
        op->emitError() << "stage " << stage << " is out of range: the "
                        << "pipeline has " << assignment.stages << " stages";
        return Status::error("");
      }
      current = static_cast<int>(stage);
    }
    assignment.stageOf[k] = current;
  }
  (void)loss;
  return Status::success();
}

/// Automatic placement: units (layers, or single ops) balanced by FLOPs.
Status balancedStages(func::FuncOp loss, StageAssignment &assignment) {
  const std::vector<Operation *> &ops = assignment.ops;
  size_t lastLayerOp = 0;
  bool anyLayer = false;
  for (size_t k = 0; k < ops.size(); ++k)
    if (layerOf(ops[k])) {
      lastLayerOp = k;
      anyLayer = true;
    }
  // Unit of each op: its layer by name; what comes before the first layer
  // and after the last are units of their own; an unnamed op between
  // layers joins the op before it. Without layer names every op that
  // computes something is a unit.
  std::vector<size_t> unitOf(ops.size(), 0);
  std::vector<int64_t> unitFlops;
  std::map<int64_t, size_t> unitOfLayer;
  std::optional<size_t> before, after;
  size_t current = 0;
  auto newUnit = [&]() {
    unitFlops.push_back(0);
    return unitFlops.size() - 1;
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!anyLayer) {
      if (!pipelining::isCopiedIntoStages(ops[k]) || unitFlops.empty())
        current = newUnit();
    } else if (std::optional<int64_t> layer = layerOf(ops[k])) {
      auto found = unitOfLayer.find(*layer);
      if (found == unitOfLayer.end())
        found = unitOfLayer.emplace(*layer, newUnit()).first;
      current = found->second;
    } else if (k > lastLayerOp) {
      if (!after)
        after = newUnit();
      current = *after;
    } else if (unitOfLayer.empty()) {
      if (!before)
        before = newUnit();
      current = *before;
    }
    unitOf[k] = current;
    unitFlops[current] += opFlops(ops[k]);
  }
  if (static_cast<int>(unitFlops.size()) < assignment.stages) {
    loss.emitError() << "cannot cut @" << loss.getSymName() << " into "
                     << assignment.stages << " stages: it has "
                     << unitFlops.size()
                     << (anyLayer ? " layers and parts around them"
                                  : " ops");
    return Status::error("");
  }
  std::vector<size_t> starts = balancedCuts(unitFlops, assignment.stages);
  for (size_t k = 0; k < ops.size(); ++k) {
    int stage = 0;
    while (stage + 1 < assignment.stages &&
           unitOf[k] >= starts[stage + 1])
      ++stage;
    assignment.stageOf[k] = stage;
  }
  return Status::success();
}

} // namespace

bool partita::pipelining::isCopiedIntoStages(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() == 1;
}

std::vector<Value> partita::pipelining::valuesUsedBy(Operation *op) {
  std::vector<Value> used(op->operand_begin(), op->operand_end());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  used.insert(used.end(), captured.begin(), captured.end());
  return used;
}

Expected<StageAssignment> partita::assignStages(func::FuncOp loss,
                                                int stages) {
  StageAssignment assignment;
  assignment.stages = stages;
  if (stages < 1) {
    loss.emitError() << "a pipeline needs at least one stage";
    return Status::error("");
  }
  Block &body = loss.getBody().front();
  for (Operation &op : body.without_terminator())
    assignment.ops.push_back(&op);
  assignment.stageOf.assign(assignment.ops.size(), 0);
  // An annotation below the top level would cut a region in two.
  bool nestedAnnotation = false;
  for (Operation *op : assignment.ops) {
    if (op->hasAttr(kStageAttrName))
      assignment.annotated = true;
    op->walk([&](Operation *inner) {
      if (inner == op || !inner->hasAttr(kStageAttrName) || nestedAnnotation)
        return;
      inner->emitError() << "a stage annotation inside '"
                         << op->getName().getStringRef()
                         << "': a pipeline cut cannot split it; annotate "
                         << "the op that holds it";
      nestedAnnotation = true;
    });
  }
  if (nestedAnnotation)
    return Status::error("");
  Status placed = assignment.annotated ? annotatedStages(loss, assignment)
                                       : balancedStages(loss, assignment);
  if (!placed.ok())
    return placed;

  // Copied ops take their first user's stage; every other op must come
  // no earlier than what it uses.
  llvm::DenseMap<Operation *, size_t> indexOf;
  for (size_t k = 0; k < assignment.ops.size(); ++k)
    indexOf[assignment.ops[k]] = k;
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    Operation *op = assignment.ops[k];
    if (pipelining::isCopiedIntoStages(op))
      continue;
    for (Value value : pipelining::valuesUsedBy(op)) {
      Operation *producer = value.getDefiningOp();
      if (!producer || !indexOf.count(producer) ||
          pipelining::isCopiedIntoStages(producer))
        continue;
      int from = assignment.stageOf[indexOf[producer]];
      if (from > assignment.stageOf[k]) {
        op->emitError() << "this op is in stage " << assignment.stageOf[k]
                        << " but uses a value computed in stage " << from
                        << "; a stage can only use values of earlier ones";
        return Status::error("");
      }
    }
  }
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    Operation *op = assignment.ops[k];
    if (!pipelining::isCopiedIntoStages(op))
      continue;
    for (Operation *user : op->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top && indexOf.count(top)) {
        assignment.stageOf[k] = assignment.stageOf[indexOf[top]];
        break;
      }
    }
  }
  assignment.flops.assign(stages, 0);
  std::vector<int> opsIn(stages, 0);
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    if (pipelining::isCopiedIntoStages(assignment.ops[k]))
      continue;
    assignment.flops[assignment.stageOf[k]] += opFlops(assignment.ops[k]);
    ++opsIn[assignment.stageOf[k]];
  }
  for (int s = 0; s < stages; ++s)
    if (opsIn[s] == 0) {
      loss.emitError() << "stage " << s << " of " << stages
                       << " has no ops to run";
      return Status::error("");
    }
  // The loss is computed by the last stage.
  Operation *ret = body.getTerminator();
  if (ret->getNumOperands() > 0)
    if (Operation *producer = ret->getOperand(0).getDefiningOp())
      if (indexOf.count(producer) &&
          assignment.stageOf[indexOf[producer]] != stages - 1) {
        producer->emitError()
            << "the loss is computed in stage "
            << assignment.stageOf[indexOf[producer]]
            << "; it must be in the last stage (" << stages - 1 << ")";
        return Status::error("");
      }
  return assignment;
}

void partita::annotateStages(const StageAssignment &assignment) {
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    Operation *op = assignment.ops[k];
    op->setAttr(kStageAttrName,
                IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                 assignment.stageOf[k]));
  }
}

namespace {

size_t indexIn(const llvm::SetVector<Value> &values, Value value) {
  return llvm::find(values, value) - values.begin();
}

/// The logical axes a value is constrained to, as an argument attribute.
NamedAttribute logicalAxesOf(Value value, Builder &builder) {
  if (auto constraint = value.getDefiningOp<LogicalConstraintOp>())
    return builder.getNamedAttr(PartitaDialect::kLogicalAxesAttrName,
                                constraint.getAxesAttr());
  return builder.getNamedAttr("", builder.getUnitAttr());
}

} // namespace

Expected<std::vector<pipelining::StageFunction>>
partita::pipelining::buildStageFunctions(func::FuncOp loss,
                                         const StageAssignment &assignment) {
  int stages = assignment.stages;
  Block &body = loss.getBody().front();
  llvm::DenseMap<Operation *, size_t> indexOf;
  for (size_t k = 0; k < assignment.ops.size(); ++k)
    indexOf[assignment.ops[k]] = k;
  auto stageOfValue = [&](Value value) -> int {
    Operation *producer = value.getDefiningOp();
    if (!producer || !indexOf.count(producer) ||
        pipelining::isCopiedIntoStages(producer))
      return -1;
    return assignment.stageOf[indexOf[producer]];
  };

  // What each stage sends on: values later stages use, in program order.
  std::vector<llvm::SetVector<Value>> sent(stages);
  std::vector<llvm::SetVector<Value>> used(stages);
  for (size_t k = 0; k < assignment.ops.size(); ++k) {
    Operation *op = assignment.ops[k];
    if (pipelining::isCopiedIntoStages(op))
      continue;
    for (Value value : valuesUsedBy(op))
      used[assignment.stageOf[k]].insert(value);
  }
  for (int s = 0; s < stages; ++s)
    for (Value value : used[s]) {
      int from = stageOfValue(value);
      if (from >= 0 && from < s)
        sent[from].insert(value);
    }
  for (int s = 0; s < stages; ++s) {
    std::vector<Value> ordered(sent[s].begin(), sent[s].end());
    std::stable_sort(ordered.begin(), ordered.end(), [&](Value a, Value b) {
      size_t ia = indexOf[a.getDefiningOp()], ib = indexOf[b.getDefiningOp()];
      if (ia != ib)
        return ia < ib;
      return cast<OpResult>(a).getResultNumber() <
             cast<OpResult>(b).getResultNumber();
    });
    sent[s] = llvm::SetVector<Value>(ordered.begin(), ordered.end());
  }
  Value lossValue = body.getTerminator()->getOperand(0);

  std::vector<StageFunction> functions(stages);
  OpBuilder builder(loss.getContext());
  builder.setInsertionPointAfter(loss);
  for (int s = 0; s < stages; ++s) {
    StageFunction &stage = functions[s];
    std::vector<Value> receivedValues;
    for (Value value : used[s]) {
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        if (arg.getOwner() != &body)
          continue;
        auto role = loss.getArgAttrOfType<RoleAttr>(
            arg.getArgNumber(), PartitaDialect::kRoleAttrName);
        (role && role.getValue() == Role::Param ? stage.paramArgs
                                                : stage.dataArgs)
            .push_back(arg.getArgNumber());
        continue;
      }
      int from = stageOfValue(value);
      if (from >= 0 && from < s)
        receivedValues.push_back(value);
    }
    llvm::sort(stage.paramArgs);
    llvm::sort(stage.dataArgs);
    std::stable_sort(receivedValues.begin(), receivedValues.end(),
                     [&](Value a, Value b) {
                       int sa = stageOfValue(a), sb = stageOfValue(b);
                       if (sa != sb)
                         return sa < sb;
                       return indexIn(sent[sa], a) < indexIn(sent[sb], b);
                     });
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned a : stage.paramArgs) {
      argTypes.push_back(loss.getArgument(a).getType());
      argAttrs.push_back(loss.getArgAttrDict(a));
    }
    for (unsigned a : stage.dataArgs) {
      argTypes.push_back(loss.getArgument(a).getType());
      argAttrs.push_back(loss.getArgAttrDict(a));
    }
    for (Value value : receivedValues) {
      int from = stageOfValue(value);
      stage.received.emplace_back(from,
                                  static_cast<int>(indexIn(sent[from], value)));
      argTypes.push_back(value.getType());
      NamedAttribute axes = logicalAxesOf(value, builder);
      argAttrs.push_back(axes.getName().getValue().empty()
                             ? builder.getDictionaryAttr({})
                             : builder.getDictionaryAttr({axes}));
    }
    SmallVector<Value> results(sent[s].begin(), sent[s].end());
    if (s == stages - 1)
      results.assign({lossValue});
    SmallVector<Type> resultTypes;
    for (Value value : results)
      resultTypes.push_back(value.getType());
    auto function = builder.create<func::FuncOp>(
        loss.getLoc(), (loss.getSymName() + "_stage" + Twine(s)).str(),
        builder.getFunctionType(argTypes, resultTypes));
    function.setPrivate();
    for (size_t a = 0; a < argAttrs.size(); ++a)
      function.setArgAttrs(a, argAttrs[a]);
    Block *entry = function.addEntryBlock();
    IRMapping map;
    size_t next = 0;
    for (unsigned a : stage.paramArgs)
      map.map(loss.getArgument(a), entry->getArgument(next++));
    for (unsigned a : stage.dataArgs)
      map.map(loss.getArgument(a), entry->getArgument(next++));
    for (Value value : receivedValues)
      map.map(value, entry->getArgument(next++));
    OpBuilder inside = OpBuilder::atBlockEnd(entry);
    for (size_t k = 0; k < assignment.ops.size(); ++k) {
      Operation *op = assignment.ops[k];
      bool copied = pipelining::isCopiedIntoStages(op);
      if ((copied && used[s].count(op->getResult(0))) ||
          (!copied && assignment.stageOf[k] == s))
        inside.clone(*op, map);
    }
    SmallVector<Value> mapped;
    for (Value value : results)
      mapped.push_back(map.lookupOrDefault(value));
    inside.create<func::ReturnOp>(loss.getLoc(), mapped);
    function->removeAttr(kStageAttrName);
    function.walk([](Operation *op) { op->removeAttr(kStageAttrName); });
    stage.function = function;
    builder.setInsertionPointAfter(function);
  }
  return functions;
}

//===- ValueCatalog.cpp - The values `explain` and `show` talk about ------===//

#include "partita/Reporting/ValueCatalog.h"

#include "partita/Dialect/Partita/Utils/ValueNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace partita;

namespace {
constexpr llvm::StringLiteral kOrigin = "partita.origin";

ShardingAttr resultSharding(Operation *op, unsigned index) {
  Attribute attr = op->getAttr(PartitaDialect::kShardingAttrName);
  if (auto single = dyn_cast_or_null<ShardingAttr>(attr))
    return op->getNumResults() == 1 ? single : ShardingAttr();
  if (auto list = dyn_cast_or_null<ArrayAttr>(attr))
    return index < list.size() ? dyn_cast<ShardingAttr>(list[index])
                               : ShardingAttr();
  if (auto constraint = dyn_cast<ShardingConstraintOp>(op))
    return constraint.getSharding();
  if (auto reshard = dyn_cast<ReshardOp>(op))
    return reshard.getSharding();
  // A manual computation's results are laid out as its out_shardings say.
  if (auto manual = dyn_cast<ManualComputationOp>(op))
    return index < manual.getOutShardings().size()
               ? dyn_cast<ShardingAttr>(manual.getOutShardings()[index])
               : ShardingAttr();
  return {};
}

ArrayAttr resultOrigin(Operation *op, unsigned index) {
  auto list = op->getAttrOfType<ArrayAttr>(kOrigin);
  if (!list || index >= list.size())
    return {};
  auto entry = dyn_cast<ArrayAttr>(list[index]);
  return entry && !entry.empty() ? entry : ArrayAttr();
}
} // namespace

std::vector<ValueEntry> partita::collectValues(ModuleOp module) {
  std::vector<ValueEntry> entries;
  for (auto function : module.getOps<func::FuncOp>()) {
    std::string prefix = "@" + function.getSymName().str() + ":";
    for (BlockArgument arg : function.isExternal() ? ArrayRef<BlockArgument>()
                                                   : function.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        continue;
      ValueEntry entry{
          arg,
          {},
          describeValue(arg),
          "",
          arg.getLoc(),
          type,
          function.getArgAttrOfType<ShardingAttr>(
              arg.getArgNumber(), PartitaDialect::kShardingAttrName),
          function.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kOrigin)};
      std::string index = "arg" + std::to_string(arg.getArgNumber());
      if (std::string name = shortName(arg); !name.empty())
        entry.names.push_back(name);
      entry.names.push_back(index);
      entry.names.push_back(prefix + index);
      entry.what = "argument " + std::to_string(arg.getArgNumber()) + " of @" +
                   function.getSymName().str();
      entries.push_back(entry);
    }
    if (!function.isExternal()) {
      function.walk([&](Operation *op) {
        for (OpResult result : op->getResults()) {
          auto type = dyn_cast<RankedTensorType>(result.getType());
          if (!type)
            continue;
          ValueEntry entry{result,
                           {},
                           describeValue(result),
                           describeOp(op),
                           op->getLoc(),
                           type,
                           resultSharding(op, result.getResultNumber()),
                           resultOrigin(op, result.getResultNumber())};
          if (std::string name = shortName(result); !name.empty())
            entry.names.push_back(name);
          entry.names.push_back(entry.description);
          entries.push_back(entry);
        }
      });
    }
    for (auto [index, type] : llvm::enumerate(function.getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor)
        continue;
      std::string name = "result" + std::to_string(index);
      ValueEntry entry{Value(),
                       {name, prefix + name},
                       "result " + std::to_string(index) + " of @" +
                           function.getSymName().str(),
                       "",
                       function.getLoc(),
                       tensor,
                       function.getResultAttrOfType<ShardingAttr>(
                           index, PartitaDialect::kShardingAttrName),
                       function.getResultAttrOfType<ArrayAttr>(index, kOrigin)};
      entry.what = entry.description;
      entries.push_back(entry);
    }
  }
  return entries;
}

const ValueEntry *partita::findValue(const std::vector<ValueEntry> &entries,
                                     const std::string &name) {
  std::vector<const ValueEntry *> matches;
  for (const ValueEntry &entry : entries)
    if (std::find(entry.names.begin(), entry.names.end(), name) !=
        entry.names.end())
      matches.push_back(&entry);
  if (matches.size() == 1)
    return matches.front();
  auto &errs = llvm::errs();
  if (matches.empty()) {
    errs << "error: no value is named '" << name << "'; candidates:";
    size_t shown = 0;
    for (const ValueEntry &entry : entries) {
      if (shown++ == 40) {
        errs << " ... (" << entries.size() - 40 << " more)";
        break;
      }
      errs << " " << displayName(entry);
    }
    errs << "\n";
    return nullptr;
  }
  errs << "error: " << matches.size() << " values are named '" << name
       << "'; pick one by argN/resultN or by its description:";
  for (const ValueEntry *entry : matches)
    errs << "\n  " << entry->description << " (" << describeLocation(entry->loc)
         << ")";
  errs << "\n";
  return nullptr;
}

std::string partita::dimsSpec(const Sharding &sharding) {
  Sharding dims = sharding;
  dims.partialKind = PartialKind::None;
  dims.partialAxes.clear();
  for (DimSharding &dim : dims.dims)
    dim.open = false;
  Expected<std::string> spec = toPartitionSpec(dims);
  return spec ? *spec : dims.toString();
}

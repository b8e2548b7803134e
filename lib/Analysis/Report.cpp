//===- Report.cpp - What a partitioned program communicates and holds -----===//

#include "partita/Analysis/Report.h"
#include "partita/Analysis/Liveness.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"
#include "partita/Dialect/Partita/Utils/RemakeValues.h"

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Dialect/Partita/Utils/ValueNames.h"
#include "partita/Sharding/Layout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace mlir;
using namespace partita;

namespace {

std::string dtypeName(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  if (element.isBF16())
    return "bf16";
  if (auto floatType = dyn_cast<FloatType>(element))
    return "f" + std::to_string(floatType.getWidth());
  if (element.isInteger(1))
    return "bool";
  return "i" + std::to_string(element.getIntOrFloatBitWidth());
}

std::vector<int64_t> shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return {tensor.getShape().begin(), tensor.getShape().end()};
}

/// Kind name, mesh and axes of a collective op, or false when `op` is not
/// one that moves data.
bool describeCollective(Operation *op, std::string &kind,
                        FlatSymbolRefAttr &mesh, ArrayAttr &axes) {
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    kind = "all_gather", mesh = gather.getMeshAttr(), axes = gather.getAxes();
  } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    kind = "all_reduce", mesh = reduce.getMeshAttr(), axes = reduce.getAxes();
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    kind = "reduce_scatter", mesh = scatter.getMeshAttr(),
    axes = scatter.getAxes();
  } else if (auto toAll = dyn_cast<AllToAllOp>(op)) {
    kind = "all_to_all", mesh = toAll.getMeshAttr(), axes = toAll.getAxes();
  } else if (auto permute = dyn_cast<CollectivePermuteOp>(op)) {
    kind = "collective_permute", mesh = permute.getMeshAttr(),
    axes = permute.getAxes();
  } else {
    return false;
  }
  return true;
}

CollectiveKind kindOf(const std::string &name) {
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::AllReduce,
        CollectiveKind::ReduceScatter, CollectiveKind::AllToAll})
    if (name == collectiveName(kind))
      return kind;
  return CollectiveKind::CollectivePermute;
}

} // namespace

namespace {

/// A buffer alive at the peak, named for the report: the value's name, or
/// for a loop's copy of a yielded value, the yielded value's.
Report::PeakValue peakValueOf(const LiveBuffer &buffer,
                              const std::string &role) {
  Report::PeakValue peak;
  Value value = buffer.value       ? buffer.value
                : buffer.yieldCopy ? buffer.yieldCopy->get()
                                   : Value();
  if (value) {
    peak.value = (buffer.value ? "" : "loop copy of ") + describeValue(value);
    llvm::raw_string_ostream type(peak.type);
    value.getType().print(type);
  }
  peak.role = role;
  peak.bytes = buffer.bytes;
  return peak;
}

/// The report's memory: the function with the highest peak, its bytes by
/// role at the peak and (with `memoryOverProgram`) at every program point.
void addMemory(Report &report, ModuleOp module, bool memoryOverProgram) {
  // Memory: the function with the highest peak, calls inlined and cheap
  // values made again near their fused users (the buffer plan of the
  // Executable sees the same buffers; RemakeValues.h).
  OwningOpRef<ModuleOp> inlined = cloneWithCallsInlined(module);
  if (!inlined)
    inlined = module.clone();
  for (auto function : inlined->getOps<func::FuncOp>()) {
    if (!function.isExternal())
      remakeNearFusedUsers(function);
    BufferLiveness liveness = analyzeLiveness(function);
    if (liveness.peakBytes < report.peakBytesPerDevice ||
        (liveness.peakBytes == 0 && !report.bytesByRole.empty()))
      continue;
    report.peakBytesPerDevice = liveness.peakBytes;
    std::map<std::string, int64_t> roles{
        {"param", 0}, {"grad", 0}, {"opt_state", 0}, {"activation", 0}};
    std::vector<Report::PeakValue> peak;
    // Bytes alive at each program point by role: a difference array per
    // role, summed once.
    static const char *const kRoles[] = {"param", "grad", "opt_state",
                                         "activation"};
    std::vector<std::array<int64_t, 4>> change(
        memoryOverProgram ? static_cast<size_t>(liveness.points) + 1 : 0,
        {0, 0, 0, 0});
    for (const LiveBuffer &buffer : liveness.buffers) {
      std::string role = "activation";
      if (auto arg = dyn_cast_if_present<BlockArgument>(buffer.value))
        if (arg.getOwner()->getParentOp() == function.getOperation())
          if (auto attr = function.getArgAttrOfType<RoleAttr>(
                  arg.getArgNumber(), PartitaDialect::kRoleAttrName))
            if (attr.getValue() == Role::Param ||
                attr.getValue() == Role::Grad ||
                attr.getValue() == Role::OptState)
              role = stringifyRole(attr.getValue()).str();
      size_t index = std::find(std::begin(kRoles), std::end(kRoles), role) -
                     std::begin(kRoles);
      if (memoryOverProgram && buffer.begin >= 0 &&
          buffer.begin <= buffer.end && buffer.end < liveness.points) {
        change[buffer.begin][index] += buffer.bytes;
        change[buffer.end + 1][index] -= buffer.bytes;
      }
      if (buffer.begin > liveness.peakPoint || buffer.end < liveness.peakPoint)
        continue;
      roles[role] += buffer.bytes;
      peak.push_back(peakValueOf(buffer, role));
    }
    report.bytesByRole = roles;
    std::stable_sort(
        peak.begin(), peak.end(),
        [](const Report::PeakValue &a, const Report::PeakValue &b) {
          return a.bytes > b.bytes;
        });
    if (peak.size() > Report::kPeakValues)
      peak.resize(Report::kPeakValues);
    report.peakValues = std::move(peak);
    report.liveBytesByRole.assign(
        memoryOverProgram ? static_cast<size_t>(liveness.points) : 0,
        {0, 0, 0, 0});
    std::array<int64_t, 4> running = {0, 0, 0, 0};
    for (int64_t point = 0; memoryOverProgram && point < liveness.points;
         ++point) {
      for (size_t r = 0; r < 4; ++r)
        running[r] += change[point][r];
      report.liveBytesByRole[point] = running;
    }
  }
}

/// The report's padding, and the bytes each role holds between steps.
void addPadding(Report &report, ModuleOp module) {
  // Padding: the ops the partitioner added for uneven dimensions carry
  // their reason; the arguments and results their global shape.
  module.walk([&](Operation *op) {
    auto reason = op->getAttrOfType<StringAttr>(PartitaDialect::kReasonAttrName);
    if (!reason)
      return;
    if (isa<PadOp>(op) && reason.getValue() == PartitaDialect::kPadReason)
      ++report.padding.pads;
    else if (isa<SliceOp>(op) && reason.getValue() == PartitaDialect::kCutReason)
      ++report.padding.cuts;
    else if (isa<SelectOp>(op) && reason.getValue().starts_with(
                                      PartitaDialect::kMaskReasonPrefix))
      ++report.padding.masks;
  });
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal() || !function.isPublic())
      continue;
    auto addPadding = [&](Type type, DictionaryAttr attrs) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      auto global = attrs ? attrs.getAs<DenseI64ArrayAttr>(
                                PartitaDialect::kGlobalShapeAttrName)
                          : DenseI64ArrayAttr();
      auto sharding = attrs ? attrs.getAs<ShardingAttr>(
                                  PartitaDialect::kShardingAttrName)
                            : ShardingAttr();
      MeshOp mesh = sharding ? lookupMesh(module, sharding.getMesh()) : MeshOp();
      if (!tensor || !global || !mesh)
        return;
      // The fraction of the padded global tensor (local size times shards,
      // per dimension) that is data.
      Mesh meshValue = mesh.getMesh().toMesh();
      std::vector<int64_t> counts =
          shardCounts(meshValue, sharding.toSharding());
      double data = 1;
      for (auto [d, size] : llvm::enumerate(global.asArrayRef()))
        if (d < counts.size() && tensor.getDimSize(d) > 0)
          data *= static_cast<double>(size) /
                  static_cast<double>(tensor.getDimSize(d) * counts[d]);
      report.padding.bytesPerDevice += static_cast<int64_t>(
          std::llround(static_cast<double>(tensorBytes(tensor)) * (1 - data)));
    };
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      addPadding(function.getArgumentTypes()[i], function.getArgAttrDict(i));
    for (unsigned i = 0; i < function.getNumResults(); ++i)
      addPadding(function.getResultTypes()[i], function.getResultAttrDict(i));
    for (BlockArgument arg : function.getArguments())
      if (auto attr = function.getArgAttrOfType<RoleAttr>(
              arg.getArgNumber(), PartitaDialect::kRoleAttrName))
        if (attr.getValue() != Role::Activation)
          report.persistentBytesByRole[stringifyRole(attr.getValue()).str()] +=
              tensorBytes(arg.getType());
  }
}

} // namespace

Report partita::analyzeModule(ModuleOp module, const Interconnect &interconnect,
                              bool memoryOverProgram) {
  Report report;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    Report::MeshInfo info{mesh.getSymName().str(), {}};
    for (MeshAxisAttr axis : mesh.getMesh().getAxes())
      info.axes.push_back({axis.getName().str(), axis.getSize()});
    report.meshes.push_back(std::move(info));
  }

  module.walk([&](Operation *op) {
    std::string kind;
    FlatSymbolRefAttr meshName;
    ArrayAttr axes;
    if (!describeCollective(op, kind, meshName, axes))
      return;
    CollectiveRecord record;
    record.kind = kind;
    record.mesh = meshName.getValue().str();
    MeshOp mesh = lookupMesh(op, meshName);
    int64_t groupSize = 1;
    for (Attribute axis : axes) {
      record.meshAxes.push_back(cast<StringAttr>(axis).str());
      groupSize *= mesh ? mesh.getMesh().axisSize(record.meshAxes.back()) : 1;
    }
    Type input = op->getOperand(0).getType();
    record.inShape = shapeOf(input);
    record.outShape = shapeOf(op->getResult(0).getType());
    record.dtype = dtypeName(input);
    double inputBytes = static_cast<double>(tensorBytes(input));
    record.bytesPerDevice =
        collectiveBytesPerDevice(kindOf(kind), groupSize, inputBytes);
    record.resultBytes = tensorBytes(op->getResult(0).getType());
    for (auto loop = op->getParentOfType<LoopOp>(); loop;
         loop = loop->getParentOfType<LoopOp>())
      record.count *= static_cast<int64_t>(loop.getTripCount());
    record.loc = describeLocation(op->getLoc());
    if (auto reason =
            op->getAttrOfType<StringAttr>(PartitaDialect::kReasonAttrName))
      record.reason = reason.str();
    record.timeUs = collectiveTimeUs(
        kindOf(kind), groupSize, inputBytes,
        mesh ? interconnect.linkOn(mesh.getMesh().toMesh(), record.meshAxes)
             : interconnect.linkFor(record.meshAxes));
    report.totalCollectives += record.count;
    report.totalBytesPerDevice += record.bytesPerDevice * record.count;
    report.estTimeUs += record.timeUs * record.count;
    report.collectives.push_back(std::move(record));
  });

  addMemory(report, module, memoryOverProgram);
  if (report.bytesByRole.empty())
    report.bytesByRole = {
        {"param", 0}, {"grad", 0}, {"opt_state", 0}, {"activation", 0}};
  report.persistentBytesByRole = {
      {"param", 0}, {"grad", 0}, {"opt_state", 0}, {"input", 0}};
  addPadding(report, module);
  return report;
}

std::string Report::toJson() const {
  std::string text;
  llvm::raw_string_ostream stream(text);
  llvm::json::OStream json(stream, 2);
  auto shape = [&](const std::vector<int64_t> &dims) {
    json.array([&] {
      for (int64_t d : dims)
        json.value(d);
    });
  };
  json.object([&] {
    json.attributeArray("meshes", [&] {
      for (const MeshInfo &mesh : meshes)
        json.object([&] {
          json.attribute("name", mesh.name);
          json.attributeArray("axes", [&] {
            for (const MeshAxis &axis : mesh.axes)
              json.object([&] {
                json.attribute("name", axis.name);
                json.attribute("size", axis.size);
              });
          });
        });
    });
    json.attributeArray("collectives", [&] {
      for (const CollectiveRecord &c : collectives)
        json.object([&] {
          json.attribute("kind", c.kind);
          json.attribute("mesh", c.mesh);
          json.attributeArray("mesh_axes", [&] {
            for (const std::string &axis : c.meshAxes)
              json.value(axis);
          });
          json.attributeBegin("in_shape");
          shape(c.inShape);
          json.attributeEnd();
          json.attributeBegin("out_shape");
          shape(c.outShape);
          json.attributeEnd();
          json.attribute("dtype", c.dtype);
          json.attribute("bytes_per_device", c.bytesPerDevice);
          json.attribute("result_bytes", c.resultBytes);
          json.attribute("count", c.count);
          json.attribute("loc", c.loc);
          json.attribute("reason", c.reason);
          json.attribute("est_time_us", c.timeUs);
        });
    });
    json.attributeObject("totals", [&] {
      json.attribute("collectives", totalCollectives);
      json.attribute("bytes_per_device", totalBytesPerDevice);
      json.attribute("est_time_us", estTimeUs);
    });
    json.attributeObject("memory", [&] {
      json.attribute("peak_bytes_per_device", peakBytesPerDevice);
      json.attributeObject("by_role", [&] {
        for (const char *role : {"param", "grad", "opt_state", "activation"}) {
          auto it = bytesByRole.find(role);
          json.attribute(role, it == bytesByRole.end() ? 0 : it->second);
        }
      });
      json.attributeArray("peak_values", [&] {
        for (const PeakValue &value : peakValues)
          json.object([&] {
            json.attribute("value", value.value);
            json.attribute("type", value.type);
            json.attribute("role", value.role);
            json.attribute("bytes", value.bytes);
          });
      });
      json.attributeObject("persistent_by_role", [&] {
        for (const char *role : {"param", "grad", "opt_state", "input"}) {
          auto it = persistentBytesByRole.find(role);
          json.attribute(role,
                         it == persistentBytesByRole.end() ? 0 : it->second);
        }
      });
    });
    json.attributeObject("padding", [&] {
      json.attribute("bytes_per_device", padding.bytesPerDevice);
      json.attribute("pads", padding.pads);
      json.attribute("cuts", padding.cuts);
      json.attribute("masks", padding.masks);
    });
  });
  stream << "\n";
  return text;
}

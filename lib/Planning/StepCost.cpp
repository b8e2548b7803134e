//===- StepCost.cpp - What a compiled step costs on a measured machine ----===//

#include "partita/Planning/StepCost.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

using namespace partita;

namespace {

/// 2 x the product of every index's extent of an einsum ("bd,df->bf").
double einsumFlops(const Executable &program, const Instruction &inst) {
  llvm::StringRef spec = inst.text;
  llvm::StringRef inputs = spec.split("->").first;
  std::map<char, int64_t> extent;
  size_t operand = 0;
  for (llvm::StringRef term = inputs; !term.empty() || operand == 0;) {
    auto [head, rest] = term.split(',');
    if (operand >= inst.operands.size())
      return 0;
    const std::vector<int64_t> &shape =
        program.slots[inst.operands[operand]].shape;
    if (head.size() != shape.size())
      return 0;
    for (size_t i = 0; i < head.size(); ++i)
      extent[head[i]] = shape[i];
    ++operand;
    term = rest;
    if (rest.empty())
      break;
  }
  double flops = 2;
  for (const auto &entry : extent)
    flops *= static_cast<double>(entry.second);
  return flops;
}

void walk(const Executable &program, size_t begin, size_t end, double times,
          StepProfile &profile) {
  for (size_t i = begin; i < end && i < program.instructions.size(); ++i) {
    const Instruction &inst = program.instructions[i];
    if (inst.op == OpCode::Loop) {
      if (inst.ints.size() < 2)
        continue;
      size_t length = static_cast<size_t>(std::max<int64_t>(inst.ints[1], 0));
      walk(program, i + 1, i + 1 + length,
           times * static_cast<double>(std::max<int64_t>(inst.ints[0], 0)),
           profile);
      i += length;
      continue;
    }
    if (inst.op == OpCode::Wait)
      continue;
    if (isCollective(inst.op)) {
      int64_t group = 1;
      llvm::SmallVector<llvm::StringRef> axes;
      llvm::StringRef(inst.text).split(axes, ',', -1, false);
      for (llvm::StringRef axis : axes)
        group *= std::max<int64_t>(program.mesh.axisSize(axis), 1);
      double bytes =
          inst.operands.empty()
              ? 0
              : static_cast<double>(program.slots[inst.operands[0]].bytes());
      StepProfile::Calls &calls =
          profile.collectives[{opCodeName(inst.op), group}];
      calls.count += times;
      calls.bytes += times * bytes;
      continue;
    }
    profile.instructions += times;
    if (inst.op == OpCode::Einsum) {
      profile.einsumFlops += times * einsumFlops(program, inst);
      continue;
    }
    if (opFamily(inst.op) == OpFamily::Copy || inst.op == OpCode::Constant)
      continue;
    // A fused instruction's head is an einsum: its flops count as one's,
    // its operands and product not as elements (the einsum's cost covers
    // them).
    bool head = inst.op == OpCode::Fused && !inst.text.empty();
    if (head) {
      profile.einsumFlops += times * einsumFlops(program, inst);
    }
    double elements = 0;
    for (size_t k = head ? 2 : 0; k < inst.operands.size(); ++k)
      elements +=
          static_cast<double>(program.slots[inst.operands[k]].numElements());
    for (size_t k = head ? 1 : 0; k < inst.results.size(); ++k)
      elements +=
          static_cast<double>(program.slots[inst.results[k]].numElements());
    profile.elements += times * elements;
  }
}

/// The bytes each device sends per byte of its input, as a ring moves them
/// (what the latency and bandwidth of a fit are scaled by between group
/// sizes).
double ringFactor(const std::string &kind, int64_t group) {
  double g = static_cast<double>(group);
  if (group <= 1)
    return 0;
  if (kind == "all_reduce")
    return 2 * (g - 1) / g;
  if (kind == "all_gather")
    return g - 1;
  if (kind == "collective_permute")
    return 1;
  return (g - 1) / g; // reduce_scatter, all_to_all, all_slice
}

} // namespace

StepProfile partita::profileExecutable(const Executable &program) {
  StepProfile profile;
  walk(program, 0, program.instructions.size(), 1, profile);
  return profile;
}

const CollectiveFit *Calibration::fitFor(const std::string &kind, int64_t group,
                                         double &scale) const {
  scale = 1;
  const CollectiveFit *nearest = nullptr;
  int64_t nearestGroup = 0;
  for (const auto &[key, fit] : collectives) {
    if (key.first != kind)
      continue;
    if (key.second == group)
      return &fit;
    if (!nearest ||
        std::llabs(key.second - group) < std::llabs(nearestGroup - group)) {
      nearest = &fit;
      nearestGroup = key.second;
    }
  }
  if (nearest && ringFactor(kind, nearestGroup) > 0)
    scale = ringFactor(kind, group) / ringFactor(kind, nearestGroup);
  return nearest;
}

std::pair<double, double>
partita::predictSeconds(const StepProfile &profile,
                        const Calibration &calibration,
                        const AxisLink &unmeasured) {
  double compute = profile.instructions * calibration.instructionUs * 1e-6 +
                   profile.einsumFlops / calibration.einsumFlopsPerSecond +
                   profile.elements / calibration.elementsPerSecond;
  double comm = 0;
  for (const auto &[key, calls] : profile.collectives) {
    double scale = 1;
    if (key.first == "all_slice") { // a local slice
      compute += calls.count * calibration.instructionUs * 1e-6;
      continue;
    }
    const CollectiveFit *fit = calibration.fitFor(key.first, key.second, scale);
    if (!fit) {
      StepProfile one;
      one.collectives[key] = calls;
      comm += predictSecondsOnLink(one, 1, unmeasured).second;
      continue;
    }
    comm += scale * (calls.count * fit->latencyUs * 1e-6 +
                     calls.bytes / (fit->bandwidthGBps * 1e9));
  }
  return {compute, comm};
}

double partita::launchSeconds(const Executable &program,
                              const Calibration &calibration) {
  double bytes = 0;
  for (const std::vector<ExecutableValue> *values :
       {&program.inputs, &program.outputs})
    for (const ExecutableValue &value : *values) {
      double elements = 1;
      for (int64_t d : value.globalShape)
        elements *= static_cast<double>(d);
      bytes += elements *
               static_cast<double>(dtypeSize(program.slots[value.slot].dtype));
    }
  return calibration.launchUs * 1e-6 +
         (calibration.hostBytesPerSecond > 0
              ? bytes / calibration.hostBytesPerSecond
              : 0);
}

std::pair<double, double>
partita::predictSecondsOnLink(const StepProfile &profile, double flopsPerSecond,
                              const AxisLink &link) {
  double compute =
      (profile.einsumFlops + profile.elements / 3) / flopsPerSecond;
  double comm = 0;
  for (const auto &[key, calls] : profile.collectives) {
    if (calls.count <= 0)
      continue;
    for (CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::AllSlice,
          CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
          CollectiveKind::AllToAll, CollectiveKind::CollectivePermute})
      if (key.first == collectiveName(kind))
        comm +=
            calls.count * 1e-6 *
            collectiveTimeUs(kind, key.second, calls.bytes / calls.count, link);
  }
  return {compute, comm};
}

Expected<Calibration>
partita::parseCalibration(const llvm::json::Object &object,
                          const std::string &where) {
  Calibration calibration;
  auto number = [&](llvm::StringRef field, double &into,
                    bool zeroAllowed) -> Status {
    const llvm::json::Value *value = object.get(field);
    if (!value)
      return Status::error(where + ": '" + field.str() + "' is missing");
    std::optional<double> parsed = value->getAsNumber();
    if (!parsed || !std::isfinite(*parsed) || *parsed < 0 ||
        (!zeroAllowed && *parsed == 0))
      return Status::error(where + ": '" + field.str() + "' must be a " +
                           (zeroAllowed ? "non-negative" : "positive") +
                           " number");
    into = *parsed;
    return Status::success();
  };
  for (const auto &entry : object) {
    llvm::StringRef key = entry.first;
    if (key != "devices" && key != "instruction_us" &&
        key != "einsum_flops_per_second" && key != "elements_per_second" &&
        key != "launch_us" && key != "host_bytes_per_second" &&
        key != "collectives")
      return Status::error(where + ": unknown field '" + key.str() +
                           "' (devices, instruction_us, "
                           "einsum_flops_per_second, elements_per_second, "
                           "launch_us, host_bytes_per_second, collectives)");
  }
  if (std::optional<llvm::StringRef> devices = object.getString("devices"))
    calibration.devices = devices->str();
  if (Status s = number("instruction_us", calibration.instructionUs, true);
      !s.ok())
    return s;
  if (Status s = number("einsum_flops_per_second",
                        calibration.einsumFlopsPerSecond, false);
      !s.ok())
    return s;
  if (Status s =
          number("elements_per_second", calibration.elementsPerSecond, false);
      !s.ok())
    return s;
  // Optional (calibrations before pipelined layouts were costed).
  if (object.get("launch_us"))
    if (Status s = number("launch_us", calibration.launchUs, true); !s.ok())
      return s;
  if (object.get("host_bytes_per_second"))
    if (Status s = number("host_bytes_per_second",
                          calibration.hostBytesPerSecond, true);
        !s.ok())
      return s;
  const llvm::json::Array *list = object.getArray("collectives");
  if (!list)
    return Status::error(where + ": 'collectives' must be a list of "
                                 "{kind, group, latency_us, bandwidth_GBps}");
  for (const llvm::json::Value &item : *list) {
    const llvm::json::Object *entry = item.getAsObject();
    std::optional<llvm::StringRef> kind =
        entry ? entry->getString("kind") : std::nullopt;
    std::optional<int64_t> group =
        entry ? entry->getInteger("group") : std::nullopt;
    std::optional<double> latency =
        entry ? entry->getNumber("latency_us") : std::nullopt;
    std::optional<double> bandwidth =
        entry ? entry->getNumber("bandwidth_GBps") : std::nullopt;
    if (!kind || !group || *group < 2 || !latency || *latency < 0 ||
        !bandwidth || !(*bandwidth > 0) || !std::isfinite(*bandwidth))
      return Status::error(where + ": every entry of 'collectives' needs a "
                                   "kind, a group of at least 2, a "
                                   "non-negative latency_us and a positive "
                                   "bandwidth_GBps");
    if (*kind != "all_reduce" && *kind != "all_gather" &&
        *kind != "reduce_scatter" && *kind != "all_to_all" &&
        *kind != "collective_permute")
      return Status::error(where + ": unknown collective kind '" + kind->str() +
                           "' (all_reduce, all_gather, reduce_scatter, "
                           "all_to_all, collective_permute)");
    calibration.collectives[{kind->str(), *group}] = {*latency, *bandwidth};
  }
  return calibration;
}

llvm::json::Object partita::calibrationObject(const Calibration &calibration) {
  llvm::json::Array list;
  for (const auto &[key, fit] : calibration.collectives)
    list.push_back(llvm::json::Object{{"kind", key.first},
                                      {"group", key.second},
                                      {"latency_us", fit.latencyUs},
                                      {"bandwidth_GBps", fit.bandwidthGBps}});
  return llvm::json::Object{
      {"devices", calibration.devices},
      {"instruction_us", calibration.instructionUs},
      {"einsum_flops_per_second", calibration.einsumFlopsPerSecond},
      {"elements_per_second", calibration.elementsPerSecond},
      {"launch_us", calibration.launchUs},
      {"host_bytes_per_second", calibration.hostBytesPerSecond},
      {"collectives", std::move(list)}};
}

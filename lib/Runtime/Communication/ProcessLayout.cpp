//===- ProcessLayout.cpp - Which process drives which devices -------------===//

#include "partita/Runtime/Communication/ProcessLayout.h"
#include "partita/Runtime/Communication/ProcessGroup.h"

#include "partita/Runtime/Communication/Communicator.h"

#include <algorithm>
#include <map>
#include <set>

namespace partita {

namespace {

/// The device id at row-major mesh position `position`.
int64_t deviceAtPosition(const Mesh &mesh, int64_t position) {
  const std::vector<int64_t> &ids = mesh.deviceIds();
  return ids.empty() ? position : ids[position];
}

} // namespace

Expected<ProcessLayout> ProcessLayout::create(const Mesh &mesh, int processes,
                                              int rank) {
  int64_t devices = mesh.numDevices();
  if (processes < 1 || rank < 0 || rank >= processes)
    return Status::error("rank " + std::to_string(rank) + " of " +
                         std::to_string(processes) + " processes is invalid");
  if (devices % processes != 0)
    return Status::error(
        std::to_string(processes) + " processes cannot share the " +
        std::to_string(devices) + " devices of mesh " + mesh.toString() +
        " evenly: the process count must divide the device count");
  ProcessLayout layout;
  layout.processes = processes;
  layout.rank = rank;
  layout.processOfDevice.assign(devices, 0);
  int64_t perProcess = devices / processes;
  for (int64_t position = 0; position < devices; ++position) {
    int owner = static_cast<int>(position / perProcess);
    int64_t device = deviceAtPosition(mesh, position);
    layout.processOfDevice[device] = owner;
    layout.meshOrder.push_back(device);
    if (owner == rank)
      layout.localDevices.push_back(device);
  }
  return layout;
}

std::vector<int64_t> ProcessLayout::devicesOf(int process) const {
  auto perProcess = static_cast<int64_t>(meshOrder.size()) / processes;
  return std::vector<int64_t>(meshOrder.begin() + process * perProcess,
                              meshOrder.begin() + (process + 1) * perProcess);
}

std::string ProcessLayout::describe(const Mesh &mesh) const {
  int64_t perProcess = mesh.numDevices() / processes;
  std::string text;
  for (int process = 0; process < processes; ++process) {
    std::vector<int64_t> devices = devicesOf(process);
    int64_t first = process * perProcess, last = first + perProcess - 1;
    text += "rank " + std::to_string(process) + ": devices " +
            formatDeviceList(devices) + " (mesh positions " +
            std::to_string(first) +
            (last > first ? "-" + std::to_string(last) : std::string()) + ")\n";
  }
  return text;
}

std::vector<std::pair<std::vector<int64_t>, std::vector<int>>>
crossProcessGroups(const Mesh &mesh, const ProcessLayout &layout) {
  std::map<std::vector<int64_t>, std::vector<int>> groups;
  int axes = mesh.rank();
  for (int mask = 1; mask < (1 << axes); ++mask) {
    std::vector<std::string> names;
    for (int a = 0; a < axes; ++a)
      if (mask & (1 << a))
        names.push_back(mesh.axes()[a].name);
    for (int64_t device = 0; device < mesh.numDevices(); ++device) {
      Expected<CollectiveGroup> group = resolveGroup(mesh, device, names);
      if (!group)
        continue;
      std::vector<int64_t> members = group->members;
      std::sort(members.begin(), members.end());
      std::set<int> processes;
      for (int64_t member : members)
        processes.insert(layout.processOfDevice[member]);
      if (processes.size() > 1)
        groups[members] = std::vector<int>(processes.begin(), processes.end());
    }
  }
  return {groups.begin(), groups.end()};
}

std::vector<std::vector<int>> crossProcessSets(const Mesh &mesh,
                                               const ProcessLayout &layout) {
  std::set<std::vector<int>> sets;
  for (const auto &group : crossProcessGroups(mesh, layout))
    sets.insert(group.second);
  return {sets.begin(), sets.end()};
}

Expected<std::vector<int>>
gpusForLocalDevices(int64_t meshDevices,
                    const std::vector<int64_t> &localDevices, int rank,
                    int localRank, int visibleGpus) {
  std::vector<int> gpus(meshDevices, -1);
  auto count = static_cast<int64_t>(localDevices.size());
  int64_t first = static_cast<int64_t>(localRank) * count;
  if (first + count > visibleGpus)
    return Status::error(
        "rank " + std::to_string(rank) + " (process " +
        std::to_string(localRank) + " on its host) needs GPUs " +
        std::to_string(first) + ".." + std::to_string(first + count - 1) +
        " for its " + std::to_string(count) + " device" +
        (count == 1 ? "" : "s") + ", but the host shows " +
        std::to_string(visibleGpus) +
        " (one GPU per device across "
        "processes; run fewer processes per host, or cuda:N in one process "
        "for logical devices)");
  for (int64_t i = 0; i < count; ++i) {
    int64_t device = localDevices[i];
    if (device < 0 || device >= meshDevices)
      return Status::error("device " + std::to_string(device) +
                           " is not in the mesh");
    gpus[device] = static_cast<int>(first + i);
  }
  return gpus;
}

} // namespace partita

namespace partita {

ProcessGroup::~ProcessGroup() = default;

Expected<ProcessLayout> layoutOver(const Mesh &mesh,
                                   const ProcessGroup &group) {
  return ProcessLayout::create(mesh, group.processes(), group.process());
}

Status agreeAll(ProcessGroup &group, const Status &mine,
                const std::string &what) {
  Expected<bool> all = group.allTrue(mine.ok(), what);
  if (!all)
    return all.status();
  if (!mine.ok())
    return mine;
  if (!*all)
    return Status::error("another process failed: " + what);
  return Status::success();
}

} // namespace partita

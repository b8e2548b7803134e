//===- CommunicatorTestSupport.h - Helpers for collective tests -*- C++ -*-===//
//
// The reference side of the communicator tests: group membership recomputed
// by brute force over all devices, C-order index arithmetic, and a runner
// that starts one thread per device.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TEST_RUNTIMECOMMUNICATORTESTSUPPORT_H
#define PARTITA_TEST_RUNTIMECOMMUNICATORTESTSUPPORT_H

#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Runtime/IO/HostArray.h"
#include "partita/Sharding/Mesh.h"

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../IndexTestSupport.h"

namespace partita::test {

/// A device's group as the op description defines it, found by scanning
/// every device: members agree with `deviceId` on all axes not listed and
/// are ordered by the mixed-radix number of their listed coordinates.
struct ReferenceGroup {
  std::vector<int64_t> members;
  int64_t position = -1;
};

inline ReferenceGroup referenceGroup(const Mesh &mesh, int64_t deviceId,
                                     const std::vector<std::string> &axes) {
  std::vector<int> listed;
  for (const std::string &axis : axes)
    listed.push_back(mesh.axisIndex(axis));
  std::vector<int64_t> mine = mesh.coordinates(deviceId);
  std::vector<std::pair<int64_t, int64_t>> byPosition;
  for (int64_t other = 0; other < mesh.numDevices(); ++other) {
    std::vector<int64_t> theirs = mesh.coordinates(other);
    bool sameGroup = true;
    for (int axis = 0; axis < mesh.rank(); ++axis)
      if (std::find(listed.begin(), listed.end(), axis) == listed.end() &&
          theirs[axis] != mine[axis])
        sameGroup = false;
    if (!sameGroup)
      continue;
    int64_t position = 0;
    for (int axis : listed)
      position = position * mesh.axes()[axis].size + theirs[axis];
    byPosition.push_back({position, other});
  }
  std::sort(byPosition.begin(), byPosition.end());
  ReferenceGroup group;
  for (size_t i = 0; i < byPosition.size(); ++i) {
    group.members.push_back(byPosition[i].second);
    if (byPosition[i].second == deviceId)
      group.position = static_cast<int64_t>(i);
  }
  return group;
}

/// Every non-empty ordered selection of the mesh's axes.
inline std::vector<std::vector<std::string>>
orderedAxisSubsets(const Mesh &mesh) {
  std::vector<std::vector<std::string>> result;
  std::function<void(std::vector<std::string> &)> extend =
      [&](std::vector<std::string> &prefix) {
        if (!prefix.empty())
          result.push_back(prefix);
        for (const MeshAxis &axis : mesh.axes()) {
          if (std::find(prefix.begin(), prefix.end(), axis.name) !=
              prefix.end())
            continue;
          prefix.push_back(axis.name);
          extend(prefix);
          prefix.pop_back();
        }
      };
  std::vector<std::string> prefix;
  extend(prefix);
  return result;
}

using index_test::countOf;
using index_test::flatten;
using index_test::unflatten;

inline ConstBufferRef inputRef(const HostArray &array) {
  return {array.bytes.data(), array.dtype, array.shape};
}

inline BufferRef outputRef(HostArray &array) {
  return {array.bytes.data(), array.dtype, array.shape};
}

/// Runs `body(deviceId)` on one thread per device and returns each status.
inline std::vector<Status>
runOnDevices(int64_t numDevices, const std::function<Status(int64_t)> &body) {
  std::vector<Status> statuses(numDevices);
  std::vector<std::thread> threads;
  for (int64_t device = 0; device < numDevices; ++device)
    threads.emplace_back(
        [&statuses, &body, device] { statuses[device] = body(device); });
  for (std::thread &thread : threads)
    thread.join();
  return statuses;
}

} // namespace partita::test

#endif // PARTITA_TEST_RUNTIMECOMMUNICATORTESTSUPPORT_H

//===- ProcessLayout.h - Which process drives which devices -----*- C++ -*-===//
//
// In a multi-process run (docs/Distributed.md) P processes drive the N
// devices of one mesh, N/P each, as threads. Devices are dealt out in mesh
// order: process r drives the devices at mesh positions [r·N/P, (r+1)·N/P),
// row-major, whatever their ids (`device_ids` is honoured: the id at a
// position is the mesh's). The minor mesh axes therefore stay inside a
// process — the usual placement of tensor parallelism inside a host and
// data parallelism across hosts. Nothing here needs MPI.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_PROCESSLAYOUT_H
#define PARTITA_RUNTIME_PROCESSLAYOUT_H

#include "partita/Sharding/Mesh.h"

#include <string>
#include <vector>

namespace partita {

/// The devices of a mesh dealt out to processes in mesh order.
struct ProcessLayout {
  int processes = 1;
  int rank = 0;
  /// The process driving each device, indexed by device id.
  std::vector<int> processOfDevice;
  /// The devices this process drives, in mesh order.
  std::vector<int64_t> localDevices;
  /// Every device id in mesh order (row-major positions).
  std::vector<int64_t> meshOrder;

  /// The layout of `mesh` over `processes` as seen by `rank`. Fails unless
  /// the process count divides the device count.
  static Expected<ProcessLayout> create(const Mesh &mesh, int processes,
                                        int rank);

  /// The devices process `process` drives, in mesh order.
  std::vector<int64_t> devicesOf(int process) const;

  /// One line per process: "rank 1: devices [4, 5, 6, 7] (mesh positions
  /// 4-7)".
  std::string describe(const Mesh &mesh) const;
};

/// The sets of processes (ascending ranks) that the collective groups of
/// `mesh` span, over every non-empty set of mesh axes, keeping those with
/// more than one process; each set once, sorted. Every process computes the
/// same list, so it can create one communicator per set in this order.
std::vector<std::vector<int>> crossProcessSets(const Mesh &mesh,
                                               const ProcessLayout &layout);

/// The device set (ascending ids) of every collective group of `mesh` that
/// spans more than one process, with the process set it spans; sorted by
/// device set.
std::vector<std::pair<std::vector<int64_t>, std::vector<int>>>
crossProcessGroups(const Mesh &mesh, const ProcessLayout &layout);

/// The GPU of each of `localDevices` (indexed by device id over
/// `meshDevices`, -1 for devices of other processes) when this process has
/// host-local rank `localRank` and sees `visibleGpus` GPUs: the processes
/// of a host split its GPUs in order, localRank taking
/// [localRank·L, (localRank+1)·L) for its L devices. Fails, naming the rank
/// and the GPUs it needs, when the host has fewer.
Expected<std::vector<int>>
gpusForLocalDevices(int64_t meshDevices,
                    const std::vector<int64_t> &localDevices, int rank,
                    int localRank, int visibleGpus);

} // namespace partita

#endif // PARTITA_RUNTIME_PROCESSLAYOUT_H

//===- ProcessLayoutTest.cpp - Devices of processes, GPUs of hosts --------===//
//
// The part of a multi-process run's layout that needs no MPI: which devices
// each process drives (ProcessLayout), and which GPU of its host each of
// them runs on under `--distributed --devices cuda:N` (gpusForLocalDevices).
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Communication/ProcessLayout.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace partita;

TEST_CASE("the processes of a host split its GPUs in order, one per device",
          "[runtime][layout]") {
  Mesh mesh = *Mesh::create({{"data", 2}, {"model", 4}});
  // 8 devices as 4 processes of 2, all on one host with 8 GPUs: every GPU
  // used once, each process's devices on consecutive GPUs.
  std::set<int> used;
  for (int rank = 0; rank < 4; ++rank) {
    Expected<ProcessLayout> layout = ProcessLayout::create(mesh, 4, rank);
    REQUIRE(layout.ok());
    Expected<std::vector<int>> gpus =
        gpusForLocalDevices(8, layout->localDevices, rank, rank, 8);
    REQUIRE(gpus.ok());
    for (int64_t d = 0; d < 8; ++d) {
      bool local = std::count(layout->localDevices.begin(),
                              layout->localDevices.end(), d) > 0;
      CHECK(((*gpus)[d] >= 0) == local);
    }
    for (size_t i = 0; i < layout->localDevices.size(); ++i) {
      int gpu = (*gpus)[layout->localDevices[i]];
      CHECK(gpu == rank * 2 + static_cast<int>(i));
      CHECK(used.insert(gpu).second);
    }
  }
  CHECK(used.size() == 8);
  // Two hosts of 4 GPUs: the host-local rank picks the GPUs.
  Expected<std::vector<int>> second =
      gpusForLocalDevices(8, {4, 5}, 2, 0, 4);
  REQUIRE(second.ok());
  CHECK((*second)[4] == 0);
  CHECK((*second)[5] == 1);
}

TEST_CASE("a host with too few GPUs for its processes' devices is an error "
          "naming the rank and the GPUs",
          "[runtime][layout]") {
  Expected<std::vector<int>> gpus =
      gpusForLocalDevices(8, {4, 5, 6, 7}, 1, 1, 6);
  REQUIRE_FALSE(gpus.ok());
  CHECK(gpus.status().message() ==
        "rank 1 (process 1 on its host) needs GPUs 4..7 for its 4 devices, "
        "but the host shows 6 (one GPU per device across processes; run "
        "fewer processes per host, or cuda:N in one process for logical "
        "devices)");
  CHECK_FALSE(gpusForLocalDevices(8, {9}, 0, 0, 8).ok());
}

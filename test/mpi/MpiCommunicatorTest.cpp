//===- MpiCommunicatorTest.cpp - The MPI communicator vs the in-process one
//===//
//
// Run under mpirun with any process count. For several meshes (identity and
// permuted device ids, groups inside one process, across all processes, and
// — with 3 processes on a 2x3 mesh — groups that span some processes
// unevenly), every collective over every ordered set of axes, on f32, bf16,
// i32 and bool data, in place where allowed: each process runs its devices
// through the MPI communicator and the whole mesh through the in-process
// communicator, and compares its devices' outputs bit for bit, floats
// included: a float sum keeps the group's order of addends across
// processes (keepsMemberOrder, docs/Distributed.md "Sums in group order").
// Replicas must agree bit for bit: after every all_reduce, each process
// checks that its devices' outputs in one group are identical, and the
// processes compare a hash of the group's output.
//
// Inputs of 32 KiB and more also take the paths for large calls: all_reduce
// through MPI's own collective; reduce_scatter, all_gather and all_to_all
// along dimension 0 as direct messages between the members' buffers.
// Processes that disagree on a large call must get an error saying so.
//
// Then NCCL's bootstrap helper: one id per process set, made by the set's
// lowest rank, must reach every member unchanged.
//
// Prints one summary line per part; exits 1 on any mismatch.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/MPI/Mpi.h"
#ifdef PARTITA_HAVE_NCCL_BOOTSTRAP
#include "partita/Runtime/MPI/NcclBootstrap.h"
#endif

#include <cstdio>
#include <random>
#include <thread>

using namespace partita;

namespace {

int failures = 0;

void fail(int rank, const std::string &what) {
  if (++failures <= 10)
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

HostArray randomArray(DType dtype, const std::vector<int64_t> &shape,
                      uint64_t seed) {
  std::mt19937_64 random(seed);
  HostArray array = HostArray::zeros(dtype, shape);
  for (int64_t e = 0; e < array.numElements(); ++e) {
    double value = std::uniform_real_distribution<double>(-1, 1)(random);
    switch (dtype) {
    case DType::F32: {
      auto narrow = static_cast<float>(value);
      std::memcpy(array.bytes.data() + 4 * e, &narrow, 4);
      break;
    }
    case DType::BF16: {
      uint16_t bits = partita::floatToBFloat16(static_cast<float>(value));
      std::memcpy(array.bytes.data() + 2 * e, &bits, 2);
      break;
    }
    case DType::I32: {
      auto whole = static_cast<int32_t>(random() % 101) - 50;
      std::memcpy(array.bytes.data() + 4 * e, &whole, 4);
      break;
    }
    default:
      array.bytes[e] = static_cast<uint8_t>(random() & 1);
    }
  }
  return array;
}

/// One collective on every device: its kind, axes and attributes, the
/// input shape, and whether it runs in place.
struct Case {
  CollectiveCall call;
  std::vector<int64_t> inputShape;
  bool inPlace = false;
};

std::vector<Case> casesFor(const Mesh &mesh) {
  std::vector<Case> cases;
  int axes = mesh.rank();
  std::vector<std::vector<std::string>> axisLists;
  for (int mask = 1; mask < (1 << axes); ++mask) {
    std::vector<std::string> names;
    for (int a = 0; a < axes; ++a)
      if (mask & (1 << a))
        names.push_back(mesh.axes()[a].name);
    axisLists.push_back(names);
    if (names.size() > 1)
      axisLists.emplace_back(names.rbegin(), names.rend());
  }
  for (const std::vector<std::string> &names : axisLists) {
    int64_t group = 1;
    for (const std::string &name : names)
      group *= mesh.axisSize(name);
    for (DType dtype : {DType::F32, DType::BF16, DType::I32, DType::Bool}) {
      bool floating = dtype == DType::F32 || dtype == DType::BF16;
      auto add = [&](CommunicatorOp kind, std::vector<int64_t> shape,
                     auto configure) {
        Case c;
        c.call.kind = kind;
        c.call.axes = names;
        c.call.input.dtype = dtype;
        c.call.input.shape = shape;
        c.inputShape = std::move(shape);
        configure(c);
        cases.push_back(c);
      };
      std::vector<ReductionCode> reductions = {ReductionCode::Sum,
                                               ReductionCode::Max};
      if (!floating)
        reductions.push_back(ReductionCode::And);
      for (ReductionCode reduction : reductions)
        for (bool inPlace : {false, true})
          add(CommunicatorOp::AllReduce, {group * 2, 3}, [&](Case &c) {
            c.call.reduction = reduction;
            c.inPlace = inPlace;
          });
      add(CommunicatorOp::ReduceScatter, {group * 2, 3},
          [](Case &c) { c.call.dim = 0; });
      add(CommunicatorOp::ReduceScatter, {2, group * 3}, [](Case &c) {
        c.call.dim = 1;
        c.call.reduction = ReductionCode::Min;
      });
      for (int64_t dim : {0, 1})
        add(CommunicatorOp::AllGather, {2, 3},
            [dim](Case &c) { c.call.dim = dim; });
      add(CommunicatorOp::AllToAll, {group * 2, 3}, [](Case &c) {
        c.call.splitDim = 0;
        c.call.concatDim = 1;
      });
      add(CommunicatorOp::AllToAll, {2, group * 3}, [](Case &c) {
        c.call.splitDim = 1;
        c.call.concatDim = 0;
      });
      add(CommunicatorOp::AllToAll, {group, 2}, [](Case &c) {
        c.call.splitDim = 0;
        c.call.concatDim = 0;
      });
      // From 32 KiB per input, all_reduce, and reduce_scatter, all_gather
      // and all_to_all along dimension 0, move as direct messages where the
      // group's layout allows (MpiExchange.cpp).
      if (dtype == DType::F32 || dtype == DType::I32) {
        for (bool inPlace : {false, true})
          add(CommunicatorOp::AllReduce, {group * 2, 4096}, [&](Case &c) {
            c.call.reduction =
                floating ? ReductionCode::Sum : ReductionCode::Max;
            c.inPlace = inPlace;
          });
        // Elements no process count divides: uneven slices of a direct
        // all_reduce.
        add(CommunicatorOp::AllReduce, {3, 4099}, [&](Case &c) {
          c.call.reduction =
              floating ? ReductionCode::Sum : ReductionCode::Max;
        });
        add(CommunicatorOp::AllGather, {2, 4096},
            [](Case &c) { c.call.dim = 0; });
        add(CommunicatorOp::ReduceScatter, {group * 2, 4096}, [&](Case &c) {
          c.call.dim = 0;
          c.call.reduction =
              floating ? ReductionCode::Sum : ReductionCode::Min;
        });
        add(CommunicatorOp::AllToAll, {group, 8192}, [](Case &c) {
          c.call.splitDim = 0;
          c.call.concatDim = 0;
        });
      }
      // From 4 KiB per input (below MPI's collectives' 32 KiB), all_gather,
      // reduce_scatter and all_to_all along dimension 0 move as direct
      // messages, every element type.
      int64_t wide = 8192 / dtypeSize(dtype);
      add(CommunicatorOp::AllGather, {1, wide},
          [](Case &c) { c.call.dim = 0; });
      add(CommunicatorOp::ReduceScatter, {group, wide}, [&](Case &c) {
        c.call.dim = 0;
        c.call.reduction = floating ? ReductionCode::Sum : ReductionCode::Max;
      });
      add(CommunicatorOp::AllToAll, {group, wide}, [](Case &c) {
        c.call.splitDim = 0;
        c.call.concatDim = 0;
      });
      for (bool inPlace : {false, true})
        add(CommunicatorOp::CollectivePermute, {2, 3}, [&](Case &c) {
          for (int64_t i = 0; i < group; ++i)
            c.call.pairs.push_back({i, (i + 1) % group});
          c.inPlace = inPlace;
        });
      // Some devices are no target (they get zeros).
      add(CommunicatorOp::CollectivePermute, {3}, [&](Case &c) {
        for (int64_t i = 0; i + 1 < group; i += 2)
          c.call.pairs.push_back({i + 1, i});
      });
    }
  }
  return cases;
}

/// Runs `c` on `devices` through `communicator`, one thread per device;
/// outputs are indexed by device id.
Status runCase(Communicator &communicator, const Mesh &mesh, const Case &c,
               const std::vector<int64_t> &devices, uint64_t seed,
               std::vector<HostArray> &outputs) {
  int64_t group = 1;
  for (const std::string &name : c.call.axes)
    group *= mesh.axisSize(name);
  Expected<std::vector<int64_t>> outShape = collectiveResultShape(
      c.call.kind, c.inputShape, group, c.call.dim, c.call.splitDim,
      c.call.concatDim);
  if (!outShape)
    return outShape.status();
  outputs.assign(mesh.numDevices(), HostArray());
  std::vector<HostArray> inputs(mesh.numDevices());
  std::vector<Status> statuses(devices.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < devices.size(); ++k) {
    int64_t device = devices[k];
    inputs[device] = randomArray(c.call.input.dtype, c.inputShape,
                                 seed * 1000 + static_cast<uint64_t>(device));
    outputs[device] = c.inPlace ? inputs[device]
                                : HostArray::zeros(c.call.input.dtype,
                                                   *outShape);
  }
  for (size_t k = 0; k < devices.size(); ++k)
    threads.emplace_back([&, k] {
      int64_t device = devices[k];
      CollectiveCall call = c.call;
      call.deviceId = device;
      call.input.data = c.inPlace ? outputs[device].bytes.data()
                                  : inputs[device].bytes.data();
      call.input.shape = c.inputShape;
      call.output.data = outputs[device].bytes.data();
      call.output.dtype = call.input.dtype;
      call.output.shape = *outShape;
      statuses[k] = dispatchCollective(communicator, call);
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const Status &status : statuses)
    if (!status)
      return status;
  return Status::success();
}

/// Mesh x over the processes, one device each, and its MPI communicator
/// (null after reporting a failure to create it).
struct OnePerProcess {
  Mesh mesh;
  ProcessLayout layout;
  std::unique_ptr<Communicator> communicator;
};

OnePerProcess onePerProcess(
    MpiProcess &process,
    std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  OnePerProcess setup{
      *Mesh::create({{"x", static_cast<int64_t>(process.size())}}), {}, {}};
  setup.layout =
      *ProcessLayout::create(setup.mesh, process.size(), process.rank());
  Expected<std::unique_ptr<Communicator>> mpi = createMpiCommunicator(
      process, setup.mesh, setup.layout, timeout);
  if (mpi)
    setup.communicator = std::move(*mpi);
  else
    fail(process.rank(), mpi.status().message());
  return setup;
}

/// Reports `status` as the expected failure when its message holds `want`.
void expectFailure(MpiProcess &process, const Status &status,
                   const std::string &want, const std::string &what) {
  if (status || status.message().find(want) == std::string::npos)
    fail(process.rank(), what + " gave: " +
                             (status ? std::string("success")
                                     : status.message()));
  else
    std::printf("rank %d: %s is reported\n", process.rank(), what.c_str());
}

/// Processes that disagree on a large collective get an error that says
/// so, not wrong numbers or a hang, and well before the timeout (20 s):
/// direct messages carry their call in their tag, and a peer's message
/// with another tag is found while waiting. Rank 0 gathers twice the rows
/// the others do; gathers i32 where the others gather f32 of the same
/// bytes; takes the maximum in a 64 KiB all_reduce (two rounds of direct
/// messages) where the others sum. Each case on a communicator of its own.
void testDisagreement(MpiProcess &process) {
  if (process.size() < 2)
    return;
  bool first = process.rank() == 0;
  std::vector<std::pair<std::string, Case>> cases(3);
  Case &rows = cases[0].second;
  cases[0].first = "a disagreement on a large all_gather's rows";
  rows.call.kind = CommunicatorOp::AllGather;
  rows.call.dim = 0;
  rows.call.input.dtype = DType::F32;
  rows.inputShape = {first ? 4 : 2, 4096};
  Case &type = cases[1].second;
  cases[1].first = "a disagreement on a large all_gather's type alone";
  type.call.kind = CommunicatorOp::AllGather;
  type.call.dim = 0;
  type.call.input.dtype = first ? DType::I32 : DType::F32;
  type.inputShape = {2, 4096};
  Case &reduction = cases[2].second;
  cases[2].first = "a disagreement on a 64 KiB all_reduce's reduction";
  reduction.call.kind = CommunicatorOp::AllReduce;
  reduction.call.reduction = first ? ReductionCode::Max : ReductionCode::Sum;
  reduction.call.input.dtype = DType::I32;
  reduction.inputShape = {4, 4096};
  for (auto &[what, c] : cases) {
    OnePerProcess setup = onePerProcess(process);
    if (!setup.communicator)
      return;
    c.call.axes = {"x"};
    std::vector<HostArray> outputs;
    auto start = std::chrono::steady_clock::now();
    Status status = runCase(*setup.communicator, setup.mesh, c,
                            setup.layout.localDevices, 7, outputs);
    auto seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    expectFailure(process, status, "made a different collective", what);
    if (seconds > 5)
      fail(process.rank(), what + " took " + std::to_string(seconds) +
                               " s to be reported (the timeout is 20 s)");
  }
}

/// A peer that comes late, past the communicator's timeout, but whose
/// heartbeat still comes is waited for (up to the heartbeat's patience): a
/// live rank that waits on another is not reported as the culprit. The
/// last rank sleeps 1.2 s before an all_reduce that the others wait for
/// with a 300 ms timeout; the process's timeout (heartbeat) is 20 s.
void testLatePeer(MpiProcess &process) {
  if (process.size() < 2)
    return;
  OnePerProcess setup = onePerProcess(process, std::chrono::milliseconds(300));
  if (!setup.communicator)
    return;
  Case c;
  c.call.kind = CommunicatorOp::AllReduce;
  c.call.axes = {"x"};
  c.call.reduction = ReductionCode::Sum;
  c.call.input.dtype = DType::F32;
  c.inputShape = {64};
  if (process.rank() == process.size() - 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  std::vector<HostArray> outputs;
  Status status = runCase(*setup.communicator, setup.mesh, c,
                          setup.layout.localDevices, 11, outputs);
  if (!status)
    fail(process.rank(), "an all_reduce with a late, live peer gave: " +
                             status.message());
  else
    std::printf("rank %d: a late, live peer is waited for\n", process.rank());
}

/// A call whose buffers do not fit it fails at once, naming the group,
/// where each process drives one member (no rendezvous in the process).
void testBadArgument(MpiProcess &process) {
  if (process.size() < 2)
    return;
  OnePerProcess setup = onePerProcess(process);
  if (!setup.communicator)
    return;
  std::vector<float> input(8, 1.0f), output(8, 0.0f);
  CollectiveCall call;
  call.kind = CommunicatorOp::AllGather;
  call.axes = {"x"};
  call.dim = 0;
  call.deviceId = setup.layout.localDevices.front();
  call.input = {input.data(), DType::F32, {8}};
  call.output = {output.data(), DType::F32, {8}}; // Should be 8 * size.
  expectFailure(process, dispatchCollective(*setup.communicator, call),
                "failing group", "an all_gather into a short output");
}

uint64_t hashBytes(const std::vector<uint8_t> &bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (uint8_t byte : bytes)
    hash = (hash ^ byte) * 1099511628211ULL;
  return hash;
}

void testMesh(MpiProcess &process, const Mesh &mesh, int &casesRun) {
  if (mesh.numDevices() % process.size() != 0)
    return;
  Expected<ProcessLayout> layout =
      ProcessLayout::create(mesh, process.size(), process.rank());
  Expected<std::unique_ptr<Communicator>> mpi =
      createMpiCommunicator(process, mesh, *layout,
                            std::chrono::seconds(20));
  if (!mpi) {
    fail(process.rank(), mpi.status().message());
    return;
  }
  InProcessCommunicator reference(mesh);
  std::vector<int64_t> all(mesh.numDevices());
  for (size_t d = 0; d < all.size(); ++d)
    all[d] = static_cast<int64_t>(d);
  std::vector<Case> cases = casesFor(mesh);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    std::string name = mesh.toString() + ": " + describeCollective(c.call) +
                       (c.inPlace ? " in place" : "");
    std::vector<HostArray> got, want;
    if (Status status = runCase(**mpi, mesh, c, layout->localDevices, i, got);
        !status) {
      fail(process.rank(), name + ": " + status.message());
      process.exitAfterFailure(1);
    }
    if (Status status = runCase(reference, mesh, c, all, i, want); !status) {
      fail(process.rank(), name + ": reference: " + status.message());
      continue;
    }
    for (int64_t device : layout->localDevices) {
      Comparison comparison = compareArrays(got[device], want[device]);
      if (got[device].bytes != want[device].bytes)
        fail(process.rank(), name + " on device " + std::to_string(device) +
                                 ": not bit for bit the one-process result: " +
                                 describeComparison("output", comparison));
    }
    if (c.call.kind == CommunicatorOp::AllReduce) {
      // Replicas: the group holding device 0 ends with one value; every
      // process hashes what its members of that group hold.
      Expected<CollectiveGroup> group = resolveGroup(mesh, 0, c.call.axes);
      int64_t mine = -1;
      for (int64_t member : group->members)
        if (layout->processOfDevice[member] == process.rank()) {
          auto hash = static_cast<int64_t>(hashBytes(got[member].bytes) >> 1);
          if (mine >= 0 && hash != mine)
            fail(process.rank(), name + ": replicas differ inside a process");
          mine = hash;
        }
      Expected<int64_t> largest = process.allMax(mine, "replica hashes");
      bool agrees = mine < 0 || (largest && *largest == mine);
      Expected<bool> all = process.allTrue(agrees, "replica agreement");
      if (!all || !*all)
        fail(process.rank(), name + ": replicas differ across processes");
    }
    ++casesRun;
  }
}

void testBootstrap(MpiProcess &process) {
  int size = process.size();
  std::vector<std::vector<int>> sets;
  std::vector<int> everyone;
  for (int r = 0; r < size; ++r) {
    everyone.push_back(r);
    sets.push_back({r});
  }
  sets.push_back(everyone);
  if (size >= 3)
    sets.push_back({1, size - 1});
  Expected<std::vector<std::vector<uint8_t>>> ids = bootstrapUniqueIds(
      process, sets, 128, [&](std::vector<uint8_t> &id) {
        for (size_t b = 0; b < id.size(); ++b)
          id[b] = static_cast<uint8_t>(process.rank() * 31 + b);
        return Status::success();
      });
  if (!ids) {
    fail(process.rank(), "bootstrap: " + ids.status().message());
    return;
  }
  for (size_t s = 0; s < sets.size(); ++s) {
    bool member = std::find(sets[s].begin(), sets[s].end(),
                            process.rank()) != sets[s].end();
    const std::vector<uint8_t> &id = (*ids)[s];
    if (!member) {
      if (!id.empty())
        fail(process.rank(), "bootstrap: an id for a set it is not in");
      continue;
    }
    bool right = id.size() == 128;
    for (size_t b = 0; right && b < id.size(); ++b)
      right = id[b] == static_cast<uint8_t>(sets[s].front() * 31 + b);
    if (!right)
      fail(process.rank(), "bootstrap: process set " + std::to_string(s) +
                               " got another id than its root made");
  }
  std::printf("rank %d: bootstrap: %zu process sets, ids from each set's "
              "lowest rank\n",
              process.rank(), sets.size());
}

#ifdef PARTITA_HAVE_NCCL_BOOTSTRAP
/// NCCL's own ids: every member of a set must hold the bytes its root made
/// (compared through a hash every process agrees on), and two sets must
/// not share an id.
void testNcclBootstrap(MpiProcess &process) {
  std::vector<int> everyone;
  for (int r = 0; r < process.size(); ++r)
    everyone.push_back(r);
  std::vector<std::vector<int>> sets = {everyone, everyone};
  Expected<std::vector<std::vector<uint8_t>>> ids =
      bootstrapNcclUniqueIds(process, sets);
  if (!ids) {
    fail(process.rank(), "nccl bootstrap: " + ids.status().message());
    return;
  }
  for (const std::vector<uint8_t> &id : *ids) {
    auto hash = static_cast<int64_t>(hashBytes(id) >> 1);
    Expected<int64_t> largest = process.allMax(hash, "nccl id hash");
    Expected<bool> same =
        process.allTrue(largest && *largest == hash, "nccl id agreement");
    if (id.size() != ncclUniqueIdBytes || !same || !*same)
      fail(process.rank(), "nccl bootstrap: the members hold different ids");
  }
  if ((*ids)[0] == (*ids)[1])
    fail(process.rank(), "nccl bootstrap: two communicators got one id");
  std::printf("rank %d: nccl bootstrap: ncclGetUniqueId on rank 0, the same "
              "128 bytes on every rank\n",
              process.rank());
}
#endif

} // namespace

int main(int argc, char **argv) {
  Expected<std::unique_ptr<MpiProcess>> process =
      MpiProcess::initialize(&argc, &argv);
  if (!process) {
    std::fprintf(stderr, "error: %s\n", process.status().message().c_str());
    return 1;
  }
  MpiProcess &mpi = **process;
  mpi.setTimeout(std::chrono::seconds(20));
  std::vector<Mesh> meshes = {
      *Mesh::create({{"x", 8}}),
      *Mesh::create({{"data", 2}, {"model", 4}}),
      *Mesh::create({{"data", 2}, {"model", 4}}, {7, 6, 5, 4, 3, 2, 1, 0}),
      *Mesh::create({{"a", 2}, {"b", 3}}),
      *Mesh::create({{"a", 2}, {"b", 2}, {"c", 2}}, {0, 4, 2, 6, 1, 5, 3, 7}),
  };
  int casesRun = 0;
  for (const Mesh &mesh : meshes)
    testMesh(mpi, mesh, casesRun);
  std::printf("rank %d: %d collectives agree with the in-process "
              "communicator (%d processes)\n",
              mpi.rank(), casesRun, mpi.size());
  testBootstrap(mpi);
  testLatePeer(mpi);
  testDisagreement(mpi);
  testBadArgument(mpi);
#ifdef PARTITA_HAVE_NCCL_BOOTSTRAP
  testNcclBootstrap(mpi);
#endif
  Expected<bool> all = mpi.allTrue(failures == 0, "the verdict");
  if (!all || !*all) {
    std::fprintf(stderr, "rank %d: %d failures here\n", mpi.rank(), failures);
    return 1;
  }
  return 0;
}

//===- mpi_collectives.cpp - Collectives across processes vs within one ---===//
//
// The price of a process boundary: the same collective on the same bytes
// between two devices, once as two threads of one process (the in-process
// communicator) and once as two processes under mpirun (the MPI
// communicator), in the same run. all_reduce and reduce_scatter (sum, f32),
// all_gather and all_to_all, 4 KiB .. 64 MiB per device input.
//
//   mpirun --oversubscribe --allow-run-as-root -np P \
//       build/bin/partita-bench-mpi [--max-mib 64] [--min-kib 4]
//                                   [--only all_gather]
//   (bash bench/mpi.sh does that for P = 2 and 4)
//
// Figures: size = one device's input; time = median over iterations of one
// collective seen by device 0 (MPI: by rank 0, both ranks released together
// by an agreement before each iteration); algbw = size / time; ratio = MPI
// time / in-process time. Each result is checked against the expected
// values after timing ("check"). Rank 1 sleeps while rank 0 times the
// in-process version, so both versions have the same cores. "MPI own" is
// OpenMPI's own collective (MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather, MPI_Alltoall) on
// the same bytes between the same two processes, timed the same way;
// own/mpi is its time over the MPI communicator's (1.0: as fast as MPI).
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/MPI/Mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace partita;

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle]
                           : (values[middle - 1] + values[middle]) / 2;
}

int iterationsFor(int64_t bytes) {
  int64_t budget = int64_t(256) << 20;
  return static_cast<int>(std::clamp<int64_t>(budget / bytes, 5, 100));
}

std::string formatSize(int64_t bytes) {
  if (bytes >= (1 << 20))
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

/// Device d's input: every element d + 1.
std::vector<float> inputOf(int64_t device, int64_t elements) {
  return std::vector<float>(elements, static_cast<float>(device + 1));
}

/// The number of devices (one per process under mpirun).
int64_t devices = 2;

CollectiveCall callFor(CommunicatorOp kind, int64_t device, int64_t elements,
                       std::vector<float> &input, std::vector<float> &output) {
  CollectiveCall call;
  call.kind = kind;
  call.deviceId = device;
  call.axes = {"x"};
  call.input = {input.data(), DType::F32, {elements}};
  std::vector<int64_t> outShape = {elements};
  if (kind == CommunicatorOp::AllGather)
    outShape[0] *= devices;
  if (kind == CommunicatorOp::ReduceScatter)
    outShape[0] /= devices;
  output.assign(outShape[0], 0.0f);
  call.output = {output.data(), DType::F32, outShape};
  return call;
}

/// Whether device `device`'s output is right.
bool correct(CommunicatorOp kind, int64_t device, int64_t elements,
             const std::vector<float> &output) {
  for (int64_t e = 0; e < static_cast<int64_t>(output.size()); ++e) {
    float want = 0;
    switch (kind) {
    case CommunicatorOp::AllReduce:
    case CommunicatorOp::ReduceScatter:
      want = static_cast<float>(devices * (devices + 1) / 2); // 1 + .. + n
      break;
    case CommunicatorOp::AllGather:
      want = static_cast<float>(e / elements + 1);
      break;
    default: // all_to_all: block j of each device's input, in device order.
      want = static_cast<float>(e / (elements / devices) + 1);
      break;
    }
    (void)device;
    if (output[e] != want)
      return false;
  }
  return true;
}

/// Median seconds of `kind` between `devices` threads of this process.
double inProcessSeconds(CommunicatorOp kind, int64_t elements, bool &ok) {
  Mesh mesh = *Mesh::create({{"x", devices}});
  InProcessCommunicator communicator(mesh);
  std::vector<std::vector<float>> inputs, outputs(devices);
  for (int64_t d = 0; d < devices; ++d)
    inputs.push_back(inputOf(d, elements));
  std::vector<CollectiveCall> calls;
  for (int64_t d = 0; d < devices; ++d)
    calls.push_back(callFor(kind, d, elements, inputs[d], outputs[d]));
  int iterations = iterationsFor(elements * 4);
  std::vector<double> times;
  std::vector<std::thread> partners;
  for (int64_t d = 1; d < devices; ++d)
    partners.emplace_back([&, d] {
      for (int i = 0; i <= iterations; ++i)
        (void)dispatchCollective(communicator, calls[d]);
    });
  for (int i = 0; i <= iterations; ++i) {
    auto start = Clock::now();
    (void)dispatchCollective(communicator, calls[0]);
    if (i > 0) // The first call warms up.
      times.push_back(
          std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (std::thread &partner : partners)
    partner.join();
  ok = true;
  for (int64_t d = 0; d < devices; ++d)
    ok &= correct(kind, d, elements, outputs[d]);
  return median(times);
}

/// Median seconds of `collective` (one call on this process, true when it
/// succeeded), both processes released together before each iteration;
/// the first call warms up.
template <typename Collective>
double medianAcrossProcesses(MpiProcess &process, int64_t elements, bool &ok,
                             Collective collective) {
  int iterations = iterationsFor(elements * 4);
  std::vector<double> times;
  ok = true;
  for (int i = 0; i <= iterations; ++i) {
    (void)process.allTrue(true, "the start of an iteration");
    auto start = Clock::now();
    ok &= collective();
    if (i > 0)
      times.push_back(
          std::chrono::duration<double>(Clock::now() - start).count());
  }
  return median(times);
}

/// Median seconds of `kind` between the two processes (this one drives
/// device rank()).
double mpiSeconds(MpiProcess &process, Communicator &communicator,
                  CommunicatorOp kind, int64_t elements, bool &ok) {
  int64_t device = process.rank();
  std::vector<float> input = inputOf(device, elements), output;
  CollectiveCall call = callFor(kind, device, elements, input, output);
  double seconds = medianAcrossProcesses(process, elements, ok, [&] {
    return dispatchCollective(communicator, call).ok();
  });
  ok &= correct(kind, device, elements, output);
  Expected<bool> all = process.allTrue(ok, "the check");
  ok = all && *all;
  return seconds;
}

/// Median seconds of MPI's own collective on the same bytes.
double mpiOwnSeconds(MpiProcess &process, CommunicatorOp kind,
                     int64_t elements, bool &ok) {
  int64_t device = process.rank();
  std::vector<float> input = inputOf(device, elements), output;
  output.assign(kind == CommunicatorOp::AllGather       ? devices * elements
                : kind == CommunicatorOp::ReduceScatter ? elements / devices
                                                        : elements,
                0.0f);
  int count = static_cast<int>(elements);
  double seconds = medianAcrossProcesses(process, elements, ok, [&] {
    switch (kind) {
    case CommunicatorOp::AllReduce:
      return MPI_Allreduce(input.data(), output.data(), count, MPI_FLOAT,
                           MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
    case CommunicatorOp::AllGather:
      return MPI_Allgather(input.data(), count, MPI_FLOAT, output.data(),
                           count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS;
    case CommunicatorOp::ReduceScatter:
      return MPI_Reduce_scatter_block(input.data(), output.data(),
                                      count / static_cast<int>(devices),
                                      MPI_FLOAT, MPI_SUM,
                                      MPI_COMM_WORLD) == MPI_SUCCESS;
    default:
      return MPI_Alltoall(input.data(), count / static_cast<int>(devices),
                          MPI_FLOAT, output.data(),
                          count / static_cast<int>(devices), MPI_FLOAT,
                          MPI_COMM_WORLD) == MPI_SUCCESS;
    }
  });
  ok &= correct(kind, device, elements, output);
  return seconds;
}

} // namespace

int main(int argc, char **argv) {
  int64_t maxMiB = 64, minKiB = 4;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--max-mib" && i + 1 < argc)
      maxMiB = std::atoll(argv[++i]);
    else if (arg == "--min-kib" && i + 1 < argc)
      minKiB = std::max<int64_t>(std::atoll(argv[++i]), 1);
    else if (arg == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: mpirun -np 2 %s [--max-mib N] [--min-kib N] "
                   "[--only all_reduce|reduce_scatter|all_gather|"
                   "all_to_all]\n",
                   argv[0]);
      return 1;
    }
  }
  Expected<std::unique_ptr<MpiProcess>> process =
      MpiProcess::initialize(&argc, &argv);
  if (!process) {
    std::fprintf(stderr, "error: %s\n", process.status().message().c_str());
    return 1;
  }
  MpiProcess &mpi = **process;
  if (mpi.size() < 2) {
    std::fprintf(stderr, "error: run with mpirun -np P, P >= 2 (got %d)\n",
                 mpi.size());
    return 1;
  }
  devices = mpi.size();
  Mesh mesh = *Mesh::create({{"x", devices}});
  Expected<ProcessLayout> layout =
      ProcessLayout::create(mesh, mpi.size(), mpi.rank());
  Expected<std::unique_ptr<Communicator>> communicator =
      createMpiCommunicator(mpi, mesh, *layout);
  if (!communicator) {
    std::fprintf(stderr, "error: %s\n",
                 communicator.status().message().c_str());
    return 1;
  }
  bool rank0 = mpi.rank() == 0;
  if (rank0)
    std::printf("# %lld devices: %lld threads of one process vs %lld "
                "processes (mpirun), same bytes, same run; f32; median of "
                "iterations\n"
                "%-15s %8s %14s %14s %12s %12s %7s %13s %8s %6s\n",
                static_cast<long long>(devices),
                static_cast<long long>(devices),
                static_cast<long long>(devices), "collective", "size",
                "in-proc(us)", "mpi(us)",
                "in-proc GB/s", "mpi GB/s", "ratio", "MPI own(us)",
                "own/mpi", "check");
  bool allCorrect = true;
  for (CommunicatorOp kind :
       {CommunicatorOp::AllReduce, CommunicatorOp::ReduceScatter,
        CommunicatorOp::AllGather, CommunicatorOp::AllToAll}) {
    if (!only.empty() && only != communicatorOpName(kind))
      continue;
    int64_t largest = std::max(maxMiB << 20, minKiB << 10);
    for (int64_t bytes = minKiB << 10; bytes <= largest; bytes *= 16) {
      int64_t elements = bytes / 4;
      bool inProcessOk = true, mpiOk = true;
      double local = 0;
      if (rank0)
        local = inProcessSeconds(kind, elements, inProcessOk);
      double remote = mpiSeconds(mpi, **communicator, kind, elements, mpiOk);
      bool ownOk = true;
      double own = mpiOwnSeconds(mpi, kind, elements, ownOk);
      allCorrect &= inProcessOk && mpiOk && ownOk;
      if (rank0) {
        std::printf("%-15s %8s %14.1f %14.1f %12.2f %12.2f %6.2fx %13.1f "
                    "%8.2f %6s\n",
                    communicatorOpName(kind), formatSize(bytes).c_str(),
                    local * 1e6, remote * 1e6, bytes / local / 1e9,
                    bytes / remote / 1e9, remote / local, own * 1e6,
                    own / remote,
                    inProcessOk && mpiOk && ownOk ? "ok" : "WRONG");
        std::fflush(stdout);
      }
    }
  }
  return allCorrect ? 0 : 1;
}

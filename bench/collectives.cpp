//===- collectives.cpp - In-process collective bandwidth ------------------===//
//
// How fast the CPU backend's collectives move bytes, next to the fastest a
// thread can move them: all_reduce (sum, f32) and all_gather on N emulated
// devices (threads, default 8) for result sizes 1 KiB .. 64 MiB, against a
// plain memcpy of the same number of bytes timed in the same run.
//
// Figures (the definitions of nccl-tests):
//   size    bytes of one device's result buffer (all_reduce: its input too;
//           all_gather: n inputs of size/n)
//   time    median over the iterations of one collective, seen by device 0
//   algbw   size / time
//   busbw   algbw * 2(n-1)/n for all_reduce, algbw * (n-1)/n for all_gather:
//           the traffic each device would put on a link in a ring
//           algorithm, so figures are comparable across group sizes
//   memcpy  size / (median time of one std::memcpy of size bytes, one thread)
// Every result is checked after timing (the "check" column).
//
// Build and run (runtime-only build):
//   cmake -S . -B build-rt -G Ninja -DPARTITA_RUNTIME_ONLY=ON
//   ninja -C build-rt partita-bench-collectives
//   build-rt/bin/partita-bench-collectives [--devices 8] [--max-mib 64]
//       [--single-threaded-bytes B]   (InProcessCommunicator's limit)
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Communication/InProcessCommunicator.h"

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

/// Enough iterations for a stable median without minutes at 64 MiB.
int iterationsFor(int64_t bytes) {
  int64_t budget = int64_t(512) << 20;
  return static_cast<int>(std::clamp<int64_t>(budget / bytes, 5, 200));
}

/// Median seconds of one memcpy of `bytes` between two warm buffers.
double memcpySeconds(int64_t bytes) {
  std::vector<uint8_t> source(bytes, 1), target(bytes, 0);
  std::vector<double> times;
  int iterations = iterationsFor(bytes);
  for (int it = 0; it < iterations + 1; ++it) {
    Clock::time_point start = Clock::now();
    std::memcpy(target.data(), source.data(), bytes);
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (it > 0) // The first one faults the pages in.
      times.push_back(seconds);
  }
  volatile uint8_t sink = target[bytes / 2]; // Keep the copy observable.
  (void)sink;
  return median(times);
}

struct Measurement {
  double seconds = 0;
  bool correct = true;
  std::string error;
};

/// Runs `kind` (all_reduce or all_gather) with a result of `bytes` per
/// device on `numDevices` threads; device d's input elements are all d + 1.
Measurement measure(CommunicatorOp kind, int64_t numDevices, int64_t bytes,
                    int64_t singleThreadedBytes) {
  Mesh mesh = *Mesh::create({{"x", numDevices}});
  InProcessCommunicator comm(mesh);
  comm.setSingleThreadedBytes(singleThreadedBytes);
  int64_t outputCount = bytes / 4;
  int64_t inputCount = kind == CommunicatorOp::AllGather
                           ? outputCount / numDevices
                           : outputCount;
  std::vector<std::vector<float>> inputs, outputs;
  for (int64_t device = 0; device < numDevices; ++device) {
    inputs.emplace_back(inputCount, static_cast<float>(device + 1));
    outputs.emplace_back(outputCount, 0.0f);
  }
  int iterations = iterationsFor(bytes);
  std::vector<double> times;
  std::vector<Status> statuses(numDevices);
  std::vector<std::thread> threads;
  for (int64_t device = 0; device < numDevices; ++device) {
    threads.emplace_back([&, device] {
      ConstBufferRef in{inputs[device].data(), DType::F32, {inputCount}};
      BufferRef out{outputs[device].data(), DType::F32, {outputCount}};
      for (int it = 0; it < iterations + 1; ++it) {
        Clock::time_point start = Clock::now();
        Status status =
            kind == CommunicatorOp::AllGather
                ? comm.allGather(device, {"x"}, 0, in, out)
                : comm.allReduce(device, {"x"}, ReductionCode::Sum, in, out);
        double seconds =
            std::chrono::duration<double>(Clock::now() - start).count();
        if (!status) {
          statuses[device] = status;
          comm.abort(status);
          return;
        }
        if (device == 0 && it > 0) // Iteration 0 warms up.
          times.push_back(seconds);
      }
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  Measurement result;
  for (const Status &status : statuses)
    if (!status) {
      result.correct = false;
      result.error = status.message();
      return result;
    }
  result.seconds = median(times);
  float sum = static_cast<float>(numDevices * (numDevices + 1) / 2);
  for (int64_t device = 0; device < numDevices; ++device)
    for (int64_t k = 0; k < outputCount; ++k) {
      float expected = kind == CommunicatorOp::AllGather
                           ? static_cast<float>(k / inputCount + 1)
                           : sum;
      if (outputs[device][k] != expected)
        result.correct = false;
    }
  return result;
}

std::string formatSize(int64_t bytes) {
  if (bytes >= (int64_t(1) << 20))
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

} // namespace

int main(int argc, char **argv) {
  int64_t numDevices = 8, maxMiB = 64;
  int64_t singleThreadedBytes =
      InProcessCommunicator::defaultSingleThreadedBytes;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--devices")
      numDevices = std::atoll(argv[i + 1]);
    else if (flag == "--max-mib")
      maxMiB = std::atoll(argv[i + 1]);
    else if (flag == "--single-threaded-bytes")
      singleThreadedBytes = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: %s [--devices N] [--max-mib M] "
                   "[--single-threaded-bytes B]\n",
                   argv[0]);
      return 1;
    }
  }
  if (numDevices < 1 || maxMiB < 1) {
    std::fprintf(stderr, "error: --devices and --max-mib must be positive\n");
    return 1;
  }
  std::printf(
      "# partita-bench-collectives: in-process collectives on %lld devices "
      "(threads), %u hardware threads, f32\n"
      "# size: bytes of one device's result; time: median of one call, "
      "device 0's view\n"
      "# algbw = size/time; busbw = algbw*2(n-1)/n (all_reduce), "
      "algbw*(n-1)/n (all_gather)  [nccl-tests]\n"
      "# memcpy = size / median time of one std::memcpy of size bytes on one "
      "thread, same run\n",
      static_cast<long long>(numDevices), std::thread::hardware_concurrency());
  std::printf("%-11s %9s %11s %12s %12s %13s %13s %6s\n", "collective", "size",
              "time(us)", "algbw(GB/s)", "busbw(GB/s)", "memcpy(GB/s)",
              "busbw/memcpy", "check");
  bool allCorrect = true;
  double n = static_cast<double>(numDevices);
  for (CommunicatorOp kind :
       {CommunicatorOp::AllReduce, CommunicatorOp::AllGather}) {
    for (int64_t bytes = 1024; bytes <= (maxMiB << 20); bytes *= 4) {
      if (bytes / 4 % numDevices != 0)
        continue;
      Measurement result =
          measure(kind, numDevices, bytes, singleThreadedBytes);
      if (!result.error.empty()) {
        std::fprintf(stderr, "error: %s\n", result.error.c_str());
        return 1;
      }
      double memcpyBandwidth = bytes / memcpySeconds(bytes) / 1e9;
      double algbw = bytes / result.seconds / 1e9;
      double factor =
          kind == CommunicatorOp::AllReduce ? 2 * (n - 1) / n : (n - 1) / n;
      double busbw = algbw * factor;
      allCorrect &= result.correct;
      std::printf("%-11s %9s %11.1f %12.2f %12.2f %13.2f %13.2f %6s\n",
                  communicatorOpName(kind), formatSize(bytes).c_str(),
                  result.seconds * 1e6, algbw, busbw, memcpyBandwidth,
                  busbw / memcpyBandwidth, result.correct ? "ok" : "WRONG");
      std::fflush(stdout);
    }
  }
  return allCorrect ? 0 : 1;
}

//===- RunMemory.cpp - Refusing a run that cannot fit, before it starts ---===//

#include "partita/Runtime/Program/RunMemory.h"

#include <algorithm>
#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <malloc.h>
#include <new>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

using namespace partita;

namespace {

/// The value of `key` (a "Key:   123 kB" line) in a /proc file, in bytes;
/// -1 when absent.
int64_t procKiloBytes(const char *path, const std::string &key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line))
    if (line.compare(0, key.size(), key) == 0) {
      std::istringstream fields(line.substr(key.size()));
      long long kib = -1;
      if (fields >> kib && kib >= 0)
        return kib * 1024;
    }
  return -1;
}

/// A number in a file of one line ("max": -1).
int64_t fileNumber(const std::string &path) {
  std::ifstream file(path);
  long long value = -1;
  if (!(file >> value) || value < 0)
    return -1;
  return value;
}

/// What a resource limit leaves beside `used` bytes; -1 when unlimited.
int64_t limitLeft(int resource, int64_t used) {
  struct rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      used < 0)
    return -1;
  return std::max<int64_t>(0, static_cast<int64_t>(limit.rlim_cur) - used);
}

/// What the cgroup (v2) this process is in leaves; -1 when unbounded.
int64_t cgroupLeft() {
  std::ifstream file("/proc/self/cgroup");
  std::string line;
  while (std::getline(file, line)) {
    if (line.compare(0, 3, "0::") != 0)
      continue;
    std::string dir = "/sys/fs/cgroup" + line.substr(3);
    int64_t max = fileNumber(dir + "/memory.max");
    int64_t current = fileNumber(dir + "/memory.current");
    if (max < 0 || current < 0)
      return -1;
    return std::max<int64_t>(0, max - current);
  }
  return -1;
}

} // namespace

int64_t partita::allocatableBytes() {
  int64_t least = -1;
  auto bound = [&](int64_t bytes) {
    if (bytes >= 0)
      least = least < 0 ? bytes : std::min(least, bytes);
  };
  int64_t available = procKiloBytes("/proc/meminfo", "MemAvailable:");
  int64_t swap = procKiloBytes("/proc/meminfo", "SwapFree:");
  if (available >= 0)
    bound(available + std::max<int64_t>(0, swap));
  bound(limitLeft(RLIMIT_AS, procKiloBytes("/proc/self/status", "VmSize:")));
  bound(limitLeft(RLIMIT_DATA, procKiloBytes("/proc/self/status", "VmData:")));
  bound(cgroupLeft());
  return least;
}

std::string partita::formatGiB(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", bytes / (1 << 30));
  return text;
}

int64_t partita::residentBytes() {
  return std::max<int64_t>(0, procKiloBytes("/proc/self/status", "VmRSS:"));
}

int64_t partita::peakResidentBytes() {
  return std::max<int64_t>(0, procKiloBytes("/proc/self/status", "VmHWM:"));
}

namespace {

/// Bytes of `value` whole (its global shape) and of its block on a device.
std::pair<double, double> wholeAndBlock(const Executable &program,
                                        const ExecutableValue &value) {
  const TensorType &local = program.slots[value.slot];
  double elements = 1;
  for (int64_t size : value.globalShape)
    elements *= static_cast<double>(size);
  double perElement =
      local.numElements() > 0
          ? static_cast<double>(local.bytes()) / local.numElements()
          : 0;
  return {elements * perElement, static_cast<double>(local.bytes())};
}

} // namespace

double RunMemory::making() const {
  if (kind == RunKind::Blockwise)
    return process;
  return process + hostInputs + inputBlocks;
}

double RunMemory::running() const {
  double buffers = perDevice * static_cast<double>(devices);
  if (kind == RunKind::Blockwise)
    // Each device's buffers (inputs written straight into them), one
    // partial-sum input block beside them while it is made, whole inputs
    // read from sharded-array directories, and every device's output
    // blocks once downloaded.
    return process + buffers + hostInputs +
           largestInputBlock * static_cast<double>(devices) + outputBlocks;
  if (kind == RunKind::Train) {
    // The devices' buffers, and beside them every device's kept values
    // (a snapshot) or one device's (the end's download), if asked for.
    double beside = snapshots       ? inputBlocks
                    : finalDownload ? inputBlocks / std::max<double>(1, devices)
                                    : 0;
    return process + buffers + beside + alongside;
  }
  return process + hostInputs + inputBlocks + buffers + outputBlocks;
}

double RunMemory::assembling() const {
  if (kind == RunKind::Blockwise)
    // The output blocks, one summed block and the expected file's region.
    return process + hostInputs + outputBlocks + 2 * largestOutputBlock;
  if (kind == RunKind::Train)
    // Every device's kept values, assembled whole again.
    return process + inputBlocks + hostInputs;
  return process + hostInputs + inputBlocks + outputBlocks + hostOutputs;
}

double RunMemory::peak() const {
  return std::max({making(), running(), assembling()});
}

std::string RunMemory::describe() const {
  if (kind == RunKind::Blockwise) {
    std::string text = formatGiB(peak()) + ": " + std::to_string(devices) +
                       (devices == 1 ? " device x " : " devices x ") +
                       formatGiB(perDevice) +
                       " of buffers (the plan) with the inputs written into "
                       "them";
    if (largestInputBlock > 0)
      text += ", partial-sum input blocks of at most " +
              formatGiB(largestInputBlock) + " per device";
    if (hostInputs > 0)
      text += ", inputs " + formatGiB(hostInputs) + " whole";
    return text + ", outputs " + formatGiB(outputBlocks) +
           " in blocks and none whole, this process " + formatGiB(process);
  }
  std::string text = formatGiB(peak()) + ": " + std::to_string(devices) +
                     (devices == 1 ? " device x " : " devices x ") +
                     formatGiB(perDevice) + " of buffers (the plan), inputs " +
                     formatGiB(hostInputs) + " whole and " +
                     formatGiB(inputBlocks) + " in blocks";
  if (kind == RunKind::Run)
    text += ", outputs " + formatGiB(outputBlocks) + " in blocks and " +
            formatGiB(hostOutputs) + " whole";
  if (alongside > 0)
    text += ", " + alongsideWhat + " " + formatGiB(alongside);
  return text + ", this process " + formatGiB(process);
}

RunMemory partita::runMemory(const Executable &program, RunKind kind) {
  RunMemory memory;
  memory.kind = kind;
  memory.devices = program.mesh.numDevices();
  memory.perDevice = static_cast<double>(program.allocatedBytes());
  memory.process = static_cast<double>(residentBytes());
  auto devices = static_cast<double>(memory.devices);
  for (const ExecutableValue &input : program.inputs) {
    auto [whole, block] = wholeAndBlock(program, input);
    if (kind == RunKind::Blockwise) {
      // Written straight into the buffers, but for a partial sum's.
      if (input.sharding.partialKind == PartialKind::Sum)
        memory.largestInputBlock = std::max(memory.largestInputBlock, block);
      continue;
    }
    memory.hostInputs += whole;
    memory.inputBlocks += block * devices;
  }
  for (const ExecutableValue &output : program.outputs) {
    auto [whole, block] = wholeAndBlock(program, output);
    memory.hostOutputs += kind == RunKind::Blockwise ? 0 : whole;
    memory.outputBlocks += block * devices;
    memory.largestOutputBlock = std::max(memory.largestOutputBlock, block);
  }
  return memory;
}

namespace {

/// std::new_handler: says so and exits, allocating nothing.
void outOfMemory() {
  static const char message[] =
      "error: out of memory: an allocation failed beyond what the plan "
      "foresaw (the machine's memory, ulimit -v or the cgroup's limit); use "
      "fewer devices, a smaller model or batch, or a machine with more "
      "memory\n";
  std::fflush(stdout);
  ssize_t written = ::write(2, message, sizeof(message) - 1);
  (void)written;
  ::_exit(1);
}

} // namespace

void partita::exitWhenOutOfMemory() { std::set_new_handler(outOfMemory); }

void partita::releaseFreedMemory() {
  // jemalloc's control call, looked up: the libraries never link jemalloc
  // (the tools do, cmake/PartitaOptionalDeps.cmake). 4096 is
  // MALLCTL_ARENAS_ALL: every arena.
  using Mallctl = int (*)(const char *, void *, size_t *, void *, size_t);
  static const auto mallctl =
      reinterpret_cast<Mallctl>(::dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl)
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
  else
    ::malloc_trim(0);
}

Status partita::checkRunMemory(const RunMemory &memory,
                               const std::string &what) {
  int64_t left = allocatableBytes();
  // What the process holds now is not still to allocate.
  double needed = memory.peak() - memory.process;
  if (left < 0 || needed <= static_cast<double>(left))
    return Status::success();
  return Status::error(
      what + " needs " + formatGiB(needed) + " more memory (peak " +
      memory.describe() + "); this process can allocate " +
      formatGiB(static_cast<double>(left)) +
      " (the least of the available memory, ulimit -v and the cgroup's "
      "limit): use fewer devices, a smaller model or batch, or a machine "
      "with more memory");
}

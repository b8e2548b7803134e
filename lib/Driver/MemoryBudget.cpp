//===- MemoryBudget.cpp - Refusing work that cannot fit, up front ---------===//

#include "partita/Driver/MemoryBudget.h"

#include "mlir/IR/BuiltinOps.h"
#include "partita/Driver/Session.h"
#include "partita/Models/Models.h"
#include "partita/Sharding/Mesh.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/resource.h>

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

/// Bytes per operation of each kind of work: the resident memory a GPT
/// module of 50 to 2,000 layers took beyond an empty context, over its ops
/// (gen 1.15 KiB, compile 3.6 KiB, compile --train 18 KiB per forward op),
/// with half again as margin. The numbers are in docs/Robustness.md.
int64_t bytesPerOp(ModuleWork work) {
  switch (work) {
  case ModuleWork::Build:
    return 2 * 1024;
  case ModuleWork::Compile:
    return 6 * 1024;
  case ModuleWork::CompileTrainStep:
    return 28 * 1024;
  }
  return 0;
}

std::string gibibytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
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

int64_t partita::estimatedBytes(int64_t ops, ModuleWork work) {
  int64_t perOp = bytesPerOp(work);
  if (ops > std::numeric_limits<int64_t>::max() / perOp)
    return std::numeric_limits<int64_t>::max();
  return ops * perOp;
}

Status partita::checkModuleMemory(int64_t ops, ModuleWork work,
                                  const std::string &what) {
  if (ops <= 0)
    return Status::success();
  int64_t needed = estimatedBytes(ops, work);
  int64_t left = allocatableBytes();
  if (left < 0 || needed <= left)
    return Status::success();
  return Status::error(
      what + " (" + std::to_string(ops) + " ops) needs about " +
      gibibytes(needed) + " of memory and this process can allocate " +
      gibibytes(left) +
      " (the least of the available memory, ulimit -v and the cgroup's "
      "limit); use fewer layers or a machine with more memory");
}

int64_t partita::countOps(mlir::ModuleOp module) {
  int64_t ops = 0;
  module->walk([&](mlir::Operation *) { ++ops; });
  return ops;
}

int64_t partita::estimatedModelOps(const ModelConfig &config) {
  if (config.layers <= 2)
    return -1;
  std::string ignored;
  llvm::raw_string_ostream quiet(ignored);
  Session session(quiet);
  Expected<Mesh> mesh = parseMeshSpec("data=1");
  if (!mesh)
    return -1;
  int64_t counts[2];
  for (int64_t layers : {1, 2}) {
    ModelConfig shallow = config;
    shallow.layers = layers;
    Expected<mlir::OwningOpRef<mlir::ModuleOp>> built =
        buildModel(&session.context, shallow, *mesh);
    if (!built)
      return -1;
    counts[layers - 1] = countOps(**built);
  }
  int64_t perLayer = std::max<int64_t>(1, counts[1] - counts[0]);
  if (config.layers - 1 >
      (std::numeric_limits<int64_t>::max() - counts[0]) / perLayer)
    return std::numeric_limits<int64_t>::max();
  return counts[0] + (config.layers - 1) * perLayer;
}

Status partita::checkModelMemory(const ModelConfig &config, ModuleWork work) {
  const char *what = work == ModuleWork::Build ? "building" : "compiling";
  return checkModuleMemory(estimatedModelOps(config), work,
                           std::string(what) + " the " + config.model + " of " +
                               std::to_string(config.layers) + " layers");
}

//===- MemoryBudget.cpp - Refusing work that cannot fit, up front ---------===//

#include "partita/Driver/MemoryBudget.h"

#include "mlir/IR/BuiltinOps.h"
#include "partita/Driver/Session.h"
#include "partita/Models/Models.h"
#include "partita/Runtime/Program/RunMemory.h"
#include "partita/Sharding/Mesh.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace partita;

namespace {

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

} // namespace

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
      formatGiB(static_cast<double>(needed)) +
      " of memory and this process can allocate " +
      formatGiB(static_cast<double>(left)) +
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

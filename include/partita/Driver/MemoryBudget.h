//===- MemoryBudget.h - Refusing work that cannot fit, up front -*- C++ -*-===//
//
// Building and compiling a program take memory in proportion to its ops, and
// MLIR does not survive an allocation that fails (it dereferences the null,
// or aborts). So the commands estimate what a module will take before they
// build or compile it, and refuse with a clear error when the process cannot
// allocate that much: the least of the machine's available memory, the
// address-space limit (ulimit -v) less what the process maps, and its
// cgroup's limit less its usage. docs/Robustness.md, "Memory, up front".
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DRIVER_MEMORYBUDGET_H
#define PARTITA_DRIVER_MEMORYBUDGET_H

#include "partita/Runtime/Program/RunMemory.h"
#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace partita {

struct ModelConfig;

/// What the compiler's work on a module of `ops` operations takes: building
/// it and printing it, compiling it, or compiling it into a train step
/// (whose gradient and update multiply the ops). Measured on GPT modules of
/// 50 to 2,000 layers, with half again as margin.
enum class ModuleWork { Build, Compile, CompileTrainStep };
int64_t estimatedBytes(int64_t ops, ModuleWork work);

/// An error when `work` on a module of `ops` operations needs more than
/// allocatableBytes(); `what` names it ("compiling this program").
Status checkModuleMemory(int64_t ops, ModuleWork work, const std::string &what);

/// The operations of `module`.
int64_t countOps(mlir::ModuleOp module);

/// The operations `config`'s model will have, from models of one and two
/// layers built in a context of their own (cheap; the count is linear in
/// layers).
int64_t estimatedModelOps(const ModelConfig &config);

/// checkModuleMemory for `config`'s model at its depth.
Status checkModelMemory(const ModelConfig &config, ModuleWork work);

} // namespace partita

#endif // PARTITA_DRIVER_MEMORYBUDGET_H

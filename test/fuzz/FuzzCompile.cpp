//===- FuzzCompile.cpp - libFuzzer targets: text in, Executable out -------===//
//
// Two targets from this file (test/fuzz/CMakeLists.txt):
//   partita-fuzz-Compile  program text in the partita dialect;
//   partita-fuzz-Import   StableHLO as JAX writes it (the importer).
// Any bytes go through what `partita compile --stage executable` does:
// the nesting/NUL check, MLIR's parser, the importer, the verifier, the
// pipeline to the per-device program, the lowering to the Executable. In
// the Compile target a loss function (its entry returns one f32 scalar) is
// also compiled as an AdamW train step (the Import target leaves that to
// it: JAX's exports are loss functions, and the train step would double the
// time per input). Every program the compiler emits must then pass the
// Executable loader's validation: the compiler and the loader must agree
// (docs/Robustness.md). Errors are expected and discarded; a crash, hang,
// sanitizer finding or a refused Executable is a finding.
//
//===----------------------------------------------------------------------===//

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Runtime/Program/ExecutableFile.h"

#include "partita/Driver/Session.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#ifndef PARTITA_FUZZ_FROM
#error "define PARTITA_FUZZ_FROM as \"partita\" or \"stablehlo\""
#endif

using namespace partita;

/// Whether loss functions are also compiled as train steps.
constexpr bool kTrainStep =
    std::string_view(PARTITA_FUZZ_FROM) == std::string_view("partita");

/// LLVM's BumpPtrAllocator poisons the unused part of each slab when built
/// with AddressSanitizer, and unpoisons what it hands out. MLIRContext's
/// allocators are shared between our instrumented code and Debian's
/// uninstrumented libMLIR, whose allocations are never unpoisoned: reads of
/// them would be reported. Manual poisoning is off; ASan's own checks stay.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace {

/// Whether `module`'s entry function returns one f32 scalar (a loss the
/// train-step pass can differentiate).
bool returnsScalarLoss(mlir::ModuleOp module) {
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    if (func.isExternal())
      continue;
    auto results = func.getFunctionType().getResults();
    if (results.size() != 1)
      return false;
    auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(results[0]);
    return tensor && tensor.getRank() == 0 && tensor.getElementType().isF32();
  }
  return false;
}

/// Compiles `module` (changed in place) with `options` and checks that the
/// loader accepts what comes out; aborts when it does not.
void compileAndLoad(Session &session, mlir::ModuleOp module,
                    const PipelineOptions &options) {
  if (!runPipeline(session, module, options))
    return;
  Expected<Executable> program = lowerToExecutable(module);
  if (!program)
    return;
  std::vector<uint8_t> bytes = serializeExecutable(*program);
  Expected<Executable> loaded = deserializeExecutable(bytes, "compiled");
  if (!loaded) {
    std::fprintf(stderr,
                 "the loader refused an Executable the compiler wrote: %s\n",
                 loaded.status().message().c_str());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string discarded;
  llvm::raw_string_ostream errors(discarded);
  Session session(errors);
  session.from = PARTITA_FUZZ_FROM;
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModuleFromBuffer(
      session, llvm::MemoryBuffer::getMemBufferCopy(
                   llvm::StringRef(reinterpret_cast<const char *>(data), size),
                   "fuzz.mlir"));
  if (!module)
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> lossFunction;
  if (kTrainStep && returnsScalarLoss(*module))
    lossFunction = module->clone();
  compileAndLoad(session, *module, PipelineOptions{});
  if (lossFunction) {
    PipelineOptions train;
    train.trainOptimizer = TrainOptimizer::AdamW;
    compileAndLoad(session, *lossFunction, train);
  }
  return 0;
}

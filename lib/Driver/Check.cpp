//===- Check.cpp - A partitioned program against its reference ------------===//

#include "partita/Driver/Check.h"

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Program/RunMemory.h"
#include "partita/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace partita {

namespace {

/// Runs `options`' pipeline on `module`, after `first` when given.
LogicalResult runPipelineOn(ModuleOp module, const PipelineOptions &given,
                            std::unique_ptr<Pass> first = nullptr) {
  PipelineOptions options = given;
  if (Status status = resolveInterconnect(options); !status)
    return module.emitError() << status.message();
  PassManager passes(module.getContext());
  if (first)
    passes.addPass(std::move(first));
  buildPipeline(passes, options);
  return passes.run(module);
}

bool hasManualComputations(ModuleOp module) {
  bool any = false;
  module.walk([&](ManualComputationOp) {
    any = true;
    return WalkResult::interrupt();
  });
  return any;
}

} // namespace

const char *const kNeedsGlobalProgram =
    "--check needs the global program: this module is already partitioned "
    "(partita.partitioned), and its reference cannot be recovered from the "
    "per-device program; run --check on the module before partitioning, or "
    "compare the outputs with --expect DIR";

const char *describeReference(ReferenceKind kind) {
  return kind == ReferenceKind::Unpartitioned
             ? "the unpartitioned program on cpu:1"
             : "the program replicated around its manual computations";
}

bool isPartitioned(ModuleOp module) {
  return module->hasAttr(PartitaDialect::kPartitionedAttrName);
}

Expected<Executable> compileForRun(ModuleOp module, PipelineOptions &options,
                                   int64_t deviceCount,
                                   OwningOpRef<ModuleOp> &reference,
                                   const LoweringOptions &lowering) {
  // An already partitioned module is the per-device program: it runs as it
  // is (the pipeline would take its local shapes for global ones).
  if (isPartitioned(module)) {
    if (options.trainOptimizer != TrainOptimizer::None)
      return Status::error("--train needs the global program; this module is "
                           "already partitioned");
    reference = module.clone();
    return lowerToExecutable(module, lowering);
  }
  if (options.trainOptimizer != TrainOptimizer::None) {
    PipelineOptions train = options;
    train.stage = Stage::Verified;
    train.mesh.clear();
    train.rules.clear();
    if (failed(runPipelineOn(module, train)))
      return Status::error("");
    options.trainOptimizer = TrainOptimizer::None;
  }
  reference = module.clone();
  if (deviceCount > 1 && failed(runPipelineOn(module, options)))
    return Status::error("");
  return lowerToExecutable(module, lowering);
}

Expected<ReferenceOutputs> runReference(ModuleOp reference,
                                        const PipelineOptions &options,
                                        const std::vector<HostArray> &inputs) {
  if (isPartitioned(reference))
    return Status::error(kNeedsGlobalProgram);
  ReferenceOutputs result;
  bool manual = hasManualComputations(reference);
  if (manual) {
    result.kind = ReferenceKind::ReplicatedAroundManual;
    if (failed(runPipelineOn(reference, options,
                             createReplicateAroundManualPass())))
      return Status::error("the reference program does not compile");
  }
  Expected<Executable> single = lowerToExecutable(reference);
  if (!single)
    return Status::error("reference program: " + single.status().message());
  if (!manual)
    single->mesh = Mesh();
  // The whole inputs are held already (the process's figure counts them);
  // the reference's blocks, buffers and outputs must still fit.
  RunMemory memory = runMemory(*single, RunKind::Run);
  memory.hostInputs = 0;
  if (Status status = checkRunMemory(memory, "the reference run (--check)");
      !status)
    return status;
  Expected<std::vector<HostArray>> outputs = runOnCpuDevices(*single, inputs);
  if (!outputs)
    return Status::error("reference run: " + outputs.status().message());
  result.outputs = std::move(*outputs);
  return result;
}

bool compareWithReference(const Executable &program,
                          const std::vector<HostArray> &outputs,
                          const std::vector<HostArray> &expected,
                          std::string &report,
                          const std::vector<double> &slack) {
  bool ok = true;
  for (size_t o = 0; o < outputs.size(); ++o) {
    Comparison comparison = compareArrays(
        outputs[o], expected[o], o < slack.size() ? slack[o] : 0.0);
    report += "  check " +
              describeComparison(program.outputs[o].name, comparison) + "\n";
    ok &= comparison.within;
  }
  return ok;
}

} // namespace partita

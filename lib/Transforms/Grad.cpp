//===- Grad.cpp - partita-grad --------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"
#include "partita/Transforms/Autodiff.h"
#include "partita/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace partita {
#define GEN_PASS_DEF_GRADPASS
#define GEN_PASS_DEF_TRAINSTEPPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

/// The module's public function with a body, or an error at the module.
FailureOr<func::FuncOp> entryFunction(ModuleOp module, StringRef pass) {
  func::FuncOp entry;
  unsigned count = 0;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && function.isPublic()) {
      entry = function;
      ++count;
    }
  if (count != 1) {
    module.emitError() << pass << " needs exactly one public function with a "
                       << "body (the loss); this module has " << count;
    return failure();
  }
  return entry;
}

struct GradPass : public partita::impl::GradPassBase<GradPass> {
  using GradPassBase::GradPassBase;
  void runOnOperation() override {
    FailureOr<func::FuncOp> loss =
        entryFunction(getOperation(), "partita-grad");
    if (failed(loss))
      return signalPassFailure();
    std::vector<unsigned> indices(wrt.begin(), wrt.end());
    if (indices.empty())
      for (unsigned i = 0; i < loss->getNumArguments(); ++i)
        if (auto role = loss->getArgAttrOfType<RoleAttr>(
                i, PartitaDialect::kRoleAttrName);
            role && role.getValue() == Role::Param)
          indices.push_back(i);
    Expected<func::FuncOp> gradient =
        buildGradient(*loss, indices, loss->getSymName().str() + "_grad",
                      remat);
    if (!gradient) {
      loss->emitError() << gradient.status().message();
      return signalPassFailure();
    }
    loss->setPrivate();
  }
};

struct TrainStepPass : public partita::impl::TrainStepPassBase<TrainStepPass> {
  using TrainStepPassBase::TrainStepPassBase;
  void runOnOperation() override {
    FailureOr<func::FuncOp> loss =
        entryFunction(getOperation(), "partita-train-step");
    if (failed(loss))
      return signalPassFailure();
    TrainStepOptions options;
    options.optimizer = optimizer;
    options.learningRate = learningRate;
    options.mixedPrecision = mixedPrecision;
    options.clipNorm = clipNorm;
    options.microBatches = microBatches;
    options.remat = remat;
    Expected<func::FuncOp> step = buildTrainStep(
        *loss, options, loss->getSymName().str() + "_train_step");
    if (!step) {
      loss->emitError() << step.status().message();
      return signalPassFailure();
    }
    loss->erase();
  }
};

} // namespace

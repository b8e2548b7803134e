//===- Gen.cpp - partita gen -----------------------------------------------===//
//
// Writes one of the builders' models as partita IR: logical axis names on
// parameters and inputs, shardings when --rules is given, locations naming
// every value (so explain, show and the report speak the model's names).
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"
#include "Flags.h"
#include "partita/API/CommandOptions.h"
#include "partita/API/Requests.h"

#include "partita/Models/Models.h"
#include "partita/Pipelining/Pipelining.h"
#include "partita/Transforms/LogicalRules.h"
#include "partita/Transforms/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>

using namespace partita;
using namespace partita::cli;

std::vector<std::string> partita::cli::modelValueFlags() {
  return api::sectionFlags("model", api::OptionKind::Value);
}

std::vector<std::string> partita::cli::modelSwitchFlags() {
  return api::sectionFlags("model", api::OptionKind::Switch);
}

int partita::cli::genCommand(const CommandLine &cl) {
  if (cl.input == "-")
    return usageError(std::string("give a model: ") + modelNames() +
                      " (see 'partita gen --help')");
  ModelConfig config;
  config.model = cl.input;
  if (Status status = api::modelConfigFromOptions(cl, config); !status.ok())
    return usageError(status.message());
  std::string meshText = cl.get("--mesh", "data=2,model=4");
  Expected<Mesh> mesh = parseMeshSpec(meshText);
  if (!mesh)
    return usageError("invalid --mesh '" + meshText +
                      "': " + mesh.status().message());

  Session session;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModelOrReport(session, config, *mesh);
  if (!module)
    return 1;
  if (cl.has("--rules") && cl.get("--rules").empty())
    return usageError("--rules needs a preset or a file, got ''");
  if (cl.has("--rules")) {
    mlir::PassManager passes(&session.context);
    ApplyRulesPassOptions options;
    options.rules = cl.get("--rules");
    passes.addPass(createApplyRulesPass(options));
    if (mlir::failed(passes.run(*module)))
      return 1;
  }
  if (cl.has("--pp")) {
    std::string text = cl.get("--pp");
    char *stop = nullptr;
    long stages = std::strtol(text.c_str(), &stop, 10);
    if (text.empty() || !stop || *stop || stages < 1)
      return usageError("--pp must be a positive integer, got '" + text + "'");
    for (auto function : module->getOps<mlir::func::FuncOp>()) {
      if (!function.isPublic())
        continue;
      Expected<StageAssignment> assignment =
          assignStages(function, static_cast<int>(stages));
      if (!assignment)
        return 1;
      annotateStages(*assignment);
    }
  }
  if (cl.on("--summary")) {
    ModelSummary summary = summarizeModel(*module);
    if (summary.saturated())
      return usageError("the model's parameters, bytes or FLOPs per step "
                        "pass 2^63 - 1: too large to count (or to hold)");
    llvm::outs() << "model " << config.model << "\n"
                 << "parameters: " << summary.parameters << " ("
                 << summary.parameterBytes << " bytes)\n"
                 << "FLOPs per step (forward): "
                 << summary.matmulFlops + summary.vectorFlops
                 << " (einsum " << summary.matmulFlops << ", elementwise and "
                 << "reductions " << summary.vectorFlops << ")\n";
    return 0;
  }
  bool written = writeOutputFile(cl.output, [&](llvm::raw_ostream &os) {
    module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
    os << "\n";
  });
  return written ? 0 : 1;
}

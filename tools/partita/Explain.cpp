//===- Explain.cpp - partita explain --------------------------------------===//
//
// The flags in; the explanation is the reporting layer's
// (partita/Reporting/Explain.h).
//
//===----------------------------------------------------------------------===//

#include "Flags.h"
#include "partita/API/CommandOptions.h"

#include "partita/Reporting/Explain.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace partita;
using namespace partita::cli;

namespace {


} // namespace

int partita::cli::explainCommand(const CommandLine &cl,
                                 PipelineOptions &options) {
  Session session;
  OwningOpRef<ModuleOp> module = loadModule(session, cl.input);
  if (!module)
    return 1;
  std::optional<std::string> value;
  if (cl.has("--value"))
    value = cl.get("--value");
  if (Status status =
          explainModule(session, *module, options, value, llvm::outs());
      !status.ok()) {
    if (!status.message().empty())
      llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

//===- InlineCalls.cpp - Replace calls by their callees' bodies -----------===//

#include "partita/Dialect/Partita/Utils/InlineCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace {
/// Whether `op` itself (not what it holds) passes its verifier, silently:
/// calls are inlined before the module is verified (programs JAX wrote), so
/// a call or function may still be malformed here.
bool wellFormed(Operation *op) {
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  return succeeded(verify(op, /*verifyRecursively=*/false));
}
} // namespace

bool partita::inlineCalls(Operation *root, unsigned maxDepth) {
  bool any = false;
  for (unsigned depth = 0; depth < maxDepth; ++depth) {
    SmallVector<func::CallOp> calls;
    root->walk([&](func::CallOp call) { calls.push_back(call); });
    bool changed = false;
    for (func::CallOp call : calls) {
      if (!call.getCalleeAttr() || !wellFormed(call))
        continue;
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      // A call inside an unregistered op with a region (a shard_map body
      // JAX wrote) stops the nearest-table search there: its callee is a
      // function of the module.
      if (!callee)
        if (auto module = call->getParentOfType<ModuleOp>())
          callee = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
      if (!callee || !wellFormed(callee) || callee.isExternal() ||
          callee->isAncestor(call.getOperation()) ||
          callee.getNumArguments() != call.getNumOperands() ||
          callee.getNumResults() != call.getNumResults() ||
          !callee.getBody().hasOneBlock() ||
          callee.getBody().front().getNumArguments() !=
              call.getNumOperands() ||
          callee.getBody().front().empty() ||
          !isa<func::ReturnOp>(callee.getBody().front().back()) ||
          callee.getBody().front().back().getNumOperands() !=
              call.getNumResults())
        continue;
      Block &body = callee.getBody().front();
      IRMapping mapping;
      for (auto [arg, operand] :
           llvm::zip(body.getArguments(), call.getOperands()))
        mapping.map(arg, operand);
      OpBuilder builder(call);
      for (Operation &op : body.without_terminator())
        builder.clone(op, mapping);
      for (auto [result, returned] :
           llvm::zip(call.getResults(), body.back().getOperands()))
        result.replaceAllUsesWith(mapping.lookupOrDefault(returned));
      call.erase();
      changed = true;
    }
    any |= changed;
    if (!changed)
      break;
  }
  return any;
}

OwningOpRef<ModuleOp> partita::cloneWithCallsInlined(ModuleOp module,
                                                     unsigned maxDepth) {
  bool any = false;
  module.walk([&](func::CallOp) { any = true; });
  if (!any)
    return nullptr;
  OwningOpRef<ModuleOp> copy = module.clone();
  inlineCalls(copy->getOperation(), maxDepth);
  return copy;
}

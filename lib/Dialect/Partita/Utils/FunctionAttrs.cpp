//===- FunctionAttrs.cpp - a function's argument and result attributes ----===//

#include "partita/Dialect/Partita/Utils/FunctionAttrs.h"

using namespace mlir;
using namespace partita;

FunctionAttrEditor::FunctionAttrEditor(FunctionOpInterface function)
    : function(function) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    args.emplace_back(function.getArgAttrDict(i));
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
    results.emplace_back(function.getResultAttrDict(i));
}

void FunctionAttrEditor::setArg(unsigned index, StringRef name,
                                Attribute value) {
  args[index].set(StringAttr::get(function->getContext(), name), value);
  argsChanged = true;
}

void FunctionAttrEditor::setResult(unsigned index, StringRef name,
                                   Attribute value) {
  results[index].set(StringAttr::get(function->getContext(), name), value);
  resultsChanged = true;
}

void FunctionAttrEditor::removeArg(unsigned index, StringRef name) {
  if (args[index].erase(name))
    argsChanged = true;
}

void FunctionAttrEditor::removeResult(unsigned index, StringRef name) {
  if (results[index].erase(name))
    resultsChanged = true;
}

void FunctionAttrEditor::commit() {
  MLIRContext *context = function->getContext();
  auto dictionaries = [&](llvm::SmallVector<NamedAttrList> &lists) {
    SmallVector<DictionaryAttr> dicts;
    for (NamedAttrList &list : lists)
      dicts.push_back(list.getDictionary(context));
    return dicts;
  };
  if (argsChanged)
    function.setAllArgAttrs(dictionaries(args));
  if (resultsChanged)
    function.setAllResultAttrs(dictionaries(results));
  argsChanged = resultsChanged = false;
}

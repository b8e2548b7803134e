//===- FunctionAttrs.h - a function's argument and result attributes in bulk -*- C++ -*-===//
//
// FunctionOpInterface's setArgAttr and setResultAttr rebuild the array of
// every argument's (result's) dictionary on each call, which is quadratic
// over a train step's thousands of arguments. FunctionAttrEditor reads the
// dictionaries once into lists, edits those, and stores them once.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_DIALECT_PARTITA_UTILS_FUNCTIONATTRS_H
#define PARTITA_DIALECT_PARTITA_UTILS_FUNCTIONATTRS_H

#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace partita {

class FunctionAttrEditor {
public:
  explicit FunctionAttrEditor(mlir::FunctionOpInterface function);
  /// Stores the edits (commit()).
  ~FunctionAttrEditor() { commit(); }
  FunctionAttrEditor(const FunctionAttrEditor &) = delete;
  FunctionAttrEditor &operator=(const FunctionAttrEditor &) = delete;

  mlir::Attribute arg(unsigned index, llvm::StringRef name) const {
    return args[index].get(name);
  }
  mlir::Attribute result(unsigned index, llvm::StringRef name) const {
    return results[index].get(name);
  }
  template <typename T>
  T argOfType(unsigned index, llvm::StringRef name) const {
    return llvm::dyn_cast_or_null<T>(arg(index, name));
  }
  template <typename T>
  T resultOfType(unsigned index, llvm::StringRef name) const {
    return llvm::dyn_cast_or_null<T>(result(index, name));
  }

  void setArg(unsigned index, llvm::StringRef name, mlir::Attribute value);
  void setResult(unsigned index, llvm::StringRef name, mlir::Attribute value);
  void removeArg(unsigned index, llvm::StringRef name);
  void removeResult(unsigned index, llvm::StringRef name);

  /// Writes the lists that changed back to the function.
  void commit();

private:
  mlir::FunctionOpInterface function;
  llvm::SmallVector<mlir::NamedAttrList> args, results;
  bool argsChanged = false, resultsChanged = false;
};

} // namespace partita

#endif // PARTITA_DIALECT_PARTITA_UTILS_FUNCTIONATTRS_H

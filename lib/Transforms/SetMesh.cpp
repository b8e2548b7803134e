//===- SetMesh.cpp - Replace the axes of a module's mesh ------------------===//
//
// The CLI's `--mesh data=2,model=4`: one program, compiled for another
// machine shape. The pass only swaps the mesh attribute; whether every
// sharding still fits the new mesh is the verifier's call, so the errors
// point at the values whose shardings no longer make sense. The pass runs
// that verifier itself: the CLI verifies only the pipeline's end, and the
// passes after this one assume every sharding names axes of its mesh.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Mesh.h"
#include "partita/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

namespace partita {
#define GEN_PASS_DEF_SETMESHPASS
#include "partita/Transforms/Passes.h.inc"
} // namespace partita

using namespace mlir;
using namespace partita;

namespace {

struct SetMeshPass : public partita::impl::SetMeshPassBase<SetMeshPass> {
  using SetMeshPassBase::SetMeshPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringRef spec = meshSpec;
    StringRef name;
    // "NAME:axes" names the mesh; a bare "axes" means the only one.
    if (size_t colon = spec.find(':'); colon != StringRef::npos) {
      name = spec.take_front(colon);
      spec = spec.drop_front(colon + 1);
    }
    Expected<Mesh> mesh = parseMeshSpec(spec.str());
    if (!mesh) {
      module.emitError() << "invalid mesh '" << meshSpec
                         << "': " << mesh.status().message();
      return signalPassFailure();
    }

    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    MeshOp target;
    if (name.empty()) {
      if (meshes.size() != 1) {
        Operation *anchor = meshes.empty() ? module.getOperation()
                                           : meshes.front().getOperation();
        InFlightDiagnostic diag =
            anchor->emitError()
            << "--mesh without a mesh name needs a module "
               "with exactly one partita.mesh; this one has "
            << meshes.size();
        if (!meshes.empty()) {
          diag << " (";
          llvm::interleaveComma(
              meshes, diag, [&](MeshOp op) { diag << "@" << op.getSymName(); });
          diag << "); write NAME:" << spec << " to pick one";
        }
        return signalPassFailure();
      }
      target = meshes.front();
    } else {
      for (MeshOp op : meshes)
        if (op.getSymName() == name)
          target = op;
      if (!target) {
        module.emitError()
            << "--mesh names mesh @" << name
            << ", but the module has no partita.mesh of that name";
        return signalPassFailure();
      }
    }

    MLIRContext *context = &getContext();
    SmallVector<MeshAxisAttr> axes;
    for (const MeshAxis &axis : mesh->axes())
      axes.push_back(MeshAxisAttr::get(
          context, StringAttr::get(context, axis.name), axis.size));
    target.setMeshAttr(MeshAttr::get(context, axes, {}));
    if (failed(mlir::verify(module)))
      return signalPassFailure();
  }
};

} // namespace

//===- Passes.td - Partita's passes ------------------------*- tablegen -*-===//
//
// Every pass of Partita: one definition here, one implementation file in
// lib/Transforms named after it, one test file test/Transforms/<flag>.mlir
// (and <flag>-errors.mlir for bad input).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TRANSFORMS_PASSES_TD
#define PARTITA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SetMeshPass : Pass<"partita-set-mesh", "mlir::ModuleOp"> {
  let summary = "Replaces the axes of a module's mesh (the CLI's --mesh)";
  let description = [{
    Gives a `partita.mesh` new axes, so that one program can be compiled for
    several machine shapes: `mesh=data=2,model=4` replaces the only mesh of the
    module; `mesh=NAME:data=2,model=4` replaces the mesh `@NAME` when the
    module has several. Explicit `device_ids` of the old mesh are dropped (the
    new mesh numbers its devices row-major).

    Shardings and collectives that name axes the new mesh lacks are errors,
    reported at each offending value by the verifier that runs after the pass.

    **Constraints:**
    * the option is a valid mesh spec (`name=size,...`, sizes positive, names
      distinct);
    * without a `NAME:` prefix the module has exactly one mesh; with one, a
      mesh of that name exists.

    Example: `partita-opt --partita-set-mesh="mesh=data=4,model=2" in.mlir`
    turns `partita.mesh @mesh = <["data"=2, "model"=4]>` into
    `partita.mesh @mesh = <["data"=4, "model"=2]>`.
  }];
  let options = [
    Option<"meshSpec", "mesh", "std::string", /*default=*/"\"\"",
           "New mesh: 'data=2,model=4' or 'NAME:data=2,model=4'">
  ];
  let dependentDialects = ["::partita::PartitaDialect"];
}

#endif // PARTITA_TRANSFORMS_PASSES_TD

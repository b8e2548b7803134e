// RUN: partita-opt %s --split-input-file --verify-diagnostics --partita-set-mesh="mesh=data=8"
// RUN: not partita-opt %s --split-input-file --partita-set-mesh="mesh=c:x=2" 2>&1 | FileCheck %s --check-prefix=NAMED
// RUN: not partita-opt %s --split-input-file --partita-set-mesh="mesh=data=0" 2>&1 | FileCheck %s --check-prefix=SPEC

// NAMED: error: --mesh names mesh @c, but the module has no partita.mesh of that name
// SPEC: error: invalid mesh 'data=0': mesh axis size must be positive, got 0 for axis 'data'

// An axis the new mesh lacks is reported at the value that uses it.
partita.mesh @mesh = <["data"=2, "model"=4]>
// expected-error @+1 {{sharding of argument 0: unknown mesh axis 'model'; the mesh has axes 'data'}}
func.func @lost_axis(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {"model"}]>}) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

// Without a name the module must have exactly one mesh.
// expected-error @+1 {{--mesh without a mesh name needs a module with exactly one partita.mesh; this one has 2 (@a, @b); write NAME:data=8 to pick one}}
partita.mesh @a = <["x"=2]>
partita.mesh @b = <["y"=2]>

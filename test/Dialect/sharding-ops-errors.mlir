// Bad sharding_constraint, reshard and manual_computation ops: one case per
// verifier message. The case that needs a foreign terminator uses an
// unregistered op.
// RUN: partita-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

//===----------------------------------------------------------------------===//
// sharding_constraint, reshard
//===----------------------------------------------------------------------===//

partita.mesh @grid = <["data"=2, "model"=4]>
// A constraint names an existing mesh.
func.func @constraint_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.sharding_constraint' op sharding of the constrained value refers to mesh @nope, but no partita.mesh has that name}}
  %y = partita.sharding_constraint %x <@nope, [{"data"}, {}]> : tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A constraint uses axes of its mesh.
func.func @constraint_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.sharding_constraint' op sharding of the constrained value: unknown mesh axis 'fsdp'; the mesh has axes 'data', 'model'}}
  %y = partita.sharding_constraint %x <@grid, [{"data", "fsdp"}, {}]> : tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A constraint lists one dimension per value dimension.
func.func @constraint_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.sharding_constraint' op sharding of the constrained value: the sharding has 3 dimensions but the tensor has rank 2}}
  %y = partita.sharding_constraint %x <@grid, [{"data"}, {}, {}]> : tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A reshard names an existing mesh.
func.func @reshard_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.reshard' op sharding of the resharded value refers to mesh @gird, but no partita.mesh has that name}}
  %y = partita.reshard %x <@gird, [{}, {"model"}]> : tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A reshard uses axes of its mesh (partial axes included).
func.func @reshard_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.reshard' op sharding of the resharded value: unknown mesh axis 'x'; the mesh has axes 'data', 'model'}}
  %y = partita.reshard %x <@grid, [{}, {"model"}], partial = sum{"x"}> : tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A reshard lists one dimension per value dimension.
func.func @reshard_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.reshard' op sharding of the resharded value: the sharding has 1 dimensions but the tensor has rank 2}}
  %y = partita.reshard %x <@grid, [{"model"}]> : tensor<8x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// manual_computation: the op's attributes
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// One in-sharding per operand.
func.func @manual_in_count(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op has 2 in_shardings for 1 operands}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>, <@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// One out-sharding per result.
func.func @manual_out_count(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op has 0 out_shardings for 1 results}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Without operands or results there is no mesh to run on.
func.func @manual_nothing() {
  // expected-error @+1 {{'partita.manual_computation' op needs at least one operand or result}}
  partita.manual_computation() in_shardings = [] out_shardings = [] manual_axes = ["data"] () {
    partita.yield
  } : () -> ()
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The shardings name an existing mesh.
func.func @manual_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op refers to mesh @nope, but no partita.mesh has that name}}
  %r = partita.manual_computation(%x) in_shardings = [<@nope, [{"data"}, {}]>]
      out_shardings = [<@nope, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Some axis must be manual.
func.func @manual_no_axes(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op needs at least one manual axis}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{}, {}]>]
      out_shardings = [<@grid, [{}, {}]>] manual_axes = [] (%l: tensor<8x16xf32>) {
    partita.yield %l : tensor<8x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Manual axes are axes of the mesh.
func.func @manual_unknown_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op manual axis 'pipe' is not an axis of @grid}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data", "pipe"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Manual axes are listed once.
func.func @manual_axis_twice(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op manual axis 'data' is listed twice}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data", "data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// manual_computation: each in/out sharding
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
partita.mesh @other = <["data"=2, "model"=4]>
// All shardings name one mesh, even an identical one.
func.func @manual_two_meshes(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op in_sharding 1 uses mesh @other but the first sharding uses @grid; all shardings must name one mesh}}
  %r = partita.manual_computation(%x, %y) in_shardings = [<@grid, [{"data"}, {}]>, <@other, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"]
      (%lx: tensor<4x16xf32>, %ly: tensor<4x16xf32>) {
    partita.yield %lx : tensor<4x16xf32>
  } : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// In-shardings use axes of the mesh.
func.func @manual_in_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op sharding of in_sharding 0: unknown mesh axis 'dp'; the mesh has axes 'data', 'model'}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"dp"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Out-shardings list one dimension per result dimension.
func.func @manual_out_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op sharding of out_sharding 0: the sharding has 1 dimensions but the tensor has rank 2}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}]>] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// A manual result is assembled from blocks, never summed.
func.func @manual_out_partial(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op out_sharding 0 must not be partial}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{}, {"model"}]>]
      out_shardings = [<@grid, [{}, {}], partial = sum{"model"}>] manual_axes = ["model"] (%l: tensor<8x4xf32>) {
    %e = partita.einsum "ab->a" %l : (tensor<8x4xf32>) -> tensor<8xf32>
    %b = partita.broadcast %e dims = [0] : tensor<8xf32> -> tensor<8x16xf32>
    partita.yield %b : tensor<8x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Manual shardings are closed.
func.func @manual_open(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op in_sharding 0 dimension 1 is open ({?}); manual computations need closed shardings}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {?}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Manual shardings use manual axes only.
func.func @manual_non_manual_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op in_sharding 0 dimension 1 uses axis 'model', which is not a manual axis}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {"model"}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<4x4xf32>) {
    %g = partita.all_gather %l on @grid axes = ["model"] dim = 1 : tensor<4x4xf32> -> tensor<4x16xf32>
    partita.yield %g : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Manual blocks are even: the shard count divides the dimension.
func.func @manual_uneven(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op in_sharding 0 dimension 1 of size 6 is not divisible by its 8 shards}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{}, {"model", "data"}]>]
      out_shardings = [<@grid, [{}, {}]>] manual_axes = ["data", "model"] (%l: tensor<8x1xf32>) {
    %z = partita.constant dense<0.0> : tensor<8x6xf32>
    partita.yield %z : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

//===----------------------------------------------------------------------===//
// manual_computation: the body
//===----------------------------------------------------------------------===//

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// One body argument per operand.
func.func @manual_body_count(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op body takes 2 arguments for 1 operands}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"]
      (%l: tensor<4x16xf32>, %extra: tensor<4x16xf32>) {
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// Body arguments have local shapes, not global ones.
func.func @manual_body_type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op body argument 0 is 'tensor<8x16xf32>' but the local shape of operand 0 is 'tensor<4x16xf32>'}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<8x16xf32>) {
    partita.yield %l : tensor<8x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The body ends with partita.yield, not with another terminator.
func.func @manual_terminator(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'partita.manual_computation' op body must end with partita.yield}}
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>] manual_axes = ["data"] (%l: tensor<4x16xf32>) {
    "test.terminator"(%l) : (tensor<4x16xf32>) -> ()
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The body yields one value per result.
func.func @manual_yield_count(%x: tensor<8x16xf32>) {
  %r:2 = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {}]>, <@grid, [{"data"}, {}]>] manual_axes = ["data"]
      (%l: tensor<4x16xf32>) {
    // expected-error @+1 {{'partita.yield' op yields 1 values for 2 results}}
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

partita.mesh @grid = <["data"=2, "model"=4]>
// The body yields local shapes of the results.
func.func @manual_yield_type(%x: tensor<8x16xf32>) {
  %r = partita.manual_computation(%x) in_shardings = [<@grid, [{"data"}, {}]>]
      out_shardings = [<@grid, [{"data"}, {"model"}]>] manual_axes = ["data", "model"]
      (%l: tensor<4x16xf32>) {
    // expected-error @+1 {{'partita.yield' op value 0 is 'tensor<4x16xf32>' but the local shape of result 0 is 'tensor<4x4xf32>'}}
    partita.yield %l : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

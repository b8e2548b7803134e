// Bad meshes, shardings, roles and donation markers: one case per message.
// RUN: partita-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

// Every axis needs a name.
// expected-error @+1 {{custom op 'partita.mesh' mesh axis 1 has an empty name}}
partita.mesh @mesh = <["data"=2, ""=4]>

// -----

// Axis names are distinct.
// expected-error @+1 {{custom op 'partita.mesh' mesh axis 'data' is declared twice (axes 0 and 2)}}
partita.mesh @mesh = <["data"=2, "model"=2, "data"=4]>

// -----

// Axis sizes are positive.
// expected-error @+1 {{custom op 'partita.mesh' mesh axis size must be positive, got 0 for axis 'model'}}
partita.mesh @mesh = <["data"=2, "model"=0]>

// -----

// The device count must fit in 64 bits.
// expected-error @+1 {{custom op 'partita.mesh' mesh is too large: the product of its axis sizes does not fit in a 64-bit integer}}
partita.mesh @mesh = <["a"=4294967296, "b"=4294967296]>

// -----

// device_ids lists one id per device.
// expected-error @+1 {{custom op 'partita.mesh' device_ids must be a permutation of 0..3: got 3 ids for 4 devices}}
partita.mesh @mesh = <["data"=2, "model"=2], device_ids = [0, 1, 2]>

// -----

// device_ids holds ids of this mesh only.
// expected-error @+1 {{custom op 'partita.mesh' device_ids must be a permutation of 0..3: id 4 is out of range}}
partita.mesh @mesh = <["data"=2, "model"=2], device_ids = [0, 1, 4, 3]>

// -----

// device_ids names every device once.
// expected-error @+1 {{custom op 'partita.mesh' device_ids must be a permutation of 0..3: id 1 appears twice}}
partita.mesh @mesh = <["data"=2, "model"=2], device_ids = [0, 1, 1, 3]>

// -----

// An empty device_ids list is rejected rather than read as "row-major".
// expected-error @+1 {{custom op 'partita.mesh' device_ids = [] lists no ids; omit device_ids for row-major order}}
partita.mesh @mesh = <["data"=2], device_ids = []>

// -----

// A mesh attribute is checked wherever it appears, not only in partita.mesh.
// expected-error @+1 {{mesh axis size must be positive, got -2 for axis 'x'}}
func.func @standalone() attributes {mesh = #partita.mesh<["x"=-2]>} {
  return
}

//===----------------------------------------------------------------------===//
// Sharding attribute: syntax and structure
//===----------------------------------------------------------------------===//

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// A partial value is a sum, a max or a min; and/or are reduction kinds only.
// expected-error @+1 {{partial kind must be sum, max or min, got 'and'}}
func.func @partial_and(%a: tensor<8xi1> {partita.sharding = #partita.sharding<@mesh, [{}], partial = and{"x"}>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// The partial kind is a known keyword.
// expected-error @+1 {{unknown partial kind 'avg'; expected sum, max or min}}
func.func @partial_unknown(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}], partial = avg{"x"}>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// A partial part names at least one axis.
// expected-error @+1 {{partial needs at least one axis}}
func.func @partial_empty(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}], partial = sum{}>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Only partial and priority may follow the dimensions.
// expected-error @+1 {{unknown sharding field 'prio'; expected 'partial' or 'priority'}}
func.func @unknown_field(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}], prio = 1>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// A field is given once (two partial parts would otherwise merge).
// expected-error @+1 {{sharding field 'partial' is given twice}}
func.func @duplicate_field(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}], partial = sum{"x"}, partial = max{"y"}>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Priorities count up from 0.
// expected-error @+1 {{priority must be non-negative, got -1}}
func.func @negative_priority(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}], priority = -1>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Axis names in a dimension are not empty.
// expected-error @+1 {{dimension 1 names an empty mesh axis}}
func.func @empty_dim_axis(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {""}]>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// An axis splits a dimension once.
// expected-error @+1 {{mesh axis 'x' is used twice in dimension 0}}
func.func @axis_twice_in_dim(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x", "y", "x"}]>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// An axis splits one dimension only.
// expected-error @+1 {{mesh axis 'y' is used twice (dimension 0 and dimension 2)}}
func.func @axis_in_two_dims(%a: tensor<8x8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"y"}, {?}, {"x", "y", ?}]>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Partial axis names are not empty.
// expected-error @+1 {{the partial axes name an empty mesh axis}}
func.func @empty_partial_axis(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}], partial = sum{"x", ""}>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// A partial axis is listed once.
// expected-error @+1 {{partial axis 'y' is listed twice}}
func.func @partial_axis_twice(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}], partial = min{"y", "y"}>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Partial axes are disjoint from dimension axes.
// expected-error @+1 {{partial axis 'x' is also used by dimension 1}}
func.func @partial_and_dim(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"y"}, {"x"}], partial = sum{"x"}>}) {
  return
}

// -----

// Structural checks apply to a sharding anywhere, even unattached.
// expected-error @+1 {{mesh axis 'a' is used twice (dimension 0 and dimension 1)}}
func.func @standalone() attributes {note = #partita.sharding<@nowhere, [{"a"}, {"a"}]>} {
  return
}

//===----------------------------------------------------------------------===//
// Sharding attribute where it is attached
//===----------------------------------------------------------------------===//

// -----

// The mesh symbol must name a partita.mesh.
// expected-error @+1 {{sharding of argument 0 refers to mesh @nope, but no partita.mesh has that name}}
func.func @no_mesh(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@nope, [{}]>}) {
  return
}

// -----

// A symbol that is not a mesh (here the function itself) does not count.
// expected-error @+1 {{sharding of argument 0 refers to mesh @not_a_mesh, but no partita.mesh has that name}}
func.func @not_a_mesh(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@not_a_mesh, [{}]>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Only tensors have shardings.
// expected-error @+1 {{sharding of argument 1 is attached to a value of non-tensor type 'i32'}}
func.func @non_tensor(%a: tensor<8xf32>, %n: i32 {partita.sharding = #partita.sharding<@mesh, []>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Dimension axes exist on the mesh; the message lists the mesh's axes.
// expected-error @+1 {{sharding of argument 0: unknown mesh axis 'model'; the mesh has axes 'x', 'y'}}
func.func @unknown_axis(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}]>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Partial axes exist on the mesh too.
// expected-error @+1 {{sharding of result 0: unknown mesh axis 'z'; the mesh has axes 'x', 'y'}}
func.func @unknown_partial_axis(%a: tensor<8xf32>) -> (tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}], partial = sum{"y", "z"}>}) {
  return %a : tensor<8xf32>
}

// -----

partita.mesh @single = <[]>
// A mesh without axes admits no axis at all.
// expected-error @+1 {{sharding of argument 0: unknown mesh axis 'x'; the mesh has no axes}}
func.func @axisless_mesh(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@single, [{"x"}]>}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// One dimension sharding per tensor dimension (function results).
// expected-error @+1 {{sharding of result 0: the sharding has 1 dimensions but the tensor has rank 2}}
func.func @rank_mismatch(%a: tensor<8x4xf32>) -> (tensor<8x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}]>}) {
  return %a : tensor<8x4xf32>
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// One dimension sharding per tensor dimension (op results, array form).
func.func @op_rank_mismatch(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{sharding of result 1: the sharding has 1 dimensions but the tensor has rank 2}}
  %v, %i = partita.top_k %a dim = 1 k = 2 {partita.sharding = [#partita.sharding<@mesh, [{"x"}, {}]>, #partita.sharding<@mesh, [{}]>]} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  return
}

//===----------------------------------------------------------------------===//
// Dialect attributes on the wrong kind of place or with the wrong value
//===----------------------------------------------------------------------===//

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// partita.sharding holds a #partita.sharding.
// expected-error @+1 {{'partita.sharding' of argument 0 must be a #partita.sharding, got "x"}}
func.func @not_a_sharding(%a: tensor<8xf32> {partita.sharding = "x"}) {
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// Each entry of an op's sharding array is a #partita.sharding.
func.func @array_entry_not_a_sharding(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.sharding' of result 1 must be a #partita.sharding, got 7 : i64}}
  %v, %i = partita.top_k %a dim = 1 k = 2 {partita.sharding = [#partita.sharding<@mesh, [{"x"}, {}]>, 7]} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// An op's sharding array has one entry per result.
func.func @array_length(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{'partita.sharding' lists 1 shardings for 2 results}}
  %v, %i = partita.top_k %a dim = 1 k = 2 {partita.sharding = [#partita.sharding<@mesh, [{"x"}, {}]>]} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  return
}

// -----

partita.mesh @mesh = <["x"=2, "y"=4]>
// A multi-result op needs the array form.
func.func @single_on_multi(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{a single 'partita.sharding' needs an op with one result; this op has 2 (use an array with one sharding per result)}}
  %v, %i = partita.top_k %a dim = 1 k = 2 {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  return
}

// -----

// partita.role holds a #partita.role.
// expected-error @+1 {{'partita.role' of argument 0 must be a #partita.role<...> (param, opt_state, grad, input or activation)}}
func.func @role_value(%a: tensor<8xf32> {partita.role = "param"}) {
  return
}

// -----

// partita.donated takes no value.
// expected-error @+1 {{'partita.donated' of argument 0 is a unit attribute and takes no value}}
func.func @donated_value(%a: tensor<8xf32> {partita.donated = true}) {
  return
}

// -----

// Roles belong to function arguments, not to ops.
func.func @role_on_op(%a: tensor<8xf32>) {
  // expected-error @+1 {{'partita.role' is only valid on function arguments, not on an operation}}
  %e = partita.exp %a {partita.role = #partita.role<activation>} : tensor<8xf32>
  return
}

// -----

// Donation belongs to function arguments, not to results.
// expected-error @+1 {{'partita.donated' is only valid on function arguments, not on function results}}
func.func @donated_on_result(%a: tensor<8xf32>) -> (tensor<8xf32> {partita.donated}) {
  return %a : tensor<8xf32>
}

// -----

// Unknown partita.* attributes are rejected on ops...
func.func @unknown_on_op(%a: tensor<8xf32>) {
  // expected-error @+1 {{unknown partita attribute 'partita.shard'; known: partita.sharding, partita.role, partita.donated, partita.logical_axes, partita.aliases, partita.global_shape, partita.origin, partita.reason, partita.partitioned, partita.stage, partita.async_collectives, partita.stop_gradient, partita.split_axes}}
  %e = partita.exp %a {partita.shard = 1} : tensor<8xf32>
  return
}

// -----

// ...on function arguments...
// expected-error @+1 {{unknown partita attribute 'partita.donate'; known: partita.sharding, partita.role, partita.donated, partita.logical_axes, partita.aliases, partita.global_shape, partita.origin, partita.reason, partita.partitioned, partita.stage, partita.async_collectives, partita.stop_gradient, partita.split_axes}}
func.func @unknown_on_argument(%a: tensor<8xf32> {partita.donate}) {
  return
}

// -----

// ...and on function results.
// expected-error @+1 {{unknown partita attribute 'partita.roles'; known: partita.sharding, partita.role, partita.donated, partita.logical_axes, partita.aliases, partita.global_shape, partita.origin, partita.reason, partita.partitioned, partita.stage, partita.async_collectives, partita.stop_gradient, partita.split_axes}}
func.func @unknown_on_result(%a: tensor<8xf32>) -> (tensor<8xf32> {partita.roles = 1}) {
  return %a : tensor<8xf32>
}

// -----

// partita.aliases names an argument of the result's type.
// expected-error @+1 {{'partita.aliases' of result 0 must be the index of a function argument}}
func.func @aliases_out_of_range(%a: tensor<8xf32>) -> (tensor<8xf32> {partita.aliases = 3 : i64}) {
  return %a : tensor<8xf32>
}

// -----

// expected-error @+1 {{'partita.aliases' of result 0 names argument 0 of another type}}
func.func @aliases_other_type(%a: tensor<4xf32>) -> (tensor<8xf32> {partita.aliases = 0 : i64}) {
  %b = partita.constant dense<1.0> : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// expected-error @+1 {{'partita.aliases' is only valid on function results}}
func.func @aliases_on_argument(%a: tensor<8xf32> {partita.aliases = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{'partita.logical_axes' of argument 0 names 1 axes for a rank-2 tensor}}
func.func @logical_axes_rank(%a: tensor<8x4xf32> {partita.logical_axes = ["batch"]}) {
  return
}

// -----

// A pipeline stage is a non-negative integer on an op.
func.func @stage_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'partita.stage' is a non-negative integer on an op}}
  %y = partita.exp %x {partita.stage = -1 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @stage_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'partita.stage' is a non-negative integer on an op}}
  %y = partita.exp %x {partita.stage = "first"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// partita.stop_gradient is a unit attribute of an op...
func.func @stop_gradient_value(%a: tensor<8xf32>) {
  // expected-error @+1 {{'partita.stop_gradient' is a unit attribute of an op}}
  %m = partita.reduce max %a dims = [0] {partita.stop_gradient = 1} : tensor<8xf32> -> tensor<f32>
  return
}

// -----

// ...not of a function.
// expected-error @+1 {{'partita.stop_gradient' is a unit attribute of an op}}
func.func @stop_gradient_function(%a: tensor<8xf32>) attributes {partita.stop_gradient} {
  return
}

// -----

// partita.split_axes (partita-split-axes' mark) is a list of axis names on a
// mesh.
// expected-error @+1 {{'partita.split_axes' is an array of axis names on a partita.mesh}}
partita.mesh @split = <["model:(1)2"=2, "model:(2)2"=2]> {partita.split_axes = [1]}

// -----

func.func @split_on_op(%a: tensor<8xf32>) {
  // expected-error @+1 {{'partita.split_axes' is an array of axis names on a partita.mesh}}
  %e = partita.exp %a {partita.split_axes = ["model"]} : tensor<8xf32>
  return
}

// RUN: partita-opt %s --split-input-file --partita-partition --verify-diagnostics

// An op without a sharding rule cannot take a sharded operand.
partita.mesh @mesh = <["x"=4]>
func.func @no_rule(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  // expected-error @+1 {{cannot partition 'partita.all_reduce': it has no sharding rule and its operand argument 0 of @no_rule is sharded [{"x"}]}}
  %r = partita.all_reduce sum %a on @mesh axes = ["x"] : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Collectives name axes of their mesh (checked before partitioning).
partita.mesh @mesh = <["x"=4]>
func.func @bad_axis(%a: tensor<8xf32>) -> tensor<8xf32> {
  %r = partita.manual_computation(%a) in_shardings = [<@mesh, [{"x"}]>] out_shardings = [<@mesh, [{"x"}]>] manual_axes = ["x"] (%l: tensor<2xf32>) {
    // expected-error @+1 {{'partita.all_reduce' op unknown mesh axis 'y'; @mesh has axes 'x'}}
    %s = partita.all_reduce sum %l on @mesh axes = ["y"] : tensor<2xf32>
    partita.yield %s : tensor<2xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A manual computation whose body shapes disagree with its axes.
partita.mesh @mesh = <["x"=4]>
func.func @manual_shapes(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'partita.manual_computation' op body argument 0 is 'tensor<4xf32>' but the local shape of operand 0 is 'tensor<2xf32>'}}
  %r = partita.manual_computation(%a) in_shardings = [<@mesh, [{"x"}]>] out_shardings = [<@mesh, [{"x"}]>] manual_axes = ["x"] (%l: tensor<4xf32>) {
    partita.yield %l : tensor<4xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

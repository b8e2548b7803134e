// A reshard pattern (from test/Transforms/partition-reshard.mlir) run on data.
partita.mesh @mesh = <["x"=4]>
func.func @partial_max(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = max{"x"}>}) -> tensor<8x8xf32> {
  %r = partita.reshard %a <@mesh, [{}, {}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}


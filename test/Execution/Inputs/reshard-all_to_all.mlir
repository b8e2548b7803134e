// A reshard pattern (from test/Transforms/partition-reshard.mlir) run on data.
partita.mesh @mesh = <["x"=4]>
func.func @all_to_all(%a: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %r = partita.reshard %a <@mesh, [{}, {"x"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

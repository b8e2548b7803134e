// A reshard pattern (from test/Transforms/partition-reshard.mlir) run on data.
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @swap_dims(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"b"}, {"a"}]>}) {
  %r = partita.reshard %x <@mesh, [{"b"}, {"a"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// A reshard pattern (from test/Transforms/partition-reshard.mlir) run on data.
partita.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @three_dims(%x: tensor<8x8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}, {"c"}]>}) -> (tensor<8x8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"c"}, {"b"}, {"a"}]>}) {
  %r = partita.reshard %x <@mesh, [{"c"}, {"b"}, {"a"}]> : tensor<8x8x8xf32>
  return %r : tensor<8x8x8xf32>
}

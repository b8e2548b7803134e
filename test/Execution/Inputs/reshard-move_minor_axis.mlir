// A reshard pattern (from test/Transforms/partition-reshard.mlir) run on data.
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @move_minor_axis(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %r = partita.reshard %x <@mesh, [{"a"}, {"b"}]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}


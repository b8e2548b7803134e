// Results computed split and returned whole: their all_gathers share one
// (docs/Partitioning.md, "Combining collectives"), along dimension 0 of one
// and dimension 1 of the other; an embedding's gradient scattered into
// zeros by each device's own positions and summed over "a".
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @packed(%x: tensor<8x6xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>},
                  %y: tensor<3x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"a", "b"}]>},
                  %ids: tensor<4x5xi32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {}]>},
                  %g: tensor<4x5x3xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {}, {}]>})
    -> (tensor<8x6xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>},
        tensor<3x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>},
        tensor<7x3xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) {
  %ex = partita.exp %x : tensor<8x6xf32>
  %ty = partita.tanh %y : tensor<3x8xf32>
  %z = partita.constant dense<0.0> : tensor<f32>
  %table = partita.broadcast %z dims = [] : tensor<f32> -> tensor<7x3xf32>
  %grad = partita.scatter_add %table, %ids, %g : tensor<7x3xf32>, tensor<4x5xi32>, tensor<4x5x3xf32>
  return %ex, %ty, %grad : tensor<8x6xf32>, tensor<3x8xf32>, tensor<7x3xf32>
}

// A contraction over a dimension of 19 split over 2x2 devices, then moved to
// the other dimension (all_to_all on uneven sizes).
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @contract(%x: tensor<5x19xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"a", "b"}]>},
                    %w: tensor<19x7xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>})
    -> (tensor<5x7xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"a"}]>},
        tensor<5x19xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {}]>}) {
  %y = partita.einsum "bd,df->bf" %x, %w : (tensor<5x19xf32>, tensor<19x7xf32>) -> tensor<5x7xf32>
  %l = partita.log %x : tensor<5x19xf32>
  return %y, %l : tensor<5x7xf32>, tensor<5x19xf32>
}

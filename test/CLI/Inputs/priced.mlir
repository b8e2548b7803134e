// x and W both split over "data" on the dimension the einsum reads them by:
// the einsum cannot keep both, and prices its options (docs/Propagation.md,
// "Worked example: cost decides, both ways").
partita.mesh @mesh = <["data"=8]>
func.func @small_batch(
    %x: tensor<8x1024xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %w: tensor<1024x4096xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
    -> tensor<8x4096xf32> {
  %y = partita.einsum "bd,df->bf" %x, %w : (tensor<8x1024xf32>, tensor<1024x4096xf32>) -> tensor<8x4096xf32> loc("y")
  return %y : tensor<8x4096xf32>
}

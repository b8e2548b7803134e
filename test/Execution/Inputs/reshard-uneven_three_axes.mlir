// A reshard pattern on a 3-axis mesh with every dimension uneven (7x5x3 over
// 2x2x2), axes moved between dimensions.
partita.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @uneven_three_axes(%x: tensor<7x5x3xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}, {"c"}]>}) -> (tensor<7x5x3xf32> {partita.sharding = #partita.sharding<@mesh, [{"c"}, {"a"}, {"b"}]>}) {
  return %x : tensor<7x5x3xf32>
}

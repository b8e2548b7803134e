// A reshard pattern on a dimension that does not divide (5 rows over 2x2):
// only the layouts whose padded blocks line up are steps of the plan.
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @uneven_partial_gather(%x: tensor<5x3xf32> {partita.sharding = #partita.sharding<@mesh, [{"a", "b"}, {}]>}) -> (tensor<5x3xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {}]>}) {
  return %x : tensor<5x3xf32>
}

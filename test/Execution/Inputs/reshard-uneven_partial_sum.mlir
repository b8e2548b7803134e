// A partial sum made whole onto a dimension that does not divide
// (reduce_scatter of 7 rows over 4: padded to 8 first).
partita.mesh @mesh = <["x"=4]>
func.func @uneven_partial_sum(%x: tensor<7x6xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}], partial = sum{"x"}>}) -> (tensor<7x6xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  return %x : tensor<7x6xf32>
}

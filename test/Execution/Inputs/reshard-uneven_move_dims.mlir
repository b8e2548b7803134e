// A reshard pattern between two dimensions that do not divide (5 and 7 over
// 2x2).
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @uneven_move_dims(%x: tensor<5x7xf32> {partita.sharding = #partita.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<5x7xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"b", "a"}]>}) {
  return %x : tensor<5x7xf32>
}

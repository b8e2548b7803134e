// Tensors of several ranks for partita show.
partita.mesh @mesh = <["x"=2, "y"=4]>
func.func @f(%cube: tensor<3x3x4xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}, {}]>} loc("cube"),
             %short: tensor<5xf32> {partita.sharding = #partita.sharding<@mesh, [{"y"}]>} loc("short")) {
  return
}

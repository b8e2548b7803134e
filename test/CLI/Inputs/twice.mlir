// Two ops with the same name: --value cannot pick one.
partita.mesh @mesh = <["x"=2]>
func.func @f(%a: tensor<4xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}]>}) -> tensor<4xf32> {
  %b = partita.exp %a : tensor<4xf32> loc("same"("twice.mlir":4:8))
  %c = partita.neg %b : tensor<4xf32> loc("same"("twice.mlir":5:8))
  return %c : tensor<4xf32>
}

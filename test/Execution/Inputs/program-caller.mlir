// A program from test/Transforms/partition.mlir run on data.
partita.mesh @mesh = <["x"=4]>
func.func private @callee(%y: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %t = partita.tanh %y : tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}
func.func @caller(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>}) {
  %r = call @callee(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

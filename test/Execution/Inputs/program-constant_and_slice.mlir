// A program from test/Transforms/partition.mlir run on data.
partita.mesh @mesh = <["x"=4]>
func.func @constant_and_slice(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x4xf32> {
  %c = partita.constant dense<1.0> : tensor<8x8xf32>
  %s = partita.add %x, %c : tensor<8x8xf32>
  %t = partita.slice %s start = [0, 0] limit = [8, 4] stride = [1, 1] : tensor<8x8xf32> -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}

// A program from test/Transforms/partition.mlir run on data.
partita.mesh @mesh = <["x"=4]>
func.func @loop(%x: tensor<8x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
  %r = partita.loop 3 times (%i) iter_args(%a = %x) : tensor<8x8xf32> {
    %e = partita.exp %a : tensor<8x8xf32>
    partita.yield %e : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}

// A model from test/Transforms/partition-models.mlir run on data.
partita.mesh @mesh = <["data"=4]>
func.func @data_parallel(%x: tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %a: tensor<64x256xf32>, %b: tensor<256x64xf32>)
    -> (tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) {
  %h = partita.einsum "bd,df->bf" %x, %a : (tensor<16x64xf32>, tensor<64x256xf32>) -> tensor<16x256xf32>
  %g = partita.tanh %h : tensor<16x256xf32>
  %y = partita.einsum "bf,fd->bd" %g, %b : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32>
  %r = partita.add %y, %x : tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

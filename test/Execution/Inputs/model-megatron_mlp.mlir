// A model from test/Transforms/partition-models.mlir run on data.
partita.mesh @mesh = <["model"=4]>
func.func @megatron_mlp(%x: tensor<16x64xf32>,
    %a: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
    %b: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) {
  %h = partita.einsum "bd,df->bf" %x, %a : (tensor<16x64xf32>, tensor<64x256xf32>) -> tensor<16x256xf32>
  %g = partita.tanh %h : tensor<16x256xf32>
  %y = partita.einsum "bf,fd->bd" %g, %b : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

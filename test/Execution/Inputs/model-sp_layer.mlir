// A model from test/Transforms/partition-models.mlir run on data.
partita.mesh @mesh = <["model"=4]>
func.func @sp_layer(%x: tensor<2x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>},
    %wq: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}, %wk: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>},
    %wv: tensor<64x4x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}, %wo: tensor<4x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}, {}]>},
    %w1: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}, %w2: tensor<256x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<2x16x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>}) {
  %q = partita.einsum "bsd,dhk->bshk" %x, %wq : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %k = partita.einsum "bsd,dhk->bshk" %x, %wk : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %v = partita.einsum "bsd,dhk->bshk" %x, %wv : (tensor<2x16x64xf32>, tensor<64x4x16xf32>) -> tensor<2x16x4x16xf32>
  %s = partita.einsum "bshk,bthk->bhst" %q, %k : (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %m = partita.reduce max %s dims = [3] : tensor<2x4x16x16xf32> -> tensor<2x4x16xf32>
  %mb = partita.broadcast %m dims = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<2x4x16x16xf32>
  %d = partita.sub %s, %mb : tensor<2x4x16x16xf32>
  %e = partita.exp %d : tensor<2x4x16x16xf32>
  %z = partita.reduce sum %e dims = [3] : tensor<2x4x16x16xf32> -> tensor<2x4x16xf32>
  %zb = partita.broadcast %z dims = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<2x4x16x16xf32>
  %p = partita.div %e, %zb : tensor<2x4x16x16xf32>
  %o = partita.einsum "bhst,bthk->bshk" %p, %v : (tensor<2x4x16x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x16x4x16xf32>
  %a = partita.einsum "bshk,hkd->bsd" %o, %wo : (tensor<2x16x4x16xf32>, tensor<4x16x64xf32>) -> tensor<2x16x64xf32>
  %r1 = partita.add %x, %a : tensor<2x16x64xf32>
  %r1c = partita.sharding_constraint %r1 <@mesh, [{}, {"model"}, {}]> : tensor<2x16x64xf32>
  %h = partita.einsum "bsd,df->bsf" %r1c, %w1 : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %g = partita.tanh %h : tensor<2x16x256xf32>
  %y = partita.einsum "bsf,fd->bsd" %g, %w2 : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %r2 = partita.add %r1c, %y : tensor<2x16x64xf32>
  return %r2 : tensor<2x16x64xf32>
}

// One GPT transformer layer (attention + MLP, pre-residual form) with
// Megatron-LM tensor parallelism over "model" (Shoeybi et al., 2019): the
// Q/K/V and first MLP projections split by columns (heads, hidden), the
// output and second MLP projections by rows. Data parallelism over "data".
// The hand-written optimum is two all-reduces of the residual stream per
// layer in the forward pass; `partita compile --report` shows exactly those.
partita.mesh @mesh = <["data"=2, "model"=4]>

func.func @layer(
    %x: tensor<8x128x512xf32> {partita.role = #partita.role<input>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {}]>} loc("x"),
    %wq: tensor<512x8x64xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>} loc("attn.wq"),
    %wk: tensor<512x8x64xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>} loc("attn.wk"),
    %wv: tensor<512x8x64xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>} loc("attn.wv"),
    %wo: tensor<8x64x512xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"model"}, {}, {}]>} loc("attn.wo"),
    %w1: tensor<512x2048xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>} loc("mlp.w1"),
    %w2: tensor<2048x512xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>} loc("mlp.w2"))
    -> (tensor<8x128x512xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}, {}]>}) {
  %q = partita.einsum "bsd,dhk->bshk" %x, %wq : (tensor<8x128x512xf32>, tensor<512x8x64xf32>) -> tensor<8x128x8x64xf32> loc("attn.q")
  %k = partita.einsum "bsd,dhk->bshk" %x, %wk : (tensor<8x128x512xf32>, tensor<512x8x64xf32>) -> tensor<8x128x8x64xf32> loc("attn.k")
  %v = partita.einsum "bsd,dhk->bshk" %x, %wv : (tensor<8x128x512xf32>, tensor<512x8x64xf32>) -> tensor<8x128x8x64xf32> loc("attn.v")
  %s = partita.einsum "bshk,bthk->bhst" %q, %k : (tensor<8x128x8x64xf32>, tensor<8x128x8x64xf32>) -> tensor<8x8x128x128xf32> loc("attn.scores")
  %m = partita.reduce max %s dims = [3] : tensor<8x8x128x128xf32> -> tensor<8x8x128xf32> loc("attn.max")
  %mb = partita.broadcast %m dims = [0, 1, 2] : tensor<8x8x128xf32> -> tensor<8x8x128x128xf32> loc("attn.max_b")
  %d = partita.sub %s, %mb : tensor<8x8x128x128xf32> loc("attn.shifted")
  %e = partita.exp %d : tensor<8x8x128x128xf32> loc("attn.exp")
  %z = partita.reduce sum %e dims = [3] : tensor<8x8x128x128xf32> -> tensor<8x8x128xf32> loc("attn.norm")
  %zb = partita.broadcast %z dims = [0, 1, 2] : tensor<8x8x128xf32> -> tensor<8x8x128x128xf32> loc("attn.norm_b")
  %p = partita.div %e, %zb : tensor<8x8x128x128xf32> loc("attn.probs")
  %o = partita.einsum "bhst,bthk->bshk" %p, %v : (tensor<8x8x128x128xf32>, tensor<8x128x8x64xf32>) -> tensor<8x128x8x64xf32> loc("attn.context")
  %a = partita.einsum "bshk,hkd->bsd" %o, %wo : (tensor<8x128x8x64xf32>, tensor<8x64x512xf32>) -> tensor<8x128x512xf32> loc("attn.out")
  %r1 = partita.add %x, %a : tensor<8x128x512xf32> loc("attn.residual")
  %h = partita.einsum "bsd,df->bsf" %r1, %w1 : (tensor<8x128x512xf32>, tensor<512x2048xf32>) -> tensor<8x128x2048xf32> loc("mlp.up")
  %g = partita.tanh %h : tensor<8x128x2048xf32> loc("mlp.act")
  %y = partita.einsum "bsf,fd->bsd" %g, %w2 : (tensor<8x128x2048xf32>, tensor<2048x512xf32>) -> tensor<8x128x512xf32> loc("mlp.down")
  %r2 = partita.add %r1, %y : tensor<8x128x512xf32> loc("mlp.residual")
  return %r2 : tensor<8x128x512xf32>
}

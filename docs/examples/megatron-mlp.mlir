// The Megatron-LM MLP block (Shoeybi et al., 2019, §3): Y = GeLU(X·A)·B with
// A split by columns and B by rows over the "model" axis, so that the only
// communication is one all-reduce of the block's output. The batch is split
// over "data". Only the parameters and the input are annotated; propagation
// finds every activation's sharding.
partita.mesh @mesh = <["data"=2, "model"=4]>

func.func @megatron_mlp(
    %x: tensor<32x1024xf32> {partita.role = #partita.role<input>,
                             partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} loc("x"),
    %a: tensor<1024x4096xf32> {partita.role = #partita.role<param>,
                               partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>} loc("mlp.A"),
    %b: tensor<4096x1024xf32> {partita.role = #partita.role<param>,
                               partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>} loc("mlp.B"))
    -> tensor<32x1024xf32> {
  %h = partita.einsum "bd,df->bf" %x, %a
      : (tensor<32x1024xf32>, tensor<1024x4096xf32>) -> tensor<32x4096xf32> loc("mlp.XA")
  // GeLU, tanh form: 0.5·h·(1 + tanh(√(2/π)·(h + 0.044715·h³))).
  %c0 = partita.constant dense<0.044715> : tensor<32x4096xf32> loc("gelu.c0")
  %c1 = partita.constant dense<0.7978846> : tensor<32x4096xf32> loc("gelu.c1")
  %half = partita.constant dense<0.5> : tensor<32x4096xf32> loc("gelu.half")
  %one = partita.constant dense<1.0> : tensor<32x4096xf32> loc("gelu.one")
  %h2 = partita.mul %h, %h : tensor<32x4096xf32> loc("gelu.h2")
  %h3 = partita.mul %h2, %h : tensor<32x4096xf32> loc("gelu.h3")
  %t0 = partita.mul %h3, %c0 : tensor<32x4096xf32> loc("gelu.t0")
  %t1 = partita.add %h, %t0 : tensor<32x4096xf32> loc("gelu.t1")
  %t2 = partita.mul %t1, %c1 : tensor<32x4096xf32> loc("gelu.t2")
  %t3 = partita.tanh %t2 : tensor<32x4096xf32> loc("gelu.tanh")
  %t4 = partita.add %t3, %one : tensor<32x4096xf32> loc("gelu.t4")
  %t5 = partita.mul %h, %t4 : tensor<32x4096xf32> loc("gelu.t5")
  %g = partita.mul %t5, %half : tensor<32x4096xf32> loc("mlp.gelu")
  %y = partita.einsum "bf,fd->bd" %g, %b
      : (tensor<32x4096xf32>, tensor<4096x1024xf32>) -> tensor<32x1024xf32> loc("mlp.YB")
  return %y : tensor<32x1024xf32>
}

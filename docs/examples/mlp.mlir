// A residual regression MLP: 4 blocks of  x + W2·silu(W1·x + b1) + b2  over
// stacked per-layer weights, then the mean squared error against a target.
// The batch is split over "data"; each block's hidden dimension over "model"
// (Megatron's column-then-row split). Activations carry no annotations:
// finding their shardings is propagation's job.
partita.mesh @mesh = <["data"=2, "model"=4]>

func.func @mlp_loss(
    %x: tensor<32x64xf32> {partita.role = #partita.role<input>,
                           partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} loc("x"),
    %target: tensor<32x64xf32> {partita.role = #partita.role<input>,
                                partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} loc("target"),
    %w1: tensor<4x64x256xf32> {partita.role = #partita.role<param>,
                               partita.sharding = #partita.sharding<@mesh, [{}, {}, {"model"}]>} loc("blocks.w1"),
    %b1: tensor<4x256xf32> {partita.role = #partita.role<param>,
                            partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>} loc("blocks.b1"),
    %w2: tensor<4x256x64xf32> {partita.role = #partita.role<param>,
                               partita.sharding = #partita.sharding<@mesh, [{}, {"model"}, {}]>} loc("blocks.w2"),
    %b2: tensor<4x64xf32> {partita.role = #partita.role<param>,
                           partita.sharding = #partita.sharding<@mesh, [{}, {}]>} loc("blocks.b2"))
    -> (tensor<f32> {partita.sharding = #partita.sharding<@mesh, []>}) {
  %zero = partita.constant dense<0> : tensor<i32> loc("zero")
  %out = partita.loop 4 times (%layer) iter_args(%h = %x) : tensor<32x64xf32> {
    // This layer's weights: one slice of each stacked parameter.
    %w1s = partita.dynamic_slice %w1[%layer, %zero, %zero] sizes = [1, 64, 256]
        : tensor<4x64x256xf32>, tensor<i32>, tensor<i32>, tensor<i32> -> tensor<1x64x256xf32> loc("block.w1")
    %w1l = partita.reshape %w1s : tensor<1x64x256xf32> -> tensor<64x256xf32> loc("block.w1")
    %b1s = partita.dynamic_slice %b1[%layer, %zero] sizes = [1, 256]
        : tensor<4x256xf32>, tensor<i32>, tensor<i32> -> tensor<1x256xf32> loc("block.b1")
    %b1l = partita.reshape %b1s : tensor<1x256xf32> -> tensor<256xf32> loc("block.b1")
    %w2s = partita.dynamic_slice %w2[%layer, %zero, %zero] sizes = [1, 256, 64]
        : tensor<4x256x64xf32>, tensor<i32>, tensor<i32>, tensor<i32> -> tensor<1x256x64xf32> loc("block.w2")
    %w2l = partita.reshape %w2s : tensor<1x256x64xf32> -> tensor<256x64xf32> loc("block.w2")
    %b2s = partita.dynamic_slice %b2[%layer, %zero] sizes = [1, 64]
        : tensor<4x64xf32>, tensor<i32>, tensor<i32> -> tensor<1x64xf32> loc("block.b2")
    %b2l = partita.reshape %b2s : tensor<1x64xf32> -> tensor<64xf32> loc("block.b2")

    // Up-projection, bias, SiLU.
    %up = partita.einsum "bd,dh->bh" %h, %w1l
        : (tensor<32x64xf32>, tensor<64x256xf32>) -> tensor<32x256xf32> loc("block.up")
    %b1b = partita.broadcast %b1l dims = [1] : tensor<256xf32> -> tensor<32x256xf32> loc("block.up.bias")
    %pre = partita.add %up, %b1b : tensor<32x256xf32> loc("block.up.biased")
    %gate = partita.logistic %pre : tensor<32x256xf32> loc("block.gate")
    %act = partita.mul %pre, %gate : tensor<32x256xf32> loc("block.silu")

    // Down-projection, bias, residual.
    %down = partita.einsum "bh,hd->bd" %act, %w2l
        : (tensor<32x256xf32>, tensor<256x64xf32>) -> tensor<32x64xf32> loc("block.down")
    %b2b = partita.broadcast %b2l dims = [1] : tensor<64xf32> -> tensor<32x64xf32> loc("block.down.bias")
    %y = partita.add %down, %b2b : tensor<32x64xf32> loc("block.down.biased")
    %next = partita.add %h, %y : tensor<32x64xf32> loc("block.residual")
    partita.yield %next : tensor<32x64xf32>
  } loc("blocks")

  // Mean squared error.
  %diff = partita.sub %out, %target : tensor<32x64xf32> loc("loss.diff")
  %sq = partita.mul %diff, %diff : tensor<32x64xf32> loc("loss.squared")
  %sum = partita.reduce sum %sq dims = [0, 1] : tensor<32x64xf32> -> tensor<f32> loc("loss.sum")
  %count = partita.constant dense<2048.0> : tensor<f32> loc("loss.count")
  %loss = partita.div %sum, %count : tensor<f32> loc("loss")
  return %loss : tensor<f32>
}

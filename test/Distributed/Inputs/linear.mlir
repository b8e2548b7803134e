// y = relu(x·w) with x split by rows over "data" and w by columns over
// "model": the inputs of the sharded-array input test.
partita.mesh @mesh = <["data"=2, "model"=4]>

func.func @linear(
    %x: tensor<16x32xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} loc("x"),
    %w: tensor<32x64xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>} loc("w"))
    -> tensor<16x64xf32> {
  %y = partita.einsum "bd,df->bf" %x, %w
      : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc("xw")
  %zero = partita.constant dense<0.0> : tensor<16x64xf32> loc("zero")
  %r = partita.max %y, %zero : tensor<16x64xf32> loc("relu")
  return %r : tensor<16x64xf32>
}

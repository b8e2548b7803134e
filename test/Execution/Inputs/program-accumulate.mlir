// A program from test/Transforms/partition.mlir run on data.
partita.mesh @mesh = <["x"=4]>
func.func @accumulate(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>},
                      %w: tensor<16x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>})
    -> tensor<8x8xf32> {
  %zero = partita.constant dense<0.0> : tensor<8x8xf32>
  %r = partita.loop 4 times (%i) iter_args(%acc = %zero) : tensor<8x8xf32> {
    %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %n = partita.add %acc, %p : tensor<8x8xf32>
    partita.yield %n : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}

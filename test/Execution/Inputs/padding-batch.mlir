// Batch of 12 over 8 devices: a loss summed over the padded batch.
partita.mesh @mesh = <["x"=8]>
func.func @batch(%x: tensor<12x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>},
                 %w: tensor<16x10xf32>) -> (tensor<f32>, tensor<12x10xf32>) {
  %h = partita.einsum "bd,df->bf" %x, %w : (tensor<12x16xf32>, tensor<16x10xf32>) -> tensor<12x10xf32>
  %e = partita.exp %h : tensor<12x10xf32>
  %s = partita.reduce sum %e dims = [0, 1] : tensor<12x10xf32> -> tensor<f32>
  return %s, %e : tensor<f32>, tensor<12x10xf32>
}

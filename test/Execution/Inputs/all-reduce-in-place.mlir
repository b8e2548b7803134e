partita.mesh @mesh = <["x"=4]>

func.func @f(%a: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"x"}]>},
             %w: tensor<16x24xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>},
             %v: tensor<8x24xf32>)
    -> (tensor<8x24xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) {
  %y = partita.einsum "bd,dh->bh" %a, %w : (tensor<8x16xf32>, tensor<16x24xf32>) -> tensor<8x24xf32>
  %z = partita.tanh %y : tensor<8x24xf32>
  %e = partita.exp %v : tensor<8x24xf32>
  %s = partita.add %z, %e : tensor<8x24xf32>
  return %s : tensor<8x24xf32>
}

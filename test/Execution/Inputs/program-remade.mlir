// A splat constant and a broadcast each read by two elementwise chains on
// either side of an einsum: fused, each chain makes its own copy of both
// (no constant or broadcast instruction is left).
partita.mesh @mesh = <["x"=2]>
func.func @remade(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>},
                  %b: tensor<16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %c = partita.constant dense<0.5> : tensor<8x16xf32>
  %bb = partita.broadcast %b dims = [1] : tensor<16xf32> -> tensor<8x16xf32>
  %m = partita.mul %x, %c : tensor<8x16xf32>
  %a = partita.add %m, %bb : tensor<8x16xf32>
  %t = partita.tanh %a : tensor<8x16xf32>
  %y = partita.einsum "bi,io->bo" %t, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %n = partita.neg %y : tensor<8x16xf32>
  %p = partita.mul %n, %c : tensor<8x16xf32>
  %q = partita.sub %p, %bb : tensor<8x16xf32>
  return %q : tensor<8x16xf32>
}

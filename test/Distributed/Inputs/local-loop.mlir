// Work that stays on each device: the batch is split over "data", the
// weight is replicated, and nothing crosses devices inside the loop.
partita.mesh @mesh = <["data"=2]>

func.func @spin(
    %x: tensor<8x64xf32> {partita.role = #partita.role<input>,
                          partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %w: tensor<64x64xf32> {partita.role = #partita.role<input>,
                           partita.sharding = #partita.sharding<@mesh, [{}, {}]>})
    -> (tensor<8x64xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) {
  %out = partita.loop 2000000 times (%i) iter_args(%h = %x) : tensor<8x64xf32> {
    %y = partita.einsum "bd,de->be" %h, %w
        : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %t = partita.tanh %y : tensor<8x64xf32>
    partita.yield %t : tensor<8x64xf32>
  }
  return %out : tensor<8x64xf32>
}

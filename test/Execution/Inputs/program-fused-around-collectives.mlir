// A norm's scale split like FSDP's parameters while the activations stay
// split along the batch: the scale is gathered, started at the top and
// waited for in the middle of the elementwise chain that applies it. The
// chain still fuses into one instruction, with the wait before it.
partita.mesh @mesh = <["x"=2]>
func.func @chain(%x: tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>},
                 %s: tensor<256xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}]>})
    -> (tensor<64x256xf32> {partita.sharding = #partita.sharding<@mesh, [{"x"}, {}]>}) {
  %t = partita.tanh %x : tensor<64x256xf32>
  %e = partita.exp %t : tensor<64x256xf32>
  %b = partita.broadcast %s dims = [1] : tensor<256xf32> -> tensor<64x256xf32>
  %c = partita.sharding_constraint %b <@mesh, [{"x"}, {}]> : tensor<64x256xf32>
  %u = partita.mul %e, %c : tensor<64x256xf32>
  %v = partita.neg %u : tensor<64x256xf32>
  %w = partita.add %v, %e : tensor<64x256xf32>
  return %w : tensor<64x256xf32>
}

// A tensor of 2^62 f32 elements: 2^64 bytes, more than a 64-bit count holds.
partita.mesh @mesh = <["d"=2]>
func.func @f(%x: tensor<4611686018427387904xf32> {partita.sharding = #partita.sharding<@mesh, [{"d"}]>}) -> tensor<4611686018427387904xf32> {
  %0 = partita.neg %x : tensor<4611686018427387904xf32>
  return %0 : tensor<4611686018427387904xf32>
}

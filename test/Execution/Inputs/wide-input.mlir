// A 1 GiB input split over 8 devices and reduced to a vector: what the run
// holds is mostly its input, which a run without --check never makes whole.
partita.mesh @mesh = <["data"=8]>
func.func @rows(%x: tensor<32768x8192xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>}) -> tensor<32768xf32> {
  %e = partita.exp %x : tensor<32768x8192xf32>
  %y = partita.reduce sum %e dims = [1] : tensor<32768x8192xf32> -> tensor<32768xf32>
  return %y : tensor<32768xf32>
}

// A donated weight squared in place: the result takes the weight's bytes,
// so the device holds one weight-sized buffer instead of two.
partita.mesh @mesh = <["model"=4]>
func.func @square(
    %w: tensor<256x128xf32> {partita.role = #partita.role<param>, partita.donated,
                             partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>})
    -> (tensor<256x128xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}) {
  %n = partita.mul %w, %w : tensor<256x128xf32>
  return %n : tensor<256x128xf32>
}

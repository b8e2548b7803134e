// One SGD step of linear regression with the weight donated: the new weight
// is written over the old one (the Executable's output 0 updates input 0 in
// place). The weight is split by columns over "model", the batch over "data".
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @sgd_step(
    %w: tensor<256x128xf32> {partita.role = #partita.role<param>, partita.donated,
                           partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>},
    %x: tensor<8x256xf32> {partita.role = #partita.role<input>,
                           partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
    %y: tensor<8x128xf32> {partita.role = #partita.role<input>,
                           partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>})
    -> (tensor<256x128xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>}) {
  %p = partita.einsum "bd,df->bf" %x, %w : (tensor<8x256xf32>, tensor<256x128xf32>) -> tensor<8x128xf32>
  %e = partita.sub %p, %y : tensor<8x128xf32>
  %g = partita.einsum "bd,bf->df" %x, %e : (tensor<8x256xf32>, tensor<8x128xf32>) -> tensor<256x128xf32>
  %lr = partita.constant dense<0.01> : tensor<256x128xf32>
  %s = partita.mul %g, %lr : tensor<256x128xf32>
  %n = partita.sub %w, %s : tensor<256x128xf32>
  return %n : tensor<256x128xf32>
}

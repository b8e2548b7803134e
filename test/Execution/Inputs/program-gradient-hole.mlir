// A donated gradient buffer the step overwrites without reading it: its
// bytes are free from the start until the chain making its new value
// starts reading (the scalar the broadcast reads), so the exp before it can
// sit on them. The device holds x and the buffer: 8 KiB and two scalars,
// not 12 KiB.
partita.mesh @mesh = <["data"=1]>
func.func @step(
    %g: tensor<1024xf32> {partita.role = #partita.role<grad>, partita.donated},
    %x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = partita.exp %x : tensor<1024xf32>
  %t = partita.einsum "i,i->" %e, %x : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<f32>
  %u = partita.tanh %t : tensor<f32>
  %n = partita.broadcast %u dims = [] : tensor<f32> -> tensor<1024xf32>
  return %n : tensor<1024xf32>
}

// grad-manual-allreduce.mlir written without per-device code.
func.func @loss(%x: tensor<16x8xf32> {partita.role = #partita.role<param>},
                %w: tensor<8x8xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %h = partita.einsum "bd,df->bf" %x, %w : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %t = partita.tanh %h : tensor<16x8xf32>
  %sq = partita.mul %t, %t : tensor<16x8xf32>
  %r = partita.reduce sum %sq dims = [0] : tensor<16x8xf32> -> tensor<8xf32>
  %c = partita.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %m = partita.mul %r, %c : tensor<8xf32>
  %l = partita.reduce sum %m dims = [0] : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

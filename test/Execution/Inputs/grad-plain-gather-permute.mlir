// grad-manual-gather-permute.mlir written without per-device code (the
// ring permutation is a shift of column blocks).
func.func @loss(%x: tensor<16x8xf32> {partita.role = #partita.role<param>},
                %w: tensor<8x8xf32> {partita.role = #partita.role<param>}) -> tensor<f32> {
  %h = partita.einsum "bd,df->bf" %x, %w : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %t = partita.tanh %h : tensor<16x8xf32>
  %a = partita.slice %t start = [0, 6] limit = [16, 8] stride = [1, 1] : tensor<16x8xf32> -> tensor<16x2xf32>
  %b = partita.slice %t start = [0, 0] limit = [16, 6] stride = [1, 1] : tensor<16x8xf32> -> tensor<16x6xf32>
  %p = partita.concatenate %a, %b dim = 1 : (tensor<16x2xf32>, tensor<16x6xf32>) -> tensor<16x8xf32>
  %q = partita.mul %p, %t : tensor<16x8xf32>
  %s = partita.mul %q, %q : tensor<16x8xf32>
  %l = partita.reduce sum %s dims = [0, 1] : tensor<16x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

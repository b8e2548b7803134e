// shard-map.mlir's sum of squares written without a manual computation:
// an independent reference for the per-device code.
func.func @sum_of_squares(%x: tensor<64x128xf32>) -> tensor<128xf32> {
  %sq = partita.mul %x, %x : tensor<64x128xf32>
  %sum = partita.reduce sum %sq dims = [0] : tensor<64x128xf32> -> tensor<128xf32>
  return %sum : tensor<128xf32>
}

// A reshape of a value that dies there takes its bytes: the device holds
// the argument and one buffer (32 KiB), not the argument and two (48 KiB).
func.func @reshaped(%x: tensor<64x64xf32>) -> tensor<4096xf32> {
  %0 = partita.neg %x : tensor<64x64xf32>
  %1 = partita.reshape %0 : tensor<64x64xf32> -> tensor<4096xf32>
  %2 = partita.exp %1 : tensor<4096xf32>
  return %2 : tensor<4096xf32>
}

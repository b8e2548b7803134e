// An input of 4 TiB: more than any machine the tests run on holds.
func.func @huge(%x: tensor<1048576x1048576xf32>) -> tensor<1048576x1048576xf32> {
  %y = partita.exp %x : tensor<1048576x1048576xf32>
  return %y : tensor<1048576x1048576xf32>
}

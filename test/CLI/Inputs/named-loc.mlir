// Ops whose locations are names only (no file position in the IR).
partita.mesh @mesh = <["data"=2]>
func.func @f(%x: tensor<4xf32> loc("x")) -> tensor<4xf32> {
  %a = partita.einsum "i,i->j" %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("bad")
  return %a : tensor<4xf32>
}

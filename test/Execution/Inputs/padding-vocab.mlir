// A vocabulary of 19 over 4 devices: logits, a softmax over the padded
// vocabulary, its max and the probability table gathered back.
partita.mesh @mesh = <["model"=4]>
func.func @vocab(%h: tensor<6x8xf32>,
                 %emb: tensor<19x8xf32> {partita.sharding = #partita.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<6x19xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {}]>}, tensor<6xf32>) {
  %l = partita.einsum "bd,vd->bv" %h, %emb : (tensor<6x8xf32>, tensor<19x8xf32>) -> tensor<6x19xf32>
  %m = partita.reduce max %l dims = [1] : tensor<6x19xf32> -> tensor<6xf32>
  %mb = partita.broadcast %m dims = [0] : tensor<6xf32> -> tensor<6x19xf32>
  %d = partita.sub %l, %mb : tensor<6x19xf32>
  %e = partita.exp %d : tensor<6x19xf32>
  %z = partita.reduce sum %e dims = [1] : tensor<6x19xf32> -> tensor<6xf32>
  %zb = partita.broadcast %z dims = [0] : tensor<6xf32> -> tensor<6x19xf32>
  %p = partita.div %e, %zb : tensor<6x19xf32>
  return %p, %m : tensor<6x19xf32>, tensor<6xf32>
}

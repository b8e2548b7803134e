// A hand-written "partitioned" program that forgets to reduce a partial
// sum: run --check must reject it.
module attributes {partita.partitioned} {
  partita.mesh @mesh = <["x"=4]>
  func.func @f(%a: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}], partial = sum{"x"}>}) -> (tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{}]>}) {
    %e = partita.neg %a : tensor<8xf32>
    return %e : tensor<8xf32>
  }
}

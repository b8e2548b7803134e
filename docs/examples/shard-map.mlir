// Hand-written per-device code inside a global program (JAX's shard_map):
// each device computes a partial sum of squares over its rows of `x`, then an
// all_reduce over "data" combines them. Outside the manual region the
// compiler owns the shardings.
partita.mesh @mesh = <["data"=4]>

func.func @sum_of_squares(
    %x: tensor<64x128xf32> {partita.role = #partita.role<input>,
                            partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>} loc("x"))
    -> tensor<128xf32> {
  %r = partita.manual_computation(%x)
      in_shardings = [<@mesh, [{"data"}, {}]>]
      out_shardings = [<@mesh, [{}]>]
      manual_axes = ["data"]
      (%local: tensor<16x128xf32>) {
    %sq = partita.mul %local, %local : tensor<16x128xf32> loc("squares")
    %part = partita.reduce sum %sq dims = [0] : tensor<16x128xf32> -> tensor<128xf32> loc("partial_sum")
    %total = partita.all_reduce sum %part on @mesh axes = ["data"] : tensor<128xf32> loc("total")
    partita.yield %total : tensor<128xf32>
  } : (tensor<64x128xf32>) -> tensor<128xf32> loc("sum_of_squares")
  return %r : tensor<128xf32>
}

// A loss through a manual computation (shard_map) whose body all-reduces:
// its gradient (partita-grad) must equal grad-plain-allreduce.mlir's.
partita.mesh @mesh = <["data"=4]>
func.func @loss(%x: tensor<16x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<8x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {}]>}) -> tensor<f32> {
  %r = partita.manual_computation(%x, %w)
      in_shardings = [<@mesh, [{"data"}, {}]>, <@mesh, [{}, {}]>]
      out_shardings = [<@mesh, [{}]>]
      manual_axes = ["data"]
      (%lx: tensor<4x8xf32>, %lw: tensor<8x8xf32>) {
    %h = partita.einsum "bd,df->bf" %lx, %lw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %t = partita.tanh %h : tensor<4x8xf32>
    %sq = partita.mul %t, %t : tensor<4x8xf32>
    %part = partita.reduce sum %sq dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
    %total = partita.all_reduce sum %part on @mesh axes = ["data"] : tensor<8xf32>
    partita.yield %total : tensor<8xf32>
  } : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  %c = partita.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %m = partita.mul %r, %c : tensor<8xf32>
  %l = partita.reduce sum %m dims = [0] : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

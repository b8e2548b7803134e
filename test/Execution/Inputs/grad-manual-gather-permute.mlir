// A manual computation that all-gathers its rows and permutes its columns
// around the ring; its gradient must equal grad-plain-gather-permute.mlir's.
partita.mesh @mesh = <["data"=4]>
func.func @loss(%x: tensor<16x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<8x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"data"}]>}) -> tensor<f32> {
  %r = partita.manual_computation(%x, %w)
      in_shardings = [<@mesh, [{"data"}, {}]>, <@mesh, [{}, {"data"}]>]
      out_shardings = [<@mesh, [{}, {"data"}]>]
      manual_axes = ["data"]
      (%lx: tensor<4x8xf32>, %lw: tensor<8x2xf32>) {
    %full = partita.all_gather %lx on @mesh axes = ["data"] dim = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
    %h = partita.einsum "bd,df->bf" %full, %lw : (tensor<16x8xf32>, tensor<8x2xf32>) -> tensor<16x2xf32>
    %t = partita.tanh %h : tensor<16x2xf32>
    %p = partita.collective_permute %t on @mesh axes = ["data"] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<16x2xf32>
    %q = partita.mul %p, %t : tensor<16x2xf32>
    partita.yield %q : tensor<16x2xf32>
  } : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %s = partita.mul %r, %r : tensor<16x8xf32>
  %l = partita.reduce sum %s dims = [0, 1] : tensor<16x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

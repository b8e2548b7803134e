// Found by tools/random-programs.py --gradient-share (train step on cpu:4).
partita.mesh @mesh = <["a"=2, "b"=2]>
func.func @f(%a0: tensor<8x16x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"a"}, {}]>}, %a1: tensor<8x16x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"b", "a"}, {}]>}) -> tensor<f32> {
  %v1 = partita.transpose %a0 perm = [0, 1, 2] : tensor<8x16x8xf32> -> tensor<8x16x8xf32>
  %v2 = partita.reshard %a0 <@mesh, [{"b"}, {"a"}, {}]> : tensor<8x16x8xf32>
  %v3 = partita.min %a0, %a1 : tensor<8x16x8xf32>
  %v4 = partita.reduce sum %v3 dims = [0, 1, 2] : tensor<8x16x8xf32> -> tensor<f32>
  return %v4 : tensor<f32>
}

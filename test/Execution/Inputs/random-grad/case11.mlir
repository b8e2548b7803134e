// Found by tools/random-programs.py --gradient-share (train step on cpu:8).
partita.mesh @mesh = <["a"=2, "b"=4]>
func.func @f(%a0: tensor<8x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{}, {"b"}]>}) -> tensor<f32> {
  %v1 = partita.abs %a0 : tensor<8x8xf32>
  %v2 = partita.transpose %v1 perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %v3 = partita.reshard %a0 <@mesh, [{"b"}, {}]> : tensor<8x8xf32>
  %v4 = partita.transpose %v3 perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %v5 = partita.logistic %v3 : tensor<8x8xf32>
  %v6 = partita.reshard %v1 <@mesh, [{}, {}]> : tensor<8x8xf32>
  %v7 = partita.add %v3, %v6 : tensor<8x8xf32>
  %v8 = partita.reduce sum %v7 dims = [0, 1] : tensor<8x8xf32> -> tensor<f32>
  return %v8 : tensor<f32>
}

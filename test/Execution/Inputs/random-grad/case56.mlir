// Found by tools/random-programs.py --gradient-share (train step on cpu:8).
partita.mesh @mesh = <["a"=4, "b"=2]>
func.func @f(%a0: tensor<16x8xf32> {partita.role = #partita.role<param>, partita.sharding = #partita.sharding<@mesh, [{"b", "a"}, {}]>}) -> tensor<f32> {
  %v1 = partita.max %a0, %a0 : tensor<16x8xf32>
  %v2 = partita.reshard %v1 <@mesh, [{}, {"a"}]> : tensor<16x8xf32>
  %v3 = partita.sin %v2 : tensor<16x8xf32>
  %v4 = partita.reshard %v3 <@mesh, [{}, {"a"}]> : tensor<16x8xf32>
  %v5 = partita.reduce sum %v4 dims = [0, 1] : tensor<16x8xf32> -> tensor<f32>
  return %v5 : tensor<f32>
}

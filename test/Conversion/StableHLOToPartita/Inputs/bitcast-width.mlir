// A bitcast_convert that splits each 64-bit element into two floats.
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xi64>) -> tensor<4x2xf32>, sym_name = "main"}> ({
  ^bb0(%a: tensor<4xi64>):
    %0 = "stablehlo.bitcast_convert"(%a) : (tensor<4xi64>) -> tensor<4x2xf32>
    "func.return"(%0) : (tensor<4x2xf32>) -> ()
  }) : () -> ()
}) : () -> ()

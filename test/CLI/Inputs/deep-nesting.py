"""Writes a program nested DEPTH levels deep to stdout: nested brackets in
an attribute ("attribute"), nested loop regions ("regions") or nested
tuple types ("types")."""
import sys

kind, depth = sys.argv[1], int(sys.argv[2])
if kind == "attribute":
    sys.stdout.write("func.func @f() attributes {a = " + "[" * depth +
                     "]" * depth + "} {\n  return\n}\n")
elif kind == "types":
    sys.stdout.write("func.func @f(%x: " + "tuple<" * depth + "f32" +
                     ">" * depth + ") {\n  return\n}\n")
else:
    sys.stdout.write(
        "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n" +
        "partita.loop 1 times (%k) iter_args(%a = %x) : tensor<f32> {\n" * depth +
        "partita.yield %a : tensor<f32>\n" + "}\n" * depth +
        "return %x : tensor<f32>\n}\n")

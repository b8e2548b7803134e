#!/usr/bin/env bash
# Installs Partita into a temporary prefix, configures and builds
# test/install/consumer against it (find_package(Partita)), and runs it:
# partita::compile on the Megatron MLP (the report's collectives), on a mesh
# override, on bad input (an error, exit 1, no abort), and the pipeline by
# name from a textual pass pipeline.
#   consumer-test.sh <build-dir> <source-dir>
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SOURCE=$(cd "$2" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$WORK/prefix" > /dev/null
[ -f "$WORK/prefix/lib/cmake/partita/PartitaConfig.cmake" ] || fail "no PartitaConfig.cmake installed"
for tool in partita partita-opt partita-exec; do
  [ -x "$WORK/prefix/bin/$tool" ] || fail "$tool not installed"
done
# The installed tools start and work from the prefix (with LD_LIBRARY_PATH
# cleared: they must find MLIR and the runtime's libraries themselves).
for tool in partita partita-opt partita-exec; do
  env -u LD_LIBRARY_PATH "$WORK/prefix/bin/$tool" --version > /dev/null 2>&1 \
    || fail "installed $tool does not start: $(env -u LD_LIBRARY_PATH "$WORK/prefix/bin/$tool" --version 2>&1 | head -1)"
done
env -u LD_LIBRARY_PATH "$WORK/prefix/bin/partita" compile "$SOURCE/docs/examples/megatron-mlp.mlir" \
  --stage executable -o "$WORK/mlp.exe" || fail "installed partita compile"
env -u LD_LIBRARY_PATH "$WORK/prefix/bin/partita-exec" run "$WORK/mlp.exe" > "$WORK/run.log" \
  || { cat "$WORK/run.log"; fail "installed partita-exec run"; }
grep -q "ran on cpu:8" "$WORK/run.log" || { cat "$WORK/run.log"; fail "installed partita-exec run output"; }
# The installed tools find their plugins in <prefix>/lib: a distributed run
# of one process goes through the MPI plugin.
if [ -e "$BUILD/lib/libpartita-mpi.so" ]; then
  [ -f "$WORK/prefix/lib/libpartita-mpi.so" ] || fail "the MPI plugin is not installed"
  env -u LD_LIBRARY_PATH mpirun --oversubscribe --allow-run-as-root -np 1 \
    "$WORK/prefix/bin/partita-exec" run "$WORK/mlp.exe" --distributed > "$WORK/mpi.log" 2>&1 \
    || { cat "$WORK/mpi.log"; fail "installed partita-exec run --distributed"; }
  grep -q "as 1 processes" "$WORK/mpi.log" || { cat "$WORK/mpi.log"; fail "installed MPI plugin output"; }
fi
if [ -e "$BUILD/lib/libpartita-cuda.so" ]; then
  [ -f "$WORK/prefix/lib/libpartita-cuda.so" ] || fail "the CUDA plugin is not installed"
fi
env -u LD_LIBRARY_PATH "$WORK/prefix/bin/partita-opt" "$SOURCE/docs/examples/mlp.mlir" \
  --partita-propagate > /dev/null || fail "installed partita-opt"
# The Python package, when built, imports and runs from the prefix.
package=$(ls -d "$WORK"/prefix/lib/python3*/site-packages/partita 2>/dev/null | head -1)
if [ -n "$package" ]; then
  env -u LD_LIBRARY_PATH PYTHONPATH="$(dirname "$package")" /usr/bin/python3 -c "
import partita, sys
m = partita.compile(open(sys.argv[1]).read())
(loss,) = m.run(check=True)
print(m, float(loss))" "$SOURCE/docs/examples/mlp.mlir" > "$WORK/python.log" 2>&1 \
    || { cat "$WORK/python.log"; fail "the installed Python package does not run"; }
fi
[ -f "$WORK/prefix/include/partita/Partita.h" ] || fail "headers not installed"
[ -f "$WORK/prefix/include/partita/Dialect/Partita/IR/PartitaOps.h.inc" ] || fail "generated headers not installed"

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$SOURCE/test/install/consumer" -B "$WORK/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$WORK/prefix" "${launcher[@]}" > "$WORK/configure.log" \
  || { cat "$WORK/configure.log"; fail "configuring the consumer"; }
cmake --build "$WORK/consumer" > "$WORK/build.log" 2>&1 \
  || { cat "$WORK/build.log"; fail "building the consumer"; }
CONSUMER="$WORK/consumer/partita-consumer"
EXAMPLE="$SOURCE/docs/examples/megatron-mlp.mlir"

# One all-reduce over "model" for the Megatron MLP.
"$CONSUMER" "$EXAMPLE" > "$WORK/report.json"
grep -q '"collectives": 1,' "$WORK/report.json" || { cat "$WORK/report.json"; fail "report of the Megatron MLP"; }
grep -q '"kind": "reduce_scatter"' "$WORK/report.json" || fail "the Megatron MLP's reduce_scatter"
# The mesh override reaches the pipeline.
"$CONSUMER" "$EXAMPLE" --mesh data=4,model=2 > "$WORK/report2.json"
tr -d ' \n' < "$WORK/report2.json" | grep -q '"name":"data","size":4},{"name":"model","size":2}' \
  || { cat "$WORK/report2.json"; fail "mesh override"; }
# Bad input: an unknown mesh axis is an error with a location, exit 1.
cat > "$WORK/bad.mlir" <<'MLIR'
partita.mesh @mesh = <["data"=2]>
func.func @f(%x: tensor<8xf32> {partita.sharding = #partita.sharding<@mesh, [{"modle"}]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
MLIR
set +e
"$CONSUMER" "$WORK/bad.mlir" > "$WORK/bad.out" 2>&1
code=$?
set -e
[ "$code" = 1 ] || { cat "$WORK/bad.out"; fail "bad input exited with $code, want 1"; }
grep -q "bad.mlir:2:.*error: .*modle" "$WORK/bad.out" || { cat "$WORK/bad.out"; fail "bad input message"; }
# A module that parses but cannot be compiled (two constraints on one value
# that disagree): partita::compile returns the located error, the tool
# exits 1.
cat > "$WORK/conflict.mlir" <<'MLIR'
partita.mesh @mesh = <["data"=2, "model"=2]>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = partita.sharding_constraint %x <@mesh, [{"data"}]> : tensor<8xf32>
  %b = partita.sharding_constraint %x <@mesh, [{"model"}]> : tensor<8xf32>
  %y = partita.add %a, %b : tensor<8xf32>
  return %y : tensor<8xf32>
}
MLIR
set +e
"$CONSUMER" "$WORK/conflict.mlir" > "$WORK/conflict.out" 2>&1
code=$?
set -e
[ "$code" = 1 ] || { cat "$WORK/conflict.out"; fail "conflicting input exited with $code, want 1"; }
grep -q "compile failed" "$WORK/conflict.out" && grep -q "conflict.mlir:[0-9]*:[0-9]*: error: " "$WORK/conflict.out" \
  || { cat "$WORK/conflict.out"; fail "conflicting input message"; }
# A bad mesh override: an error, not an abort.
set +e
"$CONSUMER" "$EXAMPLE" --mesh data=0 > "$WORK/mesh.out" 2>&1
code=$?
set -e
[ "$code" = 1 ] || { cat "$WORK/mesh.out"; fail "bad mesh exited with $code, want 1"; }
grep -q "compile failed" "$WORK/mesh.out" || { cat "$WORK/mesh.out"; fail "bad mesh message"; }
# The whole pipeline by name, as any MlirOptMain tool would run it.
"$CONSUMER" "$EXAMPLE" --pipeline 'partita-pipeline{stage=partitioned}' > "$WORK/partitioned.mlir"
grep -q "partita.partitioned" "$WORK/partitioned.mlir" || fail "pipeline by name: module not partitioned"
grep -q "partita.reduce_scatter" "$WORK/partitioned.mlir" || fail "pipeline by name: no reduce_scatter"
echo "consumer test: OK"

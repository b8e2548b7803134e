"""The Python package against the CLI's own behaviour: compile, report,
explain, show, run with numpy arrays (checked against one device and
against numpy), errors as exceptions with their location, JAX interop.

Run: PYTHONPATH=build/python python3 -m pytest test/python (CTest does)."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import partita

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"

LAYER = """
partita.mesh @mesh = <["data"=2, "model"=4]>

func.func @layer(%x: tensor<8x16xf32> {partita.sharding = #partita.sharding<@mesh, [{"data"}, {}]>},
                 %w: tensor<16x32xf32> {partita.sharding = #partita.sharding<@mesh, [{}, {"model"}]>})
    -> tensor<8x32xf32> {
  %y = partita.einsum "bd,dh->bh" %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("y")
  return %y : tensor<8x32xf32>
}
"""


def test_compile_report_matches_cli(tmp_path):
    m = partita.compile(EXAMPLES / "mlp.mlir")
    report = tmp_path / "r.json"
    partita.run_tool("compile", EXAMPLES / "mlp.mlir", "--report", report,
                     "-o", tmp_path / "o.mlir")
    assert m.report == json.loads(report.read_text())
    assert m.text == (tmp_path / "o.mlir").read_text()
    assert m.devices == 8
    assert m.collectives and m.collectives[0]["kind"] == "all_reduce"
    assert "partitioned" in repr(m)


def test_stages_and_mesh():
    verified = partita.compile(LAYER, stage="verified")
    assert "partita.all_reduce" not in verified.text
    m = partita.compile(LAYER, mesh={"data": 4, "model": 2})
    assert m.devices == 8
    assert m.report["meshes"][0]["axes"] == [{"name": "data", "size": 4},
                                             {"name": "model", "size": 2}]
    assert "tensor<2x16xf32>" in m.text  # 8 rows over data=4
    with pytest.raises(ValueError):
        partita.compile(LAYER, stage="executable")


def test_overlap_switch():
    # Collectives are asynchronous unless overlap=False; same numbers.
    on = partita.compile(EXAMPLES / "mlp.mlir")
    off = partita.compile(EXAMPLES / "mlp.mlir", overlap=False)
    assert "partita.async_collectives" in on.text
    assert "partita.async_collectives" not in off.text
    for a, b in zip(on.run(seed=4), off.run(seed=4)):
        np.testing.assert_array_equal(a, b)


def test_run_numpy_inputs_against_numpy():
    m = partita.compile(LAYER)
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 32)).astype(np.float32)
    (y,) = m.run([x, w], devices="cpu:8", check=True)
    assert y.shape == (8, 32) and y.dtype == np.float32
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
    assert "check passed: cpu:8 matches cpu:1" in m.last_run
    (one,) = m.run([x, w], devices=8)
    np.testing.assert_array_equal(one, y)


def test_run_random_inputs_are_the_clis():
    m = partita.compile(EXAMPLES / "mlp.mlir")
    (loss,) = m.run(seed=3)
    out = partita.run_tool("run", EXAMPLES / "mlp.mlir", "--devices", "cpu:8",
                           "--seed", "3")
    line = [l for l in out.splitlines() if "result 0" in l][0]
    assert ("sum=%g" % float(loss)) in line, (line, float(loss))


def test_explain_and_show():
    m = partita.compile(LAYER)
    text = m.explain("y")
    assert 'P("data", "model")' in text
    assert "x" in m.explain()
    blocks = m.show("y")
    assert "dev 7" in blocks and "cols 8:16" in blocks


def test_trace(tmp_path):
    m = partita.compile(EXAMPLES / "mlp.mlir")
    m.run(trace=tmp_path / "t.json")
    trace = json.loads((tmp_path / "t.json").read_text())
    devices = {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert devices == set(range(8))


def test_html_report(tmp_path):
    m = partita.compile(EXAMPLES / "transformer-layer.mlir")
    page = pathlib.Path(m.html(tmp_path / "report.html")).read_text()
    assert page.startswith("<!DOCTYPE html>")
    data = page.split('id="partita-data">', 1)[1].split("</script>", 1)[0]
    embedded = json.loads(data)
    assert embedded["report"]["collectives"] == m.report["collectives"]


def test_save_runs_in_partita_exec(tmp_path):
    m = partita.compile(LAYER)
    path = m.save(tmp_path / "layer.exe")
    exec_tool = (pathlib.Path(partita.__file__).resolve().parents[2] / "bin" /
                 "partita-exec")
    if not exec_tool.exists():
        pytest.skip("partita-exec is not beside the package (installed tree)")
    out = subprocess.run([str(exec_tool), "run", path, "--seed", "5"],
                         check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if "result 0" in l][0]
    cli = partita.run_tool("run", path, "--devices", "cpu:8", "--seed", "5")
    assert line in cli


def test_errors_carry_the_location(tmp_path):
    with pytest.raises(partita.PartitaError) as error:
        partita.compile("func.func @f( {")
    assert error.value.message.startswith("<program>:1:14: error:")
    assert error.value.exit_code == 1
    bad = tmp_path / "bad.mlir"
    bad.write_text(LAYER.replace('{}, {"model"}', '{}, {"nosuch"}'))
    with pytest.raises(partita.PartitaError) as error:
        partita.compile(bad)
    assert str(bad) + ":" in error.value.message
    assert "nosuch" in error.value.message
    m = partita.compile(LAYER)
    with pytest.raises(partita.PartitaError) as error:
        m.run([np.zeros((3, 3), np.float32), np.zeros((16, 32), np.float32)])
    assert "shape" in error.value.message or "input 0" in error.value.message
    with pytest.raises(partita.PartitaError) as error:
        m.explain("no-such-value")
    assert "no-such-value" in error.value.message
    with pytest.raises(partita.PartitaError):
        m.run(devices="cpu:3")
    with pytest.raises(TypeError):
        partita.compile(42)


def test_arguments_of_the_wrong_kind_are_refused(tmp_path):
    # A fractional axis size was truncated, devices=True ran on cpu:1, a
    # path given as a string was parsed as program text, and an input's
    # error named a temporary file.
    with pytest.raises(TypeError, match="'data': the size must be an integer"):
        partita.compile(LAYER, mesh={"data": 2.5, "model": 4})
    with pytest.raises(ValueError, match="must be positive"):
        partita.compile(LAYER, mesh={"data": 0, "model": 4})
    m = partita.compile(LAYER)
    with pytest.raises(TypeError, match="devices must be"):
        m.run(devices=True)
    path = tmp_path / "layer.mlir"
    path.write_text(LAYER)
    assert partita.compile(str(path)).report == m.report
    with pytest.raises((OSError, partita.PartitaError)):
        partita.compile(str(tmp_path / "missing.mlir"))
    with pytest.raises(partita.PartitaError) as error:
        m.run([np.zeros((3, 3), np.float32), np.zeros((16, 32), np.float32)])
    assert "inputs[0]" in error.value.message
    assert ".npy" not in error.value.message


def test_keywords_follow_the_option_table():
    # The package turns keywords into flags by the table the CLI's parser
    # and help pages come from: the flags are the CLI's, and a keyword of
    # the wrong kind names itself.
    options = partita.command_options("compile")
    assert options["--stage"][0] == "value"
    assert options["--strict"][0] == "switch"
    assert "--no-overlap" in options
    assert "--layers" in partita.command_options("train")
    assert partita.command_options("frob") == {}
    with pytest.raises(TypeError, match="strict must be True or False"):
        partita.compile(LAYER, strict="yes")
    with pytest.raises(TypeError, match="combine_bytes"):
        partita._flags("compile", combine_bytes=True)
    with pytest.raises(TypeError, match="no option for frob"):
        partita._flags("compile", frob=1)
    assert partita._flags("compile", mesh="data=2", strict=True,
                          overlap=False, rules=None) == [
        "--mesh", "data=2", "--strict", "--no-overlap"]
    m = partita.compile(LAYER, combine_bytes=0, overlap=False)
    assert m.report["totals"]["collectives"] >= 0


def test_mesh_without_an_annotated_axis_is_an_error():
    # --mesh dropping the axis an annotation names killed the interpreter
    # (a division by zero in propagation).
    with pytest.raises(partita.PartitaError) as error:
        partita.compile(LAYER, mesh="data=8")
    assert "unknown mesh axis 'model'" in error.value.message
    assert error.value.exit_code == 1


def test_from_jax():
    jax = pytest.importorskip("jax")
    if len(jax.devices()) < 8:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=8")
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    mesh = jax.make_mesh((2, 4), ("data", "model"))

    def f(x, w):
        return jnp.tanh(x @ w).sum(axis=1)

    rng = np.random.RandomState(1)
    x = rng.randn(16, 32).astype(np.float32)
    w = rng.randn(32, 64).astype(np.float32)
    jitted = jax.jit(f, in_shardings=(NamedSharding(mesh, P("data", None)),
                                      NamedSharding(mesh, P(None, "model"))))
    m = partita.from_jax(jitted, x, w)
    assert m.devices == 8
    assert "split over \"model\"" in m.explain("w")
    (got,) = m.run([x, w], check=True)
    np.testing.assert_allclose(got, np.asarray(jitted(x, w)), rtol=1e-5,
                               atol=1e-5)
    # A Lowered object works as well.
    m2 = partita.compile(jitted.lower(x, w))
    assert m2.report == m.report


def _files_under(directory):
    return sorted(os.path.join(d, name) for d, _, names in os.walk(directory)
                  for name in names)


def test_run_makes_no_files(tmp_path, monkeypatch):
    # Module.run used to write each input to a temporary .npy file, re-enter
    # the CLI and read each output back from another: inputs and outputs now
    # stay in memory, so nothing appears on disk while it runs.
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    m = partita.compile(LAYER)
    masked = partita.compile("""
partita.mesh @mesh = <["data"=2]>
func.func @f(%a: tensor<4xi32> {partita.sharding = #partita.sharding<@mesh, [{"data"}]>}, %b: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi32>) {
  %c = partita.compare lt, %a, %b : tensor<4xi32>
  %s = partita.add %a, %b : tensor<4xi32>
  return %c, %s : tensor<4xi1>, tensor<4xi32>
}
""")
    before = _files_under(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("Module.run made a file")

    for name in ("mkdtemp", "mkstemp", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, refuse)
    monkeypatch.setattr(np, "save", refuse)
    calls = []
    native = partita._partita.run_tool_arrays

    def recording(args, inputs):
        calls.append(list(args))
        return native(args, inputs)

    monkeypatch.setattr(partita._partita, "run_tool_arrays", recording)
    rng = np.random.RandomState(3)
    x = rng.randn(8, 16).astype(np.float32)
    w = rng.randn(16, 32).astype(np.float32)
    (y,) = m.run([x, w], check=True)
    (r,) = m.run(seed=2)
    assert _files_under(tmp_path) == before
    assert len(calls) == 2  # the two runs above
    assert not any(flag in call for call in calls
                   for flag in ("--inputs", "--outputs"))
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
    assert y.flags.writeable and y.dtype == np.float32 and y.shape == (8, 32)
    assert r.shape == (8, 32)
    # Fortran-ordered and strided inputs are taken (copied to C order); a
    # wrong dtype is refused, the input named as the caller knows it.
    wide = np.zeros((16, 64), np.float32)
    wide[:, ::2] = w
    (t,) = m.run([np.asfortranarray(x), wide[:, ::2]])
    np.testing.assert_allclose(t, y, rtol=1e-6, atol=1e-6)
    with pytest.raises(partita.PartitaError) as error:
        m.run([x.astype(np.float64), w])
    assert "inputs[0]" in error.value.message
    assert "must be f32[8, 16], got f64[8, 16]" in error.value.message
    with pytest.raises(partita.PartitaError) as error:
        m.run([x])
    assert "given 1 inputs but the program takes 2" in error.value.message
    # Integer and boolean outputs keep their dtypes.
    a = np.array([1, 5, 3, 7], np.int32)
    b = np.array([2, 4, 3, 9], np.int32)
    c, s = masked.run([a, b], check=True)
    assert c.dtype == np.bool_ and c.tolist() == [True, False, False, True]
    assert s.dtype == np.int32 and s.tolist() == [3, 9, 6, 16]

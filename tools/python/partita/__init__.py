"""Partita from Python: compile a program (partita IR, or a JAX function),
read its report, explain its shardings, run it on emulated CPU devices.

    import partita
    m = partita.compile(open("layer.mlir").read(), mesh="data=2,model=4")
    m.report["totals"]            # collectives and bytes per device
    print(m.explain("xw"))        # why a tensor is sharded as it is
    outs = m.run(devices="cpu:8", check=True)   # numpy arrays

    m = partita.from_jax(jax.jit(f, in_shardings=...), x, w)

The compiler and runtime are linked into the extension `partita._partita`
and run in this process: each call is the `partita` command of the same
name (docs/Python.md), so what the CLI accepts, the package accepts, and
every error the CLI reports (with its file:line:col) is raised as
PartitaError. Only numpy is needed; JAX only for from_jax().
"""

import json
import numbers
import os
import pathlib
import shutil
import tempfile

from . import _partita

__all__ = ["PartitaError", "Module", "compile", "from_jax", "run_tool",
           "__version__"]
__version__ = _partita.__version__

_STAGES = ("verified", "propagated", "partitioned")


class PartitaError(Exception):
    """A command failed: `message` is what it printed on stderr (the
    file:line:col diagnostics included), `exit_code` its exit code."""

    def __init__(self, message, exit_code=1):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def run_tool(*args):
    """Runs `partita ARGS...` in this process; returns its stdout as text.
    Raises PartitaError with its stderr when the exit code is not 0."""
    code, out, err = _partita.run_tool([str(a) for a in args])
    return _raise_for(code, out, err, args[0] if args else "partita")


def _raise_for(code, out, err, command):
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    if code != 0:
        raise PartitaError(err.strip() or out.strip() or
                           "partita %s failed" % command, code)
    return out


def run_tool_arrays(args, inputs=None):
    """Runs `partita run ARGS...` in this process with `inputs` (numpy
    arrays, or None for the command's own) and its outputs in memory;
    returns (stdout as text, outputs as numpy arrays). No file is written
    for either."""
    import numpy as np
    given = None
    if inputs is not None:
        given = []
        for value in inputs:
            array = np.ascontiguousarray(np.asarray(value))
            given.append((np.lib.format.dtype_to_descr(array.dtype),
                          list(array.shape), array))
    code, out, err, results = _partita.run_tool_arrays(
        [str(a) for a in args], given)
    text = _raise_for(code, out, err, args[0] if args else "run")
    # Each output's bytes come in a bytearray: numpy wraps it (writable)
    # without copying it again.
    outputs = [np.frombuffer(data, dtype=np.dtype(descr)).reshape(shape)
               for descr, shape, data in results]
    return text, outputs


def _mesh_text(mesh):
    """{"data": 2, "model": 4} -> "data=2,model=4"; sizes must be positive
    integers (2.5 was truncated to 2, True read as 1)."""
    parts = []
    for name, size in dict(mesh).items():
        if isinstance(size, bool) or not isinstance(size, numbers.Integral):
            raise TypeError("mesh axis %r: the size must be an integer, got "
                            "%r" % (name, size))
        if size < 1:
            raise ValueError("mesh axis %r: the size must be positive, got "
                             "%d" % (name, size))
        parts.append("%s=%d" % (name, size))
    return ",".join(parts)


def command_options(command):
    """The options `partita COMMAND` takes, from the one table the CLI's
    parser and --help pages come from (partita/API/CommandOptions.def): a
    dict from each flag to (kind, value name, help); kind is "value",
    "switch", "output", "help" or "note"."""
    return {flag: (kind, value, text)
            for flag, kind, value, text, _ in
            _partita.command_options(command)}


def _flags(command, **given):
    """Keyword arguments as `partita COMMAND`'s flags, by its option table:
    name becomes --name (underscores as dashes); None leaves an option out;
    a switch is given when True; name=False gives --no-name where the
    command has it. A keyword that names no option of the command raises
    TypeError naming the keyword."""
    options = command_options(command)
    flags = []
    for name, value in given.items():
        flag = "--" + name.replace("_", "-")
        kind = options.get(flag, (None,))[0]
        negated = options.get("--no-" + flag[2:], (None,))[0] == "switch"
        if value is None:
            continue
        if kind == "switch":
            if not isinstance(value, bool):
                raise TypeError("%s must be True or False, got %r" %
                                (name, value))
            if value:
                flags.append(flag)
        elif kind == "value":
            if isinstance(value, bool):
                raise TypeError("%s takes %s, got %r" %
                                (name, options[flag][1] or "a value", value))
            flags += [flag, os.fspath(value) if isinstance(value, os.PathLike)
                      else str(value)]
        elif negated and isinstance(value, bool):
            if not value:
                flags.append("--no-" + flag[2:])
        else:
            raise TypeError("partita %s has no option for %s=%r" %
                            (command, name, value))
    return flags


def _pipeline_flags(mesh, rules, interconnect, combine_bytes, strict,
                    overlap=True):
    if mesh is not None and not isinstance(mesh, str):
        mesh = _mesh_text(mesh)
    if combine_bytes is not None:
        combine_bytes = int(combine_bytes)
    return _flags("compile", mesh=mesh, rules=rules,
                  interconnect=interconnect, combine_bytes=combine_bytes,
                  strict=strict, overlap=overlap)


class Module:
    """A compiled program: `text` (the module at `stage`), `report` (the
    compile report as a dict: meshes, collectives with kind, axes, bytes,
    estimated time and reason, totals, memory by role, padding), `source`
    (the program given). Build one with compile() or from_jax()."""

    def __init__(self, source, flags, stage, fusion, path=None):
        self.source = source
        self.stage = stage
        self._flags = list(flags)
        self._fusion = fusion
        self._dir = tempfile.mkdtemp(prefix="partita-")
        if path is None:
            # Messages name the program "<program>", not this file.
            self._path = os.path.join(self._dir, "program.mlir")
            with open(self._path, "w") as f:
                f.write(source)
        else:
            self._path = os.fspath(path)
        report = os.path.join(self._dir, "report.json")
        self.text = self._tool("compile", self._path, "--stage", stage,
                               "--report", report, *self._flags)
        with open(report) as f:
            self.report = json.load(f)

    def _tool(self, *args):
        try:
            return run_tool(*args)
        except PartitaError as error:
            raise self._renamed(error)

    def _renamed(self, error):
        """`error` with this module's temporary file named "<program>"."""
        if self._path.startswith(self._dir):
            error.message = error.message.replace(self._path, "<program>")
            error.args = (error.message,)
        return error

    def __del__(self):
        directory = getattr(self, "_dir", None)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)

    def __repr__(self):
        meshes = ", ".join(
            "@%s<%s>" % (m["name"], ",".join("%s=%d" % (a["name"], a["size"])
                                             for a in m["axes"]))
            for m in self.report.get("meshes", []))
        totals = self.report.get("totals", {})
        return "<partita.Module %s %s: %d collectives, %d bytes per device>" % (
            self.stage, meshes, totals.get("collectives", 0),
            totals.get("bytes_per_device", 0))

    @property
    def devices(self):
        """The number of devices of the program's (first) mesh."""
        count = 1
        for mesh in self.report.get("meshes", [])[:1]:
            for axis in mesh["axes"]:
                count *= axis["size"]
        return count

    @property
    def collectives(self):
        """The report's collectives (a list of dicts)."""
        return self.report.get("collectives", [])

    def explain(self, value=None):
        """Why each tensor (or the one named `value`: a name such as
        "layer0.w1", argN or resultN) is sharded as it is."""
        args = ["explain", self._path] + self._flags
        if value is not None:
            args += ["--value", value]
        return self._tool(*args)

    def show(self, value):
        """Which device holds which block of tensor `value`."""
        return self._tool("show", self._path, "--value", value, *self._flags)

    def html(self, path):
        """Writes the self-contained HTML report of the program to `path`."""
        self._tool("compile", self._path, "--html", os.fspath(path),
                 "-o", os.path.join(self._dir, "html.mlir"), *self._flags)
        return os.fspath(path)

    def save(self, path):
        """Writes the Executable (what partita-exec runs) to `path`."""
        self._tool("compile", self._path, "--stage", "executable", "-o",
                 os.fspath(path), *self._flags,
                 *([] if self._fusion else ["--no-fusion"]))
        return os.fspath(path)

    def run(self, inputs=None, devices=None, check=False, seed=0,
            trace=None):
        """Runs the program on emulated CPU devices ("cpu:N"; default: the
        mesh's device count) and returns its outputs as numpy arrays (the
        global values). `inputs`: a list of numpy arrays, one per argument
        (default: deterministic random inputs from `seed`). With `check`,
        also runs the unpartitioned program on one device and raises
        PartitaError when an output differs. `trace`: write the run's
        timeline (Chrome/Perfetto trace event format) there."""
        if devices is None:
            devices = "cpu:%d" % self.devices
        elif isinstance(devices, bool) or not isinstance(
                devices, (str, numbers.Integral)):
            # True is an int to Python: it ran on cpu:1.
            raise TypeError('devices must be "cpu:N" or a number of CPU '
                            'devices, got %r' % (devices,))
        elif isinstance(devices, numbers.Integral):
            devices = "cpu:%d" % devices
        # Inputs and outputs cross into the runtime in memory: no file is
        # written, and an input's error names it as the caller knows it
        # (inputs[0]).
        args = ["run", self._path, "--devices", devices, "--seed",
                str(int(seed))]
        args += self._flags
        if not self._fusion:
            args.append("--no-fusion")
        if check:
            args.append("--check")
        if trace is not None:
            args += ["--trace", os.fspath(trace)]
        try:
            self.last_run, outputs = run_tool_arrays(args, inputs)
        except PartitaError as error:
            raise self._renamed(error)
        return outputs


def _looks_like_a_path(text):
    """A one-line string naming a file (or a .mlir file that is missing, so
    the error says so) is a path, not program text: "docs/x.mlir" was
    parsed as IR ("custom op 'docs' is unknown")."""
    if "\n" in text or "{" in text:
        return False
    return os.path.isfile(text) or text.endswith(".mlir")


def compile(program, *, mesh=None, rules=None, interconnect=None,
            stage="partitioned", combine_bytes=None, strict=False,
            fusion=True, overlap=True):
    """Compiles `program` — partita IR text, StableHLO text as JAX exports
    it, a path (pathlib.Path, os.PathLike, or a one-line string naming a
    file) to a file of either, or a JAX
    `Lowered` object (jax.jit(f).lower(*args)) — up to `stage`
    ("verified", "propagated" or "partitioned") and returns a Module.
    `mesh` ("data=2,model=4" or {"data": 2, "model": 4}) replaces the
    program's mesh; `rules` maps logical axis names (a preset such as
    "dp+tp", or a JSON rules file); `interconnect` is a link-figures JSON
    file; `overlap=False` runs each collective where it stands instead of
    asynchronously. Errors raise PartitaError with the located message."""
    if stage not in _STAGES:
        raise ValueError("stage must be one of %s, got %r" %
                         (", ".join(_STAGES), stage))
    path = None
    if isinstance(program, str) and _looks_like_a_path(program):
        program = pathlib.Path(program)
    if isinstance(program, os.PathLike):
        path = os.fspath(program)
        with open(path) as f:
            program = f.read()
    elif not isinstance(program, str):
        from ._jax import lowered_text
        program = lowered_text(program)
    flags = _pipeline_flags(mesh, rules, interconnect, combine_bytes, strict,
                            overlap)
    return Module(program, flags, stage, fusion, path)


def from_jax(function, *args, **options):
    """Lowers a jax.jit-wrapped `function` for `args` (arrays or
    jax.ShapeDtypeStruct), exports its StableHLO with the shardings JAX
    was given (in_shardings, out_shardings, sharding constraints) and
    compiles it with compile(**options)."""
    from ._jax import lower
    return compile(lower(function, *args), **options)

#!/usr/bin/env python3
"""The layer check behind tools/check-layers.sh (docs/Overview.md, "Layers").

Fails when a file includes a header of a layer its own layer may not use, or
a CMakeLists.txt names a Partita library of such a layer. Checked:

* every include of a Partita header, in either spelling ("partita/..." and
  <partita/...>), and every include by a relative path that lands on a file
  of the tree ("../common/CommandLine.h", "../../tools/partita/Flags.h"):
  the file it names belongs to the layer whose folder holds it;
* every Partita* name in a CMakeLists.txt that is not a file name: it must
  be a library (or generated target) of the table below, and of an allowed
  layer; a name the table does not know is an error, not skipped;
* the C and C++ files (.h, .cpp, .cu, .cuh, .td) and CMakeLists.txt files of
  every row, lib/ and include/ as well as tools/, test/ and bench/.

System, MLIR and LLVM headers are not this check's business (the
runtime-only build, tools/check-runtime-only.sh, proves that the runtime and
the algebra build without LLVM).

Usage: check_layers.py [ROOT]  (ROOT: the tree to check, default the
repository this script is in; test/Layers/check-layers.test points it at
broken copies).
"""
import os
import re
import sys

LIB_LAYERS = [
    ("sharding", ["include/partita/Sharding", "lib/Sharding"], []),
    ("runtime", ["include/partita/Runtime", "lib/Runtime"], ["sharding"]),
    ("dialect", ["include/partita/Dialect/Partita/IR",
                 "lib/Dialect/Partita/IR"], ["sharding"]),
    ("dialect-utils", ["include/partita/Dialect/Partita/Utils",
                       "lib/Dialect/Partita/Utils"], ["dialect", "sharding"]),
    ("transforms", ["include/partita/Transforms", "lib/Transforms"],
     ["dialect-utils", "dialect", "sharding"]),
    ("analysis", ["include/partita/Analysis", "lib/Analysis"],
     ["dialect-utils", "dialect", "sharding"]),
    ("codegen", ["include/partita/Codegen", "lib/Codegen"],
     ["analysis", "runtime", "dialect-utils", "dialect", "sharding"]),
    ("models", ["include/partita/Models", "lib/Models"],
     ["dialect", "sharding"]),
    ("conversion", ["include/partita/Conversion", "lib/Conversion"],
     ["dialect-utils", "dialect", "sharding"]),
    ("pipelining", ["include/partita/Pipelining", "lib/Pipelining"],
     ["codegen", "models", "transforms", "analysis", "runtime",
      "dialect-utils", "dialect", "sharding"]),
    ("registration", ["include/partita/Partita.h",
                      "include/partita/Registration.h", "lib/Registration"],
     ["transforms", "analysis", "dialect-utils", "dialect", "sharding"]),
    ("driver", ["include/partita/Driver", "lib/Driver"],
     ["registration", "codegen", "analysis", "transforms", "models",
      "conversion", "runtime", "dialect-utils", "dialect", "sharding"]),
    ("planning", ["include/partita/Planning", "lib/Planning"],
     ["driver", "pipelining", "registration", "codegen", "analysis",
      "transforms", "models", "conversion", "runtime", "dialect-utils",
      "dialect", "sharding"]),
    ("reporting", ["include/partita/Reporting", "lib/Reporting"],
     ["driver", "registration", "codegen", "analysis", "transforms",
      "models", "conversion", "runtime", "dialect-utils", "dialect",
      "sharding"]),
    ("trainer", ["include/partita/Trainer", "lib/Trainer"],
     ["reporting", "planning", "driver", "pipelining", "registration", "codegen",
      "analysis", "transforms", "models", "conversion", "runtime",
      "dialect-utils", "dialect", "sharding"]),
]
# The top of lib/: the commands as functions over option structs, and every
# command's options in one table (plain C++17, CommandOptions.cpp).
LIB_LAYERS.append(("api", ["include/partita/API", "lib/API"],
                   [name for name, _, _ in LIB_LAYERS]))
ALL_LIB = [name for name, _, _ in LIB_LAYERS]

# Above lib/: the tools, the test passes partita-opt links, the Python
# extension, the tests and the benchmarks.
OUTER_LAYERS = [
    # The command-line parser both tools use: no LLVM, no MLIR.
    ("tools-common", ["tools/common"], ["runtime", "sharding"]),
    # The runtime's own tool: runtime and algebra only.
    ("tools-exec", ["tools/partita-exec"],
     ["tools-common", "api", "runtime", "sharding"]),
    ("test-passes", ["test/lib"], ALL_LIB),
    ("tools", ["tools/partita", "tools/partita-opt", "tools/CMakeLists.txt"],
     ALL_LIB + ["tools-common", "tools-exec", "test-passes"]),
    ("python", ["tools/python"], ALL_LIB + ["tools-common", "tools"]),
    ("tests", ["test"],
     ALL_LIB + ["tools-common", "tools-exec", "test-passes", "tools",
                "python"]),
    ("bench", ["bench"], ALL_LIB + ["tools-common"]),
]
LAYERS = LIB_LAYERS + OUTER_LAYERS

# Partita headers by their include path.
HEADER_LAYERS = [
    ("partita/Sharding/", "sharding"),
    ("partita/API/", "api"),
    ("partita/Runtime/", "runtime"),
    ("partita/Dialect/Partita/IR/", "dialect"),
    ("partita/Dialect/Partita/Utils/", "dialect-utils"),
    ("partita/Transforms/", "transforms"),
    ("partita/Analysis/", "analysis"),
    ("partita/Codegen/", "codegen"),
    ("partita/Models/", "models"),
    ("partita/Conversion/", "conversion"),
    ("partita/Pipelining/", "pipelining"),
    ("partita/Partita.h", "registration"),
    ("partita/Registration.h", "registration"),
    ("partita/Driver/", "driver"),
    ("partita/Planning/", "planning"),
    ("partita/Reporting/", "reporting"),
    ("partita/Trainer/", "trainer"),
]

# Every Partita* name a CMakeLists.txt may write, and its layer. Generated
# targets (tablegen) belong to the layer whose headers they make.
LIBRARIES = {
    "PartitaSharding": "sharding",
    "PartitaAPI": "api",
    "PartitaCommandOptions": "api",
    "PartitaRuntime": "runtime",
    "PartitaRuntimeMPI": "runtime",
    "PartitaRuntimeMPINccl": "runtime",
    "PartitaRuntimeCUDA": "runtime",
    "PartitaPluginLoader": "runtime",
    "PartitaMpiPlugin": "runtime",
    "PartitaCudaPlugin": "runtime",
    "PartitaDialect": "dialect",
    "PartitaIncGen": "dialect",
    "PartitaDialectUtils": "dialect-utils",
    "PartitaTransforms": "transforms",
    "PartitaTransformsIncGen": "transforms",
    "PartitaAnalysis": "analysis",
    "PartitaCodegen": "codegen",
    "PartitaModels": "models",
    "PartitaStableHLOToPartita": "conversion",
    "PartitaPipelining": "pipelining",
    "PartitaRegistration": "registration",
    "PartitaDriver": "driver",
    "PartitaPlanning": "planning",
    "PartitaReporting": "reporting",
    "PartitaTrainer": "trainer",
    "PartitaToolSupport": "tools-common",
    "PartitaTestPasses": "test-passes",
    "PartitaCommands": "tools",
    "PartitaCli": "tools",
    "PartitaPython": "python",
}
# Names that are not targets: the documentation add_mlir_doc writes for the
# dialect's tablegen files, the name of the passes' registration, and the
# project name of the install test.
NOT_TARGETS = {
    "PartitaOps": "dialect",
    "PartitaAttributes": "dialect",
    "PartitaPasses": "transforms",
    "PartitaConsumer": "tests",
}
# The runtime's rooms (docs/Overview.md, "The runtime's rooms"): a file of
# lib/Runtime/<room> or include/partita/Runtime/<room> may include the
# headers of its own room and of the rooms of a lower level; rooms of one
# level (CUDA and Training) do not see each other. A room the table does not
# know is an error.
RUNTIME_ROOMS = {
    "IO": 0,             # host arrays, .npy, JSON, files, sharded arrays
    "Program": 1,        # the Executable, its instructions and file format
    "Communication": 2,  # the Communicator, in-process collectives
    "CPU": 3,            # the reference backend's kernels
    "Execution": 4,      # the run loop, device blocks, run checks
    "CUDA": 5,           # the GPU backend and its communicators
    "Training": 5,       # the training loop, data, checkpoints
    "Pipeline": 6,       # pipelined steps across stages
    "MPI": 7,            # processes over MPI (and NCCL's bootstrap)
    "Plugins": 8,        # the CUDA and MPI plugins and their loading
}
RUNTIME_FOLDERS = ("lib/Runtime/", "include/partita/Runtime/")

# Fragments the layer test appends to copies of the tree: each breaks a rule
# on purpose.
SKIPPED = ["test/Layers/Inputs"]

SOURCES = (".h", ".cpp", ".cu", ".cuh", ".td")
INCLUDE = re.compile(r'^\s*#\s*include\s*(["<])([^">]+)[">]')
# A Partita* word that is not the start of a file name (PartitaOps.td).
CMAKE_NAME = re.compile(r"\b(Partita[A-Za-z]+)\b(?![.\w])")


def layer_of_path(path):
    """The layer whose folder (the longest that matches) holds `path`."""
    best, best_len = None, -1
    for name, folders, _ in LAYERS:
        for folder in folders:
            if (path == folder or path.startswith(folder + "/")) and \
                    len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def layer_of_header(header):
    for prefix, name in HEADER_LAYERS:
        if header == prefix or (prefix.endswith("/") and
                                header.startswith(prefix)):
            return name
    return None


def room_of_path(path):
    """The runtime room of a file of lib/Runtime or include/partita/Runtime
    ("" for a file beside the rooms, None outside the runtime)."""
    for folder in RUNTIME_FOLDERS:
        if path.startswith(folder):
            rest = path[len(folder):]
            return rest.split("/", 1)[0] if "/" in rest else ""
    return None


def check_room(path, number, header, target_path):
    """An error when runtime file `path` includes (line `number`) a header
    (`target_path`, relative to the root) of a room it may not use."""
    room, target = room_of_path(path), room_of_path(target_path)
    if not room or target is None or target == room:
        return []
    for name in (room, target):
        if name and name not in RUNTIME_ROOMS:
            return [f"{path}:{number}: error: runtime room '{name}' is not "
                    "in the room table of tools/check_layers.py"]
    if target and RUNTIME_ROOMS[target] < RUNTIME_ROOMS[room]:
        return []
    return [f"{path}:{number}: error: runtime room '{room}' includes "
            f"\"{header}\" of room '{target or '(none)'}' (a room uses only "
            "the rooms below it)"]


def files_of(root, folder):
    full = os.path.join(root, folder)
    if os.path.isfile(full):
        yield folder
        return
    for directory, subdirs, names in os.walk(full):
        subdirs.sort()
        for name in sorted(names):
            path = os.path.relpath(os.path.join(directory, name), root)
            if name.endswith(SOURCES) or name == "CMakeLists.txt":
                yield path


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    allowed_of = {name: set([name] + allowed) for name, _, allowed in LAYERS}
    errors = []
    checked = 0
    seen = set()
    for name, folders, _ in LAYERS:
        for folder in folders:
            if not os.path.exists(os.path.join(root, folder)):
                errors.append(f"error: {folder} (layer {name}) does not exist")
                continue
            for path in files_of(root, folder):
                # A file belongs to its deepest row (test/lib, not test).
                if path in seen or layer_of_path(path) != name or any(
                        path.startswith(skip + "/") for skip in SKIPPED):
                    continue
                seen.add(path)
                checked += 1
                errors += check_file(root, path, name, allowed_of[name])
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} violation(s); the allowed "
              "dependencies are in docs/Overview.md", file=sys.stderr)
        return 1
    print(f"check-layers: OK ({checked} files, {len(LAYERS)} layers)")
    return 0


def describe(allowed):
    return " " + " ".join(sorted(allowed)) + " "


def check_file(root, path, layer, allowed):
    errors = []
    with open(os.path.join(root, path), encoding="utf-8",
              errors="replace") as f:
        lines = f.read().split("\n")
    if os.path.basename(path) == "CMakeLists.txt":
        for number, line in enumerate(lines, 1):
            code = line.split("#", 1)[0]
            for match in CMAKE_NAME.finditer(code):
                word = match.group(1)
                target = LIBRARIES.get(word) or NOT_TARGETS.get(word)
                if target is None:
                    errors.append(
                        f"{path}:{number}: error: {word} is no library of "
                        "the layer table in tools/check_layers.py")
                elif target not in allowed:
                    errors.append(
                        f"{path}:{number}: error: layer '{layer}' links "
                        f"{word} of layer '{target}' (allowed:"
                        f"{describe(allowed)})")
        return errors
    for number, line in enumerate(lines, 1):
        match = INCLUDE.match(line)
        if not match:
            continue
        quote, header = match.groups()
        if header.startswith("partita/"):
            if layer == "runtime":
                errors += check_room(path, number, header,
                                     "include/" + header)
            target = layer_of_header(header)
            if target is None:
                errors.append(
                    f"{path}:{number}: error: \"{header}\" belongs to no "
                    "layer in tools/check_layers.py")
                continue
        elif quote == '"':
            # A relative include: the layer of the file it lands on (one the
            # tree does not hold is a system, LLVM or generated header).
            resolved = os.path.normpath(
                os.path.join(os.path.dirname(path), header))
            if resolved.startswith("..") or \
                    not os.path.isfile(os.path.join(root, resolved)):
                continue
            if layer == "runtime":
                errors += check_room(path, number, header, resolved)
            target = layer_of_path(resolved)
            if target is None:
                errors.append(
                    f"{path}:{number}: error: \"{header}\" ({resolved}) "
                    "belongs to no layer in tools/check_layers.py")
                continue
        else:
            continue
        if target not in allowed:
            errors.append(
                f"{path}:{number}: error: layer '{layer}' includes "
                f"\"{header}\" of layer '{target}' (allowed:"
                f"{describe(allowed)})")
    return errors


if __name__ == "__main__":
    sys.exit(main())

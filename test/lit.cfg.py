# lit configuration of Partita's compiler tests.
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "Partita"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.partita_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "tools", "Inputs", "install", "lib", "python"]

config.substitutions.append(("%partita_src", config.partita_src_root))
config.substitutions.append(("%partita_bin", config.partita_tools_dir))
config.substitutions.append(("%examples", os.path.join(config.partita_src_root, "docs", "examples")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# The GEMM kernel a run uses: OpenBLAS's forced kernel and the runtime's own
# GEMM reach the tests, so the suite can be run under each of them
# (tools/check-kernels.sh; docs/Robustness.md, "Every GEMM kernel").
for variable in ("OPENBLAS_CORETYPE", "PARTITA_GEMM"):
    if variable in os.environ:
        config.environment[variable] = os.environ[variable]
# Progress lines (partita/Sharding/Progress.h) start after a second, which
# a slow machine reaches where a fast one does not: the tests see none
# unless they ask (PARTITA_PROGRESS_AFTER=0).
config.environment["PARTITA_PROGRESS_AFTER"] = "1e9"
llvm_config.add_tool_substitutions(
    ["partita-opt", "partita", "partita-exec"], [config.partita_tools_dir])

# The multi-process runtime's tests run under mpirun (OpenMPI as root needs
# --allow-run-as-root; --oversubscribe lets 4 processes share 2 cores).
if config.partita_have_mpi in ("ON", "1", "TRUE") and config.partita_mpiexec:
    config.available_features.add("mpi")
    # Each run gets a session directory of its own (test/tools/mpirun.sh).
    config.substitutions.append(
        ("%mpirun", "sh " + os.path.join(config.partita_src_root, "test",
                                         "tools", "mpirun.sh") + " " +
         config.partita_mpiexec + " --oversubscribe --allow-run-as-root"))

# The HTML report is checked in headless Chromium (Debian's `chromium`;
# tools/setup.sh installs it): the page must load without script errors.
for browser in ("chromium", "chromium-browser", "google-chrome"):
    path = shutil.which(browser)
    if path:
        config.available_features.add("chromium")
        config.substitutions.append(
            ("%chromium", path + " --headless --no-sandbox --disable-gpu "
             "--no-first-run --enable-logging=stderr --v=0"))
        break

//===- Extension.cpp - partita._partita, the Python extension -------------===//
//
// The whole compiler and CPU runtime linked into one Python module. It
// exposes one call, run_tool(args): `partita ARGS...` run in this process
// with its stdout and stderr captured, so that the package (partita/
// __init__.py, docs/Python.md) drives exactly the commands the CLI has.
// Output is captured at the file-descriptor level (the commands print
// through LLVM's streams and stdio alike); one call at a time holds the
// descriptors, the GIL released while it runs.
//
// Built with RTTI and exceptions (pybind11 needs both); it includes no MLIR
// or LLVM header, only Commands.h.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace py = pybind11;

namespace {

/// Sends file descriptor `fd` to a temporary file until read().
class Capture {
public:
  explicit Capture(int fd) : fd(fd) {
    file = std::tmpfile();
    saved = dup(fd);
    if (!file || saved < 0 || dup2(fileno(file), fd) < 0)
      throw std::runtime_error("partita: cannot capture the tool's output");
  }
  /// Restores the descriptor and returns what was written to it.
  std::string read() {
    std::string text;
    if (saved >= 0) {
      dup2(saved, fd);
      close(saved);
      saved = -1;
    }
    if (!file)
      return text;
    std::rewind(file);
    char buffer[65536];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
      text.append(buffer, got);
    std::fclose(file);
    file = nullptr;
    return text;
  }
  ~Capture() { read(); }
  Capture(const Capture &) = delete;
  Capture &operator=(const Capture &) = delete;

private:
  int fd;
  int saved = -1;
  std::FILE *file = nullptr;
};

std::mutex toolMutex;

std::tuple<int, py::bytes, py::bytes>
runTool(const std::vector<std::string> &args) {
  int code = 0;
  std::string out, err;
  {
    py::gil_scoped_release released;
    std::lock_guard<std::mutex> lock(toolMutex);
    partita::cli::flushToolStreams();
    Capture capturedOut(STDOUT_FILENO), capturedErr(STDERR_FILENO);
    code = partita::cli::runTool(args);
    partita::cli::flushToolStreams();
    out = capturedOut.read();
    err = capturedErr.read();
  }
  return {code, py::bytes(out), py::bytes(err)};
}

} // namespace

PYBIND11_MODULE(_partita, m) {
  m.doc() = "Partita's compiler and CPU runtime (use the partita package)";
  m.def("run_tool", &runTool, py::arg("args"),
        "Runs `partita ARGS...` in this process; returns (exit code, "
        "stdout bytes, stderr bytes).");
  m.attr("__version__") = PARTITA_VERSION;
}

//===- Extension.cpp - partita._partita, the Python extension -------------===//
//
// The whole compiler and CPU runtime linked into one Python module. It
// exposes run_tool(args): `partita ARGS...` run in this process with its
// stdout and stderr captured, so that the package (partita/__init__.py,
// docs/Python.md) drives exactly the commands the CLI has; and
// run_tool_arrays(args, inputs), the same with a run's inputs and outputs
// as numpy arrays in memory (no files: each input's bytes are copied once
// out of its buffer, each output's once into a new array).
// Output is captured at the file-descriptor level (the commands print
// through LLVM's streams and stdio alike); one call at a time holds the
// descriptors, the GIL released while it runs.
//
// Built with RTTI and exceptions (pybind11 needs both); it includes no MLIR
// or LLVM header, only Commands.h.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <cstring>
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

/// runTool with captured output; `arrays` as partita::cli::runTool takes.
std::tuple<int, py::bytes, py::bytes>
runCaptured(const std::vector<std::string> &args,
            partita::cli::ToolArrays *arrays) {
  int code = 0;
  std::string out, err;
  {
    py::gil_scoped_release released;
    std::lock_guard<std::mutex> lock(toolMutex);
    partita::cli::flushToolStreams();
    Capture capturedOut(STDOUT_FILENO), capturedErr(STDERR_FILENO);
    code = partita::cli::runTool(args, arrays);
    partita::cli::flushToolStreams();
    out = capturedOut.read();
    err = capturedErr.read();
  }
  return {code, py::bytes(out), py::bytes(err)};
}

std::tuple<int, py::bytes, py::bytes>
runTool(const std::vector<std::string> &args) {
  return runCaptured(args, nullptr);
}

/// `partita ARGS...` with the run's inputs and outputs in memory. `inputs`:
/// None (the command's own inputs: random ones from --seed) or a list of
/// (descr, C-contiguous numpy array) pairs, descr the array's .npy type
/// string (numpy.lib.format.dtype_to_descr). Returns (exit code, stdout,
/// stderr, outputs), each output a new numpy array.
std::tuple<int, py::bytes, py::bytes, py::list>
runToolArrays(const std::vector<std::string> &args, py::object inputs) {
  partita::cli::ToolArrays arrays;
  if (!inputs.is_none()) {
    arrays.hasInputs = true;
    for (py::handle item : inputs.cast<py::list>()) {
      auto pair = item.cast<py::tuple>();
      auto array = pair[1].cast<py::array>();
      if (!(array.flags() & py::array::c_style))
        throw std::invalid_argument("partita: inputs must be C-contiguous");
      partita::cli::ToolArray given;
      given.descr = pair[0].cast<std::string>();
      for (py::ssize_t d = 0; d < array.ndim(); ++d)
        given.shape.push_back(static_cast<int64_t>(array.shape(d)));
      const auto *data = static_cast<const uint8_t *>(array.data());
      given.bytes.assign(data, data + array.nbytes());
      arrays.inputs.push_back(std::move(given));
    }
  }
  auto [code, out, err] = runCaptured(args, &arrays);
  py::list outputs;
  for (partita::cli::ToolArray &output : arrays.outputs) {
    std::vector<py::ssize_t> shape(output.shape.begin(), output.shape.end());
    py::array array(py::dtype(output.descr), shape);
    if (static_cast<size_t>(array.nbytes()) != output.bytes.size())
      throw std::runtime_error("partita: an output's bytes do not match its "
                               "shape");
    if (!output.bytes.empty())
      std::memcpy(array.mutable_data(), output.bytes.data(),
                  output.bytes.size());
    outputs.append(std::move(array));
  }
  return {code, out, err, outputs};
}

} // namespace

PYBIND11_MODULE(_partita, m) {
  m.doc() = "Partita's compiler and CPU runtime (use the partita package)";
  m.def("run_tool", &runTool, py::arg("args"),
        "Runs `partita ARGS...` in this process; returns (exit code, "
        "stdout bytes, stderr bytes).");
  m.def("run_tool_arrays", &runToolArrays, py::arg("args"), py::arg("inputs"),
        "Runs `partita run ARGS...` in this process with the inputs given "
        "as [(descr, array)] (or None) and returns (exit code, stdout "
        "bytes, stderr bytes, outputs as numpy arrays).");
  m.attr("__version__") = PARTITA_VERSION;
}

//===- Extension.cpp - partita._partita, the Python extension -------------===//
//
// The whole compiler and CPU runtime linked into one Python module. It
// exposes run_tool(args): `partita ARGS...` run in this process with its
// stdout and stderr captured, so that the package (partita/__init__.py,
// docs/Python.md) drives exactly the commands the CLI has; and
// run_tool_arrays(args, inputs), the same with a run's inputs and outputs
// in memory (no files: each input's bytes are copied once out of its
// buffer, each output's once into a bytearray that numpy then wraps).
// Output is captured at the file-descriptor level (the commands print
// through LLVM's streams and stdio alike); one call at a time holds the
// descriptors, the GIL released while it runs.
//
// command_options(command) reads the commands' option table
// (partita/API/CommandOptions.def), the one the CLI's parser and help pages
// come from: the package turns keyword arguments into flags by it.
//
// Built with RTTI and exceptions (pybind11 needs both); it includes no MLIR
// or LLVM header, only Commands.h and the option table's header.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "partita/API/CommandOptions.h"

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
/// (descr, shape, buffer) triples: descr the array's .npy type string
/// (numpy.lib.format.dtype_to_descr), buffer a C-contiguous object with
/// the buffer protocol (a numpy array). Returns (exit code, stdout, stderr,
/// outputs), each output a (descr, shape, bytearray) triple. Only the
/// buffer protocol is used, not numpy's C structures, so one build works
/// with numpy 1 and 2 (pybind11's numpy API before 2.12 reads numpy 2's
/// arrays wrong).
std::tuple<int, py::bytes, py::bytes, py::list>
runToolArrays(const std::vector<std::string> &args, py::object inputs) {
  partita::cli::ToolArrays arrays;
  if (!inputs.is_none()) {
    arrays.hasInputs = true;
    for (py::handle item : inputs.cast<py::list>()) {
      auto triple = item.cast<py::tuple>();
      partita::cli::ToolArray given;
      given.descr = triple[0].cast<std::string>();
      given.shape = triple[1].cast<std::vector<int64_t>>();
      py::buffer_info buffer = triple[2].cast<py::buffer>().request();
      const auto *data = static_cast<const uint8_t *>(buffer.ptr);
      given.bytes.assign(data, data + buffer.size * buffer.itemsize);
      arrays.inputs.push_back(std::move(given));
    }
  }
  auto [code, out, err] = runCaptured(args, &arrays);
  py::list outputs;
  for (partita::cli::ToolArray &output : arrays.outputs)
    outputs.append(py::make_tuple(
        output.descr, output.shape,
        py::bytearray(reinterpret_cast<const char *>(output.bytes.data()),
                      output.bytes.size())));
  return {code, out, err, outputs};
}

/// The options `partita COMMAND` takes: (flag, kind, value name, help,
/// listed) per option.
py::list commandOptions(const std::string &command) {
  static const char *const kinds[] = {"value", "switch", "output", "help",
                                      "note"};
  py::list options;
  for (const partita::api::OptionRow *row :
       partita::api::commandOptions(command))
    options.append(py::make_tuple(
        row->flag(), kinds[static_cast<int>(row->kind)], row->valueName(),
        std::string(row->help), row->listed()));
  return options;
}

} // namespace

PYBIND11_MODULE(_partita, m) {
  m.doc() = "Partita's compiler and CPU runtime (use the partita package)";
  m.def("run_tool", &runTool, py::arg("args"),
        "Runs `partita ARGS...` in this process; returns (exit code, "
        "stdout bytes, stderr bytes).");
  m.def("run_tool_arrays", &runToolArrays, py::arg("args"), py::arg("inputs"),
        "Runs `partita run ARGS...` in this process with the inputs given "
        "as [(descr, shape, buffer)] (or None) and returns (exit code, "
        "stdout bytes, stderr bytes, outputs as [(descr, shape, "
        "bytearray)]).");
  m.def("command_options", &commandOptions, py::arg("command"),
        "The options `partita COMMAND` takes, from the CLI's option table: "
        "[(flag, kind, value name, help, listed)].");
  m.attr("__version__") = PARTITA_VERSION;
}

//===- RunSupport.cpp - Inputs, outputs and checks of a run ---------------===//

#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/IO/Json.h"
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace partita;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The whole of `text` as a decimal integer; false when anything else.
bool parseWholeInteger(const std::string &text, long long &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

} // namespace

std::string DeviceSpec::toString() const {
  return (kind == Kind::Cuda ? "cuda:" : "cpu:") + std::to_string(count);
}

Expected<DeviceSpec> partita::parseDeviceSpec(const std::string &text) {
  DeviceSpec spec;
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  long long count = 0;
  if (colon == std::string::npos || (kind != "cpu" && kind != "cuda") ||
      !parseWholeInteger(text.substr(colon + 1), count) || count < 1)
    return Status::error("--devices must be cpu:N or cuda:N (e.g. cpu:8), "
                         "got '" +
                         text + "'");
  // Every device of a process is a thread with its own buffers; more than
  // this in one process is a typo, or a job for several processes.
  if (count > kMaxDevicesPerProcess)
    return Status::error("--devices " + text + ": at most " +
                         std::to_string(kMaxDevicesPerProcess) +
                         " devices in one process (run more as several "
                         "processes: mpirun -np P ... --distributed)");
  spec.kind = kind == "cuda" ? DeviceSpec::Kind::Cuda : DeviceSpec::Kind::Cpu;
  spec.count = count;
  return spec;
}

Status partita::checkDeviceCount(const std::string &meshDescription,
                                 int64_t meshDevices, int64_t requested) {
  if (meshDevices == requested)
    return Status::success();
  return Status::error(meshDescription + " has " + std::to_string(meshDevices) +
                       " devices but --devices asks for " +
                       std::to_string(requested));
}

Expected<int64_t> partita::parseTimeoutMilliseconds(const std::string &text) {
  char *end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  // A year at most: larger values would overflow the milliseconds.
  if (text.empty() || !end || *end || !(seconds > 0) ||
      !(seconds <= 366 * 86400.0))
    return Status::error("--timeout must be a positive number of seconds "
                         "(a year at most), got '" +
                         text + "'");
  return static_cast<int64_t>(seconds * 1000 + 0.5);
}

Expected<uint64_t> partita::parseSeed(const std::string &text) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  // The range partita train and partita-exec train take too.
  if (text.empty() || text[0] == '-' || errno != 0 || !end || *end ||
      value > static_cast<unsigned long long>(INT64_MAX))
    return Status::error(
        "--seed must be an integer in [0, 9223372036854775807], "
        "got '" +
        text + "'");
  return static_cast<uint64_t>(value);
}

std::vector<std::string> partita::splitCommaList(const std::string &text) {
  std::vector<std::string> list;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos)
      comma = text.size();
    list.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return list;
}

Status partita::checkInput(const Executable &program, size_t index, DType dtype,
                           const std::vector<int64_t> &shape,
                           const std::string &what) {
  const ExecutableValue &input = program.inputs[index];
  DType wanted = program.slots[input.slot].dtype;
  if (dtype != wanted || shape != input.globalShape)
    return Status::error(what + ": input " + std::to_string(index) + " (" +
                         input.name + ") must be " + dtypeName(wanted) +
                         shapeText(input.globalShape) + ", got " +
                         dtypeName(dtype) + shapeText(shape));
  return Status::success();
}

Status partita::checkInput(const Executable &program, size_t index,
                           const HostArray &array, const std::string &what) {
  return checkInput(program, index, array.dtype, array.shape, what);
}

Expected<std::vector<std::string>>
partita::inputPaths(const Executable &program, const std::string &paths) {
  std::vector<std::string> list = splitCommaList(paths);
  if (list.size() != program.inputs.size())
    return Status::error("--inputs gives " + std::to_string(list.size()) +
                         " paths but the program takes " +
                         std::to_string(program.inputs.size()) + " inputs");
  return list;
}

Expected<std::vector<HostArray>> partita::readInputs(const Executable &program,
                                                     const std::string &paths) {
  Expected<std::vector<std::string>> listed = inputPaths(program, paths);
  if (!listed)
    return listed.status();
  const std::vector<std::string> &list = *listed;
  std::vector<HostArray> inputs;
  for (size_t i = 0; i < list.size(); ++i) {
    std::error_code error;
    Expected<HostArray> array = std::filesystem::is_directory(list[i], error)
                                    ? readShardedArray(list[i])
                                    : readNpy(list[i]);
    if (!array)
      return array.status();
    if (Status status = checkInput(program, i, *array, list[i]); !status.ok())
      return status;
    inputs.push_back(std::move(*array));
  }
  return inputs;
}

Status partita::writeOutputs(const std::string &directory,
                             const std::vector<HostArray> &outputs) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    return Status::error("cannot create '" + directory +
                         "': " + error.message());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (Status status = writeNpy(
            directory + "/result_" + std::to_string(i) + ".npy", outputs[i]);
        !status.ok())
      return status;
  return Status::success();
}

Tolerance partita::toleranceOf(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return {1e-10, 1e-12};
  case DType::F32:
    return {1e-4, 1e-5};
  case DType::BF16:
  case DType::F16:
    return {2e-2, 1e-2};
  default:
    return {0, 0};
  }
}

void partita::compareElement(Comparison &result, double got, double want,
                             Tolerance tolerance, double slack) {
  double diff = std::fabs(got - want);
  if (std::isnan(got) || std::isnan(want))
    diff = std::isnan(got) && std::isnan(want) ? 0 : INFINITY;
  result.maxAbsError = std::max(result.maxAbsError, diff);
  if (std::fabs(want) >= 1e-3 * result.scale)
    result.maxRelError = std::max(result.maxRelError, diff / std::fabs(want));
  if (diff > tolerance.absolute * result.scale +
                 tolerance.relative * std::fabs(want) + slack)
    result.within = false;
}

Comparison partita::compareArrays(const HostArray &got, const HostArray &want,
                                  double slack) {
  Comparison result;
  if (got.dtype != want.dtype || got.shape != want.shape) {
    result.sameType = false;
    result.within = false;
    return result;
  }
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double value = elementAsDouble(want, i);
    if (!std::isnan(value))
      result.scale = std::max(result.scale, std::fabs(value));
  }
  Tolerance tolerance = toleranceOf(got.dtype);
  for (int64_t i = 0; i < got.numElements(); ++i)
    compareElement(result, elementAsDouble(got, i), elementAsDouble(want, i),
                   tolerance, slack);
  return result;
}

std::string partita::describeComparison(const std::string &name,
                                        const Comparison &comparison) {
  if (!comparison.sameType)
    return name + ": MISMATCH in shape or dtype";
  char text[160];
  std::snprintf(text, sizeof(text),
                ": max abs error %.3g, max rel error %.3g: %s",
                comparison.maxAbsError, comparison.maxRelError,
                comparison.within ? "ok" : "MISMATCH");
  return name + text;
}

Expected<std::vector<double>>
partita::readToleranceSlack(const std::string &directory, size_t count) {
  // {"spread": [d0, d1, ...]}: the largest difference the producer itself
  // shows between two ways of computing each result (JAX sharded and on
  // one device); a result that sensitive to summation order is allowed
  // four times that much more.
  std::vector<double> slack(count, 0.0);
  std::string tolerancePath = directory + "/tolerance.json";
  if (!std::filesystem::exists(tolerancePath))
    return slack;
  std::FILE *file = std::fopen(tolerancePath.c_str(), "rb");
  std::string text;
  if (file) {
    char buffer[4096];
    size_t n;
    while (text.size() < (1u << 20) &&
           (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
      text.append(buffer, n);
    std::fclose(file);
  }
  Expected<Json> parsed = parseJson(text);
  const Json *list = nullptr;
  if (parsed && parsed->is_object() && parsed->contains("spread"))
    list = &(*parsed)["spread"];
  if (!list || !list->is_array() || list->size() != count)
    return Status::error(tolerancePath +
                         ": expected {\"spread\": [...]} with one number "
                         "per result");
  for (size_t i = 0; i < count; ++i) {
    const Json &value = (*list)[i];
    if (!value.is_number() || !(value.get<double>() >= 0))
      return Status::error(tolerancePath + ": spread " + std::to_string(i) +
                           " is not a number >= 0");
    slack[i] = 4 * value.get<double>();
  }
  return slack;
}

Status partita::expectOutputs(const std::string &directory,
                              const Executable &program,
                              const std::vector<HostArray> &outputs,
                              std::string &report) {
  Expected<std::vector<double>> slack =
      readToleranceSlack(directory, outputs.size());
  if (!slack)
    return slack.status();
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string path = directory + "/result_" + std::to_string(i) + ".npy";
    Expected<HostArray> want = readNpy(path);
    if (!want)
      return want.status();
    Comparison comparison = compareArrays(outputs[i], *want, (*slack)[i]);
    report += "  expect " +
              describeComparison(program.outputs[i].name, comparison) + "\n";
    ok &= comparison.within;
  }
  if (!ok)
    return Status::error("the outputs do not match the expected ones in '" +
                         directory + "'");
  return Status::success();
}

//===- Interconnect.cpp - Reading interconnect specs ----------------------===//

#include "partita/Transforms/Interconnect.h"
#include "partita/Sharding/TextLimits.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace partita;

namespace {

Status readLink(const llvm::json::Value &value, const std::string &where,
                AxisLink &link) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return Status::error(where + " must be an object with bandwidth_GBps and "
                                 "latency_us");
  for (const auto &[key, entry] : *object) {
    std::optional<double> number = entry.getAsNumber();
    if (key != "bandwidth_GBps" && key != "latency_us")
      return Status::error(where + ": unknown field '" + key.str() +
                           "'; expected bandwidth_GBps or latency_us");
    if (!number)
      return Status::error(where + "." + key.str() + " must be a number");
    // Physical ranges: a link faster than 100 TB/s or slower than 1 kB/s,
    // or a latency over a minute, is a typo (1e309 parsed as infinity and
    // every collective then cost nothing).
    if (key == "bandwidth_GBps") {
      if (!(*number >= 1e-6 && *number <= 1e5))
        return Status::error(where + ".bandwidth_GBps must be a number of "
                                     "GB/s in [1e-6, 1e5]");
      link.bandwidthGBps = *number;
    } else {
      if (!(*number >= 0 && *number <= 6e7))
        return Status::error(where + ".latency_us must be a number of "
                                     "microseconds in [0, 6e7]");
      link.latencyUs = *number;
    }
  }
  return Status::success();
}

} // namespace

Expected<Interconnect> partita::parseInterconnect(llvm::StringRef json) {
  if (Status deep = checkJsonNesting(std::string_view(json.data(), json.size()));
      !deep.ok())
    return Status::error("invalid JSON: " + deep.message());
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return Status::error("invalid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return Status::error("an interconnect spec is a JSON object with \"axes\"");
  Interconnect interconnect;
  // The default first: axes inherit the fields they do not give.
  if (const llvm::json::Value *fallback = root->get("default"))
    if (Status status =
            readLink(*fallback, "default", interconnect.defaultLink);
        !status.ok())
      return status;
  for (const auto &[key, value] : *root) {
    if (key == "default") {
      continue;
    } else if (key == "axes") {
      const llvm::json::Object *axes = value.getAsObject();
      if (!axes)
        return Status::error("\"axes\" must map axis names to links");
      for (const auto &[axis, link] : *axes) {
        AxisLink parsedLink = interconnect.defaultLink;
        if (Status status = readLink(link, "axes." + axis.str(), parsedLink);
            !status.ok())
          return status;
        interconnect.axes[axis.str()] = parsedLink;
      }
    } else if (key == "intra_node" || key == "inter_node") {
      // The cluster file's spelling (partita calibrate and plan): the link
      // inside a node is every axis's default, the one between nodes that
      // of the axes whose groups span several nodes.
      AxisLink link = interconnect.defaultLink;
      if (Status status = readLink(value, key.str(), link); !status.ok())
        return status;
      // A cluster's link is given whole (partita calibrate writes both);
      // only the per-axis spelling inherits from "default".
      const llvm::json::Object *object = value.getAsObject();
      if (!object->get("bandwidth_GBps") || !object->get("latency_us"))
        return Status::error(key.str() +
                             " needs both bandwidth_GBps and latency_us");
      if (key == "intra_node")
        interconnect.defaultLink = link;
      else
        interconnect.interNode = link;
    } else if (key == "devices_per_node") {
      std::optional<int64_t> count = value.getAsInteger();
      if (!count || *count < 1)
        return Status::error("devices_per_node must be a positive integer");
      interconnect.devicesPerNode = *count;
    } else if (key == "flops_per_second" || key == "memory_bytes") {
      // The cluster's compute and memory: partita plan's, not the cost of
      // collectives; checked here so that every command refuses the same
      // file (1e309 parses as infinity).
      std::optional<double> number = value.getAsNumber();
      if (!number || !(*number > 0) || !std::isfinite(*number))
        return Status::error("'" + key.str() + "' must be a positive number");
    } else if (key == "calibration") {
      // What partita calibrate measured: partita plan reads it.
      if (!value.getAsObject())
        return Status::error("'calibration' must be an object (as partita "
                             "calibrate writes it)");
    } else if (key == "combine_bytes") {
      std::optional<int64_t> bytes = value.getAsInteger();
      if (!bytes || *bytes < 0)
        return Status::error("combine_bytes must be a non-negative integer "
                             "(bytes per device; 0: no combining)");
      interconnect.combineBytes = *bytes;
    } else {
      return Status::error(
          "unknown field '" + key.str() +
          "'; expected \"axes\", \"default\", \"combine_bytes\" or a "
          "cluster file's \"devices_per_node\", \"intra_node\", "
          "\"inter_node\", \"flops_per_second\", \"memory_bytes\", "
          "\"calibration\"");
    }
  }
  return interconnect;
}

Expected<std::string> partita::readJsonFile(llvm::StringRef path) {
  constexpr uint64_t kMaxBytes = uint64_t(64) << 20;
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return Status::error(error.message());
  if (llvm::sys::fs::is_directory(status))
    return Status::error("is a directory");
  if (!llvm::sys::fs::is_regular_file(status))
    return Status::error("is not a regular file (a device or a FIFO)");
  if (status.getSize() > kMaxBytes)
    return Status::error("is larger than 64 MiB");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file)
    return Status::error(file.getError().message());
  return (*file)->getBuffer().str();
}

Expected<Interconnect> partita::readInterconnect(llvm::StringRef path) {
  Expected<std::string> text = readJsonFile(path);
  if (!text)
    return Status::error("cannot read interconnect spec '" + path.str() +
                         "': " + text.status().message());
  Expected<Interconnect> interconnect = parseInterconnect(*text);
  if (!interconnect)
    return Status::error(path.str() + ": " + interconnect.status().message());
  return interconnect;
}

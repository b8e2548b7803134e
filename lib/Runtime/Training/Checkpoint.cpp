//===- Checkpoint.cpp - Train state on disk, and back ---------------------===//
//
// See Checkpoint.h and docs/Training.md, "Checkpoints".
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Training/Checkpoint.h"

#include "partita/Runtime/Communication/ProcessGroup.h"
#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/Json.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <cmath>
#include <filesystem>
#include <set>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

using namespace partita;
namespace fs = std::filesystem;

namespace {

constexpr const char *kMetaFile = "checkpoint.json";

std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld",
                static_cast<long long>(step));
  return name;
}

/// The step a checkpoint directory's name says, or -1.
int64_t stepOfName(const std::string &name) {
  if (name.size() != 13 || name.compare(0, 5, "step-") != 0)
    return -1;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

/// The entries of `root` (with `recursive`, every file below it), without
/// throwing: an entry that cannot be read ends the listing.
std::vector<fs::path> listDirectory(const std::string &root, bool recursive) {
  std::vector<fs::path> paths;
  std::error_code error;
  if (recursive) {
    fs::recursive_directory_iterator it(root, error), end;
    for (; !error && it != end; it.increment(error))
      if (it->is_regular_file(error))
        paths.push_back(it->path());
  } else {
    fs::directory_iterator it(root, error), end;
    for (; !error && it != end; it.increment(error))
      paths.push_back(it->path());
  }
  return paths;
}

/// Makes a directory's entries (a rename, a new file) durable.
void syncDirectory(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return;
  ::fsync(fd);
  ::close(fd);
}

/// Writes `value`'s shard files straight from the devices' blocks (each
/// distinct shard from its lowest-numbered holder) and its index.
Status writeBlocks(const std::string &path, const Mesh &mesh,
                   const CheckpointValue &value) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error)
    return Status::error(path + ": cannot create: " + error.message());
  std::vector<int64_t> devices(value.blocks.size());
  for (size_t d = 0; d < devices.size(); ++d)
    devices[d] = static_cast<int64_t>(d);
  return writeShardFilesOfDevices(path, mesh, value.sharding, value.dtype,
                                  value.globalShape, value.blocks, devices,
                                  /*writeIndex=*/true, FileSync::Caller);
}

/// Flushes everything written to the file system holding `path` (one
/// syncfs for a checkpoint's files, instead of an fsync per file).
Status syncFileSystem(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return Status::error("cannot open '" + path + "': " + std::strerror(errno));
  int result = ::syncfs(fd);
  int saved = errno;
  ::close(fd);
  if (result != 0)
    return Status::error("cannot sync '" + path + "': " +
                         std::strerror(saved));
  return Status::success();
}

Expected<std::string> readWhole(const std::string &path) {
  if (Status regular = requireRegularFile(path); !regular.ok())
    return Status::error(path + ": " + regular.message());
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::error("cannot read '" + path + "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

std::string hex(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", value);
  return text;
}

uint32_t checksumOf(const std::string &bytes) {
  return crc32c(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
}

/// Test hook: PARTITA_DEBUG_KILL_CHECKPOINT=N kills the process (SIGKILL)
/// halfway through writing the checkpoint of step N.
bool killWhileWriting(int64_t step) {
  const char *spec = std::getenv("PARTITA_DEBUG_KILL_CHECKPOINT");
  return spec && std::strtoll(spec, nullptr, 10) == step;
}

Json metaJson(const CheckpointMeta &meta) {
  Json json = Json::object();
  json["version"] = kCheckpointVersion;
  json["step"] = meta.step;
  json["model"] = meta.model;
  json["mesh"] = meta.mesh;
  json["rules"] = meta.rules;
  json["seed"] = meta.seed;
  json["losses"] = meta.losses;
  json["seconds"] = meta.seconds;
  return json;
}

} // namespace

std::vector<std::string> partita::checkpointKeys(const Executable &program,
                                                 size_t updated) {
  std::map<std::string, int> seen;
  std::vector<std::string> keys;
  for (size_t k = 0; k < updated && k < program.inputs.size(); ++k) {
    std::string role =
        program.inputs[k].role.empty() ? "state" : program.inputs[k].role;
    keys.push_back(role + "/" + std::to_string(seen[role]++));
  }
  return keys;
}

namespace {

/// An empty `.step-N.partial` under `root` (a stale one removed).
Status preparePartial(const std::string &root, const std::string &partial) {
  std::error_code error;
  fs::create_directories(root, error);
  if (error)
    return Status::error("cannot create '" + root + "': " + error.message());
  fs::remove_all(partial, error);
  fs::create_directories(partial, error);
  if (error)
    return Status::error("cannot create '" + partial +
                         "': " + error.message());
  return Status::success();
}

/// Writes every tensor's files into `partial` — with `devices`, only the
/// shards whose lowest holder is one of them, and the indexes only when
/// `writeIndex` — and returns checkpoint.json's "tensors".
Expected<Json>
writeTensorFiles(const std::string &partial, const std::string &finalPath,
                 const CheckpointState &state,
                 const std::vector<int64_t> *devices, bool writeIndex,
                 std::vector<std::map<std::string, uint32_t>> *crcs = nullptr) {
  if (crcs)
    crcs->assign(state.values.size(), {});
  Json tensors = Json::array();
  for (size_t t = 0; t < state.values.size(); ++t) {
    const CheckpointValue &value = state.values[t];
    if (t == state.values.size() / 2 && killWhileWriting(state.meta.step))
      std::raise(SIGKILL);
    std::string directory = value.key;
    std::replace(directory.begin(), directory.end(), '/', '.');
    std::string path = partial + "/" + directory;
    // Synced all at once by the caller. A whole value is laid out as its
    // sharding says (a partial sum, which has no such layout, as one file).
    bool partialSum = value.sharding.partialKind != PartialKind::None;
    Status written = Status::success();
    if (value.whole) {
      if (writeIndex)
        written = writeShardedArray(
            path, value.blocks[0], partialSum ? Mesh() : state.mesh,
            partialSum ? Sharding::replicated(
                             static_cast<int>(value.globalShape.size()))
                       : value.sharding,
            FileSync::Caller);
    } else if (!devices) {
      written = writeBlocks(path, state.mesh, value);
    } else {
      std::error_code error;
      fs::create_directories(path, error);
      written =
          error
              ? Status::error(path + ": cannot create: " + error.message())
              : writeShardFilesOfDevices(path, state.mesh, value.sharding,
                                         value.dtype, value.globalShape,
                                         value.blocks, *devices,
                                         /*writeIndex=*/false, FileSync::Caller,
                                         crcs ? &(*crcs)[t] : nullptr);
    }
    if (!written.ok())
      return Status::error("checkpoint '" + finalPath + "': " + value.key +
                           ": " + written.message());
    Json tensor = Json::object();
    tensor["key"] = value.key;
    tensor["dtype"] = dtypeName(value.dtype);
    tensor["shape"] = value.globalShape;
    tensor["directory"] = directory;
    tensors.push_back(tensor);
  }
  return tensors;
}

/// Once every file of `partial` is on disk: checkpoint.json (`json` with
/// every file's size and checksum, read back), synced, the directory
/// renamed into place and the oldest beyond `keep` removed. Returns the
/// checkpoint's bytes.
Expected<int64_t> commitPartial(const std::string &root,
                                const std::string &name, Json json, int keep) {
  std::error_code error;
  std::string finalPath = root + "/" + name;
  std::string partial = root + "/." + name + ".partial";
  Json files = Json::array();
  int64_t total = 0;
  std::vector<std::string> paths;
  for (const fs::path &file : listDirectory(partial, true))
    paths.push_back(fs::relative(file, partial, error).string());
  std::sort(paths.begin(), paths.end());
  for (const std::string &relative : paths) {
    Expected<std::string> bytes = readWhole(partial + "/" + relative);
    if (!bytes)
      return bytes.status();
    Json file = Json::object();
    file["path"] = relative;
    file["bytes"] = static_cast<int64_t>(bytes->size());
    file["crc32c"] = hex(checksumOf(*bytes));
    files.push_back(file);
    total += static_cast<int64_t>(bytes->size());
  }
  json["files"] = files;
  // Every file and directory of the checkpoint reaches the disk before
  // checkpoint.json says it is complete, and that before the rename.
  if (Status status = syncFileSystem(partial); !status.ok())
    return status;
  if (Status status =
          writeFileAtomically(partial + "/" + kMetaFile, printJson(json));
      !status.ok())
    return status;
  syncDirectory(partial);
  // Into place: an older checkpoint of the same step (a rerun) goes first.
  if (fs::exists(finalPath, error)) {
    std::string old = root + "/." + name + ".old";
    fs::remove_all(old, error);
    fs::rename(finalPath, old, error);
    if (error)
      return Status::error("cannot replace '" + finalPath +
                           "': " + error.message());
    fs::rename(partial, finalPath, error);
    std::error_code ignored;
    fs::remove_all(old, ignored);
  } else {
    fs::rename(partial, finalPath, error);
  }
  if (error)
    return Status::error("cannot rename '" + partial + "' to '" + finalPath +
                         "': " + error.message());
  syncDirectory(root);
  if (keep > 0) {
    std::vector<std::pair<int64_t, std::string>> complete;
    for (const fs::path &entry : listDirectory(root, false))
      if (int64_t step = stepOfName(entry.filename().string());
          step >= 0 && fs::exists(entry / kMetaFile, error))
        complete.emplace_back(step, entry.string());
    std::sort(complete.begin(), complete.end());
    for (size_t i = 0; i + keep < complete.size(); ++i)
      fs::remove_all(complete[i].second, error);
  }
  return total;
}

/// Each split tensor's index.json from every process's list of the files
/// it wrote ("tensor crc file" lines).
Expected<int64_t> writeIndexes(const std::string &partial,
                               const CheckpointState &state,
                               const std::vector<std::vector<uint8_t>> &lists) {
  std::vector<std::map<std::string, uint32_t>> crcs(state.values.size());
  for (const std::vector<uint8_t> &list : lists) {
    std::istringstream lines(std::string(list.begin(), list.end()));
    size_t tensor = 0;
    uint32_t crc = 0;
    std::string file;
    while (lines >> tensor >> crc >> file)
      if (tensor < crcs.size())
        crcs[tensor][file] = crc;
  }
  for (size_t t = 0; t < state.values.size(); ++t) {
    const CheckpointValue &value = state.values[t];
    if (value.whole)
      continue;
    std::string directory = value.key;
    std::replace(directory.begin(), directory.end(), '/', '.');
    if (Status status = writeShardedArrayIndex(
            partial + "/" + directory, state.mesh, value.sharding, value.dtype,
            value.globalShape, crcs[t], FileSync::Caller);
        !status.ok())
      return Status::error(value.key + ": " + status.message());
  }
  return int64_t(0);
}

/// writeCheckpoint() by every process of `across`: rank 0 prepares the
/// partial directory, every process writes its devices' shards and syncs
/// them, and only when all have reported their files durable does rank 0
/// write checkpoint.json and rename the directory (a two-phase commit).
/// Every process returns rank 0's outcome.
Expected<int64_t> writeAcross(const std::string &root,
                              const CheckpointState &state, int keep,
                              const CheckpointWriters &across) {
  ProcessGroup &group = *across.group;
  bool root0 = group.process() == 0;
  std::string name = stepName(state.meta.step);
  std::string partial = root + "/." + name + ".partial";
  Status prepared = root0 ? preparePartial(root, partial) : Status::success();
  if (Status agreed = agreeAll(group, prepared, "preparing a checkpoint");
      !agreed.ok())
    return agreed;
  std::vector<std::map<std::string, uint32_t>> crcs;
  Expected<Json> tensors = writeTensorFiles(partial, root + "/" + name, state,
                                            &across.devices, root0, &crcs);
  Status written = tensors ? syncFileSystem(partial) : tensors.status();
  if (Status agreed = agreeAll(group, written, "writing a checkpoint's files");
      !agreed.ok())
    return agreed;
  // Every process's files and their CRC-32C to rank 0, which writes each
  // tensor's index with all of them.
  std::string mine;
  for (size_t t = 0; t < crcs.size(); ++t)
    for (const auto &[file, crc] : crcs[t])
      mine += std::to_string(t) + " " + std::to_string(crc) + " " + file + "\n";
  std::vector<std::vector<uint8_t>> all;
  if (Status gathered =
          group.gather(std::vector<uint8_t>(mine.begin(), mine.end()), 0, all,
                       "the checkpoint's files");
      !gathered.ok())
    return gathered;
  std::vector<uint8_t> outcome;
  if (root0) {
    Expected<int64_t> total = writeIndexes(partial, state, all);
    if (total) {
      Json json = metaJson(state.meta);
      json["tensors"] = *tensors;
      total = commitPartial(root, name, json, keep);
    }
    std::string text =
        total ? std::to_string(*total) : "!" + total.status().message();
    outcome.assign(text.begin(), text.end());
  }
  if (Status sent = group.broadcast(outcome, 0, "the checkpoint's commit");
      !sent.ok())
    return sent;
  std::string text(outcome.begin(), outcome.end());
  if (!text.empty() && text[0] == '!')
    return Status::error(root0 ? text.substr(1)
                               : "rank 0 could not commit the checkpoint: " +
                                     text.substr(1));
  return static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10));
}

} // namespace

Expected<int64_t> partita::writeCheckpoint(const std::string &root,
                                           const CheckpointState &state,
                                           int keep,
                                           const CheckpointWriters *across) {
  if (across && across->group)
    return writeAcross(root, state, keep, *across);
  std::string name = stepName(state.meta.step);
  std::string partial = root + "/." + name + ".partial";
  if (Status status = preparePartial(root, partial); !status.ok())
    return status;
  Expected<Json> tensors =
      writeTensorFiles(partial, root + "/" + name, state, nullptr, true);
  if (!tensors)
    return tensors.status();
  Json json = metaJson(state.meta);
  json["tensors"] = *tensors;
  return commitPartial(root, name, json, keep);
}

Expected<std::string> partita::latestCheckpoint(const std::string &root) {
  std::error_code error;
  if (!fs::is_directory(root, error))
    return Status::error(root + ": no such checkpoint directory");
  int64_t best = -1;
  std::string path;
  for (const fs::path &entry : listDirectory(root, false))
    if (int64_t step = stepOfName(entry.filename().string());
        step > best && fs::exists(entry / kMetaFile, error)) {
      best = step;
      path = entry.string();
    }
  if (best < 0)
    return Status::error(root + ": no complete checkpoint (step-N with " +
                         kMetaFile + ")");
  return path;
}

Expected<CheckpointInfo> partita::readCheckpoint(const std::string &directory,
                                                 bool verify) {
  std::string metaPath = directory + "/" + kMetaFile;
  Expected<std::string> text = readWhole(metaPath);
  if (!text)
    return text.status();
  Expected<Json> parsed = parseJson(*text);
  if (!parsed)
    return Status::error(metaPath + ": " + parsed.status().message());
  const Json &json = *parsed;
  auto bad = [&](const std::string &what) {
    return Status::error(metaPath + ": " + what);
  };
  if (!json.is_object() || !json.contains("version") ||
      !json["version"].is_number_integer())
    return bad("not a checkpoint (no version)");
  if (json["version"].get<int>() != kCheckpointVersion)
    return bad("version " + std::to_string(json["version"].get<int>()) +
               "; this build reads version " +
               std::to_string(kCheckpointVersion));
  CheckpointInfo info;
  info.directory = directory;
  CheckpointMeta &meta = info.meta;
  for (const char *field : {"step", "seed"})
    if (!json.contains(field) || !json[field].is_number_integer())
      return bad(std::string("missing or malformed '") + field + "'");
  for (const char *field : {"model", "mesh", "rules"})
    if (!json.contains(field) || !json[field].is_string())
      return bad(std::string("missing or malformed '") + field + "'");
  for (const char *field : {"losses", "seconds", "tensors", "files"})
    if (!json.contains(field) || !json[field].is_array())
      return bad(std::string("missing or malformed '") + field + "'");
  meta.step = json["step"].get<int64_t>();
  meta.seed = json["seed"].get<uint64_t>();
  meta.model = json["model"].get<std::string>();
  if (meta.model.empty())
    return bad("empty 'model': the checkpoint does not say what it holds");
  meta.mesh = json["mesh"].get<std::string>();
  meta.rules = json["rules"].get<std::string>();
  for (const Json &loss : json["losses"]) {
    if (!loss.is_number())
      return bad("malformed 'losses'");
    meta.losses.push_back(loss.get<double>());
  }
  for (const Json &seconds : json["seconds"]) {
    if (!seconds.is_number())
      return bad("malformed 'seconds'");
    meta.seconds.push_back(seconds.get<double>());
  }
  if (meta.losses.size() != static_cast<size_t>(meta.step) ||
      meta.seconds.size() != meta.losses.size())
    return bad("the losses do not match the step");
  for (const Json &entry : json["tensors"]) {
    CheckpointTensor tensor;
    if (!entry.is_object() || !entry.contains("key") ||
        !entry["key"].is_string() || !entry.contains("dtype") ||
        !entry["dtype"].is_string() || !entry.contains("shape") ||
        !entry["shape"].is_array() || !entry.contains("directory") ||
        !entry["directory"].is_string())
      return bad("malformed tensor entry");
    tensor.key = entry["key"].get<std::string>();
    Expected<DType> dtype = parseDType(entry["dtype"].get<std::string>());
    if (!dtype)
      return bad(tensor.key + ": " + dtype.status().message());
    tensor.dtype = *dtype;
    for (const Json &size : entry["shape"]) {
      if (!size.is_number_integer() || size.get<int64_t>() < 0)
        return bad(tensor.key + ": malformed shape");
      tensor.shape.push_back(size.get<int64_t>());
    }
    tensor.directory = entry["directory"].get<std::string>();
    if (tensor.directory.empty() ||
        tensor.directory.find('/') != std::string::npos ||
        tensor.directory[0] == '.')
      return bad(tensor.key + ": malformed directory '" + tensor.directory +
                 "'");
    for (const CheckpointTensor &other : info.tensors)
      if (other.key == tensor.key || other.directory == tensor.directory)
        return bad("'" + tensor.key + "' (in " + tensor.directory +
                   ") repeats the key or directory of '" + other.key + "'");
    info.tensors.push_back(std::move(tensor));
  }
  std::set<std::string> listed;
  for (const Json &entry : json["files"]) {
    if (!entry.is_object() || !entry.contains("path") ||
        !entry["path"].is_string() || !entry.contains("bytes") ||
        !entry["bytes"].is_number_integer() || !entry.contains("crc32c") ||
        !entry["crc32c"].is_string())
      return bad("malformed file entry");
    std::string relative = entry["path"].get<std::string>();
    int64_t bytes = entry["bytes"].get<int64_t>();
    info.bytes += bytes;
    if (relative.empty() || relative.find("..") != std::string::npos ||
        relative[0] == '/')
      return bad("malformed file path '" + relative + "'");
    listed.insert(relative);
    if (!verify)
      continue;
    std::string path = directory + "/" + relative;
    Expected<std::string> contents = readWhole(path);
    if (!contents)
      return Status::error(directory + ": " + contents.status().message());
    if (static_cast<int64_t>(contents->size()) != bytes)
      return Status::error(path + ": " + std::to_string(contents->size()) +
                           " bytes, the checkpoint recorded " +
                           std::to_string(bytes) + " (truncated or replaced)");
    if (hex(checksumOf(*contents)) != entry["crc32c"].get<std::string>())
      return Status::error(path + ": checksum mismatch (the file is "
                                  "corrupt)");
  }
  if (verify) {
    // Every file the tensors are read from has a checksum: a list that
    // leaves files out (or is empty) checks nothing.
    std::error_code error;
    for (const fs::path &file : listDirectory(directory, true)) {
      std::string relative = fs::relative(file, directory, error).string();
      if (relative != kMetaFile && !listed.count(relative))
        return Status::error(directory + "/" + relative +
                             ": not in checkpoint.json's list of files, so "
                             "it has no checksum to check");
    }
    for (const CheckpointTensor &tensor : info.tensors) {
      if (!listed.count(tensor.directory + "/index.json"))
        return Status::error(directory + ": " + tensor.key + ": " +
                             tensor.directory +
                             "/index.json is not in checkpoint.json's list "
                             "of files");
      // The files hold what checkpoint.json says of them: dtype and shape.
      Expected<ShardedArrayIndex> index =
          readShardedArrayIndex(directory + "/" + tensor.directory);
      if (!index)
        return Status::error(directory + ": " + tensor.key + ": " +
                             index.status().message());
      if (index->dtype != tensor.dtype || index->globalShape != tensor.shape)
        return Status::error(
            directory + ": " + tensor.key + ": checkpoint.json says " +
            dtypeName(tensor.dtype) + formatShape(tensor.shape) +
            ", its files hold " + dtypeName(index->dtype) +
            formatShape(index->globalShape));
    }
  }
  return info;
}

Status partita::loadCheckpoint(const CheckpointInfo &checkpoint,
                               const Executable &program, size_t updated,
                               std::vector<HostArray> &inputs,
                               const std::string &onlyRole) {
  std::vector<std::string> keys = checkpointKeys(program, updated);
  std::map<std::string, const CheckpointTensor *> byKey;
  for (const CheckpointTensor &tensor : checkpoint.tensors)
    byKey[tensor.key] = &tensor;
  if (onlyRole.empty() && byKey.size() != keys.size())
    return Status::error(checkpoint.directory + " holds " +
                         std::to_string(byKey.size()) +
                         " tensors; this train step has " +
                         std::to_string(keys.size()));
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!onlyRole.empty() && keys[k].compare(0, onlyRole.size() + 1,
                                             onlyRole + "/") != 0)
      continue;
    auto found = byKey.find(keys[k]);
    if (found == byKey.end())
      return Status::error(checkpoint.directory + " has no tensor '" +
                           keys[k] + "'");
    const CheckpointTensor &tensor = *found->second;
    DType dtype = program.slots[program.inputs[k].slot].dtype;
    if (tensor.dtype != dtype || tensor.shape != program.inputs[k].globalShape)
      return Status::error(
          checkpoint.directory + ": " + keys[k] + " is " +
          dtypeName(tensor.dtype) + formatShape(tensor.shape) +
          ", this train step's is " + dtypeName(dtype) +
          formatShape(program.inputs[k].globalShape));
    Expected<HostArray> value =
        readShardedArray(checkpoint.directory + "/" + tensor.directory);
    if (!value)
      return Status::error(checkpoint.directory + ": " + keys[k] + ": " +
                           value.status().message());
    if (value->dtype != dtype || value->shape != tensor.shape)
      return Status::error(checkpoint.directory + ": " + keys[k] +
                           ": its files do not hold what checkpoint.json says");
    // A diverged run's state would make every later loss NaN, and the
    // message then blamed the learning rate of the run that loaded it.
    if (dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 ||
        dtype == DType::F16)
      for (int64_t i = 0; i < value->numElements(); ++i)
        if (!std::isfinite(elementAsDouble(*value, i)))
          return Status::error(checkpoint.directory + ": " + keys[k] +
                               " holds " +
                               std::to_string(elementAsDouble(*value, i)) +
                               " (element " + std::to_string(i) +
                               "): the run that saved it had diverged");
    inputs[k] = std::move(*value);
  }
  return Status::success();
}

std::string partita::describeCheckpoint(const CheckpointInfo &checkpoint) {
  const CheckpointMeta &meta = checkpoint.meta;
  std::ostringstream text;
  text << "checkpoint " << checkpoint.directory << ": " << meta.step
       << " steps done";
  if (!meta.losses.empty()) {
    char loss[32];
    std::snprintf(loss, sizeof(loss), "%.6g", meta.losses.back());
    text << ", last loss " << loss;
  }
  // kv_heads=0 in a model's fingerprint means as many as its heads.
  std::string model = meta.model;
  size_t kv = model.find(" kv_heads=0 "), heads = model.find(" heads=");
  if (kv != std::string::npos && heads != std::string::npos) {
    size_t start = heads + 7, end = model.find(' ', start);
    model.replace(kv + 10, 1, model.substr(start, end - start));
  }
  text << "\n  model: " << model << "\n  saved under mesh " << meta.mesh
       << ", rules " << meta.rules << ", seed " << meta.seed << "\n  "
       << checkpoint.tensors.size() << " tensors, " << checkpoint.bytes
       << " bytes:\n";
  std::map<std::string, std::pair<int, int64_t>> byRole;
  for (const CheckpointTensor &tensor : checkpoint.tensors) {
    std::string role = tensor.key.substr(0, tensor.key.find('/'));
    int64_t elements = 1;
    for (int64_t size : tensor.shape)
      elements *= size;
    byRole[role].first += 1;
    byRole[role].second += elements * dtypeSize(tensor.dtype);
  }
  for (const auto &[role, counts] : byRole)
    text << "    " << role << ": " << counts.first << " tensors, "
         << counts.second << " bytes\n";
  return text.str();
}

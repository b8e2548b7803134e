//===- Checkpoint.cpp - Train state on disk, and back ---------------------===//
//
// See Checkpoint.h and docs/Training.md, "Checkpoints".
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Training/Checkpoint.h"

#include "CheckpointBlocks.h"
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

/// Writes `bytes` to a new file `path` and syncs it.
Status writeSynced(const std::string &path, const std::string &bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("cannot create '" + path +
                         "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      break;
    done += static_cast<size_t>(wrote);
  }
  bool synced = done == bytes.size() && ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  if (!synced)
    return Status::error("cannot write '" + path +
                         "': " + std::strerror(saved));
  return Status::success();
}

/// checkpoint.json's "tensors": each tensor's key, dtype, shape and its
/// blocks from every process's list (`lists[p][t]`), in index order.
Json tensorsJson(const CheckpointState &state,
                 const std::vector<std::vector<Json>> &lists) {
  Json tensors = Json::array();
  for (size_t t = 0; t < state.values.size(); ++t) {
    const CheckpointValue &value = state.values[t];
    std::vector<std::pair<std::vector<int64_t>, Json>> blocks;
    for (const std::vector<Json> &list : lists)
      if (t < list.size())
        for (const Json &block : list[t])
          blocks.emplace_back(block["start"].get<std::vector<int64_t>>(),
                              block);
    std::sort(blocks.begin(), blocks.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    Json sorted = Json::array();
    for (auto &block : blocks)
      sorted.push_back(std::move(block.second));
    Json tensor = Json::object();
    tensor["key"] = value.key;
    tensor["dtype"] = dtypeName(value.dtype);
    tensor["shape"] = value.globalShape;
    tensor["blocks"] = std::move(sorted);
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/// Every process's "tensors" (`lists`, by rank) as one: a tensor listed by
/// several processes (each its blocks) once, its blocks in index order; in
/// order of first appearance.
Json mergeTensors(const std::vector<Json> &lists) {
  std::vector<std::string> order;
  std::map<std::string, Json> byKey;
  for (const Json &list : lists)
    for (const Json &tensor : list) {
      std::string key = tensor.value("key", "");
      auto found = byKey.find(key);
      if (found == byKey.end()) {
        order.push_back(key);
        byKey[key] = tensor;
        continue;
      }
      for (const Json &block : tensor["blocks"])
        found->second["blocks"].push_back(block);
    }
  Json merged = Json::array();
  for (const std::string &key : order) {
    Json &tensor = byKey[key];
    std::vector<std::pair<std::vector<int64_t>, Json>> blocks;
    for (const Json &block : tensor["blocks"])
      blocks.emplace_back(block["start"].get<std::vector<int64_t>>(), block);
    std::sort(blocks.begin(), blocks.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    Json sorted = Json::array();
    for (auto &block : blocks)
      sorted.push_back(std::move(block.second));
    tensor["blocks"] = std::move(sorted);
    merged.push_back(std::move(tensor));
  }
  return merged;
}

/// Once every data file of `partial` is on disk: checkpoint.json (`json`
/// with every file's size) written and synced, the directory renamed into
/// place and the oldest beyond `keep` removed. Returns the checkpoint's
/// bytes.
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
    auto bytes =
        static_cast<int64_t>(fs::file_size(partial + "/" + relative, error));
    if (error)
      return Status::error("cannot read '" + partial + "/" + relative +
                           "': " + error.message());
    Json file = Json::object();
    file["path"] = relative;
    file["bytes"] = bytes;
    files.push_back(file);
    total += bytes;
  }
  json["files"] = files;
  // The data files were synced by their writers. checkpoint.json needs no
  // rename of its own: the directory holding it is renamed into place only
  // once it and the directory's entries are on disk.
  if (Status status = writeSynced(partial + "/" + kMetaFile, printJson(json));
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

std::string dataFileName(int rank) {
  return "data-" + std::to_string(rank) + ".bin";
}

/// writeCheckpoint() by every process of `across`: rank 0 prepares the
/// partial directory, every process writes and syncs its data file and
/// sends rank 0 the list of its blocks, and only once every process has
/// reported its file durable does rank 0 write checkpoint.json and rename
/// the directory (a two-phase commit). Every process returns rank 0's
/// outcome.
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
  // Each process's values: the same tensors' blocks (a step's), or tensors
  // of its own held whole (a pipelined step's stages).
  Expected<std::vector<Json>> blocks = checkpoint_blocks::writeDataFile(
      partial, dataFileName(group.process()), state, &across.devices, true);
  // Synced before this process says it is written.
  Status written = blocks ? Status::success() : blocks.status();
  if (Status agreed = agreeAll(group, written, "writing a checkpoint's data");
      !agreed.ok())
    return agreed;
  std::string mine = printJson(tensorsJson(state, {*blocks}));
  std::vector<std::vector<uint8_t>> all;
  if (Status gathered =
          group.gather(std::vector<uint8_t>(mine.begin(), mine.end()), 0, all,
                       "the checkpoint's blocks");
      !gathered.ok())
    return gathered;
  std::vector<uint8_t> outcome;
  if (root0) {
    std::vector<Json> lists;
    for (const std::vector<uint8_t> &list : all) {
      Expected<Json> parsed = parseJson(std::string(list.begin(), list.end()));
      lists.push_back(parsed && parsed->is_array() ? *parsed : Json::array());
    }
    Json json = metaJson(state.meta);
    json["tensors"] = mergeTensors(lists);
    Expected<int64_t> total = commitPartial(root, name, json, keep);
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
  Expected<std::vector<Json>> blocks = checkpoint_blocks::writeDataFile(
      partial, dataFileName(0), state, nullptr, true);
  if (!blocks)
    return Status::error("checkpoint '" + root + "/" + name +
                         "': " + blocks.status().message());
  Json json = metaJson(state.meta);
  json["tensors"] = tensorsJson(state, {*blocks});
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

namespace {

/// One entry of checkpoint.json's "tensors", its blocks checked against
/// its shape and the files listed: inside the value, together tiling it
/// exactly, inside their files.
Expected<CheckpointTensor> parseTensor(const Json &entry,
                                       const CheckpointInfo &info) {
  CheckpointTensor tensor;
  if (!entry.is_object() || !entry.contains("key") ||
      !entry["key"].is_string() || !entry.contains("dtype") ||
      !entry["dtype"].is_string() || !entry.contains("shape") ||
      !entry["shape"].is_array() || !entry.contains("blocks") ||
      !entry["blocks"].is_array())
    return Status::error("malformed tensor entry");
  tensor.key = entry["key"].get<std::string>();
  Expected<DType> dtype = parseDType(entry["dtype"].get<std::string>());
  if (!dtype)
    return Status::error(tensor.key + ": " + dtype.status().message());
  tensor.dtype = *dtype;
  int64_t elements = 1;
  for (const Json &size : entry["shape"]) {
    if (!size.is_number_integer() || size.get<int64_t>() < 0 ||
        size.get<int64_t>() > (int64_t(1) << 40))
      return Status::error(tensor.key + ": malformed shape");
    tensor.shape.push_back(size.get<int64_t>());
    elements = tensor.shape.back() ? elements * tensor.shape.back() : 0;
    if (elements > (int64_t(1) << 40))
      return Status::error(tensor.key + ": malformed shape");
  }
  size_t rank = tensor.shape.size();
  int64_t element = dtypeSize(tensor.dtype), covered = 0;
  for (const Json &item : entry["blocks"]) {
    auto bad = [&](const std::string &what) {
      return Status::error(tensor.key + ": block " +
                           std::to_string(tensor.blocks.size()) + ": " + what);
    };
    if (!item.is_object() || !item.contains("file") ||
        !item["file"].is_string() || !item.contains("offset") ||
        !item["offset"].is_number_integer() || !item.contains("crc32c") ||
        !item["crc32c"].is_number_unsigned() || !item.contains("start") ||
        !item["start"].is_array() || !item.contains("size") ||
        !item["size"].is_array() || item["start"].size() != rank ||
        item["size"].size() != rank)
      return bad("malformed");
    StoredBlock block;
    block.file = item["file"].get<std::string>();
    block.offset = item["offset"].get<int64_t>();
    if (item["crc32c"].get<uint64_t>() > 0xffffffffULL)
      return bad("malformed crc32c");
    block.crc32c = static_cast<uint32_t>(item["crc32c"].get<uint64_t>());
    int64_t count = 1;
    for (size_t d = 0; d < rank; ++d) {
      const Json &start = item["start"][d], &size = item["size"][d];
      if (!start.is_number_integer() || !size.is_number_integer() ||
          start.get<int64_t>() < 0 || size.get<int64_t>() <= 0 ||
          start.get<int64_t>() > tensor.shape[d] ||
          size.get<int64_t>() > tensor.shape[d] - start.get<int64_t>())
        return bad("outside the tensor's shape");
      block.start.push_back(start.get<int64_t>());
      block.size.push_back(size.get<int64_t>());
      count *= block.size.back();
    }
    const std::pair<std::string, int64_t> *file = nullptr;
    for (const auto &listed : info.files)
      if (listed.first == block.file)
        file = &listed;
    if (!file)
      return bad("in '" + block.file +
                 "', which checkpoint.json does not list");
    if (block.offset < 0 || block.offset > file->second ||
        count * element > file->second - block.offset)
      return bad("past the end of " + block.file);
    // Disjoint from every earlier block: with the volumes summing to the
    // tensor's, the blocks tile it exactly.
    for (const StoredBlock &other : tensor.blocks) {
      bool overlap = true;
      for (size_t d = 0; d < rank; ++d)
        overlap = overlap && block.start[d] < other.start[d] + other.size[d] &&
                  other.start[d] < block.start[d] + block.size[d];
      if (overlap)
        return bad("overlaps another block");
    }
    covered += count;
    tensor.blocks.push_back(std::move(block));
  }
  if (covered != elements)
    return Status::error(tensor.key + ": its blocks cover " +
                         std::to_string(covered) + " of its " +
                         std::to_string(elements) + " elements");
  return tensor;
}

/// Every listed file has its recorded size, every block its checksum, and
/// the directory holds no file checkpoint.json does not list.
Status verifyFiles(const CheckpointInfo &info) {
  std::error_code error;
  std::set<std::string> listed;
  for (const auto &[relative, bytes] : info.files) {
    std::string path = info.directory + "/" + relative;
    if (Status regular = requireRegularFile(path); !regular.ok())
      return Status::error(path + ": " + regular.message());
    auto size = static_cast<int64_t>(fs::file_size(path, error));
    if (error)
      return Status::error("cannot read '" + path + "': " + error.message());
    if (size != bytes)
      return Status::error(path + ": " + std::to_string(size) +
                           " bytes, the checkpoint recorded " +
                           std::to_string(bytes) + " (truncated or replaced)");
    listed.insert(relative);
  }
  for (const fs::path &file : listDirectory(info.directory, true)) {
    std::string relative = fs::relative(file, info.directory, error).string();
    if (relative != kMetaFile && !listed.count(relative))
      return Status::error(info.directory + "/" + relative +
                           ": not in checkpoint.json's list of files, so "
                           "it has no checksum to check");
  }
  for (const CheckpointTensor &tensor : info.tensors)
    for (const StoredBlock &block : tensor.blocks)
      if (Status status =
              checkpoint_blocks::verifyBlock(info.directory, tensor, block);
          !status.ok())
        return status;
  return Status::success();
}

} // namespace

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
  for (const Json &entry : json["files"]) {
    if (!entry.is_object() || !entry.contains("path") ||
        !entry["path"].is_string() || !entry.contains("bytes") ||
        !entry["bytes"].is_number_integer() ||
        entry["bytes"].get<int64_t>() < 0)
      return bad("malformed file entry");
    std::string relative = entry["path"].get<std::string>();
    if (relative.empty() || relative.find('/') != std::string::npos ||
        relative[0] == '.' || relative == kMetaFile)
      return bad("malformed file path '" + relative + "'");
    for (const auto &listed : info.files)
      if (listed.first == relative)
        return bad("file '" + relative + "' listed twice");
    info.files.emplace_back(relative, entry["bytes"].get<int64_t>());
    info.bytes += info.files.back().second;
  }
  for (const Json &entry : json["tensors"]) {
    Expected<CheckpointTensor> tensor = parseTensor(entry, info);
    if (!tensor)
      return bad(tensor.status().message());
    for (const CheckpointTensor &other : info.tensors)
      if (other.key == tensor->key)
        return bad("tensor '" + tensor->key + "' listed twice");
    info.tensors.push_back(std::move(*tensor));
  }
  if (verify)
    if (Status status = verifyFiles(info); !status.ok())
      return status;
  return info;
}

bool partita::checkpointKeyOfRole(const std::string &key,
                                  const std::string &role) {
  return role.empty() || key.compare(0, role.size() + 1, role + "/") == 0;
}

Expected<const CheckpointTensor *> partita::findCheckpointTensor(
    const CheckpointInfo &checkpoint, const std::string &key, DType dtype,
    const std::vector<int64_t> &shape, const std::string &whose) {
  for (const CheckpointTensor &tensor : checkpoint.tensors) {
    if (tensor.key != key)
      continue;
    if (tensor.dtype != dtype || tensor.shape != shape)
      return Status::error(checkpoint.directory + ": " + key + " is " +
                           dtypeName(tensor.dtype) + formatShape(tensor.shape) +
                           ", " + whose + " is " + dtypeName(dtype) +
                           formatShape(shape));
    return &tensor;
  }
  return Status::error(checkpoint.directory + " has no tensor '" + key + "'");
}

Expected<std::vector<const CheckpointTensor *>>
partita::matchCheckpoint(const CheckpointInfo &checkpoint,
                         const Executable &program, size_t updated,
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
  std::vector<const CheckpointTensor *> matched(keys.size(), nullptr);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!checkpointKeyOfRole(keys[k], onlyRole))
      continue;
    Expected<const CheckpointTensor *> tensor = findCheckpointTensor(
        checkpoint, keys[k], program.slots[program.inputs[k].slot].dtype,
        program.inputs[k].globalShape, "this train step's");
    if (!tensor)
      return tensor.status();
    matched[k] = *tensor;
  }
  return matched;
}

Status partita::readCheckpointRegion(const CheckpointInfo &checkpoint,
                                     const CheckpointTensor &tensor,
                                     const std::vector<IndexRange> &ranges,
                                     const std::vector<int64_t> &paddedShape,
                                     uint8_t *into) {
  if (ranges.size() != tensor.shape.size() ||
      paddedShape.size() != tensor.shape.size())
    return Status::error(
        tensor.key + ": a region of rank " + std::to_string(ranges.size()) +
        " of a tensor of rank " + std::to_string(tensor.shape.size()));
  if (Status status = checkpoint_blocks::readRegion(
          checkpoint.directory, tensor, ranges, paddedShape, into);
      !status.ok())
    return status;
  return checkpoint_blocks::checkFinite(checkpoint.directory, tensor, ranges,
                                        paddedShape, into);
}

Expected<HostArray>
partita::readCheckpointTensor(const CheckpointInfo &checkpoint,
                              const CheckpointTensor &tensor) {
  HostArray value = HostArray::zeros(tensor.dtype, tensor.shape);
  std::vector<IndexRange> whole;
  for (int64_t size : tensor.shape)
    whole.push_back({0, size});
  if (Status status = readCheckpointRegion(checkpoint, tensor, whole,
                                           tensor.shape, value.bytes.data());
      !status.ok())
    return status;
  return value;
}

Status partita::loadCheckpoint(const CheckpointInfo &checkpoint,
                               const Executable &program, size_t updated,
                               std::vector<HostArray> &inputs,
                               const std::string &onlyRole) {
  Expected<std::vector<const CheckpointTensor *>> matched =
      matchCheckpoint(checkpoint, program, updated, onlyRole);
  if (!matched)
    return matched.status();
  for (size_t k = 0; k < matched->size(); ++k) {
    const CheckpointTensor *tensor = (*matched)[k];
    if (!tensor)
      continue;
    Expected<HostArray> value = readCheckpointTensor(checkpoint, *tensor);
    if (!value)
      return value.status();
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

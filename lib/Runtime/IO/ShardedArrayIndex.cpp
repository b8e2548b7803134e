//===- ShardedArrayIndex.cpp - The index.json of a sharded array ----------===//
//
// index.json is both a description for people and the machine-readable
// layout. The layout is recorded redundantly (the sharding text, the JAX
// spec, the per-dimension axis lists, and every file's ranges and holders);
// the reader rebuilds the layout from the mesh and `dim_axes` and insists
// that the file entries agree with it, so a hand-edited or stale index fails
// loudly instead of silently misplacing data.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/ShardedArrayIndex.h"

#include "partita/Runtime/IO/Json.h"
#include "partita/Runtime/IO/ShardedArray.h"

#include <map>
#include <set>

namespace partita {

namespace {

/// True for a bare file name that cannot escape the directory.
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

std::string shardFileName(const std::vector<int64_t> &indices) {
  std::string name = "shard";
  for (int64_t index : indices)
    name += "_" + std::to_string(index);
  return name + ".npy";
}

/// The stored form of a sharding: the same dimension axes, closed, with no
/// priority.
Sharding closedSharding(const Sharding &sharding) {
  Sharding closed = Sharding::replicated(sharding.rank());
  for (int dim = 0; dim < sharding.rank(); ++dim)
    closed.dims[dim].axes = sharding.dims[dim].axes;
  return closed;
}

/// Checked access to the members of a parsed index; every failure names the
/// index file and the JSON path of the offending member.
class IndexReader {
public:
  explicit IndexReader(std::string_view name) : name(name) {}

  Status fail(const std::string &message) const {
    return Status::error(name + ": " + message);
  }

  Expected<const Json *> member(const Json &object, const std::string &where,
                                const char *key, JsonKind kind) {
    auto found = object.find(key);
    std::string path = where.empty() ? std::string("\"") + key + "\""
                                     : where + ".\"" + key + "\"";
    if (found == object.end())
      return fail("missing member " + path);
    const Json &value = *found;
    if (jsonKind(value) != kind)
      return fail(path + " must be " + article(kind) + " but is " +
                  article(jsonKind(value)));
    return &value;
  }

  Expected<std::vector<int64_t>> integers(const Json &array,
                                          const std::string &path) {
    std::vector<int64_t> values;
    for (const Json &item : array) {
      if (jsonKind(item) != JsonKind::Integer)
        return fail(path + " must hold integers only");
      values.push_back(item.get<int64_t>());
    }
    return values;
  }

  Expected<std::vector<int64_t>>
  integerMember(const Json &object, const std::string &where, const char *key) {
    Expected<const Json *> array = member(object, where, key, JsonKind::Array);
    if (!array)
      return array.status();
    return integers(**array,
                    (where.empty() ? "" : where + ".") + "\"" + key + "\"");
  }

private:
  static std::string article(JsonKind kind) {
    std::string noun = jsonKindName(kind);
    bool vowel = noun[0] == 'a' || noun[0] == 'i' || noun[0] == 'o';
    return (vowel ? "an " : "a ") + noun;
  }
  std::string name;
};

Expected<Mesh> parseMeshMember(IndexReader &reader, const Json &root) {
  Expected<const Json *> mesh =
      reader.member(root, "", "mesh", JsonKind::Object);
  if (!mesh)
    return mesh.status();
  Expected<const Json *> axes =
      reader.member(**mesh, "\"mesh\"", "axes", JsonKind::Array);
  if (!axes)
    return axes.status();
  std::vector<MeshAxis> meshAxes;
  for (size_t i = 0; i < (*axes)->size(); ++i) {
    const Json &axis = (**axes)[i];
    std::string where = "\"mesh\".\"axes\"[" + std::to_string(i) + "]";
    if (jsonKind(axis) != JsonKind::Object)
      return reader.fail(where + " must be an object");
    Expected<const Json *> axisName =
        reader.member(axis, where, "name", JsonKind::String);
    if (!axisName)
      return axisName.status();
    Expected<const Json *> size =
        reader.member(axis, where, "size", JsonKind::Integer);
    if (!size)
      return size.status();
    meshAxes.push_back(
        {(*axisName)->get<std::string>(), (*size)->get<int64_t>()});
  }
  Expected<std::vector<int64_t>> ids =
      reader.integerMember(**mesh, "\"mesh\"", "device_ids");
  if (!ids)
    return ids.status();
  bool identity = true;
  for (size_t i = 0; i < ids->size(); ++i)
    identity = identity && (*ids)[i] == static_cast<int64_t>(i);
  Expected<Mesh> created =
      Mesh::create(meshAxes, identity ? std::vector<int64_t>() : *ids);
  if (!created)
    return reader.fail("bad \"mesh\": " + created.status().message());
  if (static_cast<int64_t>(ids->size()) != created->numDevices())
    return reader.fail("\"mesh\".\"device_ids\" lists " +
                       std::to_string(ids->size()) + " devices but the mesh " +
                       created->toString() + " has " +
                       std::to_string(created->numDevices()));
  return created;
}

Expected<Sharding> parseDimAxes(IndexReader &reader, const Json &root) {
  Expected<const Json *> dimAxes =
      reader.member(root, "", "dim_axes", JsonKind::Array);
  if (!dimAxes)
    return dimAxes.status();
  Sharding sharding = Sharding::replicated((*dimAxes)->size());
  for (size_t dim = 0; dim < (*dimAxes)->size(); ++dim) {
    const Json &axes = (**dimAxes)[dim];
    std::string where = "\"dim_axes\"[" + std::to_string(dim) + "]";
    if (jsonKind(axes) != JsonKind::Array)
      return reader.fail(where + " must be an array of axis names");
    for (const Json &axis : axes) {
      if (jsonKind(axis) != JsonKind::String)
        return reader.fail(where + " must hold axis names (strings) only");
      sharding.dims[dim].axes.push_back(axis.get<std::string>());
    }
  }
  return sharding;
}

Expected<ShardFileEntry> parseFileEntry(IndexReader &reader, const Json &entry,
                                        const std::string &where) {
  if (jsonKind(entry) != JsonKind::Object)
    return reader.fail(where + " must be an object");
  ShardFileEntry file;
  Expected<const Json *> name =
      reader.member(entry, where, "file", JsonKind::String);
  if (!name)
    return name.status();
  file.file = (*name)->get<std::string>();
  if (!isPlainFileName(file.file))
    return reader.fail(where +
                       ".\"file\" must be a file name inside the "
                       "directory, not '" +
                       file.file + "'");
  Expected<std::vector<int64_t>> indices =
      reader.integerMember(entry, where, "shard_indices");
  if (!indices)
    return indices.status();
  file.shardIndices = *indices;
  Expected<std::vector<int64_t>> devices =
      reader.integerMember(entry, where, "devices");
  if (!devices)
    return devices.status();
  file.devices = *devices;
  if (entry.contains("crc32c")) {
    const Json &crc = entry["crc32c"];
    if (jsonKind(crc) != JsonKind::Integer || crc.get<int64_t>() < 0 ||
        crc.get<int64_t>() > 0xffffffffLL)
      return reader.fail(where +
                         ".\"crc32c\" must be an integer in [0, 2^32)");
    file.crc32c = crc.get<int64_t>();
  }
  Expected<const Json *> ranges =
      reader.member(entry, where, "ranges", JsonKind::Array);
  if (!ranges)
    return ranges.status();
  for (const Json &range : **ranges) {
    Expected<std::vector<int64_t>> bounds =
        jsonKind(range) == JsonKind::Array
            ? reader.integers(range, where + ".\"ranges\"")
            : Expected<std::vector<int64_t>>(std::vector<int64_t>());
    if (!bounds)
      return bounds.status();
    if (bounds->size() != 2)
      return reader.fail(where + ".\"ranges\" must hold [begin, end] pairs");
    file.globalRanges.push_back({(*bounds)[0], (*bounds)[1]});
  }
  return file;
}

/// Parses the members of a parsed index.json document.
Expected<ShardedArrayIndex> parseIndexDocument(IndexReader &reader,
                                               const Json &root) {
  if (jsonKind(root) != JsonKind::Object)
    return reader.fail("the index must be a JSON object");
  Expected<const Json *> format =
      reader.member(root, "", "format", JsonKind::String);
  if (!format)
    return format.status();
  if ((*format)->get<std::string>() != shardedArrayFormatName)
    return reader.fail("\"format\" is \"" + (*format)->get<std::string>() +
                       "\", expected \"" + shardedArrayFormatName + "\"");
  Expected<const Json *> version =
      reader.member(root, "", "version", JsonKind::Integer);
  if (!version)
    return version.status();
  if ((*version)->get<int64_t>() != shardedArrayFormatVersion)
    return reader.fail("format version " +
                       std::to_string((*version)->get<int64_t>()) +
                       " is not supported (this runtime reads version " +
                       std::to_string(shardedArrayFormatVersion) + ")");

  ShardedArrayIndex index;
  Expected<const Json *> dtypeName =
      reader.member(root, "", "dtype", JsonKind::String);
  if (!dtypeName)
    return dtypeName.status();
  Expected<DType> dtype = parseDType((*dtypeName)->get<std::string>());
  if (!dtype)
    return reader.fail("\"dtype\": " + dtype.status().message());
  index.dtype = *dtype;
  Expected<std::vector<int64_t>> shape =
      reader.integerMember(root, "", "shape");
  if (!shape)
    return shape.status();
  if (Expected<int64_t> bytes = checkedNumBytes(index.dtype, *shape); !bytes)
    return reader.fail("\"shape\": " + bytes.status().message());
  index.globalShape = *shape;
  Expected<Mesh> mesh = parseMeshMember(reader, root);
  if (!mesh)
    return mesh.status();
  index.mesh = *mesh;
  Expected<Sharding> sharding = parseDimAxes(reader, root);
  if (!sharding)
    return sharding.status();
  index.sharding = *sharding;
  if (Status layout =
          checkShardedLayout(index.mesh, index.sharding, index.globalShape);
      !layout)
    return reader.fail("\"dim_axes\": " + layout.message());

  Expected<const Json *> shards =
      reader.member(root, "", "shards", JsonKind::Array);
  if (!shards)
    return shards.status();
  std::vector<ShardFileEntry> entries;
  size_t listedDevices = 0;
  for (size_t i = 0; i < (*shards)->size(); ++i) {
    Expected<ShardFileEntry> entry = parseFileEntry(
        reader, (**shards)[i], "\"shards\"[" + std::to_string(i) + "]");
    if (!entry)
      return entry.status();
    listedDevices += entry->devices.size();
    entries.push_back(std::move(*entry));
  }
  // Checked before planning, which walks every device of the mesh.
  if (static_cast<int64_t>(listedDevices) != index.mesh.numDevices())
    return reader.fail("the shards list " + std::to_string(listedDevices) +
                       " device holdings but the mesh has " +
                       std::to_string(index.mesh.numDevices()) + " devices");

  // The file entries must be exactly the planned ones, under any names.
  ShardedArrayIndex plan = planShardFiles(index.mesh, index.sharding,
                                          index.dtype, index.globalShape);
  std::map<std::vector<int64_t>, const ShardFileEntry *> planned;
  for (const ShardFileEntry &entry : plan.files)
    planned[entry.shardIndices] = &entry;
  std::map<std::vector<int64_t>, ShardFileEntry> found;
  std::set<std::string> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    ShardFileEntry &entry = entries[i];
    std::string where = "\"shards\"[" + std::to_string(i) + "]";
    auto expected = planned.find(entry.shardIndices);
    if (expected == planned.end())
      return reader.fail(where + " has shard indices " +
                         formatShape(entry.shardIndices) +
                         ", which the layout does not have");
    if (found.count(entry.shardIndices))
      return reader.fail(where + " repeats shard " +
                         formatShape(entry.shardIndices));
    if (!names.insert(entry.file).second)
      return reader.fail(where + " reuses the file name " + entry.file);
    if (entry.globalRanges != expected->second->globalRanges)
      return reader.fail(where + " covers " + formatRanges(entry.globalRanges) +
                         " but its shard covers " +
                         formatRanges(expected->second->globalRanges));
    if (entry.devices != expected->second->devices)
      return reader.fail(where + " lists devices " +
                         formatShape(entry.devices) + " but shard " +
                         formatShape(entry.shardIndices) + " is held by " +
                         formatShape(expected->second->devices));
    found.emplace(entry.shardIndices, std::move(entry));
  }
  for (const ShardFileEntry &entry : plan.files) {
    auto it = found.find(entry.shardIndices);
    if (it == found.end())
      return reader.fail("no file holds shard " +
                         formatShape(entry.shardIndices) + " (global block " +
                         formatRanges(entry.globalRanges) + ")");
    index.files.push_back(it->second);
  }
  return index;
}

} // namespace

ShardedArrayIndex planShardFiles(const Mesh &mesh, const Sharding &sharding,
                                 DType dtype,
                                 const std::vector<int64_t> &globalShape) {
  ShardedArrayIndex index;
  index.mesh = mesh;
  index.sharding = closedSharding(sharding);
  index.dtype = dtype;
  index.globalShape = globalShape;
  std::map<std::vector<int64_t>, ShardFileEntry> byIndices;
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    std::vector<int64_t> indices = shardIndices(mesh, sharding, device);
    ShardFileEntry &entry = byIndices[indices];
    if (entry.devices.empty()) {
      entry.file = shardFileName(indices);
      entry.shardIndices = indices;
      entry.globalRanges = deviceBlock(mesh, sharding, globalShape, device);
    }
    entry.devices.push_back(device);
  }
  for (auto &[indices, entry] : byIndices)
    index.files.push_back(std::move(entry));
  return index;
}

std::string printShardedArrayIndex(const ShardedArrayIndex &index) {
  Json root = Json::object();
  root["format"] = shardedArrayFormatName;
  root["version"] = shardedArrayFormatVersion;
  root["dtype"] = dtypeName(index.dtype);
  root["shape"] = index.globalShape;

  Json mesh = Json::object();
  Json axes = Json::array();
  for (const MeshAxis &axis : index.mesh.axes()) {
    Json entry = Json::object();
    entry["name"] = axis.name;
    entry["size"] = axis.size;
    axes.push_back(std::move(entry));
  }
  mesh["axes"] = std::move(axes);
  std::vector<int64_t> ids = index.mesh.deviceIds();
  if (ids.empty())
    for (int64_t id = 0; id < index.mesh.numDevices(); ++id)
      ids.push_back(id);
  mesh["device_ids"] = ids;
  root["mesh"] = std::move(mesh);

  Sharding stored = closedSharding(index.sharding);
  root["sharding"] = stored.toString();
  if (Expected<std::string> spec = toPartitionSpec(stored))
    root["partition_spec"] = *spec;
  Json dimAxes = Json::array();
  for (const DimSharding &dim : stored.dims)
    dimAxes.push_back(Json(dim.axes));
  root["dim_axes"] = std::move(dimAxes);
  root["local_shape"] = localShape(index.mesh, stored, index.globalShape);

  Json shards = Json::array();
  for (const ShardFileEntry &file : index.files) {
    Json entry = Json::object();
    entry["file"] = file.file;
    entry["shard_indices"] = file.shardIndices;
    Json ranges = Json::array();
    for (const IndexRange &range : file.globalRanges)
      ranges.push_back(Json(std::vector<int64_t>{range.begin, range.end}));
    entry["ranges"] = std::move(ranges);
    entry["devices"] = file.devices;
    if (file.crc32c >= 0)
      entry["crc32c"] = file.crc32c;
    shards.push_back(std::move(entry));
  }
  root["shards"] = std::move(shards);
  return printJson(root);
}

Expected<ShardedArrayIndex> parseShardedArrayIndex(std::string_view json,
                                                   std::string_view name) {
  IndexReader reader(name);
  Expected<Json> root = parseJson(json);
  if (!root)
    return reader.fail(root.status().message());
  return parseIndexDocument(reader, *root);
}

} // namespace partita

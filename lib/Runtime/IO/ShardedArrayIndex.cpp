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

  Expected<const JsonValue *> member(const JsonValue &object,
                                     const std::string &where, const char *key,
                                     JsonValue::Kind kind) {
    const JsonValue *value = object.find(key);
    std::string path = where.empty() ? std::string("\"") + key + "\""
                                     : where + ".\"" + key + "\"";
    if (!value)
      return fail("missing member " + path);
    if (value->kind() != kind)
      return fail(path + " must be " + article(kind) + " but is " +
                  article(value->kind()));
    return value;
  }

  Expected<std::vector<int64_t>> integers(const JsonValue &array,
                                          const std::string &path) {
    std::vector<int64_t> values;
    for (const JsonValue &item : array.items()) {
      if (item.kind() != JsonValue::Kind::Integer)
        return fail(path + " must hold integers only");
      values.push_back(item.asInteger());
    }
    return values;
  }

  Expected<std::vector<int64_t>> integerMember(const JsonValue &object,
                                               const std::string &where,
                                               const char *key) {
    Expected<const JsonValue *> array =
        member(object, where, key, JsonValue::Kind::Array);
    if (!array)
      return array.status();
    return integers(**array,
                    (where.empty() ? "" : where + ".") + "\"" + key + "\"");
  }

private:
  static std::string article(JsonValue::Kind kind) {
    std::string noun = JsonValue::kindName(kind);
    bool vowel = noun[0] == 'a' || noun[0] == 'i' || noun[0] == 'o';
    return (vowel ? "an " : "a ") + noun;
  }
  std::string name;
};

Expected<Mesh> parseMeshMember(IndexReader &reader, const JsonValue &root) {
  Expected<const JsonValue *> mesh =
      reader.member(root, "", "mesh", JsonValue::Kind::Object);
  if (!mesh)
    return mesh.status();
  Expected<const JsonValue *> axes =
      reader.member(**mesh, "\"mesh\"", "axes", JsonValue::Kind::Array);
  if (!axes)
    return axes.status();
  std::vector<MeshAxis> meshAxes;
  for (size_t i = 0; i < (*axes)->items().size(); ++i) {
    const JsonValue &axis = (*axes)->items()[i];
    std::string where = "\"mesh\".\"axes\"[" + std::to_string(i) + "]";
    if (axis.kind() != JsonValue::Kind::Object)
      return reader.fail(where + " must be an object");
    Expected<const JsonValue *> axisName =
        reader.member(axis, where, "name", JsonValue::Kind::String);
    if (!axisName)
      return axisName.status();
    Expected<const JsonValue *> size =
        reader.member(axis, where, "size", JsonValue::Kind::Integer);
    if (!size)
      return size.status();
    meshAxes.push_back({(*axisName)->asString(), (*size)->asInteger()});
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

Expected<Sharding> parseDimAxes(IndexReader &reader, const JsonValue &root) {
  Expected<const JsonValue *> dimAxes =
      reader.member(root, "", "dim_axes", JsonValue::Kind::Array);
  if (!dimAxes)
    return dimAxes.status();
  Sharding sharding = Sharding::replicated((*dimAxes)->items().size());
  for (size_t dim = 0; dim < (*dimAxes)->items().size(); ++dim) {
    const JsonValue &axes = (*dimAxes)->items()[dim];
    std::string where = "\"dim_axes\"[" + std::to_string(dim) + "]";
    if (axes.kind() != JsonValue::Kind::Array)
      return reader.fail(where + " must be an array of axis names");
    for (const JsonValue &axis : axes.items()) {
      if (axis.kind() != JsonValue::Kind::String)
        return reader.fail(where + " must hold axis names (strings) only");
      sharding.dims[dim].axes.push_back(axis.asString());
    }
  }
  return sharding;
}

Expected<ShardFileEntry> parseFileEntry(IndexReader &reader,
                                        const JsonValue &entry,
                                        const std::string &where) {
  if (entry.kind() != JsonValue::Kind::Object)
    return reader.fail(where + " must be an object");
  ShardFileEntry file;
  Expected<const JsonValue *> name =
      reader.member(entry, where, "file", JsonValue::Kind::String);
  if (!name)
    return name.status();
  file.file = (*name)->asString();
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
  Expected<const JsonValue *> ranges =
      reader.member(entry, where, "ranges", JsonValue::Kind::Array);
  if (!ranges)
    return ranges.status();
  for (const JsonValue &range : (*ranges)->items()) {
    Expected<std::vector<int64_t>> bounds =
        range.kind() == JsonValue::Kind::Array
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
                                               const JsonValue &root) {
  if (root.kind() != JsonValue::Kind::Object)
    return reader.fail("the index must be a JSON object");
  Expected<const JsonValue *> format =
      reader.member(root, "", "format", JsonValue::Kind::String);
  if (!format)
    return format.status();
  if ((*format)->asString() != shardedArrayFormatName)
    return reader.fail("\"format\" is \"" + (*format)->asString() +
                       "\", expected \"" + shardedArrayFormatName + "\"");
  Expected<const JsonValue *> version =
      reader.member(root, "", "version", JsonValue::Kind::Integer);
  if (!version)
    return version.status();
  if ((*version)->asInteger() != shardedArrayFormatVersion)
    return reader.fail("format version " +
                       std::to_string((*version)->asInteger()) +
                       " is not supported (this runtime reads version " +
                       std::to_string(shardedArrayFormatVersion) + ")");

  ShardedArrayIndex index;
  Expected<const JsonValue *> dtypeName =
      reader.member(root, "", "dtype", JsonValue::Kind::String);
  if (!dtypeName)
    return dtypeName.status();
  Expected<DType> dtype = parseDType((*dtypeName)->asString());
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

  Expected<const JsonValue *> shards =
      reader.member(root, "", "shards", JsonValue::Kind::Array);
  if (!shards)
    return shards.status();
  std::vector<ShardFileEntry> entries;
  size_t listedDevices = 0;
  for (size_t i = 0; i < (*shards)->items().size(); ++i) {
    Expected<ShardFileEntry> entry = parseFileEntry(
        reader, (*shards)->items()[i], "\"shards\"[" + std::to_string(i) + "]");
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
  JsonValue root = JsonValue::object();
  root.set("format", JsonValue::string(shardedArrayFormatName));
  root.set("version", JsonValue::integer(shardedArrayFormatVersion));
  root.set("dtype", JsonValue::string(dtypeName(index.dtype)));
  root.set("shape", JsonValue::integers(index.globalShape));

  JsonValue mesh = JsonValue::object();
  JsonValue axes = JsonValue::array();
  for (const MeshAxis &axis : index.mesh.axes()) {
    JsonValue entry = JsonValue::object();
    entry.set("name", JsonValue::string(axis.name));
    entry.set("size", JsonValue::integer(axis.size));
    axes.push(std::move(entry));
  }
  mesh.set("axes", std::move(axes));
  std::vector<int64_t> ids = index.mesh.deviceIds();
  if (ids.empty())
    for (int64_t id = 0; id < index.mesh.numDevices(); ++id)
      ids.push_back(id);
  mesh.set("device_ids", JsonValue::integers(ids));
  root.set("mesh", std::move(mesh));

  Sharding stored = closedSharding(index.sharding);
  root.set("sharding", JsonValue::string(stored.toString()));
  if (Expected<std::string> spec = toPartitionSpec(stored))
    root.set("partition_spec", JsonValue::string(*spec));
  JsonValue dimAxes = JsonValue::array();
  for (const DimSharding &dim : stored.dims)
    dimAxes.push(JsonValue::strings(dim.axes));
  root.set("dim_axes", std::move(dimAxes));
  root.set("local_shape", JsonValue::integers(localShape(index.mesh, stored,
                                                         index.globalShape)));

  JsonValue shards = JsonValue::array();
  for (const ShardFileEntry &file : index.files) {
    JsonValue entry = JsonValue::object();
    entry.set("file", JsonValue::string(file.file));
    entry.set("shard_indices", JsonValue::integers(file.shardIndices));
    JsonValue ranges = JsonValue::array();
    for (const IndexRange &range : file.globalRanges)
      ranges.push(JsonValue::integers({range.begin, range.end}));
    entry.set("ranges", std::move(ranges));
    entry.set("devices", JsonValue::integers(file.devices));
    shards.push(std::move(entry));
  }
  root.set("shards", std::move(shards));
  return printJson(root);
}

Expected<ShardedArrayIndex> parseShardedArrayIndex(std::string_view json,
                                                   std::string_view name) {
  IndexReader reader(name);
  Expected<JsonValue> root = parseJson(json);
  if (!root)
    return reader.fail(root.status().message());
  return parseIndexDocument(reader, *root);
}

} // namespace partita

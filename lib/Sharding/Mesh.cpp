//===- Mesh.cpp - Logical device meshes -----------------------------------===//
//
// Validation, coordinate math and the CLI spelling of meshes. Every check
// reports through Status with a message a user can act on; nothing here
// throws or asserts on user input.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Mesh.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace partita {

namespace {

/// Product of the axis sizes, or -1 when it does not fit in int64_t. Sizes
/// must already be positive.
int64_t checkedDeviceCount(const std::vector<MeshAxis> &axes) {
  int64_t count = 1;
  for (const MeshAxis &axis : axes) {
    if (count > std::numeric_limits<int64_t>::max() / axis.size)
      return -1;
    count *= axis.size;
  }
  return count;
}

/// Row-major linear index of `coords`, or -1 when they do not fit the axes.
int64_t linearPosition(const std::vector<MeshAxis> &axes,
                       const std::vector<int64_t> &coords) {
  if (coords.size() != axes.size())
    return -1;
  int64_t position = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (coords[i] < 0 || coords[i] >= axes[i].size)
      return -1;
    position = position * axes[i].size + coords[i];
  }
  return position;
}

bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)); }

bool isAxisNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool isAxisNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         c == '.';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && isSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back()))
    text.remove_suffix(1);
  return text;
}

/// Parses an optionally signed decimal integer that must span all of `text`.
bool parseInteger(std::string_view text, int64_t &value, bool &overflow) {
  overflow = false;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-'))
    negative = text[i++] == '-';
  if (i == text.size())
    return false;
  int64_t result = 0;
  for (; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])))
      return false;
    int digit = text[i] - '0';
    if (result > (std::numeric_limits<int64_t>::max() - digit) / 10)
      overflow = true;
    else
      result = result * 10 + digit;
  }
  value = negative ? -result : result;
  return true;
}

} // namespace

Status Mesh::validate(const std::vector<MeshAxis> &axes,
                      const std::vector<int64_t> &deviceIds) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].name.empty())
      return Status::error("mesh axis " + std::to_string(i) +
                           " has an empty name");
    for (size_t j = 0; j < i; ++j)
      if (axes[j].name == axes[i].name)
        return Status::error("mesh axis '" + axes[i].name +
                             "' is declared twice (axes " + std::to_string(j) +
                             " and " + std::to_string(i) + ")");
    if (axes[i].size <= 0)
      return Status::error("mesh axis size must be positive, got " +
                           std::to_string(axes[i].size) + " for axis '" +
                           axes[i].name + "'");
  }
  int64_t count = checkedDeviceCount(axes);
  if (count < 0)
    return Status::error("mesh is too large: the product of its axis sizes "
                         "does not fit in a 64-bit integer");
  // Layouts, groups and device maps walk every device: a mesh far beyond
  // any machine would only make them run for minutes or exhaust memory.
  if (count > kMaxMeshDevices)
    return Status::error("mesh is too large: " + std::to_string(count) +
                         " devices, more than the " +
                         std::to_string(kMaxMeshDevices) +
                         " Partita supports");
  if (deviceIds.empty())
    return Status::success();

  std::string range = "0.." + std::to_string(count - 1);
  if (static_cast<int64_t>(deviceIds.size()) != count)
    return Status::error("device_ids must be a permutation of " + range +
                         ": got " + std::to_string(deviceIds.size()) +
                         " ids for " + std::to_string(count) + " devices");
  std::vector<bool> seen(deviceIds.size(), false);
  for (int64_t id : deviceIds) {
    if (id < 0 || id >= count)
      return Status::error("device_ids must be a permutation of " + range +
                           ": id " + std::to_string(id) + " is out of range");
    if (seen[id])
      return Status::error("device_ids must be a permutation of " + range +
                           ": id " + std::to_string(id) + " appears twice");
    seen[id] = true;
  }
  return Status::success();
}

Expected<Mesh> Mesh::create(std::vector<MeshAxis> axes,
                            std::vector<int64_t> deviceIds) {
  if (Status status = validate(axes, deviceIds); !status.ok())
    return status;
  // The identity is stored as "no explicit ids" so that equal meshes compare
  // equal however they were spelled.
  bool identity = true;
  for (size_t i = 0; i < deviceIds.size() && identity; ++i)
    identity = deviceIds[i] == static_cast<int64_t>(i);
  Mesh mesh;
  mesh.axisList = std::move(axes);
  if (!identity)
    mesh.ids = std::move(deviceIds);
  return mesh;
}

int64_t Mesh::numDevices() const {
  int64_t count = 1;
  for (const MeshAxis &axis : axisList)
    count *= axis.size;
  return count;
}

int Mesh::axisIndex(std::string_view name) const {
  for (size_t i = 0; i < axisList.size(); ++i)
    if (axisList[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int64_t Mesh::axisSize(std::string_view name) const {
  int index = axisIndex(name);
  return index < 0 ? 0 : axisList[index].size;
}

int64_t Mesh::deviceAt(const std::vector<int64_t> &coords) const {
  int64_t position = linearPosition(axisList, coords);
  if (position < 0 || ids.empty())
    return position;
  return ids[position];
}

std::vector<int64_t> Mesh::coordinates(int64_t deviceId) const {
  if (deviceId < 0 || deviceId >= numDevices())
    return {};
  int64_t position = deviceId;
  if (!ids.empty()) {
    // No inverse table is kept (the class stores only what it was built
    // from), so look the id up; meshes are small next to the work per device.
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == deviceId)
        position = static_cast<int64_t>(i);
  }
  std::vector<int64_t> coords(axisList.size(), 0);
  for (size_t i = axisList.size(); i-- > 0;) {
    coords[i] = position % axisList[i].size;
    position /= axisList[i].size;
  }
  return coords;
}

std::string Mesh::toString() const {
  std::string text;
  for (const MeshAxis &axis : axisList) {
    if (!text.empty())
      text += ',';
    text += axis.name + "=" + std::to_string(axis.size);
  }
  return text;
}

Expected<Mesh> parseMeshSpec(std::string_view text) {
  if (trim(text).empty())
    return Status::error("empty mesh spec; expected NAME=SIZE[,NAME=SIZE...] "
                         "such as 'data=2,model=4'");
  std::vector<MeshAxis> axes;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view entry = text.substr(
        start, comma == std::string_view::npos ? text.npos : comma - start);
    std::string_view item = trim(entry);
    std::string where = " at position " + std::to_string(start);
    if (item.empty())
      return Status::error("empty entry in mesh spec" + where +
                           "; expected NAME=SIZE");
    size_t equals = item.find('=');
    if (equals == std::string_view::npos)
      return Status::error("mesh spec entry '" + std::string(item) + "'" +
                           where + " has no '='; expected NAME=SIZE");
    std::string_view name = trim(item.substr(0, equals));
    std::string_view size = trim(item.substr(equals + 1));
    if (name.empty())
      return Status::error("mesh spec entry '" + std::string(item) + "'" +
                           where + " has no axis name; expected NAME=SIZE");
    bool nameOk = isAxisNameStart(name.front());
    for (char c : name)
      nameOk = nameOk && isAxisNameChar(c);
    if (!nameOk)
      return Status::error(
          "invalid mesh axis name '" + std::string(name) + "'" + where +
          "; a name starts with a letter or '_' and continues with letters, "
          "digits, '_', '-' or '.'");
    int64_t value = 0;
    bool overflow = false;
    if (!parseInteger(size, value, overflow))
      return Status::error("invalid size '" + std::string(size) +
                           "' for mesh axis '" + std::string(name) + "'" +
                           where + "; expected an integer");
    if (overflow)
      return Status::error("size '" + std::string(size) + "' for mesh axis '" +
                           std::string(name) + "' is too large");
    axes.push_back(MeshAxis{std::string(name), value});
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  return Mesh::create(std::move(axes));
}

std::string formatAxes(const std::vector<std::string> &axes) {
  std::string text = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? ", " : "") + axes[i];
  return text + "]";
}

Expected<CollectiveGroup> resolveGroup(const Mesh &mesh, int64_t deviceId,
                                       const std::vector<std::string> &axes) {
  if (axes.empty())
    return Status::error("a collective needs at least one mesh axis");
  if (deviceId < 0 || deviceId >= mesh.numDevices())
    return Status::error("device " + std::to_string(deviceId) +
                         " is not on mesh " + mesh.toString());
  CollectiveGroup group;
  for (const std::string &axis : axes) {
    int index = mesh.axisIndex(axis);
    if (index < 0)
      return Status::error("unknown mesh axis '" + axis + "' on mesh " +
                           mesh.toString());
    if (std::find(group.axisIndices.begin(), group.axisIndices.end(), index) !=
        group.axisIndices.end())
      return Status::error("mesh axis '" + axis + "' is named twice in " +
                           formatAxes(axes));
    group.axisIndices.push_back(index);
  }
  std::vector<int64_t> coords = mesh.coordinates(deviceId);
  int64_t groupSize = 1;
  for (int index : group.axisIndices) {
    int64_t size = mesh.axes()[index].size;
    group.position = group.position * size + coords[index];
    groupSize *= size;
  }
  group.members.reserve(groupSize);
  for (int64_t position = 0; position < groupSize; ++position) {
    // Mixed radix: the last named axis is the least significant digit.
    int64_t rest = position;
    for (size_t k = group.axisIndices.size(); k-- > 0;) {
      int64_t size = mesh.axes()[group.axisIndices[k]].size;
      coords[group.axisIndices[k]] = rest % size;
      rest /= size;
    }
    group.members.push_back(mesh.deviceAt(coords));
  }
  return group;
}

} // namespace partita

std::string partita::subAxisName(std::string_view parent, int64_t before,
                                 int64_t size) {
  return std::string(parent) + ":(" + std::to_string(before) + ")" +
         std::to_string(size);
}

std::string_view partita::parentAxis(std::string_view name) {
  size_t open = name.rfind(":(");
  if (open == std::string_view::npos || open == 0)
    return name;
  // The rest must read "(digits)digits".
  size_t close = name.find(')', open);
  auto digits = [](std::string_view text) {
    return !text.empty() &&
           text.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (close == std::string_view::npos ||
      !digits(name.substr(open + 2, close - open - 2)) ||
      !digits(name.substr(close + 1)))
    return name;
  return name.substr(0, open);
}

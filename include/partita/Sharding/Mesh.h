//===- Mesh.h - Logical device meshes ---------------------------*- C++ -*-===//
//
// A mesh names the axes of an N-D array of devices, major to minor
// ("data"=4, "model"=2). A device's coordinates are its position in that
// array; its id is the row-major linear index of the coordinates unless an
// explicit `device_ids` permutation says otherwise (deviceIds[position]).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_MESH_H
#define PARTITA_SHARDING_MESH_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace partita {

/// One named axis of a mesh.
struct MeshAxis {
  std::string name;
  int64_t size = 0;
  bool operator==(const MeshAxis &other) const {
    return name == other.name && size == other.size;
  }
};

/// A validated mesh. Construct with Mesh::create or parseMeshSpec.
class Mesh {
public:
  /// An empty mesh (no axes, one device); mostly useful as a placeholder.
  Mesh() = default;

  /// Checks and builds a mesh. Fails on an empty or duplicate axis name, a
  /// non-positive size, or `deviceIds` that are not a permutation of
  /// [0, numDevices) (an empty `deviceIds` means the identity).
  static Expected<Mesh> create(std::vector<MeshAxis> axes,
                               std::vector<int64_t> deviceIds = {});
  /// The checks of create() without building anything.
  static Status validate(const std::vector<MeshAxis> &axes,
                         const std::vector<int64_t> &deviceIds);

  /// Axes, major to minor.
  const std::vector<MeshAxis> &axes() const { return axisList; }
  /// Number of axes.
  int rank() const { return static_cast<int>(axisList.size()); }
  /// Product of the axis sizes.
  int64_t numDevices() const;
  /// Index of the axis called `name`, or -1.
  int axisIndex(std::string_view name) const;
  /// Size of the axis called `name`, or 0 when there is none.
  int64_t axisSize(std::string_view name) const;
  /// The explicit device ids; empty when they are the identity.
  const std::vector<int64_t> &deviceIds() const { return ids; }

  /// Device id at `coords` (one coordinate per axis), honouring device_ids.
  int64_t deviceAt(const std::vector<int64_t> &coords) const;
  /// Coordinates of device `deviceId` (inverse of deviceAt).
  std::vector<int64_t> coordinates(int64_t deviceId) const;

  /// CLI spelling: "data=2,model=4".
  std::string toString() const;

  bool operator==(const Mesh &other) const {
    return axisList == other.axisList && ids == other.ids;
  }

private:
  std::vector<MeshAxis> axisList;
  std::vector<int64_t> ids;
};

/// Parses the CLI spelling "data=2,model=4" (whitespace allowed around
/// tokens). The message of a failure names the offending token.
Expected<Mesh> parseMeshSpec(std::string_view text);

/// The most devices a mesh may have (2^20): far beyond any machine, small
/// enough that walking every device stays instant.
constexpr int64_t kMaxMeshDevices = int64_t{1} << 20;

/// A device's group: the mesh axis indices named by the op, the member
/// device ids in group order, and the device's own position.
struct CollectiveGroup {
  std::vector<int> axisIndices;
  std::vector<int64_t> members;
  int64_t position = 0;
};

/// Resolves `axes` on `mesh` for `deviceId`. Fails on an unknown, repeated
/// or missing axis, or a device id outside the mesh.
Expected<CollectiveGroup> resolveGroup(const Mesh &mesh, int64_t deviceId,
                                       const std::vector<std::string> &axes);

/// "[data, model]" for messages.
std::string formatAxes(const std::vector<std::string> &axes);

/// Sub-axes (docs/Propagation.md, "Sub-axes"): a mesh axis of size n = a*b
/// can be declared as two axes, its major part of a devices and its minor
/// part of b, without moving any device. They are named as Shardy writes
/// them, `model:(1)2` and `model:(2)2`: the parent axis, the product of the
/// sizes of the parts before this one, and this part's size.
std::string subAxisName(std::string_view parent, int64_t before, int64_t size);
/// The parent of a sub-axis name (`model` for `model:(2)2`); the name
/// itself for a whole axis.
std::string_view parentAxis(std::string_view name);

} // namespace partita

#endif // PARTITA_SHARDING_MESH_H

//===- Gspmd.h - GSPMD sharding strings -------------------------*- C++ -*-===//
//
// JAX with Shardy off writes each sharding as a GSPMD (XLA HloSharding)
// string, `mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"`:
// the tensor is cut into a grid of tiles and each tile position is given a
// device. Such a string names no mesh; the StableHLO importer expresses it
// on a mesh of its own. This is the IR-free reading of the string.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_GSPMD_H
#define PARTITA_SHARDING_GSPMD_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace partita {

/// A GSPMD sharding: `{replicated}`, or a tile grid and the device at each
/// of its positions.
struct GspmdSharding {
  /// `{replicated}`: every device holds the whole tensor; the other fields
  /// are empty.
  bool replicated = false;
  /// The number of tiles along each tensor dimension, followed, when
  /// lastTileReplicates, by the number of devices that hold each tile.
  std::vector<int64_t> tile;
  /// `last_tile_dim_replicate`: the last entry of `tile` counts copies of a
  /// tile, not tiles of a tensor dimension.
  bool lastTileReplicates = false;
  /// The device at each tile position, row-major; as many as the product
  /// of `tile`.
  std::vector<int64_t> devices;
};

/// Parses a GSPMD sharding string:
///
///   {replicated}
///   {devices=[t0,t1,...]d0,d1,...}           the devices listed
///   {devices=[t0,t1,...]<=[n0,n1,...]}       devices 0, 1, 2, ... in order
///   {devices=[t0,t1,...]<=[n0,n1,...]T(p0,p1,...)}
///
/// each tiled form optionally ending in ` last_tile_dim_replicate`. The
/// iota forms list the devices of an n0 x n1 x ... array numbered row-major,
/// transposed by the permutation p (dimension i of the result is dimension
/// p_i of the array) and read row-major; their count must be the tile's.
/// Spaces may surround the braces' contents, list entries and the parts
/// after the tile; empty list entries are skipped. Tile and iota sizes are
/// positive. Listed device ids are returned as written: whether they are
/// the devices of a mesh is the caller's check. Other shardings (maximal,
/// manual, tuples, subgroups) are errors.
Expected<GspmdSharding> parseGspmdSharding(std::string_view text);

} // namespace partita

#endif // PARTITA_SHARDING_GSPMD_H

//===- BlockGrid.h - Which device holds which block of a tensor -*- C++ -*-===//
//
// The grid `partita show` draws in the terminal and the HTML report
// (--html) draws as a table.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_REPORTING_BLOCKGRID_H
#define PARTITA_REPORTING_BLOCKGRID_H

#include "partita/Sharding/Mesh.h"
#include "partita/Sharding/Sharding.h"

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace partita {

/// The blocks of a tensor's last two dimensions (one row and one column per
/// shard; a scalar or vector has one row): labels "rows 0:4" / "cols 8:16"
/// (empty for a dimension the tensor lacks), and per cell the devices
/// holding that block ("dev 0-3,8") or "(padding)" for a block past the
/// end of an uneven dimension.
struct BlockGrid {
  std::vector<std::string> rowLabels, colLabels;
  std::vector<std::vector<std::string>> cells;
};

/// "0-3,8": a list of device ids, runs of three or more as ranges.
std::string deviceList(const std::vector<int64_t> &devices);

/// "0:4": the half-open range [begin, end) of indices.
std::string rangeText(int64_t begin, int64_t end);

/// The grid of `shape` under `sharding` on `mesh`, for the block of the
/// leading dimensions at `leadingBlock` (block indices, zeros if short).
BlockGrid blockGrid(const Mesh &mesh, const Sharding &sharding,
                    const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &leadingBlock);

/// `partita show`'s picture: the mesh axes the blocks are replicated over,
/// the partial part in words, then one grid per block of the leading
/// dimensions (with `color`, cells of the same devices share a background
/// colour, for a terminal).
void drawSharding(llvm::raw_ostream &os, const Mesh &mesh,
                  const Sharding &sharding, const std::vector<int64_t> &shape,
                  bool color);

} // namespace partita

#endif // PARTITA_REPORTING_BLOCKGRID_H

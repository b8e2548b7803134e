//===- BlockGrid.cpp - Which device holds which block of a tensor ---------===//

#include "partita/Reporting/BlockGrid.h"

#include "partita/Sharding/Layout.h"

#include <algorithm>

using namespace partita;

std::string partita::deviceList(const std::vector<int64_t> &devices) {
  std::string text;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1)
      ++j;
    if (!text.empty())
      text += ",";
    text += std::to_string(devices[i]);
    if (j >= i + 2)
      text += "-" + std::to_string(devices[j]);
    else if (j == i + 1)
      text += "," + std::to_string(devices[j]);
    i = j + 1;
  }
  return text;
}

std::string partita::rangeText(int64_t begin, int64_t end) {
  return std::to_string(begin) + ":" + std::to_string(end);
}

BlockGrid partita::blockGrid(const Mesh &mesh, const Sharding &sharding,
                             const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &leadingBlock) {
  std::vector<int64_t> counts, chunks;
  for (int d = 0; d < sharding.rank() && d < static_cast<int>(shape.size());
       ++d) {
    counts.push_back(numShards(mesh, sharding.dims[d]));
    chunks.push_back(counts.back() > 0
                         ? (shape[d] + counts.back() - 1) / counts.back()
                         : shape[d]);
  }
  int rank = static_cast<int>(counts.size());
  int rowDim = rank >= 2 ? rank - 2 : -1;
  int colDim = rank >= 1 ? rank - 1 : -1;
  int64_t rows = rowDim >= 0 ? counts[rowDim] : 1;
  int64_t cols = colDim >= 0 ? counts[colDim] : 1;
  auto label = [&](const char *what, int dim, int64_t i) {
    return std::string(what) +
           rangeText(std::min(i * chunks[dim], shape[dim]),
                     std::min((i + 1) * chunks[dim], shape[dim]));
  };
  // The devices holding a block ("(padding)": a block past the end).
  auto cellText = [&](const std::vector<int64_t> &blockIndex) -> std::string {
    std::vector<int64_t> index;
    for (size_t d = 0; d < blockIndex.size(); ++d) {
      int64_t begin = blockIndex[d] * chunks[d];
      if (begin >= shape[d] && shape[d] > 0)
        return "(padding)";
      index.push_back(std::min(begin, std::max<int64_t>(shape[d] - 1, 0)));
    }
    return "dev " + deviceList(devicesHolding(mesh, sharding, shape, index));
  };
  BlockGrid grid;
  grid.rowLabels.assign(rows, "");
  grid.colLabels.assign(cols, "");
  grid.cells.assign(rows, std::vector<std::string>(cols));
  for (int64_t i = 0; i < rows; ++i) {
    if (rowDim >= 0)
      grid.rowLabels[i] = label("rows ", rowDim, i);
    for (int64_t j = 0; j < cols; ++j) {
      std::vector<int64_t> block = leadingBlock;
      block.resize(std::max(rank - 2, 0), 0);
      if (rowDim >= 0)
        block.push_back(i);
      if (colDim >= 0)
        block.push_back(j);
      grid.cells[i][j] = cellText(block);
    }
  }
  for (int64_t j = 0; j < cols && colDim >= 0; ++j)
    grid.colLabels[j] = label("cols ", colDim, j);
  return grid;
}

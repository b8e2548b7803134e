//===- BlockGrid.cpp - Which device holds which block of a tensor ---------===//
//
// The grid, and `partita show`'s picture of it in the spirit of
// jax.debug.visualize_array_sharding: the last two dimensions as a grid of
// blocks, one grid per block of the leading dimensions.
//
//===----------------------------------------------------------------------===//

#include "partita/Reporting/BlockGrid.h"

#include "partita/Sharding/Layout.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

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

namespace {

std::string padCenter(const std::string &text, size_t width) {
  size_t left = (width - std::min(width, text.size())) / 2;
  return std::string(left, ' ') + text +
         std::string(width - std::min(width, text.size()) - left, ' ');
}

class Picture {
public:
  Picture(const Mesh &mesh, const Sharding &sharding,
          std::vector<int64_t> shape, bool color)
      : mesh(mesh), sharding(sharding), shape(std::move(shape)), color(color) {
    for (int d = 0; d < this->sharding.rank(); ++d) {
      counts.push_back(numShards(mesh, this->sharding.dims[d]));
      chunks.push_back(counts.back() > 0
                           ? (this->shape[d] + counts.back() - 1) /
                                 counts.back()
                           : this->shape[d]);
    }
  }

  void draw(llvm::raw_ostream &os) {
    int rank = static_cast<int>(shape.size());
    if (rank == 0) {
      grid({}, os);
      return;
    }
    int leading = std::max(0, rank - 2);
    std::vector<int64_t> block(leading, 0);
    while (true) {
      if (leading > 0) {
        os << "block";
        for (int d = 0; d < leading; ++d) {
          int64_t begin = block[d] * chunks[d];
          os << (d ? ", " : " ") << "dim " << d << " ["
             << rangeText(std::min(begin, shape[d]),
                          std::min(begin + chunks[d], shape[d]))
             << "]";
        }
        os << ":\n";
      }
      grid(block, os);
      int d = leading - 1;
      while (d >= 0 && ++block[d] == counts[d])
        block[d--] = 0;
      if (d < 0)
        break;
      os << "\n";
    }
  }

private:
  const Mesh &mesh;
  Sharding sharding;
  std::vector<int64_t> shape;
  bool color;
  std::vector<int64_t> counts, chunks;
  std::map<std::string, int> colours;

  void grid(const std::vector<int64_t> &leadingBlock, llvm::raw_ostream &os) {
    BlockGrid blocks = blockGrid(mesh, sharding, shape, leadingBlock);
    const std::vector<std::string> &rowLabels = blocks.rowLabels;
    const std::vector<std::string> &colLabels = blocks.colLabels;
    const std::vector<std::vector<std::string>> &cells = blocks.cells;
    int64_t rows = static_cast<int64_t>(cells.size());
    int64_t cols = static_cast<int64_t>(cells.front().size());
    int colDim = shape.empty() ? -1 : static_cast<int>(shape.size()) - 1;
    size_t width = 0, labelWidth = 0;
    for (const std::string &label : rowLabels)
      labelWidth = std::max(labelWidth, label.size());
    for (const std::string &label : colLabels)
      width = std::max(width, label.size());
    for (const std::vector<std::string> &row : cells)
      for (const std::string &cell : row)
        width = std::max(width, cell.size());
    width += 2;
    std::string indent(labelWidth + 1, ' ');
    std::string rule = indent + "+";
    for (int64_t j = 0; j < cols; ++j)
      rule += std::string(width, '-') + "+";
    if (colDim >= 0) {
      os << indent << " ";
      for (int64_t j = 0; j < cols; ++j)
        os << padCenter(colLabels[j], width) << " ";
      os << "\n";
    }
    os << rule << "\n";
    for (int64_t i = 0; i < rows; ++i) {
      os << rowLabels[i]
         << std::string(labelWidth - rowLabels[i].size() + 1, ' ') << "|";
      for (int64_t j = 0; j < cols; ++j) {
        std::string text = padCenter(cells[i][j], width);
        if (color) {
          auto [it, inserted] =
              colours.emplace(cells[i][j], static_cast<int>(colours.size()));
          // Light backgrounds from the 256-colour palette, black text.
          static const int palette[] = {153, 194, 223, 217, 189, 230, 159, 225};
          os << "\033[30;48;5;" << palette[it->second % 8] << "m" << text
             << "\033[0m|";
        } else {
          os << text << "|";
        }
      }
      os << "\n" << rule << "\n";
    }
  }
};

} // namespace

void partita::drawSharding(llvm::raw_ostream &os, const Mesh &mesh,
                           const Sharding &sharding,
                           const std::vector<int64_t> &shape, bool color) {
  std::vector<std::string> used = sharding.dimAxes();
  used.insert(used.end(), sharding.partialAxes.begin(),
              sharding.partialAxes.end());
  for (const MeshAxis &axis : mesh.axes())
    if (axis.size > 1 &&
        std::find(used.begin(), used.end(), axis.name) == used.end())
      os << "replicated over \"" << axis.name << "\" (" << axis.size
         << " devices hold each block)\n";
  if (sharding.partialKind != PartialKind::None) {
    os << "partial " << partialKindName(sharding.partialKind) << " over";
    for (const std::string &axis : sharding.partialAxes)
      os << " \"" << axis << "\"";
    os << ": the devices of a cell hold different "
       << (sharding.partialKind == PartialKind::Sum ? "addends" : "candidates")
       << " of that block\n";
  }
  os << "\n";
  Picture(mesh, sharding, shape, color).draw(os);
}

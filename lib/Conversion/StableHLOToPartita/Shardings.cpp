//===- Shardings.cpp - Meshes and shardings into partita ------------------===//
//
// Meshes and shardings: Shardy's `sdy.mesh` and `#sdy.sharding` become
// partita meshes and shardings (their printed forms nearly agree); GSPMD's
// `mhlo.sharding` strings, which name device tiles and no mesh, are
// expressed on @gspmd_mesh, whose axes are the prime factors of the device
// count; sharding constraints of both kinds.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "mlir/AsmParser/AsmParser.h"

#include <algorithm>

namespace partita {
namespace stablehlo_import {

namespace {

/// A GSPMD sharding string: `{replicated}` or `{devices=[t...]<ids>
/// [last_tile_dim_replicate]}` with ids an explicit list or an iota
/// `<=[dims]` or `<=[dims]T(perm)`.
struct GspmdSharding {
  bool replicated = false;
  std::vector<int64_t> tile;
  bool lastTileReplicates = false;
  /// The device at each tile position, row-major.
  std::vector<int64_t> devices;
};

std::optional<std::vector<int64_t>> parseIntegerList(StringRef text) {
  std::vector<int64_t> values;
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, false);
  for (StringRef part : parts) {
    int64_t value = 0;
    if (part.trim().getAsInteger(10, value))
      return std::nullopt;
    values.push_back(value);
  }
  return values;
}

std::optional<GspmdSharding> parseGspmd(StringRef text) {
  GspmdSharding sharding;
  text = text.trim();
  if (!text.consume_front("{") || !text.consume_back("}"))
    return std::nullopt;
  text = text.trim();
  if (text == "replicated") {
    sharding.replicated = true;
    return sharding;
  }
  if (!text.consume_front("devices=["))
    return std::nullopt;
  auto [tileText, rest] = text.split(']');
  std::optional<std::vector<int64_t>> tile = parseIntegerList(tileText);
  if (!tile)
    return std::nullopt;
  sharding.tile = *tile;
  int64_t total = 1;
  for (int64_t t : sharding.tile)
    total *= t;
  rest = rest.trim();
  if (rest.consume_back("last_tile_dim_replicate")) {
    sharding.lastTileReplicates = true;
    rest = rest.trim();
  }
  if (rest.consume_front("<=[")) {
    auto [dimsText, after] = rest.split(']');
    std::optional<std::vector<int64_t>> dims = parseIntegerList(dimsText);
    if (!dims)
      return std::nullopt;
    std::vector<int64_t> perm(dims->size());
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<int64_t>(i);
    after = after.trim();
    if (after.consume_front("T(")) {
      std::optional<std::vector<int64_t>> parsed =
          parseIntegerList(after.take_until([](char c) { return c == ')'; }));
      if (!parsed || parsed->size() != dims->size())
        return std::nullopt;
      perm = *parsed;
      after = after.drop_until([](char c) { return c == ')'; }).drop_front();
    }
    if (!after.trim().empty())
      return std::nullopt;
    // devices = transpose(iota(dims), perm), flattened.
    std::vector<int64_t> transposed;
    for (int64_t p : perm)
      transposed.push_back((*dims)[p]);
    std::vector<int64_t> strides(dims->size(), 1);
    for (int64_t d = static_cast<int64_t>(dims->size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * (*dims)[d + 1];
    for (int64_t i = 0; i < total; ++i) {
      int64_t rem = i, id = 0;
      for (int64_t d = static_cast<int64_t>(transposed.size()) - 1; d >= 0;
           --d) {
        id += (rem % transposed[d]) * strides[perm[d]];
        rem /= transposed[d];
      }
      sharding.devices.push_back(id);
    }
  } else {
    std::optional<std::vector<int64_t>> ids = parseIntegerList(rest);
    if (!ids)
      return std::nullopt;
    sharding.devices = *ids;
  }
  if (static_cast<int64_t>(sharding.devices.size()) != total)
    return std::nullopt;
  return sharding;
}

} // namespace

FailureOr<SmallVector<Value>> Importer::shardingConstraint(Operation *op) {
  ShardingAttr sharding = importSharding(op, property(op, "sharding"),
                                         op->getOperand(0).getType(),
                                         "the constraint");
  if (!sharding)
    return failure();
  return SmallVector<Value>{ShardingConstraintOp::create(
      builder, op->getLoc(), op->getOperand(0), sharding)};
}

ShardingAttr Importer::importSharding(Operation *where, Attribute sdy,
                                      Type type, StringRef what) {
  if (!sdy) {
    fail(where) << "missing sharding";
    return nullptr;
  }
  std::string text = printed(sdy);
  const std::string prefix = "#sdy.sharding<";
  if (text.rfind(prefix, 0) != 0) {
    fail(where) << "unsupported sharding attribute " << text;
    return nullptr;
  }
  std::string body = text.substr(prefix.size());
  // Explicitly replicated and unreduced axes say nothing ours cannot infer.
  for (const char *clause : {", replicated={", ", unreduced={"}) {
    size_t at = body.find(clause);
    if (at != std::string::npos) {
      size_t close = body.find('}', at);
      body.erase(at, close - at + 1);
    }
  }
  Attribute parsed = parseAttribute("#partita.sharding<" + body, context);
  auto sharding = dyn_cast_or_null<ShardingAttr>(parsed);
  if (!sharding) {
    fail(where) << "cannot read the sharding " << text;
    return nullptr;
  }
  // Checked against its mesh now, so that a bad axis is reported with the
  // other problems of the module.
  if (failed(verifyShardingFor(where, sharding, type, what,
                               [&]() { return fail(where); })))
    return nullptr;
  return sharding;
}

void Importer::makeGspmdMesh() {
  if (gspmdMesh)
    return;
  int64_t devices = 1;
  if (auto partitions =
          dyn_cast_or_null<IntegerAttr>(module->getAttr("mhlo.num_partitions")))
    devices = partitions.getInt();
  for (int64_t n = devices, p = 2; n > 1;) {
    if (n % p == 0) {
      gspmdFactors.push_back(p);
      n /= p;
    } else {
      ++p;
    }
  }
  if (gspmdFactors.empty())
    gspmdFactors.push_back(1);
  SmallVector<MeshAxisAttr> axes;
  for (size_t a = 0; a < gspmdFactors.size(); ++a)
    axes.push_back(MeshAxisAttr::get(
        context, StringAttr::get(context, "a" + std::to_string(a)),
        gspmdFactors[a]));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  MeshOp::create(builder, module.getLoc(), "gspmd_mesh",
                 MeshAttr::get(context, axes, {}));
  gspmdMesh = FlatSymbolRefAttr::get(context, "gspmd_mesh");
}

ShardingAttr Importer::importGspmdSharding(Operation *where, Attribute attr,
                                           Type type, StringRef what) {
  auto text = dyn_cast_or_null<StringAttr>(attr);
  std::optional<GspmdSharding> parsed =
      text ? parseGspmd(text.getValue()) : std::nullopt;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!parsed || !tensor) {
    fail(where) << "unsupported GSPMD sharding of " << what << ": "
                << (text ? text.getValue() : StringRef("(not a string)"));
    return nullptr;
  }
  makeGspmdMesh();
  int64_t rank = tensor.getRank();
  Sharding sharding = Sharding::replicated(static_cast<int>(rank));
  if (!parsed->replicated) {
    int64_t tensorDims = static_cast<int64_t>(parsed->tile.size()) -
                         (parsed->lastTileReplicates ? 1 : 0);
    int64_t total = 1;
    for (int64_t factor : gspmdFactors)
      total *= factor;
    if (tensorDims != rank ||
        static_cast<int64_t>(parsed->devices.size()) != total) {
      fail(where) << "GSPMD sharding of " << what << " " << text.getValue()
                  << " does not fit a rank-" << rank << " tensor on "
                  << total << " devices";
      return nullptr;
    }
    // Find an order of the mesh axes whose row-major enumeration is the
    // tile assignment, and whose factors group into the tile dimensions.
    int axesCount = static_cast<int>(gspmdFactors.size());
    std::vector<int> order(axesCount);
    for (int a = 0; a < axesCount; ++a)
      order[a] = a;
    std::vector<int64_t> meshStrides(axesCount, 1);
    for (int a = axesCount - 2; a >= 0; --a)
      meshStrides[a] = meshStrides[a + 1] * gspmdFactors[a + 1];
    bool found = false;
    do {
      bool same = true;
      for (int64_t i = 0; same && i < total; ++i) {
        int64_t rem = i, id = 0;
        for (int k = axesCount - 1; k >= 0; --k) {
          int64_t size = gspmdFactors[order[k]];
          id += (rem % size) * meshStrides[order[k]];
          rem /= size;
        }
        same = id == parsed->devices[i];
      }
      if (!same)
        continue;
      // Group consecutive axes of `order` into tile dimensions.
      std::vector<std::vector<std::string>> dims(parsed->tile.size());
      size_t next = 0;
      bool aligned = true;
      for (size_t d = 0; aligned && d < parsed->tile.size(); ++d) {
        int64_t product = 1;
        while (product < parsed->tile[d] && next < order.size()) {
          product *= gspmdFactors[order[next]];
          dims[d].push_back("a" + std::to_string(order[next++]));
        }
        aligned = product == parsed->tile[d];
      }
      if (!aligned || next != order.size())
        continue;
      for (int64_t d = 0; d < rank; ++d)
        sharding.dims[d].axes = dims[d];
      found = true;
      break;
    } while (std::next_permutation(order.begin(), order.end()));
    if (!found) {
      fail(where) << "GSPMD sharding of " << what << " " << text.getValue()
                  << " is not a split over the prime-factor axes of "
                  << total << " devices";
      return nullptr;
    }
  }
  ShardingAttr result = ShardingAttr::fromSharding(context, gspmdMesh, sharding);
  if (failed(verifyShardingFor(where, result, type, what,
                               [&]() { return fail(where); })))
    return nullptr;
  return result;
}

void Importer::importMeshes() {
  for (Operation &op : llvm::make_early_inc_range(*module.getBody())) {
    if (op.getName().getStringRef() != "sdy.mesh")
      continue;
    auto name = dyn_cast_or_null<StringAttr>(property(&op, "sym_name"));
    Attribute mesh = property(&op, "mesh");
    std::string text = mesh ? printed(mesh) : "";
    const std::string prefix = "#sdy.mesh<";
    if (!name || text.rfind(prefix, 0) != 0) {
      fail(&op) << "unsupported mesh " << text;
      continue;
    }
    auto parsed = dyn_cast_or_null<MeshAttr>(
        parseAttribute("#partita.mesh<" + text.substr(prefix.size()),
                       context));
    if (!parsed) {
      fail(&op) << "cannot read the mesh " << text;
      continue;
    }
    builder.setInsertionPoint(&op);
    MeshOp::create(builder, op.getLoc(), name.getValue(), parsed);
    meshes[name.getValue()] = true;
    op.erase();
  }
}

} // namespace stablehlo_import
} // namespace partita

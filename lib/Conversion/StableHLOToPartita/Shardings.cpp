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

#include "llvm/Support/Regex.h"

#include "partita/Sharding/Gspmd.h"

#include "mlir/AsmParser/AsmParser.h"

#include <algorithm>

namespace partita {
namespace stablehlo_import {

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
  std::string why;
  Attribute parsed =
      parseAttributeText("#partita.sharding<" + body, context, &why);
  auto sharding = canonicalMesh(dyn_cast_or_null<ShardingAttr>(parsed));
  if (!sharding) {
    InFlightDiagnostic error = fail(where);
    error << "cannot read the sharding " << text;
    // A dimension's priority ({"data"}p1) steers Shardy's propagation
    // order; ours has no such order to steer.
    static const llvm::Regex priority("}p[0-9]+");
    if (priority.match(body))
      error << ": sharding priorities (p0, p1, ...) are not supported";
    else if (!why.empty())
      error << " (" << why << ")";
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
  std::optional<GspmdSharding> parsed;
  if (text)
    if (Expected<GspmdSharding> gspmd = parseGspmdSharding(text.getValue()))
      parsed = std::move(*gspmd);
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
    auto parsed = dyn_cast_or_null<MeshAttr>(parseAttributeText(
        "#partita.mesh<" + text.substr(prefix.size()), context));
    if (!parsed) {
      fail(&op) << "cannot read the mesh " << text;
      continue;
    }
    // JAX writes one mesh per use: jit's and a pmap's or shard_map's may
    // be the same mesh under two names. Such duplicates become the first.
    std::string key = printed(parsed);
    auto [first, inserted] = meshByText.try_emplace(key, name.getValue().str());
    if (!inserted) {
      meshAliases[name.getValue()] = first->second;
      op.erase();
      continue;
    }
    builder.setInsertionPoint(&op);
    MeshOp::create(builder, op.getLoc(), name.getValue(), parsed);
    meshes[name.getValue()] = true;
    op.erase();
  }
}

ShardingAttr Importer::canonicalMesh(ShardingAttr sharding) {
  if (!sharding || !sharding.getMesh())
    return sharding;
  auto alias = meshAliases.find(sharding.getMesh().getValue());
  if (alias == meshAliases.end())
    return sharding;
  return ShardingAttr::get(context,
                           FlatSymbolRefAttr::get(context, alias->second),
                           sharding.getDims(), sharding.getPartialKind(),
                           sharding.getPartialAxes(), sharding.getPriority());
}

} // namespace stablehlo_import
} // namespace partita

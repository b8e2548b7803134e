//===- JaxGoldenTest.cpp - Layout.h against JAX ---------------------------===//
//
// Compares deviceBlock with JAX's NamedSharding.devices_indices_map, as
// recorded by tools/gen-jax-golden.py in golden/jax_devices_indices.txt
// (format in that file's header). The meshes include permuted device arrays,
// which are our device_ids, and the specs are JAX's own printed spelling, so
// this also exercises parsePartitionSpec on real JAX output.
//
// JAX accepts only evenly divisible shapes (and empty dimensions); it raises
// IndivisibleError for the rest. Those shapes are listed as `refused` lines
// and checked to be exactly the ones isEvenlySharded rejects. Uneven blocks
// are covered by test/unit/Sharding/LayoutPropertyTest.cpp instead.
//
// The test fails when the file is missing, empty or malformed.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Layout.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace partita;

namespace {

const char *const kGoldenFile =
    PARTITA_TEST_DATA_DIR "/jax_devices_indices.txt";

/// Splits "1,2,3" into integers; false on anything else.
bool parseIntegerList(const std::string &text, std::vector<int64_t> &out) {
  out.clear();
  std::istringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != item.npos)
      return false;
    out.push_back(std::stoll(item));
  }
  return !out.empty();
}

/// A `case` or `refused` record: the mesh, the sharding and the shape.
struct Record {
  Mesh mesh;
  Sharding sharding;
  std::vector<int64_t> shape;
  std::vector<int64_t> ids;
};

/// Parses the fields after the keyword; the failure names the line.
Expected<Record> parseRecord(std::istringstream &fields, int lineNumber) {
  std::string where = "golden line " + std::to_string(lineNumber) + ": ";
  std::string meshText, idsText, shapeText, specText;
  fields >> meshText >> idsText >> shapeText;
  std::getline(fields, specText);
  Record record;
  Expected<Mesh> axes = parseMeshSpec(meshText);
  if (!axes)
    return Status::error(where + axes.status().message());
  if (!parseIntegerList(idsText, record.ids) ||
      !parseIntegerList(shapeText, record.shape))
    return Status::error(where + "bad device ids or shape");
  Expected<Mesh> mesh = Mesh::create(axes->axes(), record.ids);
  if (!mesh)
    return Status::error(where + mesh.status().message());
  record.mesh = *mesh;
  Expected<Sharding> sharding =
      parsePartitionSpec(specText, static_cast<int>(record.shape.size()));
  if (!sharding)
    return Status::error(where + sharding.status().message());
  record.sharding = *sharding;
  if (Status status =
          validateSharding(record.mesh, record.sharding, &record.shape);
      !status.ok())
    return Status::error(where + status.message());
  return record;
}

/// Parses "b:e b:e ..." into ranges; false on anything else.
bool parseRanges(std::istringstream &fields, std::vector<IndexRange> &out) {
  out.clear();
  std::string token;
  while (fields >> token) {
    size_t colon = token.find(':');
    std::vector<int64_t> ends;
    if (colon == token.npos ||
        !parseIntegerList(
            token.substr(0, colon) + "," + token.substr(colon + 1), ends) ||
        ends.size() != 2)
      return false;
    out.push_back(IndexRange{ends[0], ends[1]});
  }
  return true;
}

std::string rangesToString(const std::vector<IndexRange> &ranges) {
  std::string text;
  for (const IndexRange &r : ranges)
    text += (text.empty() ? "" : " ") + std::to_string(r.begin) + ":" +
            std::to_string(r.end);
  return text;
}

} // namespace

TEST_CASE("deviceBlock matches JAX's devices_indices_map", "[layout][jax]") {
  std::ifstream file(kGoldenFile);
  INFO("golden file: " << kGoldenFile
                       << " (regenerate with tools/gen-jax-golden.py)");
  REQUIRE(file.is_open());

  int lineNumber = 0, cases = 0, refused = 0, devicesChecked = 0;
  int permutedCases = 0, multiAxisCases = 0;
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(file, line))
    lines.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    lineNumber = static_cast<int>(i) + 1;
    if (lines[i].empty() || lines[i][0] == '#')
      continue;
    std::istringstream fields(lines[i]);
    std::string keyword;
    fields >> keyword;
    INFO("golden line " << lineNumber << ": " << lines[i]);
    REQUIRE((keyword == "case" || keyword == "refused"));
    Expected<Record> record = parseRecord(fields, lineNumber);
    if (!record)
      FAIL(record.status().message());
    const Mesh &mesh = record->mesh;
    const Sharding &sharding = record->sharding;
    const std::vector<int64_t> &shape = record->shape;

    if (keyword == "refused") {
      // JAX rejects exactly the shapes that do not divide evenly.
      CHECK_FALSE(isEvenlySharded(mesh, sharding, shape));
      ++refused;
      continue;
    }
    ++cases;
    CHECK(isEvenlySharded(mesh, sharding, shape));
    if (!mesh.deviceIds().empty())
      ++permutedCases;
    for (const DimSharding &dim : sharding.dims)
      if (dim.axes.size() > 1) {
        ++multiAxisCases;
        break;
      }
    for (int64_t position = 0; position < mesh.numDevices(); ++position) {
      REQUIRE(i + 1 < lines.size());
      const std::string &deviceLine = lines[++i];
      INFO("golden line " << i + 1 << ": " << deviceLine);
      std::istringstream deviceFields(deviceLine);
      std::string deviceKeyword;
      int64_t id = -1;
      std::vector<IndexRange> want;
      deviceFields >> deviceKeyword >> id;
      REQUIRE(deviceKeyword == "device");
      REQUIRE(parseRanges(deviceFields, want));
      // Lines come in mesh-position order: JAX's device array is our ids.
      CHECK(id == record->ids[position]);
      std::vector<IndexRange> got = deviceBlock(mesh, sharding, shape, id);
      INFO("got " << rangesToString(got) << ", JAX has "
                  << rangesToString(want));
      CHECK(got == want);
      CHECK(localShape(mesh, sharding, shape).size() == want.size());
      bool empty = std::any_of(want.begin(), want.end(),
                               [](const IndexRange &r) { return !r.size(); });
      if (!empty) {
        std::vector<int64_t> first;
        for (const IndexRange &r : want)
          first.push_back(r.begin);
        std::vector<int64_t> holders =
            devicesHolding(mesh, sharding, shape, first);
        CHECK(std::binary_search(holders.begin(), holders.end(), id));
      }
      ++devicesChecked;
    }
  }
  INFO(cases << " cases, " << refused << " refused shapes, " << devicesChecked
             << " device blocks");
  // An empty or truncated golden file must not pass quietly.
  REQUIRE(cases >= 100);
  CHECK(refused > 0);
  CHECK(permutedCases > 0);
  CHECK(multiAxisCases > 0);
}

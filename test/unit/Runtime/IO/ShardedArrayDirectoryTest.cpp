//===- ShardedArrayDirectoryTest.cpp - Sharded arrays on disk -------------===//
//
// The index (planning, printing, parsing and its consistency checks) and the
// directory round trip: replicas stored once, device ids honoured, shard
// files readable as plain .npy, rewrites replacing stale files, and corrupt
// directories rejected with messages that name the file.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/ShardedArray.h"
#include "partita/Runtime/IO/ShardedArrayDirectory.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace partita;
namespace fs = std::filesystem;

namespace {

Mesh makeMesh(const char *spec, std::vector<int64_t> ids = {}) {
  Expected<Mesh> parsed = parseMeshSpec(spec);
  REQUIRE(parsed.ok());
  Expected<Mesh> mesh = Mesh::create(parsed->axes(), std::move(ids));
  REQUIRE(mesh.ok());
  return *mesh;
}

Sharding spec(const char *text, int rank) {
  Expected<Sharding> sharding = parsePartitionSpec(text, rank);
  REQUIRE(sharding.ok());
  return *sharding;
}

HostArray rampArray(DType dtype, std::vector<int64_t> shape) {
  HostArray array = HostArray::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < array.bytes.size(); ++i)
    array.bytes[i] = static_cast<uint8_t>(3 * i + 1);
  return array;
}

/// A fresh, empty directory under the system's temporary directory.
std::string scratchDirectory(const std::string &name) {
  // The process id keeps concurrent runs (ctest -j, two builds) apart.
  fs::path path = fs::temp_directory_path() /
                  ("partita-rt-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(path);
  return path.string();
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string replaceOnce(std::string text, const std::string &from,
                        const std::string &to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("planShardFiles stores each distinct shard once", "[directory]") {
  Mesh mesh = makeMesh("data=2,model=4", {7, 6, 5, 4, 3, 2, 1, 0});
  ShardedArrayIndex index =
      planShardFiles(mesh, spec("P(\"data\", None)", 2), DType::F32, {5, 7});
  REQUIRE(index.files.size() == 2);
  CHECK(index.files[0].file == "shard_0_0.npy");
  CHECK(index.files[0].globalRanges == std::vector<IndexRange>{{0, 3}, {0, 7}});
  // Position 0-3 (data=0) hold ids 7, 6, 5, 4.
  CHECK(index.files[0].devices == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(index.files[1].file == "shard_1_0.npy");
  CHECK(index.files[1].globalRanges == std::vector<IndexRange>{{3, 5}, {0, 7}});
  CHECK(index.files[1].devices == std::vector<int64_t>{0, 1, 2, 3});

  ShardedArrayIndex scalar =
      planShardFiles(makeMesh("x=2"), spec("P()", 0), DType::I8, {});
  REQUIRE(scalar.files.size() == 1);
  CHECK(scalar.files[0].file == "shard.npy");
}

TEST_CASE("index.json prints, and parses back to the same index",
          "[directory]") {
  Mesh mesh = makeMesh("data=2,model=2", {3, 1, 2, 0});
  Sharding sharding = spec("P(\"model\", \"data\")", 2);
  ShardedArrayIndex index = planShardFiles(mesh, sharding, DType::BF16, {3, 5});
  std::string json = printShardedArrayIndex(index);
  CHECK_THAT(json, Catch::Contains("\"format\": \"partita-sharded-array\""));
  CHECK_THAT(json, Catch::Contains("\"dtype\": \"bf16\""));
  CHECK_THAT(json, Catch::Contains("\"device_ids\": [3, 1, 2, 0]"));
  CHECK_THAT(json, Catch::Contains(
                       "\"sharding\": \"[{\\\"model\\\"}, {\\\"data\\\"}]"));
  CHECK_THAT(json,
             Catch::Contains(
                 "\"partition_spec\": \"P(\\\"model\\\", \\\"data\\\")\""));
  CHECK_THAT(json, Catch::Contains("\"dim_axes\": [[\"model\"], [\"data\"]]"));
  CHECK_THAT(json, Catch::Contains("\"local_shape\": [2, 3]"));
  CHECK_THAT(json, Catch::Contains(
                       "{\"file\": \"shard_1_1.npy\", \"shard_indices\": "
                       "[1, 1], \"ranges\": [[2, 3], [3, 5]], \"devices\": "
                       "[0]}"));
  Expected<ShardedArrayIndex> back = parseShardedArrayIndex(json, "i.json");
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(back->mesh == mesh);
  CHECK(back->sharding == sharding);
  CHECK(back->dtype == DType::BF16);
  CHECK(back->globalShape == std::vector<int64_t>{3, 5});
  CHECK(back->files == index.files);
}

TEST_CASE("a corrupt index.json is rejected with the reason",
          "[directory][errors]") {
  Mesh mesh = makeMesh("data=2,model=2");
  std::string json = printShardedArrayIndex(
      planShardFiles(mesh, spec("P(\"data\", None)", 2), DType::F32, {3, 4}));
  auto failure = [](const std::string &text) {
    Expected<ShardedArrayIndex> parsed = parseShardedArrayIndex(text, "i.json");
    REQUIRE_FALSE(parsed.ok());
    return parsed.status().message();
  };
  CHECK(failure("{") ==
        "i.json: line 1, column 2: expected a member name in double quotes");
  CHECK(failure("[]") == "i.json: the index must be a JSON object");
  CHECK(failure(replaceOnce(json, "\"version\": 1", "\"version\": 2")) ==
        "i.json: format version 2 is not supported (this runtime reads "
        "version 1)");
  CHECK(failure(replaceOnce(json, "\"format\": \"partita-sharded-array\",",
                            "")) == "i.json: missing member \"format\"");
  CHECK(failure(replaceOnce(json, "\"dtype\": \"f32\"", "\"dtype\": 4")) ==
        "i.json: \"dtype\" must be a string but is an integer");
  CHECK_THAT(failure(replaceOnce(json, "\"f32\"", "\"f8\"")),
             Catch::StartsWith("i.json: \"dtype\": unknown element type 'f8'"));
  CHECK_THAT(failure(replaceOnce(json, "\"size\": 2", "\"size\": 0")),
             Catch::StartsWith("i.json: bad \"mesh\": "));
  CHECK(failure(replaceOnce(json, "[0, 1, 2, 3]", "[0, 1, 2]")) ==
        "i.json: \"mesh\".\"device_ids\" lists 3 devices but the mesh "
        "data=2,model=2 has 4");
  CHECK_THAT(failure(replaceOnce(json, "[[\"data\"], []]", "[[\"pipe\"], []]")),
             Catch::StartsWith("i.json: \"dim_axes\": "));
  CHECK_THAT(failure(replaceOnce(json, "[[\"data\"], []]", "[[\"data\"]]")),
             Catch::StartsWith("i.json: \"dim_axes\": "));
  CHECK(failure(replaceOnce(json, "[[2, 3], [0, 4]]", "[[2, 4], [0, 4]]")) ==
        "i.json: \"shards\"[1] covers [2:4, 0:4] but its shard covers "
        "[2:3, 0:4]");
  CHECK(failure(
            replaceOnce(json, "\"devices\": [2, 3]", "\"devices\": [3, 2]")) ==
        "i.json: \"shards\"[1] lists devices [3, 2] but shard [1, 0] is held "
        "by [2, 3]");
  CHECK(failure(replaceOnce(json, "\"devices\": [2, 3]", "\"devices\": [2]")) ==
        "i.json: the shards list 3 device holdings but the mesh has 4 "
        "devices");
  CHECK(failure(replaceOnce(json, "\"shard_1_0.npy\"", "\"../x.npy\"")) ==
        "i.json: \"shards\"[1].\"file\" must be a file name inside the "
        "directory, not '../x.npy'");
  CHECK(failure(replaceOnce(json, "\"shard_1_0.npy\"", "\"shard_0_0.npy\"")) ==
        "i.json: \"shards\"[1] reuses the file name shard_0_0.npy");
  CHECK(failure(replaceOnce(json, "\"shard_indices\": [1, 0]",
                            "\"shard_indices\": [2, 0]")) ==
        "i.json: \"shards\"[1] has shard indices [2, 0], which the layout "
        "does not have");
  CHECK(failure(replaceOnce(json, "\"ranges\": [[0, 2], [0, 4]]",
                            "\"ranges\": [[0, 2, 9], [0, 4]]")) ==
        "i.json: \"shards\"[0].\"ranges\" must hold [begin, end] pairs");
}

TEST_CASE("write and read a sharded array directory", "[directory]") {
  std::string directory = scratchDirectory("roundtrip");
  Mesh mesh = makeMesh("data=2,model=4", {7, 6, 5, 4, 3, 2, 1, 0});
  Sharding sharding = spec("P(\"model\", None)", 2);
  HostArray global = rampArray(DType::F16, {5, 3});
  REQUIRE(writeShardedArray(directory, global, mesh, sharding).ok());

  // model=4 over 5 rows: chunk 2, shards hold 2, 2, 1 and 0 rows.
  CHECK(fs::exists(directory + "/index.json"));
  for (int shard = 0; shard < 4; ++shard) {
    std::string file = directory + "/shard_" + std::to_string(shard) + "_0.npy";
    Expected<HostArray> stored = readNpy(file);
    REQUIRE(stored.ok());
    int64_t rows = std::max<int64_t>(0, std::min<int64_t>(2, 5 - 2 * shard));
    CHECK(stored->shape == std::vector<int64_t>{rows, 3});
  }
  CHECK(std::distance(fs::directory_iterator(directory),
                      fs::directory_iterator()) == 5);

  Expected<HostArray> back = readShardedArray(directory);
  REQUIRE(back.ok());
  CHECK(*back == global);

  Expected<ShardedArrayIndex> index = readShardedArrayIndex(directory);
  REQUIRE(index.ok());
  Expected<std::vector<HostArray>> blocks = readDeviceBlocks(directory, *index);
  REQUIRE(blocks.ok());
  Expected<std::vector<HostArray>> expected =
      sliceAllDeviceBlocks(global, mesh, sharding);
  REQUIRE(expected.ok());
  CHECK(*blocks == *expected);

  // Rewriting with another layout removes the files it no longer needs.
  REQUIRE(
      writeShardedArray(directory, global, mesh, spec("P(None, \"data\")", 2))
          .ok());
  CHECK_FALSE(fs::exists(directory + "/shard_3_0.npy"));
  CHECK(fs::exists(directory + "/shard_0_1.npy"));
  CHECK(*readShardedArray(directory) == global);
  fs::remove_all(directory);
}

TEST_CASE("the index holds each shard file's checksum", "[directory]") {
  std::string directory = scratchDirectory("checksums");
  Mesh mesh = makeMesh("data=2", {});
  HostArray global = rampArray(DType::F32, {4, 3});
  REQUIRE(writeShardedArray(directory, global, mesh, spec("P(\"data\")", 2))
              .ok());
  Expected<ShardedArrayIndex> index = readShardedArrayIndex(directory);
  REQUIRE(index.ok());
  for (const ShardFileEntry &entry : index->files)
    CHECK(entry.crc32c >= 0);
  // Two shards of the same shape swapped: the data would be wrong, the
  // shapes are right; the checksums catch it.
  fs::rename(directory + "/shard_0_0.npy", directory + "/swap.npy");
  fs::rename(directory + "/shard_1_0.npy", directory + "/shard_0_0.npy");
  fs::rename(directory + "/swap.npy", directory + "/shard_1_0.npy");
  Expected<HostArray> swapped = readShardedArray(directory);
  REQUIRE_FALSE(swapped.ok());
  CHECK(swapped.status().message().find("checksum mismatch") !=
        std::string::npos);
  // An index without checksums (written across processes, or by an older
  // writer) is still read.
  for (ShardFileEntry &entry : index->files)
    entry.crc32c = -1;
  {
    std::ofstream out(directory + "/index.json");
    out << printShardedArrayIndex(*index);
  }
  Expected<HostArray> unchecked = readShardedArray(directory);
  REQUIRE(unchecked.ok());
  CHECK_FALSE(*unchecked == global);
  fs::remove_all(directory);
}

TEST_CASE("writing from device blocks checks replicas", "[directory]") {
  std::string directory = scratchDirectory("fromblocks");
  Mesh mesh = makeMesh("data=2,model=2");
  Sharding sharding = spec("P(\"data\")", 1);
  HostArray global = rampArray(DType::I64, {3});
  std::vector<HostArray> blocks = *sliceAllDeviceBlocks(global, mesh, sharding);
  REQUIRE(
      writeShardedArrayFromBlocks(directory, mesh, sharding, {3}, blocks).ok());
  CHECK(*readShardedArray(directory) == global);
  blocks[1].bytes[0] ^= 1;
  Status mismatch =
      writeShardedArrayFromBlocks(directory, mesh, sharding, {3}, blocks);
  REQUIRE_FALSE(mismatch.ok());
  CHECK_THAT(mismatch.message(),
             Catch::StartsWith("replicas disagree at global index [0]"));
  fs::remove_all(directory);
}

TEST_CASE("broken directories are reported by file", "[directory][errors]") {
  std::string directory = scratchDirectory("broken");
  Mesh mesh = makeMesh("x=2");
  Sharding sharding = spec("P(\"x\")", 1);
  HostArray global = rampArray(DType::F32, {4});

  Expected<HostArray> missingDirectory = readShardedArray(directory);
  CHECK(missingDirectory.status().message() ==
        directory + ": no such sharded array directory");

  fs::create_directories(directory);
  writeText(directory + "/notes.txt", "mine");
  Status foreign = writeShardedArray(directory, global, mesh, sharding);
  CHECK(foreign.message() == directory +
                                 ": exists, is not empty and holds no "
                                 "index.json; remove it or write somewhere "
                                 "else");
  CHECK(readShardedArray(directory).status().message() ==
        directory + ": has no index.json, so it is not a sharded array "
                    "directory");
  fs::remove(directory + "/notes.txt");

  REQUIRE(writeShardedArray(directory, global, mesh, sharding).ok());
  std::string shard1 = directory + "/shard_1.npy";
  REQUIRE(writeNpy(shard1, rampArray(DType::I32, {2})).ok());
  CHECK(readShardedArray(directory).status().message() ==
        shard1 + ": holds i32 but the index says f32");
  REQUIRE(writeNpy(shard1, rampArray(DType::F32, {3})).ok());
  CHECK(readShardedArray(directory).status().message() ==
        shard1 + ": has shape [3] but covers [2:4], shape [2]");
  writeText(shard1, "junk");
  CHECK(readShardedArray(directory).status().message() ==
        shard1 + ": too short for its block [2:4]");
  fs::remove(shard1);
  CHECK_THAT(readShardedArray(directory).status().message(),
             Catch::StartsWith(shard1 + ": "));

  std::string indexPath = directory + "/index.json";
  writeText(indexPath, "{\"format\": ");
  CHECK_THAT(readShardedArray(directory).status().message(),
             Catch::StartsWith(indexPath + ": line 1, column 12: "));
  // An unreadable index is never overwritten.
  CHECK_THAT(writeShardedArray(directory, global, mesh, sharding).message(),
             Catch::EndsWith("(refusing to overwrite; remove the directory)"));
  fs::remove_all(directory);
}

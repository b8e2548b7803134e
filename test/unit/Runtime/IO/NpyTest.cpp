//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
//
// Round trips for every dtype, files written by numpy (golden/npy, made by
// golden/npy/generate.py; bf16 through ml_dtypes), byte-identical output,
// and every way a file can be malformed. Each malformed input must give a
// failure that starts with the file name, never a crash.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/Npy.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace partita;

namespace {

std::string goldenPath(const std::string &name) {
  return std::string(PARTITA_TEST_DATA_DIR) + "/npy/" + name;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

HostArray readGolden(const std::string &name) {
  Expected<HostArray> array = readNpy(goldenPath(name));
  INFO(array.status().message());
  REQUIRE(array.ok());
  return *array;
}

/// A version 1.0 file with `dict` as its header text (padded as numpy pads)
/// followed by `data`.
std::string npyWithHeader(const std::string &dict, const std::string &data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string file("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  return file + header + data;
}

std::string failureOf(std::string_view contents) {
  Expected<HostArray> parsed = parseNpy(contents, "bad.npy");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().message().rfind("bad.npy: ", 0) == 0);
  return parsed.status().message();
}

/// An array of `dtype` whose bytes count up from `seed`.
HostArray patternArray(DType dtype, std::vector<int64_t> shape, int seed) {
  HostArray array = HostArray::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < array.bytes.size(); ++i)
    array.bytes[i] = static_cast<uint8_t>(seed + 7 * i);
  if (dtype == DType::Bool)
    for (uint8_t &byte : array.bytes)
      byte &= 1;
  return array;
}

} // namespace

TEST_CASE("dtype names, sizes and descrs", "[npy]") {
  CHECK(allDTypes().size() == 10);
  for (DType dtype : allDTypes()) {
    Expected<DType> parsed = parseDType(dtypeName(dtype));
    REQUIRE(parsed.ok());
    CHECK(*parsed == dtype);
  }
  CHECK(dtypeSize(DType::F64) == 8);
  CHECK(dtypeSize(DType::BF16) == 2);
  CHECK(dtypeSize(DType::Bool) == 1);
  CHECK(std::string(dtypeName(DType::BF16)) == "bf16");
  CHECK(std::string(npyDescr(DType::BF16)) == "<V2");
  CHECK(std::string(npyDescr(DType::Bool)) == "|b1");
  Expected<DType> unknown = parseDType("float32");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message() ==
        "unknown element type 'float32'; expected one of f64, f32, f16, bf16, "
        "i64, i32, i16, i8, u8, bool");
}

TEST_CASE("every dtype round-trips through serializeNpy and parseNpy",
          "[npy]") {
  std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {5}, {2, 3}, {3, 0, 2}, {2, 1, 3, 2}, {100000}};
  for (DType dtype : allDTypes()) {
    for (const auto &shape : shapes) {
      HostArray array = patternArray(dtype, shape, static_cast<int>(dtype));
      Expected<std::string> bytes = serializeNpy(array);
      REQUIRE(bytes.ok());
      CHECK(bytes->size() % 64 == array.bytes.size() % 64);
      Expected<HostArray> back = parseNpy(*bytes, "mem");
      INFO(dtypeName(dtype) << " " << formatShape(shape));
      REQUIRE(back.ok());
      CHECK(*back == array);
    }
  }
}

TEST_CASE("numpy's files are read with the right values", "[npy]") {
  HostArray f32 = readGolden("f32_5x7.npy");
  CHECK(f32.dtype == DType::F32);
  CHECK(f32.shape == std::vector<int64_t>{5, 7});
  for (int64_t k = 0; k < 35; ++k)
    CHECK(f32.element<float>(k) == k * 0.5f - 3);

  HostArray f64 = readGolden("f64_2x3.npy");
  CHECK(f64.dtype == DType::F64);
  for (int64_t k = 0; k < 6; ++k)
    CHECK(f64.element<double>(k) == k * 0.25 - 1);

  HostArray f16 = readGolden("f16_4.npy");
  CHECK(f16.dtype == DType::F16);
  for (int64_t k = 0; k < 4; ++k)
    CHECK(f16.elementAsDouble(k) == k * 1.5);

  HostArray bf16 = readGolden("bf16_2x3.npy");
  CHECK(bf16.dtype == DType::BF16);
  CHECK(bf16.shape == std::vector<int64_t>{2, 3});
  for (int64_t k = 0; k < 6; ++k)
    CHECK(bf16.elementAsDouble(k) == k * 1.5 - 2);

  HostArray i64 = readGolden("i64_3.npy");
  for (int64_t k = 0; k < 3; ++k)
    CHECK(i64.element<int64_t>(k) == k * -(int64_t(1) << 40) + 7);
  HostArray i32 = readGolden("i32_2x2x2.npy");
  CHECK(i32.shape == std::vector<int64_t>{2, 2, 2});
  for (int64_t k = 0; k < 8; ++k)
    CHECK(i32.element<int32_t>(k) == k * 3 - 5);
  HostArray i16 = readGolden("i16_3.npy");
  for (int64_t k = 0; k < 3; ++k)
    CHECK(i16.element<int16_t>(k) == k * -1000);
  HostArray i8 = readGolden("i8_4.npy");
  for (int64_t k = 0; k < 4; ++k)
    CHECK(i8.element<int8_t>(k) == 100 - 50 * k);
  HostArray u8 = readGolden("u8_5.npy");
  for (int64_t k = 0; k < 5; ++k)
    CHECK(u8.element<uint8_t>(k) == 60 * k);
  HostArray flags = readGolden("bool_2x2.npy");
  CHECK(flags.dtype == DType::Bool);
  CHECK(flags.bytes == std::vector<uint8_t>{1, 0, 0, 1});
  CHECK(flags.formatElement(0) == "true");

  HostArray scalar = readGolden("f32_scalar.npy");
  CHECK(scalar.shape.empty());
  CHECK(scalar.element<float>(0) == 2.5f);
  HostArray empty = readGolden("i32_0x3.npy");
  CHECK(empty.shape == std::vector<int64_t>{0, 3});
  CHECK(empty.bytes.empty());
}

TEST_CASE("what we write is byte-identical to what numpy writes", "[npy]") {
  for (const char *name :
       {"f64_2x3.npy", "f32_5x7.npy", "f16_4.npy", "bf16_2x3.npy", "i64_3.npy",
        "i32_2x2x2.npy", "i16_3.npy", "i8_4.npy", "u8_5.npy", "bool_2x2.npy",
        "f32_scalar.npy", "i32_0x3.npy"}) {
    INFO(name);
    Expected<std::string> written = serializeNpy(readGolden(name));
    REQUIRE(written.ok());
    CHECK(*written == readBytes(goldenPath(name)));
  }
}

TEST_CASE("version 2.0 headers are read; we write 1.0", "[npy]") {
  HostArray array = readGolden("f32_3x2_v2.npy");
  CHECK(array.shape == std::vector<int64_t>{3, 2});
  for (int64_t k = 0; k < 6; ++k)
    CHECK(array.element<float>(k) == k + 1.0f);
  Expected<std::string> written = serializeNpy(array);
  REQUIRE(written.ok());
  CHECK((*written)[6] == 1);
  CHECK(*parseNpy(*written, "mem") == array);
}

TEST_CASE("writeNpy and readNpy go through the file system", "[npy]") {
  std::string path =
      (std::filesystem::temp_directory_path() /
       ("partita-npy-test-" + std::to_string(::getpid()) + ".npy"))
          .string();
  HostArray array = patternArray(DType::BF16, {3, 4}, 3);
  REQUIRE(writeNpy(path, array).ok());
  Expected<HostArray> back = readNpy(path);
  REQUIRE(back.ok());
  CHECK(*back == array);
  std::filesystem::remove(path);

  Expected<HostArray> missing = readNpy(path);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().rfind(path + ": cannot open", 0) == 0);
  Expected<HostArray> directory = readNpy(PARTITA_TEST_DATA_DIR);
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.status().message().find("is a directory") !=
        std::string::npos);
  Status unwritable = writeNpy("/nonexistent-dir/x.npy", array);
  REQUIRE_FALSE(unwritable.ok());
  CHECK(unwritable.message() ==
        "cannot write '/nonexistent-dir/x.npy': No such file or directory");
}

TEST_CASE("every truncation of a valid file fails cleanly", "[npy][errors]") {
  std::string valid = readBytes(goldenPath("f32_5x7.npy"));
  for (size_t length = 0; length < valid.size(); ++length) {
    Expected<HostArray> parsed =
        parseNpy(std::string_view(valid).substr(0, length), "cut.npy");
    INFO("length " << length);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message().rfind("cut.npy: ", 0) == 0);
  }
  CHECK_THAT(failureOf(valid.substr(0, 9)),
             Catch::Contains("truncated before the header length"));
  CHECK_THAT(failureOf(valid.substr(0, 60)),
             Catch::Contains("truncated header: it declares 118 bytes"));
  CHECK_THAT(failureOf(valid.substr(0, valid.size() - 1)),
             Catch::Contains("data too short: a f32 array of shape [5, 7] "
                             "needs 140 bytes but the file has 139"));
  CHECK_THAT(failureOf(valid + "xx"),
             Catch::Contains("2 unexpected bytes after the data"));
}

TEST_CASE("malformed headers and unsupported files are rejected",
          "[npy][errors]") {
  std::string data4(4, '\0');
  CHECK(failureOf("PK\x03\x04 a zip file") ==
        "bad.npy: not a .npy file (missing the \\x93NUMPY magic string)");
  CHECK(failureOf("") ==
        "bad.npy: not a .npy file (missing the \\x93NUMPY magic string)");
  CHECK_THAT(failureOf(std::string("\x93NUMPY\x04\x00\x00\x00", 10)),
             Catch::Contains("unsupported .npy format version 4.0"));
  CHECK_THAT(
      failureOf(npyWithHeader(
          "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data4)),
      Catch::Contains("unsupported dtype descr '<c8'; supported: <f8, <f4"));
  CHECK_THAT(
      failureOf(npyWithHeader(
          "{'descr': '<m8', 'fortran_order': False, 'shape': (1,), }",
          std::string(8, '\0'))),
      Catch::Contains("unsupported dtype descr '<m8'"));
  // Unsigned arrays (JAX's uint32 step counters) are read bit for bit into
  // the signed type of their width.
  {
    Expected<HostArray> parsed = parseNpy(
        npyWithHeader(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }",
            std::string("\xff\xff\xff\xff", 4)),
        "u.npy");
    REQUIRE(parsed.ok());
    CHECK(parsed->dtype == DType::I32);
    CHECK(parsed->elementAsDouble(0) == -1.0);
  }
  CHECK_THAT(failureOf(npyWithHeader("{'descr': [('a', '<f4')], "
                                     "'fortran_order': False, 'shape': (1,), }",
                                     data4)),
             Catch::Contains("structured dtypes"));
  CHECK_THAT(failureOf(npyWithHeader("['<f4', False, (1,)]", data4)),
             Catch::Contains("the header is not a dict"));
  // A repeated key: the later value decided the size ("unexpected bytes").
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': (1,), 'shape': (), }",
                                     data4)),
             Catch::Contains("the header gives 'shape' twice"));
  CHECK_THAT(
      failureOf(npyWithHeader("{'descr': '<f4', 'shape': (1,), }", data4)),
      Catch::Contains("the header has no 'fortran_order' entry"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "Nope, 'shape': (1,), }",
                                     data4)),
             Catch::Contains("expected True or False"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': (-1,), }",
                                     data4)),
             Catch::Contains("expected a non-negative integer dimension"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': (1 2), }",
                                     data4)),
             Catch::Contains("expected ',' or ')' in 'shape'"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': (99999999999, "
                                     "99999999999), }",
                                     data4)),
             Catch::Contains("shape [99999999999, 99999999999] has too many "
                             "elements"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f8', 'fortran_order': "
                                     "False, 'shape': (2305843009213693952,"
                                     "), }",
                                     data4)),
             Catch::Contains("is too large"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': (1,), 'extra': 1}",
                                     data4)),
             Catch::Contains("unexpected key 'extra'"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4, 'fortran_order': "
                                     "False, 'shape': (1,), }",
                                     data4)),
             Catch::Contains("bad header"));
  CHECK_THAT(failureOf(npyWithHeader("{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': (1,), } trailing",
                                     data4)),
             Catch::Contains("unexpected text after the header dict"));
}

TEST_CASE("fortran order and big-endian files are rejected with a fix",
          "[npy][errors]") {
  Expected<HostArray> fortran = readNpy(goldenPath("f32_2x3_fortran.npy"));
  REQUIRE_FALSE(fortran.ok());
  CHECK(fortran.status().message() ==
        goldenPath("f32_2x3_fortran.npy") +
            ": fortran_order is True (column-major data), which is not "
            "supported; save a C-ordered array, e.g. "
            "np.save(path, np.ascontiguousarray(a))");
  Expected<HostArray> bigEndian = readNpy(goldenPath("i32_3_bigendian.npy"));
  REQUIRE_FALSE(bigEndian.ok());
  CHECK_THAT(bigEndian.status().message(),
             Catch::Contains("big-endian data ('>i4') is not supported"));
  // Below rank 2 the two orders lay out the same bytes.
  Expected<HostArray> vector = parseNpy(
      npyWithHeader("{'descr': '<i2', 'fortran_order': True, 'shape': (2,), }",
                    std::string("\x01\x00\x02\x00", 4)),
      "v.npy");
  REQUIRE(vector.ok());
  CHECK(vector->element<int16_t>(1) == 2);
}

TEST_CASE("tolerated header spellings", "[npy]") {
  std::string data(4, '\0');
  for (const char *dict :
       {"{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }",
        "{\"descr\": \"<V2\", \"fortran_order\": False, \"shape\": (2L,)}",
        "{ 'shape' : ( 2 , ) , 'fortran_order' : False , 'descr' : '<V2' }"}) {
    INFO(dict);
    Expected<HostArray> parsed = parseNpy(npyWithHeader(dict, data), "ok.npy");
    INFO(parsed.status().message());
    REQUIRE(parsed.ok());
    CHECK(parsed->dtype == DType::BF16);
    CHECK(parsed->shape == std::vector<int64_t>{2});
  }
}

TEST_CASE("inconsistent arrays are not written", "[npy][errors]") {
  HostArray array = HostArray::zeros(DType::F32, {2, 2});
  array.bytes.pop_back();
  Expected<std::string> bytes = serializeNpy(array);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.status().message() ==
        "a f32 array of shape [2, 2] needs 16 bytes but holds 15");
}

TEST_CASE("half and bfloat16 widening", "[npy]") {
  CHECK(halfToFloat(0x3c00) == 1.0f);
  CHECK(halfToFloat(0xc000) == -2.0f);
  CHECK(halfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(halfToFloat(0x7bff) == 65504.0f);
  CHECK(std::isinf(halfToFloat(0x7c00)));
  CHECK(std::isnan(halfToFloat(0x7e00)));
  CHECK(bfloat16ToFloat(0x3fc0) == 1.5f);
  CHECK(bfloat16ToFloat(0xc040) == -3.0f);
  HostArray ints = HostArray::fromValues<int64_t>(DType::I64, {2}, {-5, 7});
  CHECK(ints.formatElement(0) == "-5");
  HostArray floats = HostArray::fromValues<float>(DType::F32, {1}, {0.1f});
  CHECK(floats.formatElement(0) == "0.100000001");
}

TEST_CASE("files are replaced atomically and only regular files are read",
          "[files]") {
  namespace fs = std::filesystem;
  fs::path directory = fs::temp_directory_path() / "partita-files-test";
  fs::remove_all(directory);
  fs::create_directories(directory);
  std::string path = (directory / "out.bin").string();
  REQUIRE(writeFileAtomically(path, "first").ok());
  REQUIRE(writeFileAtomically(path, "second").ok());
  CHECK(readBytes(path) == "second");
  // Nothing but the file itself is left in the directory.
  int entries = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(directory)) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 1);
  // A device is written in place; a full one is an error with the reason.
  CHECK(writeFileAtomically("/dev/null", "bytes").ok());
  Status full = writeFileAtomically("/dev/full", "bytes");
  REQUIRE_FALSE(full.ok());
  CHECK(full.message() == "cannot write '/dev/full': No space left on device");
  Status onDirectory = writeFileAtomically(directory.string(), "bytes");
  REQUIRE_FALSE(onDirectory.ok());
  CHECK(onDirectory.message().find("is a directory") != std::string::npos);
  // Readers refuse what is not a regular file before reading it.
  CHECK(requireRegularFile(path).ok());
  CHECK(requireRegularFile((directory / "missing").string()).ok());
  CHECK(requireRegularFile("/dev/zero").message() ==
        "is a device, expected a regular file");
  CHECK(requireRegularFile(directory.string()).message() ==
        "is a directory, expected a regular file");
  fs::remove_all(directory);
}

TEST_CASE("crc32c's three-stream path equals the bytewise definition",
          "[crc32c]") {
  // Sizes around the three 4 KiB streams' group, odd offsets, a seed.
  std::vector<uint8_t> data(100000);
  uint32_t state = 12345;
  for (uint8_t &byte : data) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<uint8_t>(state >> 24);
  }
  auto reference = [&](size_t offset, size_t size, uint32_t crc) {
    crc = ~crc;
    for (size_t i = offset; i < offset + size; ++i) {
      crc ^= data[i];
      for (int bit = 0; bit < 8; ++bit)
        crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
  };
  for (size_t size : {size_t(0), size_t(7), size_t(12287), size_t(12288),
                      size_t(12289), size_t(24576 + 13), size_t(99990)})
    for (size_t offset : {size_t(0), size_t(3)})
      for (uint32_t seed : {0u, 0xdeadbeefu}) {
        INFO("size " << size << " offset " << offset << " seed " << seed);
        CHECK(crc32c(data.data() + offset, size, seed) ==
              reference(offset, size, seed));
      }
}

TEST_CASE("crc32c gives the standard check values, in one call or many",
          "[files]") {
  auto crc = [](const std::string &text, uint32_t start = 0) {
    return crc32c(reinterpret_cast<const uint8_t *>(text.data()), text.size(),
                  start);
  };
  // The CRC-32C check value (RFC 3720 and every CRC catalogue).
  CHECK(crc("123456789") == 0xE3069283u);
  CHECK(crc("") == 0u);
  // 32 zero bytes: RFC 3720, B.4.
  CHECK(crc(std::string(32, '\0')) == 0x8A9136AAu);
  // Continuing from a prefix's CRC equals one call over the whole, also
  // across the 8-byte steps of the instruction path.
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text += static_cast<char>(i * 7 + 3);
  for (size_t cut : {size_t(1), size_t(7), size_t(8), size_t(500)})
    CHECK(crc(text.substr(cut), crc(text.substr(0, cut))) == crc(text));
}

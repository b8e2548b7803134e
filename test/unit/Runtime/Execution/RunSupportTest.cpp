//===- RunSupportTest.cpp - --devices, --seed, --timeout ------------------===//
//
// The one parser of each flag every runner shares (partita run, partita
// train, partita-exec run, their --distributed paths), and the one device
// count check.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Execution/RunSupport.h"

#include <catch2/catch.hpp>

using namespace partita;

TEST_CASE("--devices is cpu:N or cuda:N with N >= 1", "[run]") {
  Expected<DeviceSpec> cpu = parseDeviceSpec("cpu:8");
  REQUIRE(cpu.ok());
  CHECK(!cpu->isCuda());
  CHECK(cpu->count == 8);
  CHECK(cpu->toString() == "cpu:8");
  Expected<DeviceSpec> cuda = parseDeviceSpec("cuda:2");
  REQUIRE(cuda.ok());
  CHECK(cuda->isCuda());
  CHECK(cuda->count == 2);
  CHECK(cuda->toString() == "cuda:2");
  for (const char *bad : {"", "cpu", "cpu:", "cpu:0", "cpu:-1", "cpu:8x",
                          "gpu:2", "tpu:8", "8", "cpu:99999999999999999999",
                          "cuda:1.5", " cpu:8"}) {
    Expected<DeviceSpec> spec = parseDeviceSpec(bad);
    INFO(bad);
    REQUIRE(!spec.ok());
    CHECK(spec.status().message() ==
          std::string("--devices must be cpu:N or cuda:N (e.g. cpu:8), got '") +
              bad + "'");
  }
  // A device is a thread: 100,000 of them died of bad_alloc.
  CHECK(parseDeviceSpec("cpu:4096").ok());
  Expected<DeviceSpec> many = parseDeviceSpec("cpu:100000");
  REQUIRE(!many.ok());
  CHECK(many.status().message().find("at most 4096 devices in one process") !=
        std::string::npos);
}

TEST_CASE("the device count check names the mesh and both counts", "[run]") {
  CHECK(checkDeviceCount("the program's mesh", 8, 8).ok());
  Status status = checkDeviceCount("the program's mesh", 4, 3);
  REQUIRE(!status.ok());
  CHECK(status.message() ==
        "the program's mesh has 4 devices but --devices asks for 3");
  CHECK(checkDeviceCount("the mesh data=2", 2, 8).message() ==
        "the mesh data=2 has 2 devices but --devices asks for 8");
}

TEST_CASE("--seed and --timeout", "[run]") {
  CHECK(*parseSeed("0") == 0u);
  // The range partita train takes too (it took up to 2^64 - 1 here).
  CHECK(*parseSeed("9223372036854775807") == 9223372036854775807ull);
  for (const char *bad : {"", "-1", "x", "1x", "9223372036854775808",
                          "18446744073709551615", "18446744073709551616"}) {
    INFO(bad);
    Expected<uint64_t> seed = parseSeed(bad);
    REQUIRE(!seed.ok());
    CHECK(seed.status().message() ==
          std::string("--seed must be an integer in [0, 9223372036854775807], "
                      "got '") +
              bad + "'");
  }
  CHECK(*parseTimeoutMilliseconds("2") == 2000);
  CHECK(*parseTimeoutMilliseconds("0.0015") == 2);
  for (const char *bad : {"", "0", "-1", "x", "nan", "inf", "1e300"}) {
    INFO(bad);
    Expected<int64_t> timeout = parseTimeoutMilliseconds(bad);
    REQUIRE(!timeout.ok());
    CHECK(timeout.status().message() ==
          std::string("--timeout must be a positive number of seconds (a "
                      "year at most), got '") +
              bad + "'");
  }
}

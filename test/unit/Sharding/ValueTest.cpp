//===- ValueTest.cpp - Tests of the Sharding value type -------------------===//
//
// Constructors, queries, the attribute-body spelling and every message of
// validateStructure and validateSharding.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Sharding.h"

#include <catch2/catch.hpp>

using namespace partita;

namespace {

Mesh dataModelMesh() {
  Expected<Mesh> mesh = Mesh::create({{"data", 2}, {"model", 4}});
  REQUIRE(mesh.ok());
  return *mesh;
}

DimSharding closedDim(std::vector<std::string> axes) {
  return DimSharding{std::move(axes), false};
}

DimSharding openDim(std::vector<std::string> axes) {
  return DimSharding{std::move(axes), true};
}

Sharding makeSharding(std::vector<DimSharding> dims,
                      PartialKind kind = PartialKind::None,
                      std::vector<std::string> partialAxes = {}) {
  Sharding sharding;
  sharding.dims = std::move(dims);
  sharding.partialKind = kind;
  sharding.partialAxes = std::move(partialAxes);
  return sharding;
}

std::string structureError(const Sharding &sharding) {
  Status status = validateStructure(sharding);
  REQUIRE_FALSE(status.ok());
  // validateSharding runs the same structural checks first.
  Status full = validateSharding(dataModelMesh(), sharding);
  REQUIRE_FALSE(full.ok());
  CHECK(full.message() == status.message());
  return status.message();
}

std::string meshError(const Mesh &mesh, const Sharding &sharding,
                      const std::vector<int64_t> *shape = nullptr) {
  REQUIRE(validateStructure(sharding).ok());
  Status status = validateSharding(mesh, sharding, shape);
  REQUIRE_FALSE(status.ok());
  return status.message();
}

} // namespace

TEST_CASE("partialKindName", "[sharding]") {
  CHECK(std::string(partialKindName(PartialKind::None)).empty());
  CHECK(std::string(partialKindName(PartialKind::Sum)) == "sum");
  CHECK(std::string(partialKindName(PartialKind::Max)) == "max");
  CHECK(std::string(partialKindName(PartialKind::Min)) == "min");
}

TEST_CASE("Sharding::replicated and Sharding::open", "[sharding]") {
  Sharding replicated = Sharding::replicated(3);
  CHECK(replicated.rank() == 3);
  CHECK(replicated.isReplicated());
  CHECK(replicated.toString() == "[{}, {}, {}]");
  CHECK(replicated.partialKind == PartialKind::None);
  CHECK_FALSE(replicated.priority.has_value());

  Sharding open = Sharding::open(2);
  CHECK(open.rank() == 2);
  CHECK(open.isReplicated());
  CHECK(open.toString() == "[{?}, {?}]");
  CHECK_FALSE(open == Sharding::replicated(2));

  CHECK(Sharding::replicated(0).toString() == "[]");
  CHECK(Sharding::replicated(-1).rank() == 0);
  CHECK(Sharding::open(0).rank() == 0);
}

TEST_CASE("Sharding::isReplicated and dimAxes", "[sharding]") {
  Sharding sharding =
      makeSharding({closedDim({"data", "fsdp"}), openDim({}), openDim({"x"})});
  CHECK_FALSE(sharding.isReplicated());
  CHECK(sharding.dimAxes() == std::vector<std::string>{"data", "fsdp", "x"});

  Sharding partial =
      makeSharding({closedDim({}), closedDim({})}, PartialKind::Sum, {"m"});
  CHECK_FALSE(partial.isReplicated());
  CHECK(partial.dimAxes().empty());
}

TEST_CASE("Sharding::toString", "[sharding][print]") {
  Sharding sharding = makeSharding(
      {closedDim({"data", "fsdp"}), openDim({}), openDim({"x"}), closedDim({})},
      PartialKind::Sum, {"model"});
  sharding.priority = 1;
  CHECK(sharding.toString() == "[{\"data\", \"fsdp\"}, {?}, {\"x\", ?}, {}], "
                               "partial = sum{\"model\"}, priority = 1");

  Sharding noExtras = makeSharding({closedDim({"data"}), closedDim({})});
  CHECK(noExtras.toString() == "[{\"data\"}, {}]");

  Sharding maxPartial =
      makeSharding({openDim({"a", "b"})}, PartialKind::Max, {"c", "d"});
  CHECK(maxPartial.toString() ==
        "[{\"a\", \"b\", ?}], partial = max{\"c\", \"d\"}");

  Sharding minPriority = makeSharding({}, PartialKind::Min, {"x"});
  minPriority.priority = 0;
  CHECK(minPriority.toString() == "[], partial = min{\"x\"}, priority = 0");

  Sharding escaped = makeSharding({closedDim({"we\"ird\\"})});
  CHECK(escaped.toString() == "[{\"we\\\"ird\\\\\"}]");
}

TEST_CASE("Sharding equality", "[sharding]") {
  Sharding a = makeSharding({closedDim({"x"})});
  Sharding b = a;
  CHECK(a == b);
  b.priority = 2;
  CHECK_FALSE(a == b);
  b = a;
  b.dims[0].open = true;
  CHECK_FALSE(a == b);
  b = a;
  b.partialKind = PartialKind::Sum;
  b.partialAxes = {"y"};
  CHECK_FALSE(a == b);
}

TEST_CASE("validateStructure accepts good shardings", "[sharding][validate]") {
  CHECK(validateStructure(Sharding::replicated(2)).ok());
  CHECK(validateStructure(Sharding::open(2)).ok());
  Sharding sharding =
      makeSharding({closedDim({"data", "fsdp"}), openDim({"x"})},
                   PartialKind::Sum, {"model"});
  sharding.priority = 0;
  CHECK(validateStructure(sharding).ok());
}

TEST_CASE("validateStructure error messages", "[sharding][validate][errors]") {
  CHECK(structureError(
            makeSharding({closedDim({"data"}), closedDim({"data"})})) ==
        "mesh axis 'data' is used twice (dimension 0 and dimension 1)");
  CHECK(structureError(makeSharding(
            {closedDim({"model"}), closedDim({}), openDim({"x", "model"})})) ==
        "mesh axis 'model' is used twice (dimension 0 and dimension 2)");
  CHECK(structureError(makeSharding({closedDim({"data", "data"})})) ==
        "mesh axis 'data' is used twice in dimension 0");
  CHECK(structureError(makeSharding({closedDim({}), closedDim({"model"})},
                                    PartialKind::Sum, {"model"})) ==
        "partial axis 'model' is also used by dimension 1");
  CHECK(structureError(makeSharding({closedDim({})}, PartialKind::Sum,
                                    {"model", "model"})) ==
        "partial axis 'model' is listed twice");
  CHECK(structureError(makeSharding({closedDim({})}, PartialKind::Max)) ==
        "partial kind 'max' needs at least one partial axis");
  CHECK(structureError(makeSharding({closedDim({})}, PartialKind::None,
                                    {"data", "model"})) ==
        "partial axes \"data\", \"model\" are given without a partial kind "
        "(sum, max, min)");
  CHECK(structureError(makeSharding({closedDim({"data", ""})})) ==
        "dimension 0 names an empty mesh axis");
  CHECK(structureError(makeSharding({}, PartialKind::Sum, {""})) ==
        "the partial axes name an empty mesh axis");
  Sharding negative = Sharding::replicated(1);
  negative.priority = -1;
  CHECK(structureError(negative) == "priority must be non-negative, got -1");
}

TEST_CASE("validateSharding against a mesh", "[sharding][validate]") {
  Mesh mesh = dataModelMesh();
  Sharding sharding = makeSharding({closedDim({"model", "data"}), openDim({})});
  CHECK(validateSharding(mesh, sharding).ok());
  std::vector<int64_t> shape = {8, 3};
  CHECK(validateSharding(mesh, sharding, &shape).ok());
  // Indivisible dimensions are legal at this level.
  std::vector<int64_t> uneven = {5, 1};
  CHECK(validateSharding(mesh, sharding, &uneven).ok());
  CHECK(validateSharding(
            mesh, makeSharding({closedDim({})}, PartialKind::Sum, {"model"}))
            .ok());
  CHECK(validateSharding(Mesh(), Sharding::open(2)).ok());
}

TEST_CASE("validateSharding error messages", "[sharding][validate][errors]") {
  Mesh mesh = dataModelMesh();
  CHECK(meshError(mesh, makeSharding({closedDim({"x"})})) ==
        "unknown mesh axis 'x'; the mesh has axes 'data', 'model'");
  CHECK(meshError(mesh, makeSharding({closedDim({"data"}), openDim({"y"})})) ==
        "unknown mesh axis 'y'; the mesh has axes 'data', 'model'");
  CHECK(meshError(mesh,
                  makeSharding({closedDim({})}, PartialKind::Sum, {"fsdp"})) ==
        "unknown mesh axis 'fsdp'; the mesh has axes 'data', 'model'");
  CHECK(meshError(Mesh(), makeSharding({closedDim({"data"})})) ==
        "unknown mesh axis 'data'; the mesh has no axes");
  std::vector<int64_t> shape = {8, 4, 2};
  CHECK(meshError(mesh, makeSharding({closedDim({"data"}), closedDim({})}),
                  &shape) ==
        "the sharding has 2 dimensions but the tensor has rank 3");
}

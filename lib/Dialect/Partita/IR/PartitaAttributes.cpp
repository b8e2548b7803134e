//===- PartitaAttributes.cpp - Meshes and shardings -----------------------===//
//
// Custom syntax of `#partita.mesh` and `#partita.sharding`, their verifiers
// (which defer to the sharding algebra, the single source of the rules), and
// conversions to the algebra's value types.
//
//===----------------------------------------------------------------------===//

#include "partita/Dialect/Partita/IR/PartitaDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace partita;

#include "partita/Dialect/Partita/IR/PartitaEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "partita/Dialect/Partita/IR/PartitaAttributes.cpp.inc"

void PartitaDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "partita/Dialect/Partita/IR/PartitaAttributes.cpp.inc"
      >();
}

PartialKind partita::toPartialKind(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum:
    return PartialKind::Sum;
  case ReductionKind::Max:
    return PartialKind::Max;
  case ReductionKind::Min:
    return PartialKind::Min;
  case ReductionKind::And:
  case ReductionKind::Or:
    return PartialKind::None;
  }
  return PartialKind::None;
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

namespace {
std::vector<MeshAxis> toMeshAxes(ArrayRef<MeshAxisAttr> axes) {
  std::vector<MeshAxis> result;
  result.reserve(axes.size());
  for (MeshAxisAttr axis : axes)
    result.push_back({axis.getName().str(), axis.getSize()});
  return result;
}
} // namespace

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<MeshAxisAttr> axes,
                               ArrayRef<int64_t> deviceIds) {
  Status status =
      Mesh::validate(toMeshAxes(axes),
                     std::vector<int64_t>(deviceIds.begin(), deviceIds.end()));
  if (!status.ok())
    return emitError() << status.message();
  return success();
}

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<MeshAxisAttr> axes;
  SmallVector<int64_t> deviceIds;
  MLIRContext *context = parser.getContext();
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size;
    if (parser.parseString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    axes.push_back(
        MeshAxisAttr::get(context, StringAttr::get(context, name), size));
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseAxis,
                                     " in mesh axis list"))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    SMLoc idsLoc = parser.getCurrentLocation();
    if (parser.parseKeyword("device_ids") || parser.parseEqual() ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
          return parser.parseInteger(deviceIds.emplace_back());
        }))
      return {};
    // An empty list would silently mean "row-major", which is what leaving
    // device_ids out says.
    if (deviceIds.empty()) {
      parser.emitError(idsLoc) << "device_ids = [] lists no ids; omit "
                                  "device_ids for row-major order";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return MeshAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); }, context, axes,
      deviceIds);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getAxes(), printer, [&](MeshAxisAttr axis) {
    printer.printString(axis.getName().getValue());
    printer << "=" << axis.getSize();
  });
  printer << "]";
  if (!getDeviceIds().empty()) {
    printer << ", device_ids = [";
    llvm::interleaveComma(getDeviceIds(), printer);
    printer << "]";
  }
  printer << ">";
}

Mesh MeshAttr::toMesh() const {
  auto ids = getDeviceIds();
  Expected<Mesh> mesh = Mesh::create(
      toMeshAxes(getAxes()), std::vector<int64_t>(ids.begin(), ids.end()));
  // The attribute was verified when it was built, so creation succeeds.
  return mesh.ok() ? mesh.value() : Mesh();
}

int64_t MeshAttr::axisSize(StringRef name) const {
  for (MeshAxisAttr axis : getAxes())
    if (axis.getName().getValue() == name)
      return axis.getSize();
  return 0;
}

int64_t MeshAttr::numDevices() const {
  int64_t count = 1;
  for (MeshAxisAttr axis : getAxes())
    count *= axis.getSize();
  return count;
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

namespace {
std::vector<std::string> toStrings(ArrayRef<StringAttr> names) {
  std::vector<std::string> result;
  for (StringAttr name : names)
    result.push_back(name.str());
  return result;
}

SmallVector<StringAttr> toStringAttrs(MLIRContext *context,
                                      const std::vector<std::string> &names) {
  SmallVector<StringAttr> result;
  for (const std::string &name : names)
    result.push_back(StringAttr::get(context, name));
  return result;
}

Sharding buildSharding(ArrayRef<DimShardingAttr> dims, ReductionKind kind,
                       ArrayRef<StringAttr> partialAxes,
                       std::optional<int64_t> priority) {
  Sharding sharding;
  for (DimShardingAttr dim : dims)
    sharding.dims.push_back({toStrings(dim.getAxes()), dim.getIsOpen()});
  if (!partialAxes.empty()) {
    sharding.partialKind = toPartialKind(kind);
    sharding.partialAxes = toStrings(partialAxes);
  }
  sharding.priority = priority;
  return sharding;
}

/// Parses `{"a", "b", ?}`, `{?}` or `{}`.
ParseResult parseAxisList(AsmParser &parser, SmallVectorImpl<StringAttr> &axes,
                          bool *isOpen) {
  if (isOpen)
    *isOpen = false;
  if (parser.parseLBrace())
    return failure();
  if (succeeded(parser.parseOptionalRBrace()))
    return success();
  do {
    if (isOpen && succeeded(parser.parseOptionalQuestion())) {
      *isOpen = true;
      break;
    }
    std::string name;
    if (parser.parseString(&name))
      return failure();
    axes.push_back(StringAttr::get(parser.getContext(), name));
  } while (succeeded(parser.parseOptionalComma()));
  return parser.parseRBrace();
}

void printAxisList(AsmPrinter &printer, ArrayRef<StringAttr> axes,
                   bool isOpen) {
  printer << "{";
  llvm::interleaveComma(axes, printer, [&](StringAttr axis) {
    printer.printString(axis.getValue());
  });
  if (isOpen)
    printer << (axes.empty() ? "?" : ", ?");
  printer << "}";
}
} // namespace

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh,
                                   ArrayRef<DimShardingAttr> dims,
                                   ReductionKind partialKind,
                                   ArrayRef<StringAttr> partialAxes,
                                   std::optional<int64_t> priority) {
  if (!mesh)
    return emitError() << "a sharding needs a mesh symbol";
  if (!partialAxes.empty() && toPartialKind(partialKind) == PartialKind::None)
    return emitError() << "partial kind must be sum, max or min, got '"
                       << stringifyReductionKind(partialKind) << "'";
  if (partialAxes.empty() && partialKind != ReductionKind::Sum)
    return emitError() << "partial kind '"
                       << stringifyReductionKind(partialKind)
                       << "' needs at least one partial axis";
  Status status = validateStructure(
      buildSharding(dims, partialKind, partialAxes, priority));
  if (!status.ok())
    return emitError() << status.message();
  return success();
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *context = parser.getContext();
  FlatSymbolRefAttr mesh;
  SmallVector<DimShardingAttr> dims;
  ReductionKind partialKind = ReductionKind::Sum;
  SmallVector<StringAttr> partialAxes;
  std::optional<int64_t> priority;

  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
        SmallVector<StringAttr> axes;
        bool isOpen;
        if (parseAxisList(parser, axes, &isOpen))
          return failure();
        dims.push_back(DimShardingAttr::get(context, axes, isOpen));
        return success();
      }))
    return {};
  SmallVector<StringRef, 2> seenFields;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef keyword;
    SMLoc keywordLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&keyword) || parser.parseEqual())
      return {};
    // A repeated `partial` would otherwise merge its axes into the first.
    if (llvm::is_contained(seenFields, keyword)) {
      parser.emitError(keywordLoc)
          << "sharding field '" << keyword << "' is given twice";
      return {};
    }
    seenFields.push_back(keyword);
    if (keyword == "partial") {
      StringRef kindName;
      SMLoc kindLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&kindName))
        return {};
      std::optional<ReductionKind> kind = symbolizeReductionKind(kindName);
      if (!kind) {
        parser.emitError(kindLoc) << "unknown partial kind '" << kindName
                                  << "'; expected sum, max or min";
        return {};
      }
      partialKind = *kind;
      if (parseAxisList(parser, partialAxes, nullptr))
        return {};
      if (partialAxes.empty()) {
        parser.emitError(kindLoc) << "partial needs at least one axis";
        return {};
      }
    } else if (keyword == "priority") {
      int64_t value;
      if (parser.parseInteger(value))
        return {};
      priority = value;
    } else {
      parser.emitError(keywordLoc) << "unknown sharding field '" << keyword
                                   << "'; expected 'partial' or 'priority'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return ShardingAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); }, context, mesh,
      dims, partialKind, partialAxes, priority);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printAttributeWithoutType(getMesh());
  printer << ", [";
  llvm::interleaveComma(getDims(), printer, [&](DimShardingAttr dim) {
    printAxisList(printer, dim.getAxes(), dim.getIsOpen());
  });
  printer << "]";
  if (isPartial()) {
    printer << ", partial = " << stringifyReductionKind(getPartialKind());
    printAxisList(printer, getPartialAxes(), /*isOpen=*/false);
  }
  if (getPriority())
    printer << ", priority = " << *getPriority();
  printer << ">";
}

Attribute DimShardingAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> axes;
  bool isOpen;
  if (parser.parseLess() || parseAxisList(parser, axes, &isOpen) ||
      parser.parseGreater())
    return {};
  return DimShardingAttr::get(parser.getContext(), axes, isOpen);
}

void DimShardingAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printAxisList(printer, getAxes(), getIsOpen());
  printer << ">";
}

Sharding ShardingAttr::toSharding() const {
  return buildSharding(getDims(), getPartialKind(), getPartialAxes(),
                       getPriority());
}

ShardingAttr ShardingAttr::fromSharding(MLIRContext *context,
                                        FlatSymbolRefAttr mesh,
                                        const Sharding &sharding) {
  SmallVector<DimShardingAttr> dims;
  for (const DimSharding &dim : sharding.dims)
    dims.push_back(DimShardingAttr::get(
        context, toStringAttrs(context, dim.axes), dim.open));
  ReductionKind kind = ReductionKind::Sum;
  if (sharding.partialKind == PartialKind::Max)
    kind = ReductionKind::Max;
  else if (sharding.partialKind == PartialKind::Min)
    kind = ReductionKind::Min;
  return ShardingAttr::get(context, mesh, dims, kind,
                           toStringAttrs(context, sharding.partialAxes),
                           sharding.priority);
}

//===- Gspmd.cpp - GSPMD sharding strings ---------------------------------===//
//
// The reading of GSPMD sharding strings: replicated, or a tile grid with
// its devices listed or given as a (transposed) iota.
//
//===----------------------------------------------------------------------===//

#include "partita/Sharding/Gspmd.h"

#include <charconv>
#include <string>

namespace partita {

namespace {

/// Tile grids larger than this are refused rather than enumerated.
constexpr int64_t kMaxTilePositions = int64_t(1) << 24;

constexpr std::string_view kSpace = " \t\n\v\f\r";

std::string_view trim(std::string_view text) {
  size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos)
    return {};
  size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

bool consumePrefix(std::string_view &text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

bool consumeSuffix(std::string_view &text, std::string_view suffix) {
  if (text.size() < suffix.size() ||
      text.substr(text.size() - suffix.size()) != suffix)
    return false;
  text.remove_suffix(suffix.size());
  return true;
}

/// `values` as `[1,2]`, or between other brackets.
std::string listToString(const std::vector<int64_t> &values,
                         const char *open = "[", const char *close = "]") {
  std::string text = open;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text + close;
}

/// The comma-separated decimal integers of `text`, each of which may have
/// spaces around it; empty entries are skipped. `what` names the list in
/// messages.
Expected<std::vector<int64_t>> parseIntegerList(std::string_view text,
                                                const std::string &what) {
  std::vector<int64_t> values;
  while (true) {
    size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    if (!part.empty()) {
      std::string_view number = trim(part);
      int64_t value = 0;
      const char *end = number.data() + number.size();
      auto [stop, error] = std::from_chars(number.data(), end, value);
      if (number.empty() || error != std::errc() || stop != end)
        return Status::error("expected an integer in the " + what + ", got '" +
                             std::string(part) + "'");
      values.push_back(value);
    }
    if (comma == std::string_view::npos)
      return values;
    text.remove_prefix(comma + 1);
  }
}

/// The integer list that `text` starts with, up to its closing `close`
/// (`opener` is what came before it, for messages); `text` is left after
/// the `close`.
Expected<std::vector<int64_t>> parseClosedList(std::string_view &text,
                                               char close,
                                               const std::string &opener,
                                               const std::string &what) {
  size_t end = text.find(close);
  if (end == std::string_view::npos)
    return Status::error("'" + opener + "' without its closing '" +
                         std::string(1, close) + "'");
  Expected<std::vector<int64_t>> values =
      parseIntegerList(text.substr(0, end), what);
  text.remove_prefix(end + 1);
  return values;
}

/// The number of positions of a grid of `sizes`, which must be positive;
/// `what` names the grid in messages.
Expected<int64_t> positions(const std::vector<int64_t> &sizes,
                            const std::string &what) {
  int64_t total = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 1)
      return Status::error(what + " " + listToString(sizes) + " has size " +
                           std::to_string(sizes[d]) + " in dimension " +
                           std::to_string(d) + "; sizes are positive");
    if (sizes[d] > kMaxTilePositions / total)
      return Status::error(what + " " + listToString(sizes) +
                           " has more than " +
                           std::to_string(kMaxTilePositions) + " positions");
    total *= sizes[d];
  }
  return total;
}

/// The devices of the iota tile assignment `<=[dims]T(perm)` after its
/// `<=[` (`text`), for a tile of `total` positions.
Expected<std::vector<int64_t>> parseIota(std::string_view text, int64_t total) {
  Expected<std::vector<int64_t>> dims =
      parseClosedList(text, ']', "<=[", "iota shape");
  if (!dims)
    return dims.status();
  Expected<int64_t> count = positions(*dims, "the iota shape");
  if (!count)
    return count.status();
  if (*count != total)
    return Status::error("the iota shape " + listToString(*dims) + " has " +
                         std::to_string(*count) + " devices but the tile has " +
                         std::to_string(total) + " positions");
  std::vector<int64_t> perm(dims->size());
  for (size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<int64_t>(i);
  std::string_view after = trim(text);
  if (consumePrefix(after, "T(")) {
    Expected<std::vector<int64_t>> parsed =
        parseClosedList(after, ')', "T(", "transpose permutation");
    if (!parsed)
      return parsed.status();
    std::string transpose = "the transpose T" + listToString(*parsed, "(", ")");
    if (parsed->size() != dims->size())
      return Status::error(transpose + " has " +
                           std::to_string(parsed->size()) +
                           " entries for the " + std::to_string(dims->size()) +
                           " dimensions of the iota shape");
    std::vector<bool> seen(dims->size(), false);
    for (int64_t p : *parsed) {
      if (p < 0 || p >= static_cast<int64_t>(dims->size()) || seen[p])
        return Status::error(transpose +
                             " is not a permutation of the iota shape's " +
                             std::to_string(dims->size()) + " dimensions");
      seen[p] = true;
    }
    perm = *parsed;
  }
  if (!trim(after).empty())
    return Status::error("unexpected '" + std::string(trim(after)) +
                         "' after the iota tile assignment");
  // devices = transpose(iota(dims), perm), flattened.
  std::vector<int64_t> transposed;
  for (int64_t p : perm)
    transposed.push_back((*dims)[p]);
  std::vector<int64_t> strides(dims->size(), 1);
  for (int64_t d = static_cast<int64_t>(dims->size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * (*dims)[d + 1];
  std::vector<int64_t> devices;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, id = 0;
    for (int64_t d = static_cast<int64_t>(transposed.size()) - 1; d >= 0; --d) {
      id += (rem % transposed[d]) * strides[perm[d]];
      rem /= transposed[d];
    }
    devices.push_back(id);
  }
  return devices;
}

} // namespace

Expected<GspmdSharding> parseGspmdSharding(std::string_view text) {
  GspmdSharding sharding;
  std::string_view body = trim(text);
  if (!consumePrefix(body, "{") || !consumeSuffix(body, "}"))
    return Status::error("a GSPMD sharding is enclosed in braces, got '" +
                         std::string(text) + "'");
  body = trim(body);
  if (body == "replicated") {
    sharding.replicated = true;
    return sharding;
  }
  if (!consumePrefix(body, "devices=["))
    return Status::error("unsupported GSPMD sharding '" + std::string(text) +
                         "': only {replicated} and {devices=[...]...} are "
                         "read");
  Expected<std::vector<int64_t>> tile =
      parseClosedList(body, ']', "devices=[", "tile shape");
  if (!tile)
    return tile.status();
  sharding.tile = *tile;
  Expected<int64_t> total = positions(sharding.tile, "the tile shape");
  if (!total)
    return total.status();
  std::string_view rest = trim(body);
  if (consumeSuffix(rest, "last_tile_dim_replicate")) {
    if (sharding.tile.empty())
      return Status::error("last_tile_dim_replicate with an empty tile shape");
    sharding.lastTileReplicates = true;
    rest = trim(rest);
  }
  if (consumePrefix(rest, "<=[")) {
    Expected<std::vector<int64_t>> devices = parseIota(rest, *total);
    if (!devices)
      return devices.status();
    sharding.devices = *devices;
    return sharding;
  }
  Expected<std::vector<int64_t>> devices =
      parseIntegerList(rest, "device list");
  if (!devices)
    return devices.status();
  if (static_cast<int64_t>(devices->size()) != *total)
    return Status::error(
        "the device list has " + std::to_string(devices->size()) +
        " devices but the tile shape " + listToString(sharding.tile) + " has " +
        std::to_string(*total) + " positions");
  sharding.devices = *devices;
  return sharding;
}

} // namespace partita

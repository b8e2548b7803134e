//===- FuzzShardedIndex.cpp - libFuzzer target: a sharded array's index ---===//
//
// Any bytes as index.json: parsed and checked; an accepted index printed
// and parsed again must give the same text.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/ShardedArrayIndex.h"

#include <cstdlib>

using namespace partita;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Expected<ShardedArrayIndex> index = parseShardedArrayIndex(text, "fuzz");
  if (!index)
    return 0;
  std::string printed = printShardedArrayIndex(*index);
  Expected<ShardedArrayIndex> again = parseShardedArrayIndex(printed, "again");
  if (!again || printShardedArrayIndex(*again) != printed)
    std::abort();
  return 0;
}

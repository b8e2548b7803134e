//===- FuzzNpy.cpp - libFuzzer target: the .npy reader --------------------===//
//
// Any bytes as a .npy file: parsed, and when accepted written back and
// parsed again, which must give the same array.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/IO/Npy.h"

#include <cstdlib>

using namespace partita;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Expected<HostArray> array = parseNpy(text, "fuzz");
  if (!array)
    return 0;
  Expected<std::string> written = serializeNpy(*array);
  if (!written)
    return 0;
  Expected<HostArray> again = parseNpy(*written, "again");
  if (!again || again->dtype != array->dtype || again->shape != array->shape ||
      again->bytes != array->bytes)
    std::abort();
  return 0;
}

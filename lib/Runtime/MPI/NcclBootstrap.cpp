//===- NcclBootstrap.cpp - NCCL unique ids over MPI -----------------------===//

#include "partita/Runtime/MPI/NcclBootstrap.h"

#include <nccl.h>

#include <cstring>

namespace partita {

static_assert(sizeof(ncclUniqueId) == ncclUniqueIdBytes,
              "ncclUniqueId changed size");

UniqueIdFactory ncclUniqueIdFactory() {
  return [](std::vector<uint8_t> &id) -> Status {
    ncclUniqueId unique;
    ncclResult_t result = ncclGetUniqueId(&unique);
    if (result != ncclSuccess)
      return Status::error(std::string("ncclGetUniqueId failed at ") +
                           "NcclBootstrap.cpp:" + std::to_string(__LINE__) +
                           ": " + ncclGetErrorString(result));
    id.resize(sizeof(unique));
    std::memcpy(id.data(), &unique, sizeof(unique));
    return Status::success();
  };
}

Expected<std::vector<std::vector<uint8_t>>>
bootstrapNcclUniqueIds(MpiProcess &process,
                       const std::vector<std::vector<int>> &processSets) {
  return bootstrapUniqueIds(process, processSets, ncclUniqueIdBytes,
                            ncclUniqueIdFactory());
}

} // namespace partita

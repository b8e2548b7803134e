//===- NcclBootstrap.h - NCCL unique ids over MPI ---------------*- C++ -*-===//
//
// An NCCL communicator is created by every member calling
// ncclCommInitRank with the same ncclUniqueId, which one member makes with
// ncclGetUniqueId. Under mpirun that id travels over MPI: this is
// bootstrapUniqueIds() (Mpi.h) with NCCL's id maker. Built when both MPI
// and NCCL are found (PARTITA_HAVE_NCCL_BOOTSTRAP); no GPU is needed to
// make or broadcast ids.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_NCCLBOOTSTRAP_H
#define PARTITA_RUNTIME_NCCLBOOTSTRAP_H

#include "partita/Runtime/MPI/Mpi.h"

namespace partita {

/// sizeof(ncclUniqueId).
inline constexpr size_t ncclUniqueIdBytes = 128;

/// Makes ids with ncclGetUniqueId; a failure carries file:line and NCCL's
/// message.
UniqueIdFactory ncclUniqueIdFactory();

/// One NCCL unique id per process set (ascending ranks; the same list on
/// every process), made by the set's lowest rank and broadcast over MPI;
/// empty for sets this process is not in. With crossProcessSets() of a
/// mesh layout this gives the id of every communicator a multi-process CUDA
/// run needs.
Expected<std::vector<std::vector<uint8_t>>>
bootstrapNcclUniqueIds(MpiProcess &process,
                       const std::vector<std::vector<int>> &processSets);

} // namespace partita

#endif // PARTITA_RUNTIME_NCCLBOOTSTRAP_H

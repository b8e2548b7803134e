//===- CudaDistributed.h - One process per GPU under mpirun -----*- C++ -*-===//
//
// `mpirun -np P partita-exec run prog.exe --distributed --devices cuda:N`:
// each process drives its N/P devices of the mesh (ProcessLayout.h) on
// GPUs of its host (gpusForLocalDevices(), ProcessLayout.h) — and every
// collective is NCCL across all processes: one NCCL rank per device (rank =
// mesh position), initialised with a unique id made on rank 0 and broadcast
// over MPI (NcclBootstrap.h), split per ordered set of mesh axes. Built when
// MPI, CUDA and NCCL are found. docs/GPU.md and docs/Distributed.md.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_MPI_CUDADISTRIBUTED_H
#define PARTITA_RUNTIME_MPI_CUDADISTRIBUTED_H

#include "partita/Runtime/CUDA/CudaBackend.h"
#include "partita/Runtime/MPI/Mpi.h"

namespace partita {

/// What runDistributed() needs to run this process's devices on GPUs with
/// NCCL across processes. Every process first agrees that each of them
/// found GPUs for its devices, so a rank without one makes all fail with
/// its reason instead of leaving the others waiting for NCCL.
DistributedDevices cudaDistributedDevices(const CudaBackendOptions &options);

} // namespace partita

#endif // PARTITA_RUNTIME_MPI_CUDADISTRIBUTED_H

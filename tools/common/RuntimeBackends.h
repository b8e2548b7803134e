//===- RuntimeBackends.h - The runtime's optional parts, for tools -*- C++ -*-//
//
// What a tool that runs programs includes: the Executable and the run
// support always; the multi-process runtime, the CUDA backend and one
// process per GPU when this build has them (the PARTITA_HAVE_* definitions
// come with the libraries, lib/Runtime/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H
#define PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

#include "partita/Runtime/IO/RunSupport.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#ifdef PARTITA_HAVE_MPI
#include "partita/Runtime/MPI/Mpi.h"
#endif
#ifdef PARTITA_HAVE_CUDA
#include "partita/Runtime/CUDA/CudaBackend.h"
#endif
#ifdef PARTITA_HAVE_CUDA_DISTRIBUTED
#include "partita/Runtime/CUDA/CudaDistributed.h"
#endif

#endif // PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

//===- RuntimeBackends.h - The runtime's optional parts, for tools -*- C++ -*-//
//
// What a tool that runs programs includes: the Executable and the run
// support always; the multi-process runtime when this build has it (the
// PARTITA_HAVE_MPI definition comes with the library,
// lib/Runtime/CMakeLists.txt); the CUDA backend and one process per GPU
// through the CUDA plugin, loaded when a run asks for CUDA devices.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H
#define PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

#include "partita/Runtime/IO/RunSupport.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#ifdef PARTITA_HAVE_MPI
#include "partita/Runtime/MPI/Mpi.h"
#endif
#include "partita/Runtime/CUDA/CudaPlugin.h"

#endif // PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

//===- RuntimeBackends.h - The runtime's optional parts, for tools -*- C++ -*-//
//
// What a tool that runs programs includes: the Executable and the run
// support always; the multi-process runtime and the CUDA backend through
// their plugins, loaded when a run asks for them (partita/Runtime/IO/Plugin.h).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H
#define PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

#include "partita/Runtime/IO/RunSupport.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Runtime/MPI/MpiPlugin.h"
#include "partita/Runtime/CUDA/CudaPlugin.h"

#endif // PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

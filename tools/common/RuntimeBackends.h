//===- RuntimeBackends.h - The runtime's optional parts, for tools -*- C++ -*-//
//
// What a tool that runs programs includes: the Executable and the run
// support always; the multi-process runtime and the CUDA backend through
// their plugins, loaded when a run asks for them
// (partita/Runtime/Plugins/Plugin.h).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H
#define PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H

#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Plugins/CudaPlugin.h"
#include "partita/Runtime/Plugins/MpiPlugin.h"
#include "partita/Runtime/Program/ExecutableFile.h"

#endif // PARTITA_TOOLS_COMMON_RUNTIMEBACKENDS_H
